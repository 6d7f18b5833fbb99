"""Concurrent requests (slots) against context length, with and without a speculative draft.

The lines are for the scenario's cards; two points mark the scenario's context on them, so the
gap between the lines at that point is what running the draft costs in slots.
"""
from __future__ import annotations

import numpy as np

from models import kvcache

from ...sources.controls import Slider
from ..resolved import Resolved
from .base import alt, Column, Columns, count, FigureKind, register, table_data, TableView
from .longform import part, stack

CONTEXT_RANGE = (1024, 131072)
# Four points per doubling of context draw the curves; the slider's points sit on them.
CONTEXTS = np.unique(np.round(2 ** np.linspace(10, 17, 29))).astype(float)
VARIANTS = {"plain": "target alone", "spec": "target + draft"}


@register
class KVSlots(FigureKind):
    name = "kv-slots"
    title = "Concurrent requests against context length"
    sliders: dict[str, Slider] = {}
    columns = {"what": Column("row"), "variant": Column("memory holds"), "context": Column("context length", "count", "tokens"),
               "slots": Column("concurrent requests", "count")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        """The lines on the scenario's cards, and a point on each at the scenario's context."""
        parts = []
        here = np.array([float(r.context)])
        for key, label in VARIANTS.items():
            draft = r.draft if key == "spec" else None
            parts.append(part("line", len(CONTEXTS), variant=label, context=CONTEXTS,
                              slots=kvcache.slots(r.acc, r.target, r.cards, CONTEXTS, draft, precision=r.precision)))
            parts.append(part("point", 1, variant=label, context=here,
                              slots=kvcache.slots(r.acc, r.target, r.cards, here, draft, precision=r.precision)))
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        x = alt.X("context:Q", title="Context length per request (tokens)",
                  scale=alt.Scale(type="log", base=2, domain=list(CONTEXT_RANGE)),
                  axis=alt.Axis(values=[1024, 4096, 16384, 65536, 131072], labelExpr="datum.value / 1024 + 'k'"))
        # Symlog rather than log: a model that does not fit gives zero slots, which must still show.
        y = alt.Y("slots:Q", title="Concurrent requests (slots)", scale=alt.Scale(type="symlog"),
                  axis=alt.Axis(values=[0, 1, 3, 10, 30, 100, 300, 1000, 3000], format="d"))
        color = alt.Color("variant:N", title="Memory holds", scale=alt.Scale(domain=list(VARIANTS.values())))
        lines = base.transform_filter("datum.what == 'line'").mark_line(strokeWidth=2.5).encode(x=x, y=y, color=color)
        points = base.transform_filter("datum.what == 'point'")
        tooltip = [alt.Tooltip("variant:N", title="memory holds"), alt.Tooltip("context:Q", title="context"),
                   alt.Tooltip("slots:Q", title="slots", format=".0f")]
        dots = points.mark_point(size=120, filled=True, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip)
        text = points.transform_calculate(label="format(datum.slots, '.0f') + ' slots'")
        # One label above its point, the other below, so that close counts do not overprint.
        above = text.transform_filter(f"datum.variant == '{VARIANTS['plain']}'").mark_text(
            align="left", dx=8, dy=-10).encode(x=x, y=y, text="label:N", color=color)
        below = text.transform_filter(f"datum.variant == '{VARIANTS['spec']}'").mark_text(
            align="right", dx=-8, dy=14).encode(x=x, y=y, text="label:N", color=color)
        return alt.layer(lines, dots, above, below).properties(height=320)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        rows = []
        for c in sorted({2048, 8192, 32768, 131072, r.context}):
            shown = [float(kvcache.slots(r.acc, r.target, r.cards, c, r.draft if key == "spec" else None,
                                         precision=r.precision))
                     for key in VARIANTS]
            rows.append([f"{c:,}" + (" (this scenario)" if c == r.context else ""), f"{shown[0]:.0f}",
                         f"{shown[1]:.0f}", f"{shown[0] - shown[1]:.0f}"])
        return TableView(caption=f"Slots for {r.target.name} on {r.cards} × {r.acc.name}, "
                                 f"{kvcache.RESERVE:.0%} of memory reserved, {r.draft.name} as draft",
                         headers=["Context (tokens)", "Target alone", "Target + draft", "Slots the draft costs"],
                         rows=rows)

    description = ("Concurrent requests against context length for {target} on {cards} × {acc}: the count "
                   "halves each time the context doubles. At {ctx} tokens of context {plain}, {spec} with the "
                   "{draft} draft loaded beside it.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        n, c = r.cards, r.context
        plain = float(kvcache.slots(r.acc, r.target, n, c, precision=r.precision))
        spec = float(kvcache.slots(r.acc, r.target, n, c, r.draft, precision=r.precision))
        return {"target": r.target.name, "cards": f"{n:g}", "acc": r.acc.name, "ctx": f"{c:,.0f}",
                "plain": f"{count(plain, 'request')} fit" if plain else "no request fits",
                "spec": f"and {spec:.0f}" if plain and spec else ("and none" if plain else "nor any"),
                "draft": r.draft.name}
