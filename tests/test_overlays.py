"""Published measurements over the figures whose setup is theirs (compute/figures/overlay.py), as built.

Each figure that draws measurements draws exactly those of its setup (the same card, card count,
model and formats), each at its value in the figure's units, judged inside or outside its band
by the rule recomputed here from the measurement and the fit; its description counts them, its
CSV and data table carry their source, engine and setup, and its static picture, the one a
reader without JavaScript sees, draws them with their key. A figure of another setup draws none
and says nothing of them.
"""
from __future__ import annotations

import csv
import html as markup
import io
import json
import re

import pytest

from explainer_gen.compute.figures import overlay
from helpers import REPO, cols_of, figure
from models import estimate

DATA = estimate.load()
FIT = estimate.fit(DATA)

# (page, figure) -> (setup: accelerator, cards, model, weights, kv), the quantities it draws, and how
# one measured value becomes the figure's y units.
OVERLAID = {
    ("roofline", "fig-prefill-vs-decode-2"): (("a100-80gb", 1, "llama-2-7b", "bf16", "bf16"), ("prefill", "decode"),
                                              "ms"),
    ("batching", "fig-batch-throughput-2"): (("a100-80gb", 1, "llama-3-8b", "bf16", "bf16"), ("throughput",), "tps"),
    ("serving", "fig-serve-ttft"): (("h100-sxm", 4, "llama-3-70b", "bf16", "bf16"), ("serving-ttft",), "ms"),
    ("serving", "fig-serve-tpot"): (("h100-sxm", 4, "llama-3-70b", "bf16", "bf16"), ("serving-itl",), "ms"),
}
# The same kinds on the pages' own setups, which no measurement shares (the serving page's time
# between tokens draws no published quantity at all).
BARE = [("roofline", "fig-prefill-vs-decode"), ("batching", "fig-batch-throughput")]


def at_x(m: estimate.Measurement) -> float:
    """Where the figure places it: a first token at its prompt's length, a decode at the length of
    the cache it reads, a throughput at the largest batch of its requests that fits, a served
    latency at its arrival rate."""
    if m.quantity == "prefill":
        return m.args["tokens"]
    if m.quantity == "decode":
        return m.args["context"]
    if m.quantity == "throughput":
        return m.setup.max_batch(m.args["input"], m.args["output"])
    return m.args["rate"]


def in_units(m: estimate.Measurement) -> float:
    """The measured value as the figure plots it: a first token per prompt token and a decode step
    per token, in ms; a throughput in tokens per second; a served latency in ms."""
    if m.quantity == "prefill":
        return m.value / m.args["tokens"] * 1e3
    return m.value if m.quantity == "throughput" else m.value * 1e3


def inside(m: estimate.Measurement) -> bool:
    low, high = FIT.band[m.kind]
    ratio = m.value / m.price(FIT.eff)
    return min(low, 1.0) - 1e-9 <= ratio <= max(high, 1.0) + 1e-9


def expected(setup, quantities) -> list[estimate.Measurement]:
    out = [m for m in DATA.rows if (m.raw["accelerator"], m.raw["cards"], m.raw["model"], m.raw["weights"],
                                    m.raw["kv"]) == setup and m.quantity in quantities]
    # A decode drawn on a batch-one chart is a batch-one decode.
    return [m for m in out if m.quantity != "decode" or m.args["batch"] == 1]


def block(html: str, anchor: str) -> str:
    start = html.index(f'<figure class="eg-figure" id="{anchor}"')
    return html[start:html.index("</figure>", start)]


def drawn_points(picture: str) -> list[tuple[str, bool]]:
    """Each measured point a static picture draws, as (shape, filled): the symbols among the marks
    that are outlined in a colour of their own (a stroke class), which only measured points are; a
    curve's own points are fills alone, and the legends' symbols are no marks. A symbol is filled
    unless its fill opacity is 0 (Vega writes no opacity for a full one)."""
    points = []
    for group in re.findall(r'<g class="role-mark">(.*?)</g>', picture, re.S):
        for attrs in re.findall(r"<path([^>]*)>", group):
            cls = re.search(r'class="([^"]*)"', attrs)
            if "transform=" in attrs and cls and any(c.startswith("s-") for c in cls.group(1).split()):
                shape = "circle" if "A" in re.search(r' d="([^"]*)"', attrs).group(1) else "square"
                opacity = re.search(r'fill-opacity="([0-9.]+)"', attrs)
                points.append((shape, opacity is None or float(opacity.group(1)) > 0))
    return points


MARKED = [*OVERLAID, ("measured", "fig-measured-vs-estimate")]


@pytest.mark.parametrize("page, anchor", MARKED, ids=lambda x: x)
def test_every_figure_that_draws_measurements_marks_them_by_one_rule(site, page, anchor):
    """One rule on every figure that draws measurements, the measurements page's included: a ring
    was fitted on (inside its band by construction), a square was held out, filled when it lies
    inside its band. Counted from the static picture against the measurements themselves."""
    if page == "measured":
        want = DATA.rows
    else:
        setup, quantities, _ = OVERLAID[(page, anchor)]
        want = expected(setup, quantities)
    html = (site / "explainers" / page / "index.html").read_text()
    picture = html[html.index(f'aria-labelledby="{anchor}-desc"'):]
    points = drawn_points(picture[:picture.index("</svg>")])
    training = [m for m in want if m.split == "training"]
    held = [m for m in want if m.split != "training"]
    assert sorted(points) == sorted([("circle", False)] * len(training)
                                    + [("square", inside(m)) for m in held]), (page, anchor)
    assert any(filled for _, filled in points) and any(not filled for shape, filled in points if shape == "square") \
        or page != "measured", "the measurements page draws held-out points both inside and outside"


