"""The loader's file as the browser gets it: its source with the contract's facts, joined here alone.

`assets/loader.js` is the body of one function, which reads `FACTS`; the build writes the file
that wraps it, with `contract.facts()` at its head, so the names the loader shares with the build are written once, by the
build, and the file's hashed name (site.py) changes whenever the facts or the source do. It is a
classic script, not a module, and declares nothing global of its own but `window.explainerGen`:
Material's instant navigation runs the page's scripts again on every page it shows, and the guard
below lets only the first run start the loader.

The source is read from disk on every call, so `mkdocs serve` picks up an edit at the next build.
"""
from __future__ import annotations

import json

from ..compute.cache import PACKAGE_ROOT
from . import contract

SOURCE = PACKAGE_ROOT / "assets" / "loader.js"


def loader_script(facts: dict | None = None) -> str:
    """The loader, ready to serve: the source inside a function that runs once per tab, `FACTS`
    (the contract's facts by default) at its head."""
    facts = contract.facts() if facts is None else facts
    body = SOURCE.read_text(encoding="utf-8")
    return ("(function () {\n"
            '"use strict";\n'
            "if (window.__explainerGen) return; // run again by instant navigation: already running\n"
            "window.__explainerGen = true;\n"
            f"var FACTS = {json.dumps(facts, sort_keys=True, ensure_ascii=False)};\n\n"
            f"{body.rstrip()}\n"
            "})();\n")
