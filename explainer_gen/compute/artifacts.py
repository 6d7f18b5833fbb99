"""Run a figure's model over every slider position and turn the result into site files.

No MkDocs here: given a request and a catalogue this returns the Vega-Lite spec, the
precomputed data, the static SVG, the CSV and the default-state table.
"""
from __future__ import annotations

import copy
import dataclasses
import csv
import gzip
import io
import itertools
import json
import math
import re
import string
from dataclasses import dataclass, field

import numpy as np
import vl_convert as vlc

from models.catalogue import Catalogue
from models.yamlsource import SourceError

from .timing import Timing
from . import layout
from ..sources.controls import SCENARIO_TABLE, Scenario, Slider
from .resolved import Resolved, resolve
from .figures import REGISTRY, TableView
from .figures.base import Column, rows_at
from .. import theme

VL_VERSION = "6.4"  # the bundle's Vega-Lite; equal to altair's SCHEMA_VERSION (major.minor)
MAX_GRID_POSITIONS = 20_000
SIGNIFICANT = 4  # digits kept for model results; a chart cannot show more


@dataclass(frozen=True)
class FigureRequest:
    kind: str
    sliders: dict[str, Slider]
    scenarios: tuple[Scenario, ...]  # the first is the default; the rest are reader-selectable variants
    caption: str
    path: str = "<figure>"
    line: int = 1

    def identity(self) -> dict:
        """Everything that decides the output, for the cache key."""
        return {"kind": self.kind, "caption": self.caption,
                "sliders": [vars(s) for s in self.sliders.values()],
                "scenarios": [vars(s) for s in self.scenarios]}


@dataclass
class FigureArtifacts:
    kind: str
    default: str                      # the default scenario's key
    table: TableView
    alt: str
    sizes: dict[str, int]             # the default scenario's key -> gzip bytes of its data (the page loads it)
    image_size: tuple[int, int]       # the static picture's width and height
    svg: str                          # the static picture, coloured by the page's CSS variables
    # The same picture laid out for a phone's column (compute/layout.py), and its size.
    narrow_svg: str
    narrow_size: tuple[int, int]
    # The description's template, its fields, and per scenario key each field's texts over
    # the sliders it depends on (`describe_positions`), for the browser to keep it true.
    describe: dict = field(default_factory=dict)
    key: str = ""                     # the cache key of the request that made these
    # The heavy part, needed only to write the site files (empty when read back light):
    spec: dict = field(default_factory=dict)
    data: dict[str, dict[str, list]] = field(default_factory=dict)  # scenario key -> columns
    vega: dict = field(default_factory=dict)  # the spec compiled to Vega, in the palette's light values
    narrow_vega: dict = field(default_factory=dict)  # the narrow layout's, likewise
    csv: str = ""

    HEAVY = ("spec", "data", "vega", "narrow_vega", "csv", "describe")

    def to_json(self, light: bool = False) -> dict:
        """Everything, or (`light`) only what the page's HTML needs."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if not (light and f.name in self.HEAVY)}
        d["table"] = self.table.to_json()
        return d

    def light_json(self) -> dict:
        return self.to_json(light=True)

    @property
    def heavy(self) -> bool:
        return bool(self.spec)

    @classmethod
    def from_json(cls, d: dict) -> "FigureArtifacts":
        return cls(**{**d, "table": TableView.from_json(d["table"]), "image_size": tuple(d["image_size"]),
                      "narrow_size": tuple(d["narrow_size"])})


def dumps(obj) -> str:
    """Deterministic compact JSON: same input, same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def gzip_size(text: str) -> int:
    return len(gzip.compress(text.encode("utf-8"), mtime=0))


def _round_sequence(v: np.ndarray) -> list:
    if v.dtype.kind in "iub":
        return [int(x) for x in v.tolist()]
    return [int(x) if float(x).is_integer() else float(f"{x:.{SIGNIFICANT}g}") for x in v.tolist()]


