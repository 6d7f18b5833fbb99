"""The roofline of one accelerator: attainable FLOP/s against arithmetic intensity, log-log.

The roof is two straight lines on log axes (bandwidth x intensity, then the flat peak), so
three points draw it exactly. Prefill and decode are points that follow two sliders: the
prompt length (tokens per prefill pass) and the decode batch (tokens per decode pass). Each is
placed at its pass's intensity and at the FLOP/s it attains over the whole step, the same step
the prose prices (`roofline.step_time`): its kernels one after another and its all-reduces, so a
point sits below the roof by the time its pass spends outside its bound.
"""
from __future__ import annotations

import numpy as np

from models import prefill, roofline

from ...sources.controls import Slider
from ..resolved import Resolved
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_params, table_data, TableView
from ..sliders import PHASE_SLIDERS
from .longform import follows, part, stack

PHASE_LABELS = {"prefill": "prefill", "decode": "decode"}
STATIC = ["roof", "ridge"]
INTENSITY_RANGE = (1.0, 1e4)  # FLOP per byte: decode at batch one up to long prefills
# The prompt above which the prefill point is named on its left: the prompt slider's starting
# position, at which a phone's plot still has room for the name on its right (at the longest
# prompts it has not). Read from the slider, so a new default moves the flip with it.
PREFILL_NAME_FLIPS = PHASE_SLIDERS["prompt"].default


def point_names(moving: alt.Chart, dx: float, dy: float, **encoding) -> list[alt.Chart]:
    """The names of the prefill and decode points (rows of `moving`, `what` naming each), `dx` right
    of each point; the prefill point's left of it at the longest prompts (PREFILL_NAME_FLIPS),
    which bring it near the plot's right edge (on a phone's width, within a name's length of it)."""
    left = f"prompt > {PREFILL_NAME_FLIPS:g}"
    decode = moving.transform_filter("datum.what == 'decode'").mark_text(dx=dx, dy=dy, align="left")
    prefill = moving.transform_filter("datum.what == 'prefill'").mark_text(
        dx=alt.ExprRef(f"{left} ? {-dx} : {dx}"), dy=dy, align=alt.ExprRef(f"{left} ? 'right' : 'left'"))
    return [each.encode(**encoding) for each in (prefill, decode)]


def phase_filter(sliders: dict[str, Slider], static: list[str]) -> str:
    """Static rows always; the prefill point at the prompt slider; the decode point at the batch slider."""
    kinds = " || ".join(f"datum.what == '{w}'" for w in static)
    return " || ".join([f"({kinds})", follows(["prefill"], [sliders["prompt"]]),
                        follows(["decode"], [sliders["batch"]])])


