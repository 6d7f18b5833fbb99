"""Step time against tokens per pass: the weight-read floor, the arithmetic's slope, and the two
passes that run above them.

The floor and the slope are straight lines on log-log axes, so their end points draw them. The
passes are not: each adds up its kernels at their own rooflines and its all-reduces, and a decode
pass also reads every request's cache in its attention kernel, so the prefill and decode curves
are drawn from points four to a doubling, with the ridge among them. Prefill and decode points
ride their curves with the same sliders as the roofline.

Above each curve a band reaches from that floor to the estimate of the same pass, fitted on
published measurements (models.estimate): every kernel below its roofline, plus fixed costs.
"""
from __future__ import annotations

import numpy as np

from models import estimate, roofline

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_params, table_data, TableView
from .longform import part, stack
from ..sliders import PHASE_SLIDERS
from .roofline import phase_filter, phase_pass, point_names

TOKENS_RANGE = (1.0, 16384.0)
LINES = {"memory": "weight read (bandwidth floor)", "compute": "arithmetic (compute slope)",
         "prefill-line": "prefill pass", "decode-line": "decode pass"}
STATIC = list(LINES) + ["ridge"]
# Tokens per pass along the curves: four points to a doubling over the axis.
CURVE = np.unique(np.round(2 ** np.arange(0, np.log2(TOKENS_RANGE[1]) + 0.01, 0.25)))


