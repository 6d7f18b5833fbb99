"""Everything a build runs, loaded together, and the hashes of the source files as they were loaded.

Hosts (the MkDocs plugin, the Zensical host, a worker process) reach the models and the
generator only through this module and the adapter it loads (`host`), so that one
long-lived process (`mkdocs serve`) can load a fresh copy when their code changes on disk, and
so that the cache is keyed by the code that actually ran, never by files edited after loading
(see `fresh` below and compute/codegraph.py).
"""
from __future__ import annotations

import importlib
import sys

from . import cache

_before = cache.source_hashes()

from models.yamlsource import SourceError  # noqa: E402,F401

from . import host  # noqa: E402,F401
from .cache import MODELS_ROOT, PACKAGE_ROOT  # noqa: E402
from .client.bundle import machine_cache  # noqa: E402
from .compute.codegraph import CodeGraph, CodeKeys  # noqa: E402
from .site import Memory, PageSource, Settings, SiteBuild  # noqa: E402,F401
from .staging import Staging, WarningCount  # noqa: E402,F401

# The hashes of the code loaded above; None if a file changed while it was being loaded.
_after = cache.source_hashes()
SOURCES: dict[str, str] | None = _before if _before == _after else None
del _before, _after

# Which code each result runs (compute/codegraph.py), read from the files as they were loaded:
# a file whose hash differs from SOURCES' changed since, and the core is not used.
_graph = CodeGraph.scan([MODELS_ROOT, PACKAGE_ROOT], memo=machine_cache())
if SOURCES is not None and any(SOURCES.get(path) != digest for path, digest in _graph.digests().items()):
    SOURCES = None
CODE: CodeKeys | None = CodeKeys(_graph, cache.library_versions()) if SOURCES is not None else None
del _graph

# Modules that are never loaded again: MkDocs holds the plugin class and its config schema.
_KEPT = ("explainer_gen.plugin", "explainer_gen.config")


def _plugin_modules() -> set[str]:
    """The top-level packages of the modules that other packages' entry points name for figure
    kinds (compute/figures/base.py), all of whose modules are loaded again with the generator: a
    kind's module, and any module of its package it subclasses from, then hold the new
    `FigureKind`, its kinds are filed in the new registry, and no copy of the old generator stays
    alive through them. (An edit to a plug-in's own code is not watched: restart the server.)"""
    from importlib.metadata import entry_points

    from .compute.figures.base import ENTRY_POINT_GROUP

    return {ep.module.split(".")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)}


def is_current() -> bool:
    """Whether the code on disk is the code loaded here."""
    return SOURCES is not None and SOURCES == cache.source_hashes()


def fresh(attempts: int = 3):
    """This module if the code on disk is the code it loaded; else a new copy of the models and the
    generator, loaded from disk (the old modules stay with whoever holds them). Returns the core
    module and whether it was reloaded. RuntimeError if the code keeps changing while it loads."""
    core = sys.modules[__name__]
    reloaded = False
    plugins = None
    for _ in range(attempts):
        if core.is_current():
            return core, reloaded
        plugins = _plugin_modules() if plugins is None else plugins
        for name in [n for n in sys.modules if n == "models" or n.startswith("models.")
                     or (n.startswith("explainer_gen.") and n not in _KEPT)
                     or any(n == p or n.startswith(p + ".") for p in plugins)]:
            module = sys.modules.pop(name)
            # The package that stays (explainer_gen) holds its submodules as attributes, which
            # `from . import host` reads before sys.modules: left there, the new core would run the
            # old host and cache, and keep the whole old generator (both registries) alive.
            parent, _, child = name.rpartition(".")
            if getattr(sys.modules.get(parent), child, None) is module:
                delattr(sys.modules[parent], child)
        importlib.invalidate_caches()
        core = importlib.import_module(__name__)
        reloaded = True
    raise RuntimeError("the generator's or the models' code kept changing while it was loaded")
