"""The browser contract: the JSON files that `assets/loader.js` reads, shaped here and nowhere else.

Two kinds of file cross from the build to the browser:

- the page state (`assets/explainer/page/<hash>.json`), one per page with live figures or
  numbers: the scenario switch, every scenario the page was computed for, the page's sliders and
  the inline numbers with what they depend on;
- the figure payload (`assets/explainer/fig/<hash>.json`), one per figure: its Vega spec, the
  palette that recolours it, the default scenario's rows, the files that hold the other
  scenarios' rows, and the template of its text description;
- the variant files (`assets/explainer/fig/<hash>-<n>.json`), fetched when a reader switches:
  each holds the rows of several scenarios, by scenario key (`variant_files`).

Both carry `"version": VERSION`. The loader refuses a file of another version and leaves the
page as it was built (static pictures, default numbers), so a cached page never meets a loader
that would misread it. Bump VERSION on every change of shape, and change `loader.js` with it.

Scenarios are looked up by key, never by position: each scenario lists the switch choice it
stands for, field by field, and the loader picks the one whose choices match the selects.
Only scenarios that can run are listed (see pages.PageControls.unfit). Each lists, per switch
field, the choices that would not run from it (`blocked`: the loader disables those options)
and the sentence that says why (`note`), so a reader can never pick what cannot run.
Inline numbers index their `texts` by a scenario's place in the `scenarios` list, which this
module alone sets.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .. import theme
from ..compute.artifacts import FigureArtifacts, dumps

VERSION = 4

# Keys and the JSON types of their values, for the checks below and for readers of this file.
PAGE_STATE = {"version": int, "switch": dict, "scenarios": list, "default": str, "sliders": dict, "numbers": dict}
SCENARIO = {"key": str, "choices": dict, "blocked": dict, "note": str}
SLIDER = {"min": (int, float), "step": (int, float), "count": int, "default": (int, float), "decimals": int}
NUMBER = {"deps": list, "texts": list}
FIGURE_PAYLOAD = {"version": int, "spec": dict, "vega": dict, "palette": dict, "data": dict, "default": str,
                  "variants": dict, "map": dict, "describe": dict}


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


def page_state(controls, numbers, catalogue) -> dict:
    """The page state of a page whose reader controls are `controls` (pages.PageControls) and whose
    inline numbers are `numbers` (numbers.NumberResult by id); `catalogue` names the choices."""
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
                        "decimals": s.decimals} for n, s in controls.sliders.items()},
        "numbers": {n.id: {"deps": n.deps, "texts": n.texts} for n in numbers.values() if n.deps},
    }
    check_page_state(state)
    return state


def figure_payload(*, spec: dict, vega: dict, palette: dict, data: dict, default: str, variants: dict,
                   scenario_map: dict, describe: dict) -> dict:
    """The payload of one figure placed on a page. `data` is the default scenario's rows,
    `variants` the name of the variant file that holds each other scenario's rows, `scenario_map` the page's scenario
    key to the figure's own data key (figures that ignore a field share data)."""
    payload = {"version": VERSION, "spec": spec, "vega": vega, "palette": palette, "data": data,
               "default": default, "variants": variants, "map": scenario_map, "describe": describe}
    check_figure_payload(payload)
    return payload


def _check(obj: Any, shape: Mapping[str, Any], what: str) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"{what} must be an object, got {type(obj).__name__}")
    if set(obj) != set(shape):
        missing, extra = sorted(set(shape) - set(obj)), sorted(set(obj) - set(shape))
        raise ValueError(f"{what}: keys differ from the contract (missing {missing}, unexpected {extra})")
    for key, kind in shape.items():
        if isinstance(obj[key], bool) or not isinstance(obj[key], kind):
            raise ValueError(f"{what}: {key!r} must be {kind}, got {type(obj[key]).__name__}")


def check_page_state(state: dict) -> None:
    """ValueError unless `state` has the contract's shape, and its scenarios, their choices
    and the numbers' texts agree with each other."""
    _check(state, PAGE_STATE, "page state")
    if state["version"] != VERSION:
        raise ValueError(f"page state version {state['version']} is not {VERSION}")
    keys = []
    for i, s in enumerate(state["scenarios"]):
        _check(s, SCENARIO, f"scenario {i}")
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
    for name, s in state["sliders"].items():
        _check(s, SLIDER, f"slider {name}")
    for nid, n in state["numbers"].items():
        _check(n, NUMBER, f"number {nid}")
        size = 1
        for dep in n["deps"]:
            if dep == "scenario":
                size *= len(keys)
            elif dep in state["sliders"]:
                size *= state["sliders"][dep]["count"]
            else:
                raise ValueError(f"number {nid} depends on {dep!r}, which is neither the scenario nor a slider")
        if len(n["texts"]) != size:
            raise ValueError(f"number {nid}: {len(n['texts'])} texts for {size} positions")


def check_figure_payload(payload: dict) -> None:
    """ValueError unless `payload` has the contract's shape and its scenario map points at data it has."""
    _check(payload, FIGURE_PAYLOAD, "figure payload")
    if payload["version"] != VERSION:
        raise ValueError(f"figure payload version {payload['version']} is not {VERSION}")
    known = {payload["default"], *payload["variants"]}
    stray = sorted({v for v in payload["map"].values() if v not in known})
    if stray:
        raise ValueError(f"figure payload: scenario map points at data it does not have: {stray}")


def site_files(a: FigureArtifacts, scenario_map: dict[str, str], stem: str) -> dict[str, str]:
    """Site path -> content for one figure placed on a page.

    `<stem>.json` holds the Vega-Lite spec, its Vega compilation and the palette that recolours it, the
    default scenario's data and the names of the other scenarios' data files, fetched only
    when the reader switches to them.
    """
    files, variants = {}, {}
    # In key order, not in the order the data came in: a figure computed now and the same figure
    # read back from the cache (whose JSON sorts keys) must make the same files.
    for i, (keys, text) in enumerate(variant_files(a.data, a.default, dumps)):
        path = f"{stem}-{i + 1}.json"
        files[path] = text
        variants.update(dict.fromkeys(keys, path.rsplit("/", 1)[1]))
    files[f"{stem}.json"] = dumps(figure_payload(
        spec=a.spec, vega=a.vega, palette=theme.page_palette(), data=a.data[a.default], default=a.default,
        variants=variants, scenario_map=scenario_map, describe=a.describe))
    files[f"{stem}.csv"] = a.csv
    return files
