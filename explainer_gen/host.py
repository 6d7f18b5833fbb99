"""The one adapter between a host and a build, whichever host it is.

A host (the MkDocs plugin, `plugin.py`; the Zensical host, `host_zensical.py`) has a project's
configuration, as MkDocs reads `mkdocs.yml`, and converts pages with Python-Markdown. From that
configuration, this module gives it everything it needs of the explainer:

- `settings(config, options)`: the build's settings (`site.Settings`); a worker process gets the
  same settings from its job (compute/workers.PageJob);
- `pages(files, root)` and `nav_paths(nav)`: the pages as the build reads them;
- `collect(site, config, files)`: the build's first step, given the host's files;
- `FENCES` and `register(config, ...)`: the fences and the Markdown extension, put into the
  configuration once; the Zensical host writes the same fences into the configuration it derives;
- `watched(settings)`: what a server must watch besides the docs and the configuration;
- `conversion_inputs(config, files)` and `conversion_key(site, src_uri, markdown, inputs)`: what
  converting a page depends on, by which `mkdocs serve` reuses the conversion of a page that did
  not change.

It reads MkDocs' configuration and file objects, which both hosts have (Zensical reads the same
`mkdocs.yml`), and nothing of either host's own machinery.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from models.catalogue import CATALOGUE_PATH

from .cache import MODELS_ROOT, PACKAGE_ROOT, digest
from .compute.workers import default_workers
from .markdown_ext import ExplainerExtension
from .render import mathml, superfence
from .site import CSS_PATH, Generated, PageSource, Settings, SiteBuild

# The fences the explainer adds to pymdownx.superfences: figures, and display maths.
FENCES = (superfence.FENCE, mathml.FENCE)


def settings(config, options, links: str = "page") -> Settings:
    """The build's settings from a loaded MkDocs configuration and the plugin's options
    (config.ExplainerConfig), with the links the host wants (see site.Settings)."""
    root = Path(config.config_file_path or ".").resolve().parent
    return Settings(root=root, docs_dir=Path(config.docs_dir),
                    catalogue_path=Path(options.catalogue or CATALOGUE_PATH),
                    cache_dir=root / options.cache_dir if options.cache_dir else None,
                    data_budget_kb=options.data_budget_kb, workers=options.workers or default_workers(),
                    links=links)


def pages(files, root: Path) -> list[PageSource]:
    """The documentation pages among MkDocs' `files`, each with the path its errors show (relative
    to the project's folder when it is inside it)."""
    def display(f) -> str:
        path = f.abs_src_path or f.src_uri
        try:
            return os.path.relpath(path, root)
        except ValueError:  # another drive
            return path
    return [PageSource(f.src_uri, display(f), f.url, f.content_string) for f in files.documentation_pages()]


def nav_paths(nav) -> list[str]:
    """Every page path in mkdocs.yml's nav, in order."""
    out: list[str] = []
    for item in nav if isinstance(nav, list) else [nav]:
        for value in (item.values() if isinstance(item, dict) else [item]):
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, list):
                out += nav_paths(value)
    return out


def collect(site: SiteBuild, config, files) -> dict[str, Generated]:
    """The build's first step over the host's files; SourceError on any author mistake."""
    return site.collect(pages(files, site.root), nav_paths(config.nav or []), config.site_name, config.site_url)


def register(config, site: Callable[[], SiteBuild], page: Callable[..., str | None]) -> None:
    """Put the explainer into a MkDocs configuration: the fences (authors need not list them), the
    Markdown extension over the build `site()`, attr_list (the feed's and the glossary's anchors)
    and the stylesheet."""
    if "pymdownx.superfences" not in config.markdown_extensions:
        config.markdown_extensions.append("pymdownx.superfences")
    fences = config.mdx_configs.setdefault("pymdownx.superfences", {}).setdefault("custom_fences", [])
    for fence in FENCES:
        fences[:] = [f for f in fences if f.get("name") != fence["name"]] + [dict(fence)]
    config.markdown_extensions.append(ExplainerExtension(site, page))
    if "attr_list" not in config.markdown_extensions:
        config.markdown_extensions.append("attr_list")
    if CSS_PATH not in config.extra_css:
        config.extra_css.append(CSS_PATH)


def watched(settings: Settings) -> list[Path]:
    """What a server rebuilds on besides the docs and the configuration: the catalogue, and the
    code that computes (the models and this package)."""
    return [settings.catalogue_path, MODELS_ROOT, PACKAGE_ROOT]


def conversion_inputs(config, files) -> str:
    """What converting any page of a build depends on besides its own Markdown, hashed once a
    build: every file's path and URL (links are resolved against them, and checked), and the
    Markdown settings and link validation the conversion runs with."""
    def named(o) -> str:  # an extension object or a fence's function, by what it is, not where it lives
        return getattr(o, "__qualname__", None) or f"{type(o).__module__}.{type(o).__qualname__}"
    settings = json.dumps([config.markdown_extensions, config.mdx_configs, config.use_directory_urls,
                           repr(config.validation)], default=named, sort_keys=True)
    return digest(sorted((f.src_uri, f.dest_uri, f.url) for f in files), settings)


def conversion_key(site: SiteBuild, src_uri: str, markdown: str, inputs: str) -> str:
    """Everything converting the page `src_uri` from `markdown` depends on, hashed: what the build
    puts into it (`SiteBuild.conversion_key`) and the build's `conversion_inputs`."""
    return digest(site.conversion_key(src_uri, markdown), inputs)
