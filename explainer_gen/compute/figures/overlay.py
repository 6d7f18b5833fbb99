"""Published measurements drawn on a figure whose setup is theirs (models/measurements.yaml).

A kind that plots a quantity some measurements measured (a prefill's time, a decode step, a
throughput, a served latency) asks `matching` for the measurements of the figure's own setup:
the same accelerator, card count, model and number formats, nothing looser. Each becomes one
row labelled "measured" in the kind's long table, at the x the kind gives it and with its value
in the kind's y units, carrying its estimate, the estimate's band (`estimate.Fitted.place`, the
rule the measurements page and the build's check use), its floor, and its source, engine and
setup as text for the tooltip, the CSV and the data table.

Where the kind draws a curve of the same quantity, it also draws the curve at the estimate with
the band shaded around it (`band_rows`), beside its floor. Where the measurement's quantity is
not the curve's (a throughput with prefills against decode-only steps, a mean over fixed-length
requests against the page's traffic), each measured point carries its own estimate as a bar
whose ends are its band, and the text says so.

A setup with no measurements gets no rows and no words: the figure is as it was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from models import estimate

from .. import layout
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, TableView
from .longform import part


def columns(dimension: str, unit: str) -> dict[str, Column]:
    """The overlay's columns, added to a kind's own (in CSV order, after them): its numbers are in
    the kind's y units, a `dimension` and `unit` as its own y column declares them."""
    only = ("what", "measured")  # the measured points' rows; a curve's row holds none of these
    return {"measurement": Column("measurement id", only_where=only), "setup": Column("measured setup", only_where=only),
            "engine": Column("engine", only_where=only), "source": Column("source", only_where=only),
            "split": Column("training or held out", only_where=only),
            "band": Column("inside the estimate's band", only_where=only),
            "estimate": Column("estimate", dimension, unit, only_where=only),
            "low": Column("band, low end", dimension, unit, only_where=only),
            "high": Column("band, high end", dimension, unit, only_where=only),
            "floor": Column("at the floor, every kernel at its datasheet peak", dimension, unit, only_where=only)}


TEXT = ("measurement", "setup", "engine", "source", "split", "band")
NUMBERS = ("estimate", "low", "high", "floor")
SPLITS = {"training": "training", "held-out": "held out"}
INSIDE = {True: "inside", False: "outside"}
KEY = "Measured: a ring was fitted on, a square held out (filled when inside its band)"
# The key on a phone's column, where one line of it is wider than the plot.
KEY_LINES = ["Measured: a ring was fitted on,", "a square held out (filled when inside its band)"]


def narrow(spec: dict, more: dict[str, list[str]] | None = None) -> dict:
    """A narrow spec (layout.narrow) of a kind that draws the overlay: its key over two lines, and
    `more` (text -> lines) the kind's own texts likewise."""
    return layout.break_lines(spec, {KEY: KEY_LINES, **(more or {})})


def filled() -> str:
    """The one rule by which a measured point is filled, on every figure that draws measurements
    (this module's, and the measurements page's): a held-out point lying inside its band. A
    training point is inside its band by construction, so it is drawn as a ring, and a held-out
    one drawn where a training one is shows inside it."""
    return f"datum.split == '{SPLITS['held-out']}' && datum.band == '{INSIDE[True]}'"


def describe(m: estimate.Measurement) -> str:
    """A measurement's setup in a reader's words: model, cards, formats, and what was run; the one
    wording, here and on the measurements page's figure."""
    s, a = m.setup, m.args
    what = {"prefill": lambda: f"first token of a {a['tokens']:,.0f}-token prompt at batch 1",
            "decode": lambda: f"decode at batch {a['batch']:,.0f}, {a['context']:,.0f} tokens of cache",
            "throughput": lambda: f"{a['input']:,.0f}-token prompts and {a['output']:,.0f}-token answers, "
                                  f"continuous batching at the largest batch that fits",
            "serving-ttft": lambda: f"{a['requests']:,.0f} requests of {a['input']:,.0f} prompt and "
                                    f"{a['output']:,.0f} output tokens at {a['rate']:g} a second, mean time to "
                                    f"the first token",
            "serving-itl": lambda: f"{a['requests']:,.0f} requests of {a['input']:,.0f} prompt and "
                                   f"{a['output']:,.0f} output tokens at {a['rate']:g} a second, mean time "
                                   f"between tokens"}[m.quantity]()
    formats = s.precision.weights.name if s.precision.weights == s.precision.kv else (
        f"{s.precision.weights.name} weights, {s.precision.kv.name} cache")
    return f"{s.model.name} on {s.cards} × {s.acc.name}, {formats}: {what}"