def _round(values: np.ndarray) -> list:
    if values.dtype.kind == "O" and len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
        # Per-position sequences (e.g. outcomes per step); Vega-Lite flattens them in the browser.
        return [_round_sequence(np.asarray(v)) for v in values]
    if values.dtype.kind in "USO":  # labels, e.g. a lane or a scheduler name
        return [str(v) for v in values.tolist()]
    if values.dtype.kind in "iub" or np.array_equal(values, np.round(values)):
        return [int(v) for v in values.tolist()]
    # Each distinct value is formatted once: columns repeat their slider values and scenarios' plateaus.
    distinct, where = np.unique(values, return_inverse=True)
    rounded = [float(f"{v:.{SIGNIFICANT}g}") for v in distinct.tolist()]
    return [rounded[i] for i in where.ravel().tolist()]


def _check_finite(cols: dict[str, np.ndarray], req: FigureRequest, scenario: Scenario) -> None:
    for name, values in cols.items():
        if values.dtype.kind in "USO":
            continue
        bad = ~np.isfinite(values.astype(float))
        if bad.any():
            i = int(np.argmax(bad))
            where = ", ".join(f"{s}={cols[s][i]:g}" for s in req.sliders if s in cols)
            raise SourceError(req.path, req.line, f"figure {req.kind!r}: the model gave {values[i]} for "
                              f"{name!r} at {where or 'the only position'} (scenario {scenario.key})")


def _csv(cols: dict[str, np.ndarray], columns: dict[str, Column], r: Resolved, catalogue: Catalogue) -> str:
    """Every slider position, each row naming the scenario it was computed for; each column headed
    by its declaration (`Column.header`, "time to first token, p99 (ms)")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f.csv for f in SCENARIO_TABLE] + [columns[c].header if c in columns else c for c in cols])
    scenario = r.scenario.names(catalogue)
    names = list(cols)
    for row in zip(*(_round(v) for v in cols.values())):
        named = dict(zip(names, row))
        writer.writerow([safe_csv_cell(x) for x in scenario]
                        + [safe_csv_cell(x) if c not in columns or columns[c].holds(named) else "" for c, x in named.items()])
    return out.getvalue()


def safe_csv_cell(value):
    """Text that a spreadsheet would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def build_figure(req: FigureRequest, catalogue: Catalogue, timing: Timing | None = None) -> FigureArtifacts:
    kind = REGISTRY[req.kind]
    timing = timing or Timing()
    timing.figures_computed += 1
    positions = math.prod(s.count for s in req.sliders.values())
    if positions > MAX_GRID_POSITIONS:
        raise SourceError(req.path, req.line, f"figure {req.kind!r}: the sliders make {positions:,} positions; "
                          f"at most {MAX_GRID_POSITIONS:,} can be precomputed")
    grid = {s.name: s.values() for s in req.sliders.values()}
    fields = template_fields(kind.description)
    data, sizes, described, default_cols = {}, {}, {}, None
    for scenario in req.scenarios:
        resolved = resolve(scenario, catalogue)
        with timing.in_models():
            cols = kind.compute(resolved, grid)
        _check_finite(cols, req, scenario)
        with timing.phase("data"):
            data[scenario.key] = {name: _round(values) for name, values in cols.items()}
            if not sizes:  # the default scenario's data is what the page's budget counts
                sizes[scenario.key] = gzip_size(dumps(data[scenario.key]))
        with timing.phase("describe"):
            described[scenario.key] = describe_positions(kind, cols, resolved, req.sliders, fields)
        if default_cols is None:
            default_cols, default_resolved = cols, resolved
    defaults = {s.name: s.default for s in req.sliders.values()}
    description = fill(kind.description, fields, [text_at(described[req.scenarios[0].key][f], defaults, req.sliders)
                                                  for f in fields])

    # altair's own validation costs about 0.1 s a figure; tests/test_build.py validates every shipped spec.
    with timing.phase("chart"):
        spec = kind.chart(req.sliders).to_dict(validate=False)
    spec.update(width="container", autosize={"type": "fit-x", "contains": "padding"}, description=description)
    spec["config"] = {**spec.get("config", {}), **theme.CONFIG}
    rows = rows_of(data[req.scenarios[0].key])
    try:
        with timing.phase("picture"):
            svg = static_svg(spec, rows)
        with timing.phase("narrow"):  # all that the phone's layout adds, its compiled spec too
            narrow, narrow_svg = narrow_picture(kind, spec, rows)
            narrow_vega = compile_for_page(narrow)
    except ValueError as exc:
        raise SourceError(req.path, req.line, f"figure {req.kind!r}: {exc}") from None
    with timing.phase("vega"):
        vega = compile_for_page(spec)
    with timing.phase("data"):
        csv_text = _csv(default_cols, kind.columns, default_resolved, catalogue)
        table = kind.table(default_cols, default_resolved, req.sliders)
    return FigureArtifacts(
        kind=req.kind, spec=spec, data=data, default=req.scenarios[0].key,
        vega=vega, svg=svg, image_size=svg_size(svg),
        narrow_vega=narrow_vega, narrow_svg=narrow_svg, narrow_size=svg_size(narrow_svg),
        describe={"template": kind.description, "fields": fields, "values": described},
        csv=csv_text, table=table, alt=spec["description"], sizes=sizes,
    )


