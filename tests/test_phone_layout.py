"""A figure laid out for a phone's column (explainer_gen/compute/layout.py): what the narrow spec
changes, how its legends are fitted from the laid-out chart, how a kind breaks its long texts over
lines, and that those lines survive the static picture's clean-up. The pictures as a reader sees
them at 390 px are tests/test_pictures.py's."""
from __future__ import annotations

import copy
import re

import pytest
import vl_convert as vlc

from explainer_gen import theme
from explainer_gen.compute import layout
from explainer_gen.compute.artifacts import VL_VERSION, _draw, _with_rows, static_svg

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


def chart(legend: dict | None = None, labels=("one", "two", "three")) -> dict:
    """Points coloured by a nominal field with the given labels, in the site's theme."""
    return {"$schema": SCHEMA, "data": {"name": "table"}, "mark": "point", "width": "container",
            "encoding": {"x": {"field": "x", "type": "quantitative", "axis": {"labelLimit": 300}},
                         "y": {"field": "y", "type": "quantitative"},
                         "color": {"field": "c", "type": "nominal", "scale": {"domain": list(labels)},
                                   **({"legend": legend} if legend is not None else {})}},
            "config": copy.deepcopy(theme.CONFIG)}


def rows(labels) -> list[dict]:
    return [{"x": i, "y": i, "c": c} for i, c in enumerate(labels)]


def rights(spec: dict, labels) -> list[float]:
    return layout.legend_rights(_draw(spec, rows(labels), layout.NARROW_WIDTH))


def scenegraph_rights(spec: dict, labels) -> list[float]:
    """The legends' right edges from Vega's own scenegraph of the chart (the items' positions and
    sizes, as Vega laid them out), not from the drawn SVG."""
    laid_out = vlc.vegalite_to_scenegraph(_with_rows(spec, rows(labels), layout.NARROW_WIDTH), vl_version=VL_VERSION)
    found = []

    def walk(mark: dict, dx: float) -> None:
        for item in mark.get("items", []):
            if mark.get("role") == "legend":
                found.append(dx + item.get("x", 0) + item["width"])
            elif isinstance(item, dict):
                for child in item.get("items", []):
                    walk(child, dx + item.get("x", 0))

    walk(laid_out["scenegraph"], laid_out["origin"][0])
    return found


def test_legend_edges_read_from_the_picture_are_where_vega_laid_the_legends_out():
    """Two legends, one with long labels: the right edges read from the drawn SVG equal those in
    Vega's scenegraph, and the long one reaches past the phone's width."""
    labels = ("a label long enough to fill half", "another label just as long as that", "and a third")
    spec = layout.narrow(chart({"orient": "bottom"}, labels))
    spec["encoding"]["shape"] = {"field": "c", "type": "nominal", "title": "Shape", "legend": {"orient": "bottom"}}
    spec["encoding"]["color"]["title"] = "Colour"
    from_svg, from_vega = rights(spec, labels), scenegraph_rights(spec, labels)
    assert len(from_svg) == 2 and from_svg == pytest.approx(from_vega, abs=0.01)
    assert max(from_svg) > layout.NARROW_WIDTH


def test_the_narrow_layout_moves_legends_below_and_cuts_long_axis_labels():
    wide = chart({"orient": "right", "columns": 4})
    narrow = layout.narrow(wide)
    legend = narrow["encoding"]["color"]["legend"]
    assert (legend["orient"], legend["columns"]) == ("bottom", layout.NARROW_LEGEND_COLUMNS)
    assert narrow["encoding"]["x"]["axis"]["labelLimit"] == layout.NARROW_LABEL_LIMIT
    assert narrow["config"]["legend"]["layout"]["bottom"]["direction"] == "vertical"  # stacked, not side by side
    assert wide["encoding"]["color"]["legend"] == {"orient": "right", "columns": 4}, "the wide spec is left alone"
    # A legend placed by default (right, in Vega-Lite) goes below too, from the config.
    assert layout.narrow(chart())["config"]["legend"]["orient"] == "bottom"


