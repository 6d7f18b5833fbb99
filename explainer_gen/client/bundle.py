"""The self-hosted Vega bundle, made by vl-convert once per machine and cached."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import vl_convert as vlc

from ..compute.artifacts import VL_VERSION
from ..cache import DiskCache

MACHINE_CACHE_ENV = "EXPLAINER_GEN_MACHINE_CACHE"


def machine_cache() -> DiskCache:
    """The cache every project on this machine shares, outside any checkout: `$EXPLAINER_GEN_MACHINE_CACHE`,
    else `$XDG_CACHE_HOME/explainer-gen`, else `~/.cache/explainer-gen`; an empty variable turns it off.

    It holds only what no project's pages depend on: the Vega bundle (keyed by library versions) and
    each source module's reading of its imports (keyed by the module's hash, compute/codegraph.py),
    never a project's figures, so one project's build cannot feed another's pages. Nothing sweeps
    it: a module saved often leaves a small entry per version."""
    root = os.environ.get(MACHINE_CACHE_ENV)
    if root is None:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "explainer-gen"
    return DiskCache(root or None)


def bundle_key() -> str:
    return f"vega-bundle-{vlc.__version__}-vl{VL_VERSION}.js"


def javascript_bundle(cache: DiskCache, shared: DiskCache | None = None) -> str:
    """vega + vega-lite + vega-embed in one file that sets `window.vegaEmbed`.

    Looked up in the project's cache, then in the machine's (`shared`, `machine_cache()` when
    unset); vl-convert makes it (about 2 s) only when neither has it, and both keep it.

    Figures arrive compiled to Vega, so the page runs them on `vegaEmbed.vega` and never
    compiles Vega-Lite in the browser. (vl-convert's snippet imports default exports, and
    Vega has none, so a Vega-only bundle is not to be had from it.)
    """
    shared = machine_cache() if shared is None else shared
    key = bundle_key()
    text = cache.get("bundle", key)
    if text is None:
        text = shared.get("bundle", key)
        if text is None:
            text = vlc.javascript_bundle(vl_version=VL_VERSION)
            shared.put("bundle", key, text)
        cache.put("bundle", key, text)
    return text


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