@pytest.mark.parametrize("page, anchor", list(OVERLAID), ids=lambda x: x)
def test_a_figure_draws_the_measurements_of_its_own_setup(site, page, anchor):
    setup, quantities, y = OVERLAID[(page, anchor)]
    want = {m.id: m for m in expected(setup, quantities)}
    assert want, "every overlaid figure has measurements to draw"
    html, payload, path = figure(site, page, anchor)
    cols = cols_of(payload)
    rows = cols["what"] == "measured"
    assert sorted(cols["measurement"][rows]) == sorted(want)
    x = {"roofline": "tokens", "batching": "batch", "serving": "rate"}[page]
    for i in map(int, rows.nonzero()[0]):
        m = want[cols["measurement"][i]]
        assert cols[x][i] == pytest.approx(at_x(m), rel=1e-3)
        assert cols[y][i] == pytest.approx(in_units(m), rel=1e-3)
        # Its estimate against its value, unit-free: the figure's own arithmetic of units cancels.
        assert cols["estimate"][i] / cols[y][i] == pytest.approx(m.price(FIT.eff) / m.value, rel=2e-3)
        assert cols["band"][i] == ("inside" if inside(m) else "outside"), m.id
        assert cols["split"][i] == ("training" if m.split == "training" else "held out")
        assert m.raw["source"]["where"] in cols["source"][i] and cols["engine"][i] == m.raw["engine"]
    n, n_in = len(want), sum(inside(m) for m in want.values())
    fig = block(html, anchor)
    assert f"{n_in} of {n} lie" in markup.unescape(fig), "the description counts the points inside the band"
    # The static picture (what a reader without JavaScript sees) draws them, with their key.
    picture = html[html.index(f'aria-labelledby="{anchor}-desc"'):]
    picture = picture[:picture.index("</svg>")]
    assert markup.escape(overlay.KEY, quote=False) in picture or overlay.KEY in picture
    # The data table: a second table, one row a measurement, its source named.
    tables = re.findall(r"<table>.*?</table>", fig, re.S)
    assert len(tables) == 2 and len(re.findall(r"<tr>", tables[1])) == n + 1
    for m in want.values():
        assert markup.escape(m.raw["engine"], quote=False) in tables[1]
    # The CSV: the same rows, with their source, engine and setup.
    href = re.search(r'<a href="([^"]+\.csv)" download>', fig).group(1)
    text = (site / "explainers" / page / href).resolve().read_text()
    table = list(csv.DictReader(io.StringIO(text)))
    named = {r["measurement id"]: r for r in table if r["measurement id"]}
    assert sorted(named) == sorted(want)
    for key, r in named.items():
        assert r["engine"] == want[key].raw["engine"] and r["measured setup"] and r["source"]


CURVES = {("roofline", "fig-prefill-vs-decode-2"): ("ms", "latency"), ("batching", "fig-batch-throughput-2"): ("tps", "throughput")}


@pytest.mark.parametrize("page, anchor", list(CURVES), ids=lambda x: x)
def test_where_the_curve_is_the_measured_quantity_the_estimate_is_drawn_with_its_band(site, page, anchor):
    """Each point of the estimate's curve lies above the floor's at the same x (or, for a
    throughput, below it), and its band is the fit's band around it."""
    y, kind = CURVES[(page, anchor)]
    cols = cols_of(figure(site, page, anchor)[1])
    est = cols["what"] == "estimate"
    assert est.sum() > 10
    low, high = FIT.band[kind]
    assert cols["low"][est] == pytest.approx(cols[y][est] * min(low, 1.0), rel=2e-3)
    assert cols["high"][est] == pytest.approx(cols[y][est] * max(high, 1.0), rel=2e-3)
    slower = cols[y][est] > cols["floor"][est] if kind == "latency" else cols[y][est] < cols["floor"][est]
    assert slower.all(), "the estimate is never better than the floor"


def test_another_setting_of_the_same_figure_draws_none(site):
    """The serving page's switch to the H200: a setup no measurement was taken on."""
    html, payload, path = figure(site, "serving", "fig-serve-ttft")
    [(key, name)] = payload["variants"].items()
    assert key.startswith("h200.")
    other = json.loads((path.parent / name).read_text())[key]
    assert "measured" not in other["what"] and "measured" in payload["data"]["what"]


@pytest.mark.parametrize("page, anchor", BARE, ids=lambda x: x)
def test_a_figure_of_another_setup_draws_none_and_says_nothing_of_them(site, page, anchor):
    html, payload, _ = figure(site, page, anchor)
    assert not (cols_of(payload)["what"] == "measured").any()
    fig = block(html, anchor)
    assert "published measurement" not in markup.unescape(fig)
    assert len(re.findall(r"<table>", fig)) == 1
    picture = html[html.index(f'aria-labelledby="{anchor}-desc"'):]
    assert overlay.KEY not in markup.unescape(picture[:picture.index("</svg>")])


def test_the_overlaid_setups_are_the_ones_the_pages_pin():
    """The pages pin those setups in their figures' fences: the test's table is the pages' own."""
    for (page, anchor), (setup, _, _) in OVERLAID.items():
        if page == "serving":  # the page's default scenario, not a pinned one
            continue
        text = (REPO / "docs" / "explainers" / f"{page}.md").read_text()
        acc, cards, model, weights, kv = setup
        assert re.search(rf"accelerator: {acc}, cards: {cards}, target: {model}, weights: {weights}, kv: {kv}", text)