def test_legends_too_wide_for_two_columns_are_laid_out_in_one_that_fits():
    """Measured by Vega in the chart font: labels of about 190 px do not fit two to a row in
    358 px, so the legend goes to one column, which fits; short labels keep two."""
    long = ("a label long enough to fill half", "another label just as long as that", "and a third")
    narrow = layout.narrow(chart({"orient": "bottom"}, long))
    before = rights(narrow, long)
    assert max(before) > layout.NARROW_WIDTH
    fitted = layout.fit_legends(narrow, before)
    assert fitted is not None and fitted["encoding"]["color"]["legend"]["columns"] == 1
    assert max(rights(fitted, long)) <= layout.NARROW_WIDTH
    short = ("one", "two", "three")
    narrow = layout.narrow(chart({"orient": "bottom"}, short))
    assert layout.fit_legends(narrow, rights(narrow, short)) is None


def text_chart(key: str) -> dict:
    return {"$schema": SCHEMA, "data": {"name": "table"}, "config": copy.deepcopy(theme.CONFIG),
            "layer": [{"mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"}}},
                      {"transform": [{"calculate": f"'{key}'", "as": "key"}],
                       "mark": {"type": "text", "align": "left"}, "encoding": {"text": {"field": "key"}}}]}


def test_a_text_broken_over_lines_is_drawn_as_lines_that_start_at_its_x():
    """break_lines writes the text with a break where the kind asked and makes text marks break
    there; the picture draws each line from the text's own x (the clean-up of the static picture
    once dropped a <tspan>'s x="0" as a default, and the second line ran on from the first's end)."""
    key = "Measured: a ring was fitted on, a square held out"
    spec = layout.break_lines(text_chart(key), {key: ["Measured: a ring was fitted on,", "a square held out"]})
    text_mark = spec["layer"][1]["mark"]
    assert text_mark["lineBreak"] == layout.LINE_BREAK
    svg = static_svg(spec, [{"x": 1}], layout.NARROW_WIDTH)
    spans = re.findall(r"<tspan([^>]*)>([^<]*)</tspan>", svg)
    assert [t for _, t in spans] == ["Measured: a ring was fitted on,", "a square held out"]
    assert 'x="0"' in spans[1][0], spans


def test_a_text_hung_from_its_bottom_is_raised_by_the_lines_added():
    """Vega sets a broken text's first line at its baseline and the rest below: a text hung from
    its bottom edge (the key along a plot's bottom) is raised a line for each line added, so that,
    as drawn, its last line stands where the unbroken text stood, clear of the axis below."""
    key = "one two three"

    def drawn(lines: dict) -> tuple[float, list[float]]:
        spec = text_chart(key)
        spec["layer"][1]["mark"].update(baseline="bottom", dy=-4, fontSize=12)
        svg = static_svg(layout.break_lines(spec, lines) if lines else spec, [{"x": 1}], layout.NARROW_WIDTH)
        y, body = next((y, body) for y, body in re.findall(
            r'<text[^>]*transform="translate\([-\d.]+,([-\d.]+)\)"[^>]*>(.*?)</text>', svg) if "one" in body)
        return float(y), [float(dy) for dy in re.findall(r'dy="([-\d.]+)"', body)]

    single, _ = drawn({})
    first, gaps = drawn({key: ["one", "two", "three"]})
    assert gaps == [14, 14]  # Vega's line height for 12 px text
    assert first + sum(gaps) == pytest.approx(single, abs=0.1)


def test_break_lines_refuses_a_text_the_chart_does_not_write_or_lines_that_change_it():
    key = "a key"
    with pytest.raises(ValueError, match="writes no text 'another key'"):
        layout.break_lines(text_chart(key), {"another key": ["another", "key"]})
    with pytest.raises(ValueError, match="do not make the text"):
        layout.break_lines(text_chart(key), {key: ["a", "different key"]})
