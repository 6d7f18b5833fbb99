"""Measured tokens per verify step of the simulated sampler against E(a, k).

Shares the `drift` slider with the sampling-check figure, so the two move together: there the
output stays put, here the yield per step falls.
"""
from __future__ import annotations

import numpy as np

from models import sampling, speculative

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_filter, slider_params, table_data, TableView
from ..sliders import DRIFT

MEASURED = "Measured"
FORMULA = "E(a, k)"
# The formula is drawn on a finer drift grid than the slider's, so its curve is smooth.
CURVE = np.round(np.linspace(0.0, 1.0, 41), 3)


@register
class SamplingSpeed(FigureKind):
    name = "sampling-speed"
    title = "Tokens per verify step: the simulated sampler against E(a, k)"
    reads = ()
    sliders = {"drift": DRIFT}
    columns = {"drift": Column("draft drift from the target", "ratio"), "alpha": Column("acceptance rate", "ratio"),
               "k": Column("lookahead k", "count"), "series": Column("series"),
               "tokens": Column("tokens per verify step", "count")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        g = sampling.figure_grid(grid["drift"])
        ks = g.lookaheads.astype(float)
        n = len(g.distance)
        p = sampling.figure_target()
        curve_alpha = np.array([sampling.acceptance(p, sampling.figure_draft(d)) for d in CURVE])
        m = len(CURVE)
        return {
            "drift": np.concatenate([np.repeat(g.distance, len(ks)), np.repeat(CURVE, len(ks))]),
            "alpha": np.concatenate([np.repeat(g.alpha, len(ks)), np.repeat(curve_alpha, len(ks))]),
            "k": np.concatenate([np.tile(ks, n), np.tile(ks, m)]),
            "series": np.array([MEASURED] * (n * len(ks)) + [FORMULA] * (m * len(ks))),
            "tokens": np.concatenate([g.measured.ravel(),
                                      speculative.expected_tokens(curve_alpha[:, None], ks[None, :]).ravel()]),
        }

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        data = alt.Chart(table_data())
        x = alt.X("alpha:Q", title="Acceptance rate a = Σ min(p, q)", scale=alt.Scale(domain=[0.2, 1]))
        y = alt.Y("tokens:Q", title="Tokens per verify step", scale=alt.Scale(domain=[1, 9]))
        color = alt.Color("k:N", title="Lookahead k", scale=alt.Scale(domain=list(sampling.FIGURE_LOOKAHEADS)))
        tips = [alt.Tooltip("series:N", title="series"), alt.Tooltip("k:N", title="k"),
                alt.Tooltip("alpha:Q", title="acceptance", format=".3f"),
                alt.Tooltip("tokens:Q", title="tokens per step", format=".3f")]
        curves = data.transform_filter(alt.datum.series == FORMULA).mark_line(strokeWidth=1.5).encode(
            x=x, y=y, color=color, detail="k:N")
        every = data.transform_filter(alt.datum.series == MEASURED).mark_point(size=24, opacity=0.45).encode(
            x=x, y=y, color=color, tooltip=tips)
        now = data.transform_filter(alt.datum.series == MEASURED).transform_filter(slider_filter(sliders))
        here = now.mark_point(filled=True, size=90, stroke=colour("fg"), strokeWidth=1).encode(
            x=x, y=y, color=color, tooltip=tips)
        rule = now.transform_filter(alt.datum.k == 1).mark_rule(strokeDash=[4, 4]).encode(x=x)
        return alt.layer(curves, every, rule, here).add_params(*slider_params(sliders)).properties(height=300)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders)
        measured = m & (cols["series"] == MEASURED)
        alpha = float(cols["alpha"][measured][0])
        rows = []
        for k in sampling.FIGURE_LOOKAHEADS:
            got = float(cols["tokens"][measured & (cols["k"] == k)][0])
            want = float(speculative.expected_tokens(alpha, k))
            rows.append([f"{k}", f"{got:.3f}", f"{want:.3f}", f"{got - want:+.3f}"])
        return TableView(
            caption=(f"Tokens per verify step at draft drift {sliders['drift'].default:.1f} "
                     f"(acceptance rate {alpha:.3f}); {sampling.FIGURE_STEPS:,} simulated steps per lookahead"),
            headers=["Lookahead k", "Measured", FORMULA, "Difference"], rows=rows)

    description = ("Points of measured tokens per verify step on the curves E(a, k) for k = 1, 2, 4 and 8; at "
                   "draft drift {drift} the acceptance rate is {alpha}, and no point is more than {worst} tokens "
                   "off its curve.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        measured = cols["series"] == MEASURED
        worst = 0.0
        for k in sampling.FIGURE_LOOKAHEADS:
            mine = measured & (cols["k"] == k)
            want = speculative.expected_tokens(cols["alpha"][mine], k)
            worst = max(worst, float(np.max(np.abs(cols["tokens"][mine] - want))))
        return {"drift": f"{position['drift']:.1f}", "alpha": f"{float(cols['alpha'][at & measured][0]):.2f}",
                "worst": f"{worst:.2f}"}
