"""Published measurements against the fitted estimate (models/estimate.py), one point each.

One log-log view in the floor's own units: each measurement at its estimate over its floor (x)
and its measured value over its floor (y), so latencies sit above 1 and throughputs below it,
however large the model. The dashed line is where measured and estimate agree; the shaded bands,
one per kind, are the spread the training measurements span around it. Colour tells latencies
from throughputs; a ring was fitted on, and a square was held out, filled when it lies inside its
band (the rule every figure that draws measurements follows: overlay.filled).
"""
from __future__ import annotations

import numpy as np

from models import estimate

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from . import overlay
from .overlay import INSIDE, SPLITS, filled
from .base import alt, Column, Columns, FigureKind, register, table_data, TableView

KINDS = {"latency": ("latency", "ms", 1e3), "throughput": ("throughput", "tokens/s", 1.0)}
# A latency's values and a throughput's have units of their own, so each value has a column for
# each: `measured_ms` on a latency's row, `measured_tps` on a throughput's (0 on the other's in the figure's data; its CSV leaves that cell empty: Column.only_where).
IN = {"latency": ("_ms", "time", "ms"), "throughput": ("_tps", "rate", "tokens/s")}
VALUES = {"measured": "measured {}", "floor": "{} at the floor", "estimate": "estimated {}",
          "low": "{}, the band's low end", "high": "{}, the band's high end"}  # in words, of "latency" or "throughput"


def value(name: str) -> str:
    """Vega: a row's value `name` (a key of VALUES) in its own kind's unit, for the tooltip."""
    return f"datum.kind == '{KINDS['latency'][0]}' ? datum.{name}{IN['latency'][0]} : datum.{name}{IN['throughput'][0]}"


def rows() -> Columns:
    data = estimate.load()
    fitted = estimate.fit(data)
    out: dict[str, list] = {k: [] for k in ("id", "kind", "split", "setup", "engine",
                                            *(v + IN[k][0] for v in VALUES for k in KINDS),
                                            "ratio", "band", "source", "est_floor",
                                            "meas_floor", "low_floor", "high_floor")}
    for m in data.rows:
        label, _, scale = KINDS[m.kind]
        est, low, high, inside = fitted.place(m)
        out["id"].append(m.id)
        out["kind"].append(label)
        out["split"].append(SPLITS[m.split])
        out["setup"].append(overlay.describe(m))
        out["engine"].append(str(m.raw["engine"]))
        for name, v in zip(VALUES, (m.value, m.price(), est, low, high)):
            for k, (suffix, _, _) in IN.items():
                out[name + suffix].append(v * scale if k == m.kind else 0.0)
        out["ratio"].append(m.value / est)
        out["band"].append(INSIDE[bool(inside)])
        out["source"].append(overlay.source(m))
        floor = m.price()
        for name, v in (("est_floor", est), ("meas_floor", m.value), ("low_floor", low), ("high_floor", high)):
            out[name].append(v / floor)
    return {k: np.array(v) for k, v in out.items()}