def template_fields(template: str) -> list[str]:
    """The `{field}` names of a description template, in order of first use."""
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    return list(dict.fromkeys(names))


def fill(template: str, fields: list[str], texts: list[str]) -> str:
    """The template with its fields' texts: the same substitution the loader makes."""
    return template.format(**dict(zip(fields, texts)))


# Grids up to this many slider positions have their descriptions' dependencies read exactly.
EXACT_POSITIONS = 256


def describe_positions(kind, cols: dict[str, np.ndarray], r: Resolved, sliders: dict[str, Slider],
                       fields: list[str]) -> dict[str, dict]:
    """Each description field's text at every slider position it depends on.

    Returns field -> {"deps": slider names, "texts": texts in C order over those sliders},
    the same shape as a page's inline numbers. Where the grid has at most `EXACT_POSITIONS`
    positions, every one is read and a field's sliders are those along which its text changes
    anywhere. Beyond that, they are found by moving one slider at a time from the defaults, and
    fields are evaluated over the product of their sliders only, so a description costs a few
    calls per slider position, not one per grid point. (A test evaluates every grid point and
    checks the two agree.)
    """
    axes = list(sliders.values())
    seen: dict[tuple[int, ...], dict[str, str]] = {}

    def facts(index: tuple[int, ...]) -> dict[str, str]:
        if index not in seen:
            position = {s.name: float(s.values()[i]) for s, i in zip(axes, index)}
            at = rows_at(cols, sliders, position)
            got = kind.facts(cols, at, r, position)
            missing = set(fields) - set(got)
            if missing:
                raise ValueError(f"figure kind {kind.name!r}: facts() gave no {', '.join(sorted(missing))}")
            seen[index] = {f: str(got[f]) for f in fields}
        return seen[index]

    home = tuple(s.index_of(s.default) for s in axes)
    base = facts(home)
    deps: dict[str, list[int]] = {f: [] for f in fields}
    counts = [s.count for s in axes]
    if math.prod(counts) <= EXACT_POSITIONS:
        # Few enough positions to read them all: a field depends on a slider when its text
        # changes along that slider anywhere, not only from the defaults (a chart can pin a value
        # at the default of one slider that moves at another slider's other positions).
        for f in fields:
            grid = np.array([facts(index)[f] for index in itertools.product(*map(range, counts))],
                            dtype=object).reshape(counts)
            deps[f] = [a for a in range(len(axes)) if (grid != grid.take([0], axis=a)).any()]
    else:
        for a, s in enumerate(axes):
            for i in range(s.count):
                moved = facts(home[:a] + (i,) + home[a + 1:])
                for f in fields:
                    if moved[f] != base[f] and a not in deps[f]:
                        deps[f].append(a)
    out = {}
    for f in fields:
        texts = []
        for combo in itertools.product(*(range(axes[a].count) for a in deps[f])):
            index = list(home)
            for a, i in zip(deps[f], combo):
                index[a] = i
            texts.append(facts(tuple(index))[f])
        out[f] = {"deps": [axes[a].name for a in deps[f]], "texts": texts}
    return out