def source(m: estimate.Measurement) -> str:
    """Where it was published: the citation key and the table."""
    return f"[{m.raw['source']['key']}] {m.raw['source']['where']}"


def matching(r: Resolved, quantities: Iterable[str], keep: Callable[[estimate.Measurement], bool] = lambda m: True
             ) -> list[estimate.Measurement]:
    """The measurements of `quantities` taken on exactly this figure's setup."""
    mine = (r.scenario.accelerator, r.cards, r.scenario.target, r.scenario.weights, r.scenario.kv)
    quantities = tuple(quantities)
    return [m for m in estimate.load().rows
            if (m.raw["accelerator"], m.setup.cards, m.raw["model"], m.raw["weights"], m.raw["kv"]) == mine
            and m.quantity in quantities and keep(m)]


@dataclass(frozen=True)
class Point:
    """One measurement as a kind draws it: its x, and its value, estimate, band and floor in the
    kind's y units."""

    m: estimate.Measurement
    x: float
    value: float
    estimate: float
    low: float
    high: float
    floor: float
    inside: bool


def points(r: Resolved, quantities: Iterable[str], x: Callable[[estimate.Measurement], float],
           y: Callable[[estimate.Measurement, float], float],
           keep: Callable[[estimate.Measurement], bool] = lambda m: True) -> list[Point]:
    """The matching measurements placed: `x(m)` on the kind's x axis, `y(m, seconds_or_rate)` turning
    a value of the measurement's quantity into the kind's y units."""
    fitted = estimate.fitted()
    out = []
    for m in matching(r, quantities, keep):
        est, low, high, inside = fitted.place(m)
        out.append(Point(m, float(x(m)), y(m, m.value), y(m, est), y(m, low), y(m, high), y(m, m.price()), inside))
    return sorted(out, key=lambda p: (p.x, p.m.id))


def blank(n: int) -> dict[str, np.ndarray]:
    """The overlay's columns for `n` rows of the kind's own: empty text, zero numbers."""
    return {**{k: np.full(n, "") for k in TEXT}, **{k: np.zeros(n) for k in NUMBERS}}


def with_blank(cols: Columns) -> Columns:
    """A part of the kind's own with the overlay's columns added, empty."""
    n = len(cols["what"])
    return {**blank(n), **cols}


def rows(placed: list[Point], y_column: str, x_column: str, **other) -> Columns:
    """One "measured" row per point: its x in `x_column`, its value in `y_column`, the overlay's
    columns filled; `other` gives the kind's remaining columns (scalars)."""
    n = len(placed)
    return part("measured", n, **other, **{x_column: np.array([p.x for p in placed], dtype=float),
                                             y_column: np.array([p.value for p in placed], dtype=float)},
                measurement=[p.m.id for p in placed], setup=[describe(p.m) for p in placed],
                engine=[str(p.m.raw["engine"]) for p in placed], source=[source(p.m) for p in placed],
                split=[SPLITS[p.m.split] for p in placed], band=[INSIDE[p.inside] for p in placed],
                estimate=np.array([p.estimate for p in placed]), low=np.array([p.low for p in placed]),
                high=np.array([p.high for p in placed]), floor=np.array([p.floor for p in placed]))


