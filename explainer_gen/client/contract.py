"""The browser contract: the JSON files that the loader reads, shaped here and nowhere else, and the
facts the loader and the build share.

Two kinds of file cross from the build to the browser:

- the page state (`assets/explainer/page/<hash>.json`), one per page with live figures or
  numbers: the scenario switch, every scenario the page was computed for, every slider of the
  page (its figures' too) and the inline numbers with what they depend on;
- the figure payload (`assets/explainer/fig/<hash>.json`), one per figure: its Vega spec, the
  palette that recolours it, the default scenario's rows, the files that hold the other
  scenarios' rows, and the template of its text description;
- the variant files (`assets/explainer/fig/<hash>-<n>.json`), fetched when a reader switches:
  each holds the rows of several scenarios, by scenario key (`variant_files`);
- the card files (`assets/explainer/how/<hash>.json`), one per computed number, fetched when its
  card first opens: what the card shows at every state of the page, as templates of HTML and the
  texts that change in them (`number_card`; compute/holes.py), laid out as the numbers' texts are.

Their shapes are JSON Schemas (Draft 2020-12) beside this file, `schema/*.schema.json`, the one
statement of them: the tests validate every file a real build writes against them
(tests/test_contract.py). jsonschema is a test dependency only: what is written here depends on
this code alone, never on what an author wrote, so a test over a real build sees every shape a
build can write. What a schema cannot say (that the scenarios, their choices and the numbers'
texts agree with each other) `check_page_state` checks as every build writes it.

Both carry `"version": VERSION`. The loader refuses a file of another version and leaves the
page as it was built (static pictures, default numbers), so a cached page never meets a loader
that would misread it. Bump VERSION on every change of shape, in the schemas too.

The loader itself spells out none of the names it shares with the build: `facts()` (the contract
version, the class and attribute names of the page's HTML, the name that stands for the switch in
a number's dependencies, the chart font and its files, the classes that paint a static picture's
colours) is written once, at the head of the loader's file
(client/loader.py). Slider arithmetic is the page state's: each slider's `min`, `step`, `count`
and `decimals` as Python computes them (sources/controls.Slider), which the loader snaps and
indexes by, never deriving them itself.

Scenarios are looked up by key, never by position: each scenario lists the switch choice it
stands for, field by field, and the loader picks the one whose choices match the selects.
Only scenarios that can run are listed (see pages.PageControls.unfit). Each lists, per switch
field, the choices that would not run from it (`blocked`: the loader disables those options)
and the sentence that says why (`note`), so a reader can never pick what cannot run.
Inline numbers index their `texts` in C order over their `deps`: a scenario's place in the
`scenarios` list (which this module alone sets), then each slider's position.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping

from .. import theme
from ..compute.artifacts import FigureArtifacts, dumps
from ..compute import layout
from ..compute.holes import HOLE_CLOSE, HOLE_OPEN
from ..compute.numbers import SCENARIO_DEP
from .. import names

VERSION = 7

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
# The schema of each kind of file (read by the tests).
SCHEMAS = {kind: SCHEMA_DIR / f"{kind}.schema.json" for kind in ("page-state", "figure", "variant", "card")}


def facts() -> dict:
    """What the loader shares with the build, as it receives it (`FACTS` in the loader's file)."""
    return {
        "version": VERSION,
        **names.names(),
        "scenario": SCENARIO_DEP,
        # the marks in a card file's templates where a hole's text goes (number_card)
        "holes": {"open": HOLE_OPEN, "close": HOLE_CLOSE},
        "font": {"family": theme.FONT_FAMILY, "weights": sorted({w for _, w in theme.FONT_FILES.values()}),
                 # each weight's file, from the folder that holds the loader (a saved SVG embeds them)
                 "files": {str(w): path for path, (_, w) in theme.FONT_FILES.items()}},
        # a figure's layout, as the page's CSS sets it on its view (compute/layout.py: "narrow" or
        # none, for wide), and the prefix of the narrow picture's ids after the figure's anchor
        "layout": {"property": layout.LAYOUT_PROPERTY, "narrowPrefix": layout.NARROW_PREFIX},
        # each chart colour's CSS variable and the classes that paint with it in a static picture
        "paints": {theme.css_var(role): {prop: theme.paint_class(prop, role) for prop in ("fill", "stroke")}
                   for role in theme.PALETTE},
    }


# A variant file holds the rows of consecutive scenarios (in key order) up to about this many
# characters of JSON, 10 to 25 KB gzip: a build then copies tens of files, not hundreds, and a
# reader's switch fetches little it does not show.
VARIANT_FILE_CHARS = 100_000


def variant_files(data: Mapping[str, Any], default: str, dumps: Callable[[Any], str]) -> list[tuple[list[str], str]]:
    """The rows of every scenario but `default` as variant files: (the keys a file holds, its text,
    a JSON object of rows by key). Keys go in sorted order, so neighbours differ in the switch's
    last fields; a file closes before it would pass VARIANT_FILE_CHARS, and a scenario larger than
    that has a file to itself."""
    files: list[tuple[list[str], str]] = []
    keys: list[str] = []
    size = 0
    for key in sorted(k for k in data if k != default):
        rows = len(dumps(data[key])) + len(key) + 4
        if keys and size + rows > VARIANT_FILE_CHARS:
            files.append((keys, dumps({k: data[k] for k in keys})))
            keys, size = [], 0
        keys.append(key)
        size += rows
    if keys:
        files.append((keys, dumps({k: data[k] for k in keys})))
    return files


def choice_text(value: Any) -> str:
    """A switch choice as the browser's `<select>` holds it (an option's value is a string)."""
    return str(value)


def page_state(controls, numbers, sliders, catalogue, cards: Mapping[str, str] | None = None) -> dict:
    """The page state of a page whose reader controls are `controls` (pages.PageControls), whose
    inline numbers are `numbers` (numbers.NumberResult by id) and whose sliders, its figures' too,
    are `sliders` (pages.PageBuild.every_slider); `catalogue` names the choices. `cards`: each
    computed number's card file (`number_card`) by its entry's id, relative to the page state."""
    grid = controls.grid()
    state = {
        "version": VERSION,
        "switch": {field: [choice_text(v) for v in values] for field, values in controls.switch.items()},
        "scenarios": [{"key": s.key, "choices": {f: choice_text(getattr(s, f)) for f in controls.switch},
                       "blocked": {f: [choice_text(v) for v in vs] for f, vs in controls.blocked(s).items() if vs},
                       "note": controls.note(s, catalogue)}
                      for s in grid],
        "default": controls.scenario.key,
        "sliders": {n: {"min": s.min, "step": s.step, "count": s.count, "default": s.default,
                        "decimals": s.decimals} for n, s in sliders.items()},
        "numbers": {n.id: {"deps": n.deps, "texts": n.texts} for n in numbers.values() if n.deps},
        "cards": dict(cards or {}),
    }
    check_page_state(state)
    return state


def figure_payload(*, spec: dict, vega: dict, narrow: dict, palette: dict, data: dict, default: str, variants: dict,
                   scenario_map: dict, describe: dict) -> dict:
    """The payload of one figure placed on a page. `vega` is the chart compiled for a desktop's
    column, `narrow` for a phone's (compute/layout.py); `data` is the default scenario's rows,
    `variants` the name of the variant file that holds each other scenario's rows, `scenario_map` the page's scenario
    key to the figure's own data key (figures that ignore a field share data)."""
    payload = {"version": VERSION, "spec": spec, "vega": vega, "narrow": narrow, "palette": palette, "data": data,
               "default": default, "variants": variants, "map": scenario_map, "describe": describe}
    check_figure_payload(payload)
    return payload


def number_card(templates: list[str], which: dict, holes: list[dict]) -> dict:
    """A number's card file: `templates` (render/how.card of each of compute/holes.Holes's), and the
    template and each hole's text at every state, as Holes writes them."""
    card = {"version": VERSION, "templates": templates, "which": which, "holes": holes}
    check_number_card(card)
    return card


def check_number_card(card: dict) -> None:
    """ValueError unless every state names a template that exists, and every mark in a template
    names a hole that exists (the shape is the schema's, schema/card.schema.json)."""
    count = len(card["templates"])
    if any(not 0 <= t < count for t in card["which"]["texts"]):
        raise ValueError(f"a number's card names a template beyond its {count}")
    marks = {int(m) for t in card["templates"] for m in _MARK.findall(t)}
    if not marks <= set(range(len(card["holes"]))):
        raise ValueError(f"a number's card marks holes {sorted(marks - set(range(len(card['holes']))))}, "
                         f"beyond its {len(card['holes'])}")


_MARK = re.compile(f"{HOLE_OPEN}(\\d+){HOLE_CLOSE}")


def check_page_state(state: dict) -> None:
    """ValueError unless the scenarios of `state`, their choices and the numbers' texts agree with
    each other. Its shape is the schema's (schema/page-state.schema.json), which this takes as given."""
    keys = []
    for s in state["scenarios"]:
        if set(s["choices"]) != set(state["switch"]):
            raise ValueError(f"scenario {s['key']}: choices for {sorted(s['choices'])}, switch has "
                             f"{sorted(state['switch'])}")
        for field, value in s["choices"].items():
            if value not in state["switch"][field]:
                raise ValueError(f"scenario {s['key']}: {field} {value!r} is not a choice of the switch")
        for field, values in s["blocked"].items():
            if field not in state["switch"] or not set(values) <= set(state["switch"][field]) - {s["choices"][field]}:
                raise ValueError(f"scenario {s['key']}: blocks {field} {values!r}, which are not other choices of the switch")
        if bool(s["blocked"]) != bool(s["note"]):
            raise ValueError(f"scenario {s['key']}: blocked choices and the note that explains them go together")
        keys.append(s["key"])
    if len(set(keys)) != len(keys):
        raise ValueError("page state: two scenarios share a key")
    if len({tuple(sorted(s["choices"].items())) for s in state["scenarios"]}) != len(keys):
        raise ValueError("page state: two scenarios stand for the same switch choice")
    if state["default"] not in keys:
        raise ValueError(f"page state: default {state['default']} is not among the scenarios")
    for nid, n in state["numbers"].items():
        size = 1
        for dep in n["deps"]:
            if dep == SCENARIO_DEP:
                size *= len(keys)
            elif dep in state["sliders"]:
                size *= state["sliders"][dep]["count"]
            else:
                raise ValueError(f"number {nid} depends on {dep!r}, which is neither the scenario nor a slider")
        if len(n["texts"]) != size:
            raise ValueError(f"number {nid}: {len(n['texts'])} texts for {size} positions")


def check_figure_payload(payload: dict) -> None:
    """ValueError unless the scenario map of `payload` points at data it has (its shape is the
    schema's, schema/figure.schema.json)."""
    known = {payload["default"], *payload["variants"]}
    stray = sorted({v for v in payload["map"].values() if v not in known})
    if stray:
        raise ValueError(f"figure payload: scenario map points at data it does not have: {stray}")


def site_files(a: FigureArtifacts, scenario_map: dict[str, str], stem: str) -> dict[str, str]:
    """Site path -> content for one figure placed on a page.

    `<stem>.json` holds the Vega-Lite spec, its Vega compilation and the palette that recolours it, the
    default scenario's data and the names of the other scenarios' data files, fetched only
    when the reader switches to them. `<stem>.svg` is the static picture as a file that stands
    alone (theme.standalone_svg), which the figure links for readers without JavaScript.
    """
    files, variants = {}, {}
    # In key order, not in the order the data came in: a figure computed now and the same figure
    # read back from the cache (whose JSON sorts keys) must make the same files.
    for i, (keys, text) in enumerate(variant_files(a.data, a.default, dumps)):
        path = f"{stem}-{i + 1}.json"
        files[path] = text
        variants.update(dict.fromkeys(keys, path.rsplit("/", 1)[1]))
    files[f"{stem}.json"] = dumps(figure_payload(
        spec=a.spec, vega=a.vega, narrow=a.narrow_vega, palette=theme.page_palette(), data=a.data[a.default], default=a.default,
        variants=variants, scenario_map=scenario_map, describe=a.describe))
    files[f"{stem}.csv"] = a.csv
    files[f"{stem}.svg"] = theme.standalone_svg(a.svg)  # the static picture, to save without JavaScript
    return files