def text_at(entry: dict, position: dict[str, float], sliders: dict[str, Slider]) -> str:
    """A field's text at a slider position: the lookup the loader makes."""
    index = 0
    for name in entry["deps"]:
        s = sliders[name]
        index = index * s.count + s.index_of(position[name])
    return entry["texts"][index]


def rows_of(columns: dict[str, list]) -> list[dict]:
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def compile_for_page(spec: dict) -> dict:
    """The Vega-Lite spec compiled to Vega for the page's loader, once for both schemes.

    Compiling here means the browser needs only the Vega runtime, not the Vega-Lite
    compiler. Colours stay the palette's light values, which the loader replaces with the
    page's current ones. The page drives the params from its own HTML controls, so `bind` goes.
    """
    page = copy.deepcopy(spec)
    page["params"] = [{k: v for k, v in p.items() if k != "bind"} for p in page.get("params", [])]
    page["datasets"] = {**page.get("datasets", {}), "table": []}
    return vlc.vegalite_to_vega(page, vl_version=VL_VERSION)


def svg_size(svg: str) -> tuple[int, int]:
    m = re.search(r'<svg[^>]*?\swidth="(\d+(?:\.\d+)?)"[^>]*?\sheight="(\d+(?:\.\d+)?)"', svg)
    return (round(float(m.group(1))), round(float(m.group(2)))) if m else (0, 0)


def narrow_picture(kind, spec: dict, rows: list[dict]) -> tuple[dict, str]:
    """The figure's spec laid out for a phone's column, and its static picture at the default
    state (`rows`): the generic changes (layout.narrow) and the kind's own (`kind.narrow`), drawn;
    where a legend then reaches past the picture's right edge (as Vega laid it out, measuring the
    labels in the chart font), the legends go to one column and the picture is drawn again."""
    narrow = kind.narrow(layout.narrow(spec))
    drawn = _draw(narrow, rows, layout.NARROW_WIDTH)
    fitted = layout.fit_legends(narrow, layout.legend_rights(drawn))
    if fitted is not None:
        narrow, drawn = fitted, _draw(fitted, rows, layout.NARROW_WIDTH)
    return narrow, _finish(drawn)


def _with_rows(spec: dict, rows: list[dict], width: int) -> dict:
    static = copy.deepcopy(spec)
    static["datasets"] = {**static.get("datasets", {}), "table": rows}
    static.update(width=width, background="transparent")  # autosize as the live view's
    theme.register_fonts()
    return static


def static_svg(spec: dict, rows: list[dict], width: int = layout.COLUMN_WIDTH) -> str:
    """The default slider state (`rows`) as one SVG for both schemes, laid out at `width`: what
    readers see until a figure comes alive, without JavaScript, and in print.

    vl-convert lays the text out with the shipped chart font, which the page also loads, so
    labels fit in any browser; colours are the palette's CSS variables, so the picture
    follows the page's scheme. The page inlines it (`render.blocks.static_picture`).
    """
    return _finish(_draw(spec, rows, width))


def _draw(spec: dict, rows: list[dict], width: int) -> str:
    """vl-convert's SVG of `spec` at the default state, laid out at `width`, as it draws it."""
    return vlc.vegalite_to_svg(_with_rows(spec, rows, width), vl_version=VL_VERSION)


def _finish(svg: str) -> str:
    """A drawn picture (`_draw`) as the page inlines it, once its text is known to be drawable."""
    missing = theme.missing_glyphs(svg)
    if missing:
        raise ValueError(f"the chart font has no {', '.join(repr(c) for c in missing)}; add them to "
                         f"tools/make_chart_font.py and run it, or write the label without them")
    return theme.static_svg_colours(svg)