@register
class Measured(FigureKind):
    name = "measured-vs-estimate"
    title = "Published measurements against the estimate"
    reads = ()
    sliders: dict[str, Slider] = {}
    columns = {"id": Column("measurement"), "kind": Column("kind"), "split": Column("split"), "setup": Column("setup"),
               "engine": Column("engine"),
               **{v + suffix: Column(words.format(KINDS[k][0]), dimension, unit, only_where=("kind", KINDS[k][0]))
                  for v, words in VALUES.items() for k, (suffix, dimension, unit) in IN.items()},
               "ratio": Column("measured over estimate", "ratio", "x"), "band": Column("in the band"),
               "source": Column("source"), "est_floor": Column("estimate over the floor", "ratio", "x"),
               "meas_floor": Column("measured over the floor", "ratio", "x"),
               "low_floor": Column("the band's low end over the floor", "ratio", "x"),
               "high_floor": Column("the band's high end over the floor", "ratio", "x")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        return rows()

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        scale = alt.Scale(type="log", domain=[0.4, 4.0], nice=False)
        axis = alt.Axis(values=[0.5, 0.7, 1, 1.5, 2, 3], format="~g")
        y_title = "Measured over the floor (×)"
        x = alt.X("est_floor:Q", title="Estimate over the floor (×)", scale=scale, axis=axis)
        y = alt.Y("meas_floor:Q", title=y_title, scale=scale, axis=axis)
        kinds = [label for label, _, _ in KINDS.values()]
        colours = [colour("series-1"), colour("series-2")]
        bands = [base.transform_filter(alt.datum.kind == label).mark_area(opacity=0.22, color=c).encode(
                     x=x, y=alt.Y("low_floor:Q", scale=scale, axis=axis, title=y_title), y2="high_floor:Q")
                 for label, c in zip(kinds, colours)]
        agree = base.mark_line(strokeDash=[4, 3], color=colour("muted")).encode(x=x, y="est_floor:Q")
        tips = [alt.Tooltip("id:N", title="measurement"), alt.Tooltip("setup:N", title="setup"),
                alt.Tooltip("engine:N", title="engine"), alt.Tooltip("split:N", title="split"),
                alt.Tooltip("measured:Q", title="measured (ms or tokens/s)", format=",.4~g"),
                alt.Tooltip("estimate:Q", title="estimate", format=",.4~g"),
                alt.Tooltip("floor:Q", title="floor", format=",.4~g"),
                alt.Tooltip("ratio:Q", title="measured / estimate", format=".2f"),
                alt.Tooltip("band:N", title="band")]
        points = base.transform_calculate(**{v: value(v) for v in ("measured", "estimate", "floor")}).mark_point(
            size=70, strokeWidth=2).encode(
            x=x, y=y,
            color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=kinds, range=colours),
                            legend=alt.Legend(orient="bottom")),
            shape=alt.Shape("split:N", title=None, scale=alt.Scale(domain=list(SPLITS.values()),
                                                                   range=["circle", "square"]),
                            legend=alt.Legend(orient="bottom")),
            fill=alt.Fill("kind:N", scale=alt.Scale(domain=kinds, range=colours), legend=None),
            fillOpacity=alt.condition(filled(), alt.value(1), alt.value(0)),
            tooltip=tips)
        return alt.layer(*bands, agree, points).properties(height=420)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        out = []
        for i in range(len(cols["id"])):
            kind = next(k for k, (label, _, _) in KINDS.items() if label == str(cols["kind"][i]))
            fmt = (lambda v: f"{v:,.2f} ms") if KINDS[kind][1] == "ms" else (lambda v: f"{v:,.0f} tokens/s")
            mine = {v: cols[v + IN[kind][0]][i] for v in VALUES}
            out.append([str(cols["setup"][i]), str(cols["engine"][i]), str(cols["split"][i]), fmt(mine["measured"]),
                        fmt(mine["floor"]), fmt(mine["estimate"]), f"{cols['ratio'][i]:.2f}",
                        str(cols["band"][i])])
        return TableView(
            caption=("Every published measurement of models/measurements.yaml: its setup, what it measured, the "
                     "floor (no inefficiency), the fitted estimate, their ratio and whether it lies in the band"),
            headers=["Setup", "Engine", "Split", "Measured", "Floor", "Estimate", "Measured / estimate", "Band"],
            rows=out)

    description = ("Log-log scatter plot of {n} published measurements, each as measured over its floor against "
                   "estimate over its floor: latencies above 1, throughputs below, the line where measured and "
                   "estimate agree and, per kind, the band the {training} training measurements span; {held_in} of "
                   "the {held} held-out measurements lie inside their band.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        held = cols["split"] == SPLITS["held-out"]
        return {"n": f"{len(cols['id'])}", "training": f"{int((~held).sum())}", "held": f"{int(held.sum())}",
                "held_in": f"{int((held & (cols['band'] == INSIDE[True])).sum())}"}