def band(kind: str, estimate_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The band's low and high ends around estimates of one kind ("latency" or "throughput")."""
    fitted = estimate.fitted()
    low, high = fitted.bounds(kind, 1.0)
    return np.asarray(estimate_values) * low, np.asarray(estimate_values) * high


def eff() -> estimate.Efficiency:
    """The fitted efficiencies: what a kind prices its estimate curve at."""
    return estimate.fitted().eff


# -- drawing ---------------------------------------------------------------------------------------

def tooltip(value_title: str, fmt: str) -> list:
    return [alt.Tooltip("measurement:N", title="measurement"), alt.Tooltip("setup:N", title="setup"),
            alt.Tooltip("engine:N", title="engine"), alt.Tooltip("source:N", title="source"),
            alt.Tooltip("split:N", title="split"),
            alt.Tooltip("value:Q", title=f"measured ({value_title})", format=fmt),
            alt.Tooltip("estimate:Q", title="estimate", format=fmt),
            alt.Tooltip("low:Q", title="band from", format=fmt), alt.Tooltip("high:Q", title="band to", format=fmt),
            alt.Tooltip("floor:Q", title="at the floor", format=fmt), alt.Tooltip("band:N", title="in the band")]


def layers(base: alt.Chart, x: alt.X, y: Callable[[str], alt.Y], y_column: str, value_title: str, fmt: str,
           bars: bool, key_at: str = "bottom") -> list:
    """The measured points (a ring for a training measurement, a square for a held-out one, filled
    when inside its band: `filled`) and, with `bars`, each one's own estimate as a tick on a bar
    spanning its band; their key along the plot's `key_at` edge ("top" or "bottom"), where the
    kind leaves room."""
    measured = base.transform_filter("datum.what == 'measured'").transform_calculate(value=f"datum.{y_column}")
    out = []
    if bars:
        out.append(measured.mark_rule(strokeWidth=6, opacity=0.35, color=colour("fg")).encode(
            x=x, y=y("low"), y2="high:Q"))
        out.append(measured.mark_tick(orient="horizontal", thickness=2, size=16, color=colour("fg")).encode(
            x=x, y=y("estimate")))
    # A training measurement is inside its band by construction (the band spans them), so it is a
    # large ring; a held-out one is a smaller square, filled when it lies inside its band. A
    # held-out run measured where a training run was (an older engine's, say) shows inside its ring.
    # The key is a line of text in a left corner of the plot, drawn from the first measured row, so
    # a figure of a setup without measurements shows neither points nor key (a legend would stay).
    domain = list(SPLITS.values())
    out.append(measured.mark_point(strokeWidth=2, color=colour("fg"), opacity=1).encode(
        x=x, y=y(y_column),
        size=alt.Size("split:N", scale=alt.Scale(domain=domain, range=[220, 70]), legend=None),
        shape=alt.Shape("split:N", scale=alt.Scale(domain=domain, range=["circle", "square"]), legend=None),
        fill=alt.value(colour("fg")),
        fillOpacity=alt.condition(filled(), alt.value(1), alt.value(0)),
        tooltip=tooltip(value_title, fmt)))
    out.append(measured.transform_window(rank="row_number()").transform_filter("datum.rank == 1")
               .transform_calculate(key=f"'{KEY}'")
               .mark_text(align="left", baseline="bottom" if key_at == "bottom" else "top", color=colour("fg"))
               .encode(x=alt.value(6), y=alt.value(alt.ExprRef(expr="height - 4")) if key_at == "bottom" else alt.value(4),
                       text="key:N"))
    return out


# -- words -----------------------------------------------------------------------------------------

def tally(cols: Columns, noun: str = "published measurement") -> str:
    """How many measured points the figure draws and how many lie in their band, as a sentence
    (empty when it draws none)."""
    mask = cols["what"] == "measured"
    n = int(mask.sum())
    if not n:
        return ""
    inside = int((cols["band"][mask] == INSIDE[True]).sum())
    held = int((cols["split"][mask] == SPLITS["held-out"]).sum())
    plural = n != 1
    held_text = ("" if not held else f", {held} of them held out of the fit" if held < n
                 else f", {'all ' if plural else ''}held out of the fit")
    return (f" Drawn over it: {n} {noun}{'s' if plural else ''} of this setup{held_text}; {inside} of {n} "
            f"lie{'' if plural else 's'} inside the estimate's band.")


def table(cols: Columns, y_column: str, unit: str, fmt: Callable[[float], str]) -> list[TableView]:
    """The measured rows of a kind's table (`rows`), value in `y_column`, as a second table beside
    the kind's own (none when there are none): read from the rows computed, not priced again."""
    at = np.flatnonzero(cols["what"] == "measured")
    if not len(at):
        return []
    return [TableView(
        caption=f"Published measurements of this setup, in {unit}, beside the fitted estimate and the floor",
        headers=["Measurement", "Engine", "Split", "Measured", "Estimate", "Band", "At the floor", "In the band", "Source"],
        rows=[[str(cols["setup"][i]), str(cols["engine"][i]), str(cols["split"][i]), fmt(cols[y_column][i]),
               fmt(cols["estimate"][i]), f"{fmt(cols['low'][i])} to {fmt(cols['high'][i])}", fmt(cols["floor"][i]),
               str(cols["band"][i]), str(cols["source"][i])] for i in at])]
