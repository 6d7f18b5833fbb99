"""The self-hosted vega + vega-lite + vega-embed bundle, generated once and cached."""
from __future__ import annotations

import hashlib

import vl_convert as vlc

from .artifacts import VL_VERSION
from .cache import DiskCache


def javascript_bundle(cache: DiskCache) -> str:
    key = f"vega-bundle-{vlc.__version__}-vl{VL_VERSION}.js"
    text = cache.get("bundle", key)
    if text is None:
        text = vlc.javascript_bundle(vl_version=VL_VERSION)
        cache.put("bundle", key, text)
    return text


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
