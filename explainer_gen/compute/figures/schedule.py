"""Slot occupancy over time: one seeded request set through static and continuous batching.

Each request is a bar in the slot that served it, from its first token to its last. Static
batching's groups also get a pale band for the time their slots were held. The two schedulers
are stacked in one plot (continuous below, static above), each block scaled to unit height so
the plot keeps its shape as the batch slider changes the number of slots.
"""
from __future__ import annotations

import numpy as np

from models import batching

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import BOLD, colour
from .base import alt, Column, Columns, count, FigureKind, register, rows_at, slider_filter, slider_params, table_data, TableView
from .longform import part, stack

SCHEDULERS = {"continuous": "Continuous batching", "static": "Static batching"}
BASE = {"continuous": 0.0, "static": 1.35}  # bottom of each block; a block is one unit tall
BAR = 0.8                                  # share of a slot's height a bar fills
TOP = 2.55


def _rows(r: Resolved, batch: int, spread: float) -> list[Columns]:
    out = []
    for sched, label in SCHEDULERS.items():
        run = batching.simulate(sched, batch, spread, r.acc, r.target, r.cards, r.context,
                                    precision=r.precision)
        base, n = BASE[sched], len(run.slot)
        pos = dict(batch=batch, spread=spread, sched=label)
        if sched == "static":
            # One band per group: from its start until every slot it held is released.
            first = np.arange(0, n, batch)
            size = np.minimum(batch, n - first)
            out.append(part("held", len(first), **pos, y0=base, y1=base + (size - 1 + BAR) / batch,
                            t0=run.start_s()[first], t1=run.release_s()[first], tps=0))
        out.append(part("busy", n, **pos, y0=base + run.slot / batch, y1=base + (run.slot + BAR) / batch,
                        t0=run.start_s(), t1=run.end_s(), tps=0))
        out.append(part("total", 1, **pos, y0=base + 1.0, y1=base, t0=0.0, t1=run.seconds, tps=run.tokens_per_s))
    return out


@register
class BatchSchedule(FigureKind):
    name = "batch-schedule"
    title = "Slot occupancy under static and continuous batching"
    reads = ("accelerator", "cards", "target", "context", "weights", "kv")
    sliders = {
        "batch": Slider("batch", "Batch size (slots)", 4, 32, 4, 8, "count"),
        "spread": Slider("spread", "Spread of output lengths", 0.0, 1.0, 0.1, 0.6, "ratio"),
    }
    columns = {"batch": Column("batch size", "count", "slots"), "spread": Column("spread of output lengths", "ratio"),
               "sched": Column("scheduler"), "what": Column("row"), "y0": Column("lane bottom", "ratio"),
               "y1": Column("lane top", "ratio"), "t0": Column("start", "time", "s"), "t1": Column("end", "time", "s"),
               "tps": Column("throughput of the whole run", "rate", "tokens/s")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = [p for b in grid["batch"] for s in grid["spread"] for p in _rows(r, int(b), float(s))]
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        x = alt.X("t0:Q", title="Time (s)", scale=alt.Scale(zero=True, nice=False))
        y = alt.Y("y0:Q", axis=None, scale=alt.Scale(domain=[0, TOP], nice=False, zero=True))
        color = alt.Color("sched:N", title="Scheduler", scale=alt.Scale(domain=list(SCHEDULERS.values())),
                          legend=None)
        held = base.transform_filter("datum.what == 'held'").mark_rect(color=colour("series-8"), opacity=0.3).encode(
            x=x, x2="t1:Q", y=y, y2="y1:Q")
        busy = base.transform_filter("datum.what == 'busy'").mark_rect().encode(
            x=x, x2="t1:Q", y=y, y2="y1:Q", color=color,
            tooltip=[alt.Tooltip("sched:N", title="scheduler"), alt.Tooltip("t0:Q", title="first token (s)", format=".2f"),
                     alt.Tooltip("t1:Q", title="last token (s)", format=".2f")])
        total = base.transform_filter("datum.what == 'total'")
        end = total.mark_rule(strokeDash=[4, 3], strokeWidth=1.5).encode(
            x=alt.X("t1:Q"), y=alt.Y("y1:Q"), y2="y0:Q", color=color)
        label = total.transform_calculate(
            text="datum.sched + ': ' + format(datum.tps, ',.0f') + ' tokens/s, done at ' + format(datum.t1, '.1f') + ' s'"
        ).mark_text(align="left", baseline="bottom", dy=-3, fontWeight=BOLD).encode(
            x=alt.datum(0), y=alt.Y("y0:Q"), text="text:N", color=color)
        return alt.layer(held, busy, end, label).add_params(*slider_params(sliders)).properties(height=360)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        b, s = sliders["batch"].default, sliders["spread"].default
        at = rows_at(cols, sliders)
        rows = []
        for label in SCHEDULERS.values():
            mine = at & (cols["sched"] == label)
            total = mine & (cols["what"] == "total")
            busy = mine & (cols["what"] == "busy")
            seconds, tps = cols["t1"][total][0], cols["tps"][total][0]
            occupancy = (cols["t1"][busy] - cols["t0"][busy]).sum() / (b * seconds)
            rows.append([label, f"{seconds:.2f}", f"{tps:,.0f}", f"{occupancy:.0%}"])
        return TableView(caption=f"{batching.N_REQUESTS} requests at batch {b:g}, spread {s:.1f}, "
                                 f"{r.target.name} on {r.cards} × {r.acc.name}",
                         headers=["Scheduler", "Run time (s)", "Tokens per second", "Slot occupancy"], rows=rows)

    description = ("Two timelines of the same {n} requests in {slots}. Under static batching, slots sit idle "
                   "inside each group until its longest request ends; under continuous batching, each freed slot "
                   "takes the next request and the run ends sooner.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        return {"n": f"{batching.N_REQUESTS}", "slots": count(position["batch"], "slot")}
