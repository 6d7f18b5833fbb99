"""The two layouts a figure is drawn in: one for a desktop's column, one for a phone's.

A figure's Vega-Lite spec is written once, for the wide layout. A phone's column (358 px on a
390 px phone) would scale that picture to about half size, its 12 px labels to 6 px, so every
figure is also laid out at `NARROW_WIDTH`, where its labels are drawn at their own size. In a
figure narrower than `NARROW_BELOW`, the width below which the wide picture's smallest text would
be drawn under `MIN_LABEL_PX`, the page shows the narrow picture and the loader embeds the narrow
live view. One rule decides both: a CSS container query on the figure (`css`), which also sets
`LAYOUT_PROPERTY` on the figure's view, where the loader reads it (`layoutFor`). A browser
without container queries shows the wide picture and embeds the wide view. The narrow picture
is never scaled up: in a column wider than a phone's it keeps its width, as the live view keeps
its plot's height, so a figure going live keeps its height there too.

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

from .. import theme
from ..names import CLASS

# The article column's width in a 1280 px window (Material's layout; wider windows have wider
# columns). The static picture is laid out at this width as the live view is laid out in such a
# column (the spec's width "container", autosize fit-x, whose plot keeps its height at any width),
# so in any column at least this wide a figure that goes live keeps its height to the pixel
# (tests/test_pictures.py). A narrower column scales the picture down.
COLUMN_WIDTH = 688
# A 390 px phone's column (Material's page margins take 16 px each side).
NARROW_WIDTH = 358
# The smallest chart text a reader is asked to read, in CSS px, and the smallest a chart draws: of
# the theme's sizes, a note's in the plot (such as "ridge: batch 295"), under the labels'.
MIN_LABEL_PX = 10
SMALLEST_TEXT_PX = min(theme.LABEL_PX, theme.NOTE_PX)
# The column below which the wide picture would draw its smallest text under MIN_LABEL_PX.
NARROW_BELOW = math.ceil(COLUMN_WIDTH * MIN_LABEL_PX / SMALLEST_TEXT_PX)
# The custom property the container query sets on a figure's view to "narrow" (`css`).
LAYOUT_PROPERTY = "--eg-layout"
NARROW_LEGEND_COLUMNS = 2
NARROW_LABEL_LIMIT = 130
NARROW_LABEL_GAP = 4  # px at least between two labels of an axis

# The narrow picture's ids start with the figure's anchor and this (render/blocks.py).
NARROW_PREFIX = "narrow"


def css() -> str:
    """The page's rules that give a figure its layout by its own width (a container query: the
    figure is the container): which picture shows, and the layout the loader embeds (set on the
    view as LAYOUT_PROPERTY). A container is a formatting context of its own, whose children's
    margins no longer merge with its own: its first and last child lose theirs at those edges, so
    the figure keeps the spacing it had (the caption's margin and the data table's were within
    the figure's own)."""
    fig, frame, view = f".md-typeset .{CLASS.figure}", f".{CLASS.picture}", f".{CLASS.view}"
    return (f"/* A figure's two layouts (explainer_gen/compute/layout.py): the narrow one below {NARROW_BELOW} px. */\n"
            f"{fig} {{ container-type: inline-size; }}\n"
            f"{fig} > :first-child {{ margin-top: 0; }} {fig} > :last-child {{ margin-bottom: 0; }}\n"
            f"{fig} {frame}.{CLASS.narrow} {{ display: none; }}\n"
            f"@container (width < {NARROW_BELOW}px) {{ {fig} {frame}.{CLASS.wide} {{ display: none; }} "
            f"{fig} {frame}.{CLASS.narrow} {{ display: block; }} {fig} {view} {{ {LAYOUT_PROPERTY}: narrow; }} }}\n")


def _nodes(node):
    """Every dict in a Vega-Lite spec, the spec itself first: the one walk of the spec's tree that
    the changes below make their way through (legends, axes, layers and their text marks)."""
    if isinstance(node, dict):
        yield node
        for value in list(node.values()):
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def _each(node, key: str, visit) -> None:
    """Call `visit` on every dict held under `key` anywhere in a Vega-Lite spec (`legend`: the
    encodings' legend definitions; `axis`: their axes')."""
    for found in [d[key] for d in _nodes(node) if isinstance(d.get(key), dict)]:
        visit(found)


# Where a text mark of a narrow chart starts a new line (`break_lines`), and the space Vega leaves
# between lines besides the text's size (its default line height: a 11 px note's lines are 13 px apart).
LINE_BREAK = "\n"
LEADING_PX = 2


def line_px(mark: dict) -> float:
    """How far apart the lines of a text mark are: its line height, or Vega's default for its size."""
    return mark.get("lineHeight", mark.get("fontSize", theme.NOTE_PX) + LEADING_PX)


def text_marks(node):
    """Every text mark's definition in a Vega-Lite spec (a `mark` given as a string becomes a dict
    in place, so that what is yielded can be changed), with the layer that holds it."""
    for layer in list(_nodes(node)):
        if layer.get("mark") == "text":
            layer["mark"] = {"type": "text"}
        mark = layer.get("mark")
        if isinstance(mark, dict) and mark.get("type") == "text":
            yield mark, layer


def break_lines(spec: dict, lines: dict[str, list[str]]) -> dict:
    """`spec` (changed in place and returned) with each literal text that a calculate transform
    writes (`'text'`) and that `lines` holds set over the lines given for it, and every text mark
    breaking its lines at LINE_BREAK. Vega sets a text's first line at its baseline and the others
    below it, so a text hung from its bottom edge (baseline "bottom") is raised by the lines added,
    and keeps clear of what lies below it. A text given that the spec does not write is an error:
    the chart's words changed and its narrow layout was not told."""
    for text, parts in lines.items():
        if " ".join(parts) != text:
            raise ValueError(f"the lines {parts!r} do not make the text {text!r}")
    found = set()
    for layer in list(_nodes(spec)):
        added = 0
        steps = layer.get("transform") if isinstance(layer.get("transform"), list) else []
        for step in (t for t in steps if isinstance(t, dict) and isinstance(t.get("calculate"), str)):
            for text, parts in lines.items():
                quoted = "'" + text + "'"
                if quoted in step["calculate"]:
                    step["calculate"] = step["calculate"].replace(quoted, "'" + "\\n".join(parts) + "'")
                    found.add(text)
                    added = max(added, len(parts) - 1)
        mark = layer.get("mark")
        if added and isinstance(mark, dict) and mark.get("type") == "text" and mark.get("baseline") == "bottom":
            mark["dy"] = mark.get("dy", 0) - added * line_px(mark)
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
    # Ticks kept for a desktop's width crowd a phone's: of labels that would touch, one is left out.
    cfg_axis.update(labelOverlap="greedy", labelSeparation=NARROW_LABEL_GAP)
    return out


# In vl-convert's SVG: the picture's origin (its first group's translation), and each legend's
# group, placed by a translation, whose background path spans the legend's width.
_ORIGIN = re.compile(r'<svg\b[^>]*>\s*<g\b[^>]*?\stransform="translate\(([-\d.e]+)')
_LEGEND = re.compile(r'class="mark-group role-legend"[^>]*>\s*<g transform="translate\(([-\d.e]+)[^"]*">'
                     r'\s*<path class="background"[^>]*?\sd="M([-\d.e]+),[-\d.e]+h([-\d.e]+)')


def legend_rights(svg: str) -> list[float]:
    """The right edge of each legend of a picture as vl-convert drew it (before the page's clean-up,
    theme.static_svg_colours, which drops the backgrounds that draw nothing), in the picture's
    pixels, in the order Vega placed them. ValueError if a legend is drawn in a way this does not
    read: a legend it cannot place is never taken to fit."""
    origin = _ORIGIN.search(svg)
    dx = float(origin.group(1)) if origin else 0.0
    found = _LEGEND.findall(svg)
    if len(found) != svg.count('class="mark-group role-legend"'):
        raise ValueError("a legend of the narrow picture could not be placed (compute/layout.py, legend_rights)")
    return [dx + float(x) + float(m) + float(w) for x, m, w in found]


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
