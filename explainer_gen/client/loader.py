"""The loader's file as the browser gets it: its parts joined, with the contract's facts at its head.

The loader's source is a few parts with one job each, `assets/loader/*.js`, listed in `PARTS` in the
order they are joined. The build joins them here alone (no bundler) into one classic script: one
function that runs once per tab and starts with `var FACTS = contract.facts()`, so the names the
loader shares with the build are written once, by the build, and the file's hashed name (site/collect.py)
changes whenever the facts or a part do. The parts share that function's scope.

One classic file, not ES modules: Material's instant navigation does keep an external module
script's type (it copies a script's attributes when it re-creates it, and a module runs once per
document), but modules would cost a request and a round trip per part, and each part would need a
hashed name that the others import by, which the build would have to write into their import
statements: a bundler by another name.

Material's instant navigation runs the page's scripts again on every page it shows; the guard at
the head lets only the first run start the loader. The parts are read from disk on every call, so
`mkdocs serve` picks up an edit at the next build.
"""
from __future__ import annotations

import json

from ..cache import PACKAGE_ROOT
from . import contract

FOLDER = PACKAGE_ROOT / "assets" / "loader"

# Each part and its job, in the order they are joined (the last starts the loader).
PARTS = {
    "base.js": "what the others share: FACTS' names, the page and reader's state, fetching, pauses",
    "controls.js": "the sliders and the switch: the reader's state, snapped, shown, and kept in the URL",
    "numbers.js": "the prose's numbers: the text at the reader's position, on screen first",
    "how.js": "each computed number's card: how it is made, beside it on hover, focus or a tap",
    "descriptions.js": "what a screen reader hears: figures' descriptions and the changes announced",
    "figures.js": "figures going live: the Vega bundle, data by scenario, one figure per task; following the sliders",
    "exports.js": "figures leaving the page: their files and links, and in print at the reader's state",
    "lifecycle.js": "each page set up and torn down, a reader's moves handed to the others",
}


def loader_script(facts: dict | None = None) -> str:
    """The loader, ready to serve: the parts, joined in order inside a function that runs once per
    tab, `FACTS` (the contract's facts by default) at its head."""
    facts = contract.facts() if facts is None else facts
    parts = "\n".join(f"// ---- {name}: {job}\n{(FOLDER / name).read_text(encoding='utf-8').rstrip()}\n"
                      for name, job in PARTS.items())
    return ("(function () {\n"
            '"use strict";\n'
            "if (window.__explainerGen) return; // run again by instant navigation: already running\n"
            "window.__explainerGen = true;\n"
            f"var FACTS = {json.dumps(facts, sort_keys=True, ensure_ascii=False)};\n\n"
            f"{parts}"
            "})();\n")
