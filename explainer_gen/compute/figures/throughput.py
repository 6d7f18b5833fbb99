"""Tokens per second and time per output token against batch size, from the roofline step time.

A decode step over B requests yields B tokens and takes one step time. While the weight read
dominates, the step time is nearly flat, so throughput grows with B at little cost in latency;
each request adds its own KV-cache read, and past the ridge its arithmetic, so the step grows
with B, throughput levels off and every request waits longer for each token. The curves end at
the memory cap, the most requests of the scenario's context that fit (`Resolved.memory_cap`).
"""
from __future__ import annotations

import numpy as np

from models import roofline

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from . import overlay
from .base import alt, Column, Columns, FigureKind, register, table_data, TableView
from .longform import part, stack

# Batch sizes 1 to 4096, two per doubling; the curves are straight lines on log axes on
# either side of the ridge, which is added as its own row, so this is enough to draw them.
BATCHES = np.unique(np.round(2 ** (np.arange(0, 25) / 2)).astype(int)).astype(float)
SHOWN = (1, 8, 64, 256, 1024, 4096)
LABELLED = 16  # the batch at which the estimate and the floor are named, where measured points are drawn
CEILING = "ceiling: every step at its floor"  # the floor curve's name, drawn beside it


@register
class BatchThroughput(FigureKind):
    name = "batch-throughput"
    title = "Throughput and time per token against batch size"
    reads = ("accelerator", "cards", "target", "context", "weights", "kv")
    sliders: dict[str, Slider] = {}
    columns = {"what": Column("row"), "batch": Column("batch size", "count", "requests"),
               "tps": Column("throughput, all requests", "rate", "tokens/s"),
               "tpot_ms": Column("time per output token", "time per count", "ms"), **overlay.columns("rate", "tokens/s")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        cap = r.memory_cap()
        ridge = r.ridge_tokens()
        marks = [b for b in (ridge, cap) if b <= min(cap, BATCHES[-1])]
        batches = np.unique(np.concatenate([BATCHES[BATCHES <= cap], marks]))

        def at(what: str, b) -> Columns:
            b = np.atleast_1d(np.asarray(b, dtype=float))
            st = r.forward(b)
            return part(what, len(b), batch=b, tps=b / st.seconds, tpot_ms=st.seconds * 1e3)

        parts = [at("curve", batches)] + ([at("ridge", ridge)] if ridge <= cap else []) + (
            [at("cap", cap)] if cap <= BATCHES[-1] else [])
        placed = measured_points(r)
        if placed:
            st = r.forward(batches)
            tps = batches / st.at(overlay.eff())
            low, high = overlay.band("throughput", tps)
            parts.append(part("estimate", len(batches), batch=batches, tps=tps, tpot_ms=0.0)
                         | {"low": low, "high": high, "floor": batches / st.seconds})
            parts.append(overlay.rows(placed, "tps", "batch", tpot_ms=0.0))
        return stack([overlay.with_blank(p) for p in parts], list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        x = alt.X("batch:Q", title="Batch size (requests)", scale=alt.Scale(type="log", base=2, domain=[1, 4096]),
                  axis=alt.Axis(values=list(SHOWN), format="d"))
        curve = base.transform_filter("datum.what == 'curve'")

        def on_tps(column: str) -> alt.Y:
            return alt.Y(f"{column}:Q", title="Tokens per second (all requests)", scale=alt.Scale(type="log"),
                         axis=alt.Axis(format="~s", titleColor=colour("series-1")))
        tps = curve.mark_line(strokeWidth=2.5, color=colour("series-1")).encode(
            x=x, y=on_tps("tps"),
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
        # Past the memory cap no batch runs: the plot is shaded from the cap to the axis's end.
        cap = base.transform_filter("datum.what == 'cap'")
        past = cap.transform_calculate(end="4096").mark_rect(opacity=0.12, color=colour("muted")).encode(
            x=x, x2="end:Q")
        cap_text = cap.transform_calculate(label="'memory cap: ' + format(datum.batch, ',.0f')").mark_text(
            align="right", dx=-4, baseline="top", y=20, color=colour("muted")).encode(
            x=x, text="label:N")
        # Where published measurements of this setup exist (overlay): the estimate of the same decode
        # steps, dotted with its band shaded, and the measured throughputs, each with its own estimate
        # as a bar over its band, since a measured throughput also pays for its requests' prompts.
        estimate = base.transform_filter("datum.what == 'estimate'")
        shaded = estimate.mark_area(opacity=0.16, color=colour("series-1")).encode(x=x, y=on_tps("low"), y2="high:Q")
        dotted = estimate.mark_line(strokeWidth=1.5, strokeDash=[1, 3], color=colour("series-1")).encode(
            x=x, y=on_tps("tps"))
        # Where the curves climb: the estimate's name below its band, running right where the band is
        # higher, and the ceiling's above its line, running left where the line is lower.
        named = estimate.transform_filter(f"datum.batch == {LABELLED}")
        names = [named.transform_calculate(label=f"'{label}'").mark_text(
                     align=align, dx=dx, dy=dy, baseline=baseline, color=colour("fg")).encode(
                     x=x, y=on_tps(column), text="label:N")
                 for label, column, align, dx, dy, baseline in (("estimate, band shaded", "low", "left", 4, 4, "top"),
                                                                 (CEILING, "floor", "right", -4, -4, "bottom"))]
        points = overlay.layers(base, x, on_tps, "tps", "tokens/s", ",.0f", bars=True)
        throughput = alt.layer(shaded, tps, dotted, *names, *points)
        return (alt.layer(past, throughput, tpot, rule, text, cap_text).resolve_scale(y="independent")
                .properties(height=320))

    def narrow(self, spec: dict) -> dict:
        # On a phone the ceiling's name, ending left of where it points, would run past the plot's left.
        return overlay.narrow(spec, {CEILING: ["ceiling:", "every step", "at its floor"]})

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        rows = []
        for b in SHOWN:
            i = np.flatnonzero((cols["what"] == "curve") & (cols["batch"] == b))
            rows.append([f"{b:g}", f"{cols['tps'][i[0]]:,.0f}", f"{cols['tpot_ms'][i[0]]:,.1f}"] if len(i)
                        else [f"{b:g}", "does not fit in memory", "does not fit in memory"])
        return TableView(also=overlay.table(cols, "tps", "output tokens per second", lambda v: f"{v:,.0f}"),
                         caption=f"Decode of {r.target.name} on {r.cards} × {r.acc.name}, every request holding "
                                 f"{r.context:,} tokens of cache",
                         headers=["Batch", "Tokens per second", "ms per output token"], rows=rows)

    description = ("Log-log chart for {target} on {cards} × {acc}, each request holding {context} tokens of cache: "
                   "{shape}{measured}")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        ridge, cap = r.ridge_tokens(), r.memory_cap()
        if ridge <= cap:
            shape = (f"throughput climbs almost in proportion to the batch while time per token rises slowly with "
                     f"every request's cache read, up to a batch of about {ridge:,.0f}, where the weight GEMMs turn "
                     f"compute-bound; beyond it throughput grows more slowly and time per token rises faster, until "
                     f"memory runs out at {cap:,.0f} requests.")
        else:
            shape = (f"throughput climbs with the batch while time per token rises slowly with every request's "
                     f"cache read, until memory runs out at {cap:,.0f} requests, before the weight GEMMs turn "
                     f"compute-bound.")
        measured = overlay.tally(cols)
        if measured:
            measured = (" Its curves are ceilings, every step at its floor; the estimate of the same decode steps, fitted on published "
                        "measurements, is drawn dotted with its band shaded." + measured + " A measured throughput "
                        "also pays for its requests' prompts, which the curves leave out, so each point is drawn at "
                        "the largest batch its requests fit in, with its own estimate as a bar over its band.")
        return {"target": r.target.name, "cards": f"{r.cards}", "acc": r.acc.name, "context": f"{r.context:,}",
                "shape": shape, "measured": measured}


def measured_points(r: Resolved) -> list[overlay.Point]:
    """The published throughputs of this setup, each at the batch the estimate runs it at: the most
    requests of its prompt and answer lengths that fit at once (`estimate.Setup.max_batch`)."""
    return overlay.points(r, ["throughput"], lambda m: m.setup.max_batch(m.args["input"], m.args["output"]),
                          lambda m, v: v)

