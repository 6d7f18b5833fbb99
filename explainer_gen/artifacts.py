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
import json
import math
import re
from dataclasses import dataclass, field

import numpy as np
import vl_convert as vlc

from models.catalogue import Catalogue
from models.yamlsource import SourceError

from . import timing
from .controls import Resolved, Scenario, Slider
from .figures import REGISTRY, TableView
from . import theme

VL_VERSION = "6.4"  # the bundle's Vega-Lite; equal to altair's SCHEMA_VERSION (major.minor)
SVG_WIDTH = 640
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
    sizes: dict[str, int]             # scenario key -> gzip bytes of its data
    image_size: tuple[int, int]       # the static picture's width and height
    svg: str                          # the static picture, coloured by the page's CSS variables
    key: str = ""                     # the cache key of the request that made these
    # The heavy part, needed only to write the site files (empty when read back light):
    spec: dict = field(default_factory=dict)
    data: dict[str, dict[str, list]] = field(default_factory=dict)  # scenario key -> columns
    vega: dict = field(default_factory=dict)  # the spec compiled to Vega, in the palette's light values
    csv: str = ""

    HEAVY = ("spec", "data", "vega", "csv")

    def to_json(self, light: bool = False) -> dict:
        """Everything, or (`light`) only what the page's HTML needs."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if not (light and f.name in self.HEAVY)}
        d["table"] = vars(self.table)
        return d

    def light_json(self) -> dict:
        return self.to_json(light=True)

    @property
    def heavy(self) -> bool:
        return bool(self.spec)

    @classmethod
    def from_json(cls, d: dict) -> "FigureArtifacts":
        return cls(**{**d, "table": TableView(**d["table"]), "image_size": tuple(d["image_size"])})


def dumps(obj) -> str:
    """Deterministic compact JSON: same input, same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def gzip_size(text: str) -> int:
    return len(gzip.compress(text.encode("utf-8"), mtime=0))


def _round(values: np.ndarray) -> list:
    if values.dtype.kind == "O" and len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
        # Per-position sequences (e.g. outcomes per step); Vega-Lite flattens them in the browser.
        return [[int(x) if float(x).is_integer() else float(f"{x:.{SIGNIFICANT}g}") for x in v] for v in values]
    if values.dtype.kind in "USO":  # labels, e.g. a lane or a scheduler name
        return [str(v) for v in values.tolist()]
    if values.dtype.kind in "iub" or np.array_equal(values, np.round(values)):
        return [int(v) for v in values.tolist()]
    return [float(f"{v:.{SIGNIFICANT}g}") for v in values.tolist()]


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


def _csv(cols: dict[str, np.ndarray], labels: dict[str, str], r: Resolved) -> str:
    """Every slider position, each row naming the scenario it was computed for."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    scenario = [r.acc.name, r.cards, r.target.name, r.draft.name]
    writer.writerow(["accelerator", "cards", "target model", "draft model"] + [labels.get(c, c) for c in cols])
    for row in zip(*(_round(v) for v in cols.values())):
        writer.writerow([safe_csv_cell(x) for x in scenario + list(row)])
    return out.getvalue()


def safe_csv_cell(value):
    """Text that a spreadsheet would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def build_figure(req: FigureRequest, catalogue: Catalogue) -> FigureArtifacts:
    kind = REGISTRY[req.kind]
    timing.figures_computed += 1
    positions = math.prod(s.count for s in req.sliders.values())
    if positions > MAX_GRID_POSITIONS:
        raise SourceError(req.path, req.line, f"figure {req.kind!r}: the sliders make {positions:,} positions; "
                          f"at most {MAX_GRID_POSITIONS:,} can be precomputed")
    grid = {s.name: s.values() for s in req.sliders.values()}
    data, sizes, default_cols = {}, {}, None
    for scenario in req.scenarios:
        resolved = scenario.resolve(catalogue)
        with timing.in_models():
            cols = kind.compute(resolved, grid)
        _check_finite(cols, req, scenario)
        data[scenario.key] = {name: _round(values) for name, values in cols.items()}
        sizes[scenario.key] = gzip_size(dumps(data[scenario.key]))
        if default_cols is None:
            default_cols, default_resolved = cols, resolved

    spec = kind.chart(req.sliders).to_dict()  # altair validates against the Vega-Lite schema here
    spec.update(width="container", autosize={"type": "fit-x", "contains": "padding"},
                description=kind.describe(default_cols, default_resolved, req.sliders))
    spec["config"] = {**spec.get("config", {}), **theme.CONFIG}
    try:
        svg = static_svg(spec, data[req.scenarios[0].key])
    except ValueError as exc:
        raise SourceError(req.path, req.line, f"figure {req.kind!r}: {exc}") from None
    return FigureArtifacts(
        kind=req.kind, spec=spec, data=data, default=req.scenarios[0].key,
        vega=compile_for_page(spec), svg=svg, image_size=svg_size(svg),
        csv=_csv(default_cols, kind.columns, default_resolved),
        table=kind.table(default_cols, default_resolved, req.sliders),
        alt=spec["description"], sizes=sizes,
    )


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


def static_svg(spec: dict, columns: dict[str, list]) -> str:
    """The default slider state as one SVG for both schemes: what readers see until a figure
    comes alive, without JavaScript, and in print.

    vl-convert lays the text out with the shipped chart font, which the page also loads, so
    labels fit in any browser; colours are the palette's CSS variables, so the picture
    follows the page's scheme. The page inlines it (`html.static_picture`).
    """
    static = copy.deepcopy(spec)
    static["datasets"] = {**static.get("datasets", {}), "table": rows_of(columns)}
    static.update(width=SVG_WIDTH, autosize={"type": "pad"}, background="transparent")
    theme.register_fonts()
    svg = vlc.vegalite_to_svg(static, vl_version=VL_VERSION)
    return theme.static_svg_colours(svg, "the static picture")


def site_files(a: FigureArtifacts, scenario_map: dict[str, str], stem: str) -> dict[str, str]:
    """Site path -> content for one figure placed on a page.

    `<stem>.json` holds the Vega-Lite spec, its Vega compilation and the palette that recolours it, the
    default scenario's data and the names of the other scenarios' data files, fetched only
    when the reader switches to them.
    """
    files, variants = {}, {}
    for i, key in enumerate(k for k in a.data if k != a.default):
        path = f"{stem}-{i + 1}.json"
        files[path] = dumps(a.data[key])
        variants[key] = path.rsplit("/", 1)[1]
    payload = {"spec": a.spec, "vega": a.vega, "palette": theme.page_palette(), "data": a.data[a.default],
               "default": a.default, "variants": variants, "map": scenario_map}
    files[f"{stem}.json"] = dumps(payload)
    files[f"{stem}.csv"] = a.csv
    return files
