"""Tokens per second and time per output token against batch size, from the roofline step time.

A decode step over B requests yields B tokens and takes one step time. Below the ridge the
step time is flat, so throughput grows with B at no cost in latency; past it, the step grows
with B, throughput levels off and every request waits longer for each token.
"""
from __future__ import annotations

import altair as alt
import numpy as np

from models import roofline

from ...sources.controls import Resolved, Slider
from ...theme import colour
from .base import Columns, FigureKind, TableView, register, table_data
from .longform import part, stack

# Batch sizes 1 to 4096, two per doubling; the curves are straight lines on log axes on
# either side of the ridge, which is added as its own row, so this is enough to draw them.
BATCHES = np.unique(np.round(2 ** (np.arange(0, 25) / 2)).astype(int)).astype(float)
SHOWN = (1, 8, 64, 256, 1024, 4096)


@register
class BatchThroughput(FigureKind):
    name = "batch-throughput"
    title = "Throughput and time per token against batch size"
    sliders: dict[str, Slider] = {}
    columns = {"what": "row", "batch": "batch size", "tps": "tokens per second", "tpot_ms": "ms per output token"}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        ridge = roofline.ridge_tokens(r.acc, r.target)
        batches = np.sort(np.append(BATCHES, ridge))
        st = roofline.step_time(r.acc, r.target, r.cards, batches)
        at_ridge = roofline.step_time(r.acc, r.target, r.cards, ridge)
        return stack([
            part("curve", len(batches), batch=batches, tps=batches / st.seconds, tpot_ms=st.seconds * 1e3),
            part("ridge", 1, batch=ridge, tps=ridge / at_ridge.seconds, tpot_ms=at_ridge.seconds * 1e3),
        ], list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        x = alt.X("batch:Q", title="Batch size (requests)", scale=alt.Scale(type="log", base=2, domain=[1, 4096]),
                  axis=alt.Axis(values=list(SHOWN), format="d"))
        curve = base.transform_filter("datum.what == 'curve'")
        tps = curve.mark_line(strokeWidth=2.5, color=colour("series-1")).encode(
            x=x, y=alt.Y("tps:Q", title="Tokens per second (all requests)", scale=alt.Scale(type="log"),
                         axis=alt.Axis(format="~s", titleColor=colour("series-1"))),
            tooltip=[alt.Tooltip("batch:Q", title="batch", format=".0f"),
                     alt.Tooltip("tps:Q", title="tokens/s", format=",.0f"),
                     alt.Tooltip("tpot_ms:Q", title="ms per token", format=",.1f")])
        tpot = curve.mark_line(strokeWidth=2.5, strokeDash=[6, 3], color=colour("series-5")).encode(
            x=x, y=alt.Y("tpot_ms:Q", title="Time per output token (ms)", scale=alt.Scale(type="log"),
                         axis=alt.Axis(format="~g", orient="right", titleColor=colour("series-5"))))
        ridge = base.transform_filter("datum.what == 'ridge'")
        rule = ridge.mark_rule(strokeDash=[2, 3], color=colour("muted")).encode(x=x)
        text = ridge.transform_calculate(label="'ridge: batch ' + format(datum.batch, '.0f')").mark_text(
            align="right", dx=-4, baseline="top", y=4, color=colour("muted")).encode(x=x, text="label:N")
        return (alt.layer(tps, tpot, rule, text).resolve_scale(y="independent").properties(height=320))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        rows = []
        for b in SHOWN:
            i = np.flatnonzero((cols["what"] == "curve") & (cols["batch"] == b))[0]
            rows.append([f"{b:g}", f"{cols['tps'][i]:,.0f}", f"{cols['tpot_ms'][i]:,.1f}"])
        return TableView(caption=f"Decode of {r.target.name} on {r.cards} × {r.acc.name}",
                         headers=["Batch", "Tokens per second", "ms per output token"], rows=rows)

    description = ("Log-log chart for {target} on {cards} × {acc}: throughput climbs in proportion to the batch "
                   "while time per token stays flat, up to a batch of about {ridge}; beyond it throughput flattens "
                   "and time per token rises.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        return {"target": r.target.name, "cards": f"{r.cards}", "acc": r.acc.name,
                "ridge": f"{roofline.ridge_tokens(r.acc, r.target):.0f}"}
