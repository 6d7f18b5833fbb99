"""Speedup of speculative decoding over plain decoding against batch size, one line per lookahead."""
from __future__ import annotations

import numpy as np

from models import speculative

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, grid_product, register, rows_at, slider_filter, slider_params, table_data, TableView
from ..sliders import ACCEPTANCE

LOOKAHEADS = (1, 2, 4, 8)
# Batch sizes from 1 to 1024, four per doubling, so the log axis is evenly sampled.
BATCHES = np.unique(np.round(2 ** (np.arange(0, 41) / 4)).astype(int))


def batch_axis() -> tuple[alt.Scale, alt.X]:
    """The batch axis every speedup-against-batch figure shares: 1 to 1024 requests, log 2."""
    scale = alt.Scale(type="log", base=2, domain=[1, 1024])
    return scale, alt.X("batch:Q", title="Batch size (requests)", scale=scale,
                        axis=alt.Axis(values=[1, 4, 16, 64, 256, 1024], format="d"))


@register
class SpeedupVsBatch(FigureKind):
    name = "speedup-vs-batch"
    title = "Speedup over plain decoding against batch size"
    sliders = {"a": ACCEPTANCE}
    columns = {"a": Column("acceptance rate", "ratio"), "k": Column("lookahead k", "count"),
               "batch": Column("batch size", "count"), "speedup": Column("speedup over plain decoding", "ratio"),
               "fits": Column("fits in memory: 1, or past the cap: 0", "ratio"), "cap": Column("memory cap", "count", "requests")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        cols = grid_product(grid, k=np.array(LOOKAHEADS, dtype=float), batch=BATCHES.astype(float))
        cols["speedup"] = speculative.speedup(r.acc, r.target, r.draft, r.cards, cols["batch"], cols["a"], cols["k"],
                                              r.context, r.precision)
        cols["fits"] = (cols["batch"] <= r.memory_cap(with_draft=True)).astype(float)
        cols["cap"] = np.full(len(cols["batch"]), r.memory_cap(with_draft=True))
        return cols

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        scale, x = batch_axis()
        lines = base.mark_line(point=True, strokeWidth=2).encode(
            x=x,
            y=alt.Y("speedup:Q", title="Speedup over plain decoding (×)", scale=alt.Scale(type="log", domain=[0.1, 10])),
            color=alt.Color("k:N", title="Lookahead k", scale=alt.Scale(domain=list(LOOKAHEADS))),
            tooltip=[alt.Tooltip("k:N", title="lookahead k"), alt.Tooltip("batch:Q", title="batch"),
                     alt.Tooltip("speedup:Q", title="speedup", format=".2f")],
        )
        even = alt.Chart(alt.InlineData(values=[{"even": 1}])).mark_rule(strokeDash=[4, 4]).encode(y="even:Q")
        # The batches past the memory cap are shaded, from the cap to the axis's end, and labelled.
        cap = base.transform_aggregate(start="min(cap)").transform_filter("datum.start < 1024").transform_calculate(
            end="1024", label="'memory cap: ' + format(datum.start, ',.0f')")
        past = cap.mark_rect(opacity=0.12, color=colour("muted")).encode(x=alt.X("start:Q", scale=scale), x2="end:Q")
        past_text = cap.mark_text(align="right", baseline="top", dx=-4, y=4, color=colour("muted")).encode(
            x=alt.X("start:Q", scale=scale), text="label:N")
        return (alt.layer(past, even, lines, past_text).add_params(*slider_params(sliders))
                .properties(height=320))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders)
        batches = np.unique(cols["batch"][m])
        rows = []
        for b in batches:
            row = [f"{b:g}"]
            for k in LOOKAHEADS:
                sel = m & (cols["batch"] == b) & (cols["k"] == k)
                row.append(f"{cols['speedup'][sel][0]:.2f}×")
            rows.append(row)
        a = sliders["a"].default
        return TableView(caption=f"Speedup at acceptance rate {a:.2f}, {r.cards} × {r.acc.name}, "
                                 f"{r.target.name} target, {r.draft.name} draft",
                         headers=["Batch"] + [f"k = {k}" for k in LOOKAHEADS], rows=rows)

    description = ("Line chart of speedup against batch size at acceptance {a} on {cards} × {acc}, each request "
                   "holding {context} tokens of context: up to {best} at small batches, {trend}")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        cap = r.memory_cap(with_draft=True)
        fits = at & (cols["fits"] == 1)
        low = cols["speedup"][fits].min() if fits.any() else float("nan")
        trend = ("falling below 1× as the batch grows." if low < 1 else
                 f"still {low:.2f}× or more at every batch that fits in memory (up to {cap:,.0f} requests).")
        if cap < 1024:
            trend += f" Batches past {cap:,.0f} do not fit and are shaded."
        return {"a": f"{position['a']:.2f}", "cards": f"{r.cards}", "acc": r.acc.name, "context": f"{r.context:,}",
                "best": f"{cols['speedup'][at].max():.2f}×", "trend": trend}

