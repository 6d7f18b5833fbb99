"""Token frequencies of plain sampling from p beside speculative sampling with a draft q.

The draft drifts from p as the slider moves; the speculative bars must not. Every bar is a
count from the simulation in models/sampling.py, run at build time with a fixed seed.
"""
from __future__ import annotations

import numpy as np

from models import sampling

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_filter, slider_params, table_data, TableView
from ..sliders import DRIFT

# The slider is named `drift`: an identifier that no Vega signal or expression function uses.

PLAIN = "Plain sampling from p"
SPEC = f"Speculative sampling, k = {sampling.FIGURE_LOOKAHEAD}"
DRAFT = "Draft q"
TARGET = "Target p"
BARS = [PLAIN, SPEC, DRAFT]


@register
class SamplingCheck(FigureKind):
    name = "sampling-check"
    title = "Output token frequencies: plain sampling beside speculative sampling"
    reads = ()
    sliders = {"drift": DRIFT}
    columns = {"drift": Column("draft drift from the target", "ratio"), "token": Column("token", "count"),
               "series": Column("series"), "share": Column("share of tokens", "ratio"),
               "alpha": Column("acceptance rate, min(p, q) summed over tokens", "ratio")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        g = sampling.figure_grid(grid["drift"])
        vocab = g.target.size
        blocks = {PLAIN: g.plain, SPEC: g.speculative, DRAFT: g.draft,
                  TARGET: np.broadcast_to(g.target, g.draft.shape)}
        drift, token, series, share, alpha = [], [], [], [], []
        for label, table in blocks.items():
            drift.append(np.repeat(g.distance, vocab))
            token.append(np.tile(np.arange(1, vocab + 1), len(g.distance)))
            series.append(np.full(table.size, label))
            share.append(table.ravel())
            alpha.append(np.repeat(g.alpha, vocab))
        return {"drift": np.concatenate(drift), "token": np.concatenate(token), "series": np.concatenate(series),
                "share": np.concatenate(share), "alpha": np.concatenate(alpha)}

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        x = alt.X("token:O", title="Token (1 is the target's most likely)", axis=alt.Axis(labelAngle=0))
        y = alt.Y("share:Q", title="Share of tokens", scale=alt.Scale(domain=[0, 0.7]), axis=alt.Axis(format="%"))
        tips = [alt.Tooltip("series:N", title="series"), alt.Tooltip("token:O", title="token"),
                alt.Tooltip("share:Q", title="share", format=".3f"),
                alt.Tooltip("alpha:Q", title="acceptance rate", format=".2f")]
        bars = base.transform_filter(alt.FieldOneOfPredicate(field="series", oneOf=BARS)).mark_bar().encode(
            x=x, xOffset=alt.XOffset("series:N", sort=BARS, scale=alt.Scale(domain=BARS)), y=y,
            color=alt.Color("series:N", title=None, scale=alt.Scale(domain=BARS),
                            legend=alt.Legend(orient="bottom", columns=3)),
            tooltip=tips)
        target = base.transform_filter(alt.datum.series == TARGET).mark_tick(
            thickness=2, size=36, color=colour("fg")).encode(x=x, y=y, tooltip=tips)
        return alt.layer(bars, target).add_params(*slider_params(sliders)).properties(height=300)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders)
        tokens = np.unique(cols["token"][m])
        rows = []
        for t in tokens:
            at = m & (cols["token"] == t)
            value = {s: float(cols["share"][at & (cols["series"] == s)][0]) for s in (TARGET, DRAFT, PLAIN, SPEC)}
            rows.append([f"{t:d}"] + [f"{value[s]:.3f}" for s in (TARGET, DRAFT, PLAIN, SPEC)])
        drift = sliders["drift"].default
        alpha = float(cols["alpha"][m][0])
        return TableView(
            caption=(f"Share of each token at draft drift {drift:.1f} (acceptance rate {alpha:.2f}); "
                     f"{sampling.FIGURE_TOKENS:,} tokens per sampled column, seed {sampling.FIGURE_SEED}"),
            headers=["Token", TARGET, DRAFT, PLAIN, SPEC], rows=rows)

    description = ("Bar chart of token shares at draft drift {drift}: the draft is {draft} from the target in "
                   "total variation, while plain and speculative sampling are {plain} and {spec} from it, the "
                   "size of sampling noise.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        shares = {s: cols["share"][at & (cols["series"] == s)] for s in (TARGET, DRAFT, PLAIN, SPEC)}
        tv = lambda s: 0.5 * float(np.abs(shares[s] - shares[TARGET]).sum())  # noqa: E731
        return {"drift": f"{position['drift']:.1f}", "draft": f"{tv(DRAFT):.2f}", "plain": f"{tv(PLAIN):.3f}",
                "spec": f"{tv(SPEC):.3f}"}