@register
class StepTime(FigureKind):
    name = "step-time"
    title = "Step time against tokens per pass"
    reads = ("accelerator", "cards", "target", "context", "weights", "kv")
    sliders = PHASE_SLIDERS
    columns = {"what": Column("row"), "tokens": Column("tokens per pass", "count"), "ms": Column("step time", "time", "ms"),
               "ms_estimate": Column("estimate of the pass fitted on measurements, the curves only", "time", "ms"),
               "prompt": Column("prompt length", "count", "tokens"), "batch": Column("decode batch", "count", "requests")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        ends = np.array(TOKENS_RANGE)
        # The weights alone: the floor of reading them all (the head's once, for the one position
        # that makes a token), and the slope of the blocks' products, which every position pays.
        at = lambda tokens: r.forward(tokens, context=0, logits=1)  # noqa: E731
        slope = lambda tokens: r.forward(tokens, context=0, logits=0)  # noqa: E731
        ridge = r.ridge_tokens()
        curve = np.unique(np.append(CURVE, ridge))
        # Decode runs only as far as memory holds the requests' caches.
        decode = curve[curve <= r.memory_cap()]
        prompts, batches = grid["prompt"], grid["batch"]
        eff = estimate.fitted().eff

        def curve_part(phase: str, tokens: np.ndarray) -> Columns:
            st = phase_pass(r, phase, tokens)
            return part(f"{phase}-line", len(tokens), tokens=tokens, ms=st.seconds * 1e3,
                        ms_estimate=st.at(eff) * 1e3, prompt=0, batch=0)

        return stack([
            part("memory", 2, tokens=ends, ms=at(ends).memory_s * 1e3, ms_estimate=0, prompt=0, batch=0),
            part("compute", 2, tokens=ends, ms=slope(ends).compute_s * 1e3, ms_estimate=0, prompt=0, batch=0),
            curve_part("prefill", curve),
            curve_part("decode", decode),
            part("ridge", 1, tokens=ridge, ms=at(ridge).memory_s * 1e3, ms_estimate=0, prompt=0, batch=0),
            part("prefill", len(prompts), tokens=prompts, ms=phase_pass(r, "prefill", prompts).seconds * 1e3,
                 ms_estimate=0, prompt=prompts, batch=np.zeros(len(prompts))),
            part("decode", len(batches), tokens=batches, ms=phase_pass(r, "decode", batches).seconds * 1e3,
                 ms_estimate=0, prompt=np.zeros(len(batches)), batch=batches),
        ], list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(phase_filter(sliders, STATIC))
        x = alt.X("tokens:Q", title="Tokens per pass (prompt length, or decode batch)",
                  scale=alt.Scale(type="log", domain=list(TOKENS_RANGE)), axis=alt.Axis(format="~s"))
        y = alt.Y("ms:Q", title="Step time (ms)", scale=alt.Scale(type="log"), axis=alt.Axis(format="~g"))
        guides = base.transform_filter("datum.what == 'memory' || datum.what == 'compute'").mark_line(
            strokeDash=[5, 4], strokeWidth=1.5).encode(
            x=x, y=y, detail="what:N", strokeOpacity=alt.value(0.7),
            color=alt.Color("what:N", title="Line", scale=alt.Scale(domain=list(LINES)),
                            legend=alt.Legend(labelExpr=_legend_expr())))
        curves = base.transform_filter("datum.what == 'prefill-line' || datum.what == 'decode-line'")
        # The band takes its curve's colour but adds no legend of its own; the guides, layered
        # first, own the shared colour legend (a first layer without one would hide it).
        band = curves.mark_area(opacity=0.16).encode(
            x=x, y=y, y2="ms_estimate:Q", detail="what:N",
            color=alt.Color("what:N", scale=alt.Scale(domain=list(LINES)), legend=None),
            tooltip=[alt.Tooltip("what:N", title="pass"), alt.Tooltip("tokens:Q", title="tokens per pass"),
                     alt.Tooltip("ms:Q", title="floor (ms)", format=",.2f"),
                     alt.Tooltip("ms_estimate:Q", title="estimate (ms)", format=",.2f")])
        step = curves.mark_line(strokeWidth=3).encode(
            x=x, y=y, detail="what:N", color=alt.Color("what:N", scale=alt.Scale(domain=list(LINES))))
        ridge = base.transform_filter("datum.what == 'ridge'")
        ridge_dot = ridge.mark_point(shape="diamond", size=90, filled=True, color=colour("muted")).encode(x=x, y=y)
        ridge_text = ridge.transform_calculate(label="'ridge: ' + format(datum.tokens, '.0f') + ' tokens'") \
            .mark_text(dy=16, align="left", dx=6).encode(x=x, y=y, text="label:N")
        moving = base.transform_filter("datum.what == 'prefill' || datum.what == 'decode'")
        tooltip = [alt.Tooltip("what:N", title="phase"), alt.Tooltip("tokens:Q", title="tokens per pass"),
                   alt.Tooltip("ms:Q", title="step (ms)", format=",.2f")]
        dots = moving.mark_point(size=140, filled=True, opacity=1, color=colour("fg")).encode(
            x=x, y=y, shape=alt.Shape("what:N", title="Phase", scale=alt.Scale(domain=["prefill", "decode"])),
            tooltip=tooltip)
        labels = point_names(moving, dx=8, dy=-12, x=x, y=y, text="what:N")
        return (alt.layer(guides, band, step, ridge_dot, ridge_text, dots, *labels)
                .resolve_scale(color="shared").add_params(*slider_params(sliders)).properties(height=320))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        p, b = sliders["prompt"].default, sliders["batch"].default
        rows = []
        for label, phase, mask in [
                (f"Decode, batch {b:g}", "decode", rows_at(cols, sliders, {"batch": b}, what="decode")),
                ("Ridge", "ridge", cols["what"] == "ridge"),
                (f"Prefill, {p:g}-token prompt", "prefill", rows_at(cols, sliders, {"prompt": p}, what="prefill"))]:
            tokens, ms = cols["tokens"][mask][0], cols["ms"][mask][0]
            st = r.forward(tokens, context=0) if phase == "ridge" else phase_pass(r, phase, tokens)
            bound = "arithmetic" if bool(st.compute_bound) else "reads"
            est = float(st.at(estimate.fitted().eff)) * 1e3
            rows.append([label, f"{tokens:,.0f}", f"{ms:,.2f}", f"{est:,.2f}", bound])
        return TableView(caption=f"Step time of {r.target.name} on {r.cards} × {r.acc.name}: the roofline floor, "
                                 f"and the estimate fitted on published measurements (kernels below their rooflines, fixed costs)",
                         headers=["Point", "Tokens per pass", "Floor (ms)", "Estimate (ms)", "Block GEMMs bound by"], rows=rows)

    description = ("Log-log chart of step time against tokens per pass for {target} on {cards} × {acc}. Reading the "
                   "weights takes {floor}, and the block GEMMs' arithmetic overtakes their reads at about {ridge} tokens. "
                   "A prefill pass takes {prefill_one} for one token, all-reduces included, and rises in proportion to "
                   "the tokens past the ridge. A decode pass also reads each request's {context}-token cache: {decode_shape} A shaded band "
                   "above each curve reaches to an estimate fitted on published measurements: {decode_estimate} for a decode "
                   "pass at batch one.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        floor = float(r.forward(1, context=0).memory_s) * 1e3
        one = float(phase_pass(r, "prefill", 1).seconds) * 1e3
        cap = r.memory_cap()
        shown = min(cap, TOKENS_RANGE[1])
        at_cap = float(phase_pass(r, "decode", shown).seconds) * 1e3
        decode_shape = (f"{at_cap:,.1f} ms at a batch of {shown:,.0f}"
                        + (", the most requests that fit in memory." if cap <= TOKENS_RANGE[1] else "."))
        return {"target": r.target.name, "cards": f"{r.cards}", "acc": r.acc.name, "floor": f"{floor:.1f} ms",
                "ridge": f"{r.ridge_tokens():.0f}", "prefill_one": f"{one:.1f} ms",
                "context": f"{r.context:,}", "decode_shape": decode_shape,
                "decode_estimate": f"{float(phase_pass(r, 'decode', 1).at(estimate.fitted().eff)) * 1e3:,.1f} ms"}

def _legend_expr() -> str:
    """Readable legend labels for the short `what` codes."""
    cases = " : ".join(f"datum.label == '{k}' ? '{v}'" for k, v in LINES.items())
    return f"{cases} : datum.label"
