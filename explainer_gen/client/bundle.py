"""The self-hosted Vega bundle, made by vl-convert once and cached."""
from __future__ import annotations

import hashlib

import vl_convert as vlc

from ..compute.artifacts import VL_VERSION
from ..compute.cache import DiskCache


def javascript_bundle(cache: DiskCache) -> str:
    """vega + vega-lite + vega-embed in one file that sets `window.vegaEmbed`.

    Figures arrive compiled to Vega, so the page runs them on `vegaEmbed.vega` and never
    compiles Vega-Lite in the browser. (vl-convert's snippet imports default exports, and
    Vega has none, so a Vega-only bundle is not to be had from it.)
    """
    key = f"vega-bundle-{vlc.__version__}-vl{VL_VERSION}.js"
    text = cache.get("bundle", key)
    if text is None:
        text = vlc.javascript_bundle(vl_version=VL_VERSION)
        cache.put("bundle", key, text)
    return text


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