@register
class Roofline(FigureKind):
    name = "roofline"
    title = "Attainable FLOP/s against arithmetic intensity"
    reads = ("accelerator", "cards", "target", "context", "weights", "kv")
    sliders = PHASE_SLIDERS
    columns = {"what": Column("row"), "intensity": Column("arithmetic intensity", "intensity", "FLOP/B"),
               "tflops": Column("attainable FLOP rate per card", "FLOP rate", "TFLOP/s"),
               "prompt": Column("prompt length", "count", "tokens"), "batch": Column("decode batch", "count", "requests")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        acc = r.acc
        roof_i = np.array([INTENSITY_RANGE[0], r.ridge, INTENSITY_RANGE[1]])
        roof = np.minimum(r.peak, acc.bandwidth * roof_i) / 1e12

        def phase(what: str, tokens: np.ndarray, **sl) -> Columns:
            st = phase_pass(r, what, tokens)
            # Attained FLOP/s per card: the pass's FLOPs on one card (intensity x bytes it reads)
            # over the whole step, all-reduces included.
            flops = st.intensity * st.memory_s * acc.bandwidth
            return part(what, len(tokens), intensity=st.intensity, tflops=flops / st.seconds / 1e12, **sl)

        prompts, batches = grid["prompt"], grid["batch"]
        return stack([
            part("roof", 3, intensity=roof_i, tflops=roof, prompt=0, batch=0),
            part("ridge", 1, intensity=r.ridge, tflops=r.peak / 1e12, prompt=0, batch=0),
            phase("prefill", prompts, prompt=prompts, batch=np.zeros(len(prompts))),
            phase("decode", batches, prompt=np.zeros(len(batches)), batch=batches),
        ], list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(phase_filter(sliders, STATIC))
        x = alt.X("intensity:Q", title="Arithmetic intensity (FLOP per byte read)",
                  scale=alt.Scale(type="log", domain=[0.5, 2e4]), axis=alt.Axis(format="~s"))
        y = alt.Y("tflops:Q", title="Attainable TFLOP/s per card", scale=alt.Scale(type="log"),
                  axis=alt.Axis(format="~s"))
        roof = base.transform_filter("datum.what == 'roof'").mark_line(strokeWidth=2.5).encode(x=x, y=y)
        ridge = base.transform_filter("datum.what == 'ridge'")
        ridge_dot = ridge.mark_point(shape="diamond", size=90, filled=True).encode(x=x, y=y)
        ridge_text = ridge.transform_calculate(label="'ridge ' + format(datum.intensity, '.0f') + ' FLOP/byte'") \
            .mark_text(dy=-12, align="right").encode(x=x, y=y, text="label:N")
        moving = base.transform_filter("datum.what == 'prefill' || datum.what == 'decode'")
        color = alt.Color("what:N", title="Phase", scale=alt.Scale(domain=["prefill", "decode"]))
        tooltip = [alt.Tooltip("what:N", title="phase"),
                   alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.0f"),
                   alt.Tooltip("tflops:Q", title="TFLOP/s per card", format=",.1f")]
        dots = moving.mark_point(size=140, filled=True, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip)
        labels = point_names(moving, dx=10, dy=10, x=x, y=y, text="what:N", color=color)
        return (alt.layer(roof, ridge_dot, ridge_text, dots, *labels)
                .add_params(*slider_params(sliders)).properties(height=320))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        p, b = sliders["prompt"].default, sliders["batch"].default
        rows = []
        for label, mask in [("Ridge point", cols["what"] == "ridge"),
                            (f"Prefill, {p:g}-token prompt", rows_at(cols, sliders, {"prompt": p}, what="prefill")),
                            (f"Decode, batch {b:g}", rows_at(cols, sliders, {"batch": b}, what="decode"))]:
            i, t = cols["intensity"][mask][0], cols["tflops"][mask][0]
            rows.append([label, f"{i:,.0f}", f"{t:,.1f}", f"{t * 1e12 / r.peak:.1%}"])
        return TableView(caption=f"Roofline of the {r.acc.name}, {r.target.name} with {r.precision.weights.name} weights",
                         headers=["Point", "FLOP per byte", "TFLOP/s per card", "Share of peak"], rows=rows)

    description = ("Log-log roofline of the {acc}: attainable FLOP/s rises with arithmetic intensity until the "
                   "ridge at {ridge} FLOP per byte, then stays flat at {peak} TFLOP/s. Decode at a batch of "
                   "{batch} sits {decode_where}, attaining {decode_share} of the peak over its whole step; prefill "
                   "of a {prompt}-token prompt sits {prefill_where}, attaining {prefill_share}. Each point sits "
                   "below the roof by the time its step spends in kernels bound otherwise and in all-reduces.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        def where(intensity: float) -> str:
            if intensity >= r.ridge:
                return "under the flat roof"
            return "far down the bandwidth slope" if intensity < r.ridge / 4 else "on the slope below the ridge"
        # From the model at the position, as the points are: facts() has no slider steps to look rows up by.
        batch, prompt = position["batch"], position["prompt"]
        return {"acc": r.acc.name, "ridge": f"{r.ridge:.0f}", "peak": f"{r.peak / 1e12:g}",
                "batch": f"{batch:g}", "prompt": f"{prompt:,.0f}",
                "decode_where": where(float(phase_pass(r, "decode", batch).intensity)),
                "prefill_where": where(float(phase_pass(r, "prefill", prompt).intensity)),
                "decode_share": f"{float(phase_pass(r, 'decode', batch).utilisation):.1%}",
                "prefill_share": f"{float(phase_pass(r, 'prefill', prompt).utilisation):.0%}"}


def phase_pass(r: Resolved, phase: str, tokens) -> roofline.StepTime:
    """The pass a point stands for: prefill of a `tokens`-token prompt, or decode of `tokens`
    requests at the scenario's context. The step-time figure places the same passes."""
    return r.prefill(tokens) if phase == "prefill" else r.forward(tokens)
