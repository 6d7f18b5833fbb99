"""The two layouts a figure is drawn in: one for a desktop's column, one for a phone's.

A figure's Vega-Lite spec is written once, for the wide layout. A phone's column (358 px on a
390 px phone) would scale that picture to about half size, its 12 px labels to 6 px, so every
figure is also laid out at `NARROW_WIDTH`, where its labels are drawn at their own size. The
page shows the narrow picture, and the loader embeds the narrow live view, in a column narrower
than `NARROW_BELOW`: the width below which the wide picture's smallest label would be drawn
under `MIN_LABEL_PX` (CSS `@container`, assets/explainer.css; the loader's `layoutFor`).

`narrow` makes the narrow spec from the wide one: the plot takes the phone's width, legends go
below the plot, one under another, each in as many columns (up to `NARROW_LEGEND_COLUMNS`) as
fit the width by the labels' widths as Vega measures them in the chart font (`fit_legends`, from
the picture as drawn), and axis labels are cut to `NARROW_LABEL_LIMIT` pixels. A figure kind
whose chart needs more (a headline broken over two lines, a note set elsewhere) adds it in its own
`narrow` method (figures/base.py).
"""
from __future__ import annotations

import copy
import math
import re

from ..names import CLASS

# The article column's width in a 1280 px window (Material's layout; wider windows have wider
# columns). The static picture is laid out at this width as the live view is laid out in such a
# column (the spec's width "container", autosize fit-x, whose plot keeps its height at any width),
# so in any column at least this wide a figure that goes live keeps its height to the pixel
# (tests/test_pictures.py). A narrower column scales the picture down.
COLUMN_WIDTH = 688
# A 390 px phone's column (Material's page margins take 16 px each side).
NARROW_WIDTH = 358
# The smallest chart label a reader is asked to read, in CSS px, and the size the charts set.
MIN_LABEL_PX = 10
LABEL_PX = 12
# The column below which the wide picture would draw a label under MIN_LABEL_PX.
NARROW_BELOW = math.ceil(COLUMN_WIDTH * MIN_LABEL_PX / LABEL_PX)
# The narrow picture grows with the column up to this share of its own width, so that in a
# column between a phone's and NARROW_BELOW its labels stay near their set size.
NARROW_GROWTH = 1.25
NARROW_LEGEND_COLUMNS = 2
NARROW_LABEL_LIMIT = 130

# The narrow picture's ids start with the figure's anchor and this (render/blocks.py).
NARROW_PREFIX = "narrow"


def css() -> str:
    """The page's rules that show a figure the picture of its layout, by the figure's own width (a
    container query: the figure is the container). A browser without container queries shows
    the wide picture."""
    fig, frame = f".md-typeset .{CLASS.figure}", f".{CLASS.picture}"
    return (f"/* A figure's two pictures (explainer_gen/compute/layout.py): the narrow one below {NARROW_BELOW} px. */\n"
            f"{fig} {{ container-type: inline-size; }}\n"
            f"{fig} {frame}.{CLASS.narrow} {{ display: none; }}\n"
            f"@container (width < {NARROW_BELOW}px) {{ {fig} {frame}.{CLASS.wide} {{ display: none; }} "
            f"{fig} {frame}.{CLASS.narrow} {{ display: block; }} }}\n")


def _each(node, key: str, visit) -> None:
    """Call `visit` on every dict held under `key` anywhere in a Vega-Lite spec (`legend`: the
    encodings' legend definitions; `axis`: their axes')."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key and isinstance(value, dict):
                visit(value)
            else:
                _each(value, key, visit)
    elif isinstance(node, list):
        for value in node:
            _each(value, key, visit)


# Where a text mark of a narrow chart starts a new line (`break_lines`).
LINE_BREAK = "\n"


def text_marks(node):
    """Every text mark's definition in a Vega-Lite spec (a `mark` given as a string becomes a dict
    in place, so that what is yielded can be changed), with the layer that holds it."""
    if isinstance(node, dict):
        mark = node.get("mark")
        if mark == "text":
            node["mark"] = mark = {"type": "text"}
        if isinstance(mark, dict) and mark.get("type") == "text":
            yield mark, node
        for key, value in node.items():
            if key != "mark":
                yield from text_marks(value)
    elif isinstance(node, list):
        for value in node:
            yield from text_marks(value)


def break_lines(spec: dict, lines: dict[str, list[str]]) -> dict:
    """`spec` (changed in place and returned) with each literal text that a calculate transform
    writes (`'text'`) and that `lines` holds set over the lines given for it, and every text mark
    breaking its lines at LINE_BREAK. A text given that the spec does not write is an error: the
    chart's words changed and its narrow layout was not told."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            if "calculate" in node and isinstance(node["calculate"], str):
                for text, parts in lines.items():
                    quoted = "'" + text + "'"
                    if quoted in node["calculate"]:
                        node["calculate"] = node["calculate"].replace(quoted, "'" + "\\n".join(parts) + "'")
                        found.add(text)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for text, parts in lines.items():
        if " ".join(parts) != text:
            raise ValueError(f"the lines {parts!r} do not make the text {text!r}")
    walk(spec)
    missing = sorted(set(lines) - found)
    if missing:
        raise ValueError(f"the chart writes no text {missing[0]!r} to break over lines")
    for mark, _ in text_marks(spec):
        mark.setdefault("lineBreak", LINE_BREAK)
    return spec


def narrow(spec: dict) -> dict:
    """The wide Vega-Lite `spec` laid out for a phone's column (see the module's docstring)."""
    out = copy.deepcopy(spec)

    def legend(d: dict) -> None:
        if d.get("orient", "right") in ("right", "left", "top-right", "top-left", "bottom-right", "bottom-left"):
            d["orient"] = "bottom"
        d["direction"] = "horizontal"
        d["columns"] = min(d.get("columns") or NARROW_LEGEND_COLUMNS, NARROW_LEGEND_COLUMNS)

    def axis(d: dict) -> None:
        if "labelLimit" in d:
            d["labelLimit"] = min(d["labelLimit"], NARROW_LABEL_LIMIT)

    _each(out, "legend", legend)
    _each(out, "axis", axis)
    config = out.setdefault("config", {})
    cfg_legend = config.setdefault("legend", {})
    # Legends below the plot stack one under another, each at the left, rather than side by side.
    cfg_legend.update(orient="bottom", direction="horizontal", columns=NARROW_LEGEND_COLUMNS,
                      labelLimit=min(cfg_legend.get("labelLimit", NARROW_WIDTH), NARROW_WIDTH - 40),
                      layout={"bottom": {"anchor": "start", "direction": "vertical"}})
    cfg_axis = config.setdefault("axis", {})
    cfg_axis["labelLimit"] = min(cfg_axis.get("labelLimit", NARROW_LABEL_LIMIT), NARROW_LABEL_LIMIT)
    return out


# In vl-convert's SVG: the picture's origin (its first group's translation), and each legend's
# group, placed by a translation, whose background path spans the legend's width.
_ORIGIN = re.compile(r'<svg\b[^>]*>\s*<g\b[^>]*?\stransform="translate\(([-\d.e]+)')
_LEGEND = re.compile(r'class="mark-group role-legend"[^>]*>\s*<g transform="translate\(([-\d.e]+)[^"]*">'
                     r'\s*<path class="background"[^>]*?\sd="M0,0h([-\d.e]+)')


def legend_rights(svg: str) -> list[float]:
    """The right edge of each legend of a picture as vl-convert drew it (before the page's clean-up,
    theme.static_svg_colours, which drops the backgrounds that draw nothing), in the picture's
    pixels, in the order Vega placed them."""
    origin = _ORIGIN.search(svg)
    dx = float(origin.group(1)) if origin else 0.0
    return [dx + float(x) + float(w) for x, w in _LEGEND.findall(svg)]


def fit_legends(spec: dict, rights: list[float], width: int = NARROW_WIDTH) -> dict | None:
    """`spec` (narrow) with its legends in one column when, laid out in more, one of them reaches
    past `width` (`rights`: `legend_rights` of its picture); None when they all fit."""
    if all(r <= width + 0.5 for r in rights):
        return None
    out = copy.deepcopy(spec)

    def one_column(d: dict) -> None:
        d["columns"] = 1

    _each(out, "legend", one_column)
    out["config"]["legend"]["columns"] = 1
    return out
