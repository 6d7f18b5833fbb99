"""Published speedups beside the model's, one row per published setting.

Leviathan et al. Table 1 (c = 0) against Theorem 3.8 at the same a and k; Chen et al.'s 70B runs
against Theorem 3.8 with the draft priced as the roofline prices it (its weights over the
target's), at the acceptance rate the measured speedup implies at the measured draft cost.
"""
from __future__ import annotations

import numpy as np

from models import papers

from ...sources.controls import Slider
from ..resolved import Resolved
from .base import alt, Column, Columns, FigureKind, register, table_data, TableView

LEVIATHAN = "Leviathan et al., Table 1"
CHEN = "Chen et al., 70B target"


def rows() -> Columns:
    lev, chen = papers.leviathan_table1(), papers.chen2023()
    label = [f"a = {r.a:.1f}, k = {r.k}" for r in lev] + [f"{r.task}, K = {chen.k}" for r in chen.rows]
    return {
        "setting": np.array(label),
        "source": np.array([LEVIATHAN] * len(lev) + [CHEN] * len(chen.rows)),
        "a": np.array([r.a for r in lev] + [r.implied_a for r in chen.rows]),
        "k": np.array([r.k for r in lev] + [chen.k] * len(chen.rows), dtype=float),
        "c": np.array([0.0] * len(lev) + [chen.c_roofline] * len(chen.rows)),
        "paper": np.array([r.paper_speed for r in lev] + [r.paper_speedup for r in chen.rows]),
        "model": np.array([r.model_speed for r in lev] + [r.roofline_speedup for r in chen.rows]),
    }


@register
class PaperCheck(FigureKind):
    name = "paper-check"
    title = "Published speedups beside the model's"
    reads = ()
    sliders: dict[str, Slider] = {}
    columns = {"setting": Column("setting"), "source": Column("source"), "a": Column("acceptance rate", "ratio"),
               "k": Column("lookahead", "count"), "c": Column("draft cost over target step", "ratio"),
               "paper": Column("published speedup", "ratio"), "model": Column("model speedup", "ratio")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        return rows()

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        order = [str(s) for s in rows()["setting"]]
        y = alt.Y("setting:N", title=None, sort=order, axis=alt.Axis(labelLimit=220))
        x = alt.X("paper:Q", title="Speedup over plain decoding (×)", scale=alt.Scale(domain=[1, 7]))
        tips = [alt.Tooltip("source:N", title="source"), alt.Tooltip("setting:N", title="setting"),
                alt.Tooltip("a:Q", title="acceptance rate", format=".3f"), alt.Tooltip("c:Q", title="c", format=".3f"),
                alt.Tooltip("paper:Q", title="published", format=".2f"),
                alt.Tooltip("model:Q", title="model", format=".2f")]
        folded = base.transform_fold(["paper", "model"], as_=["which", "speedup"]).transform_calculate(
            who="datum.which === 'paper' ? 'Published' : 'Model'")
        link = base.mark_rule(strokeWidth=2, opacity=0.5).encode(x=x, x2="model:Q", y=y)
        points = folded.mark_point(size=80, strokeWidth=2).encode(
            x=alt.X("speedup:Q", title="Speedup over plain decoding (×)", scale=alt.Scale(domain=[1, 7])),
            y=y,
            shape=alt.Shape("who:N", title=None, scale=alt.Scale(domain=["Published", "Model"],
                                                                 range=["circle", "diamond"])),
            color=alt.Color("source:N", title=None, scale=alt.Scale(domain=[LEVIATHAN, CHEN]),
                            legend=alt.Legend(orient="bottom")),
            # Published points filled, the model's hollow: the fill is the source's colour (the same domain
            # as the stroke's, or the fill scale would order the sources its own way), shown or not.
            fill=alt.Fill("source:N", scale=alt.Scale(domain=[LEVIATHAN, CHEN]), legend=None),
            fillOpacity=alt.condition(alt.datum.which == "paper", alt.value(1), alt.value(0)),
            tooltip=tips)
        return alt.layer(link, points).properties(height=280)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        chen = papers.chen2023()
        out = []
        for i in range(len(cols["setting"])):
            implied = " (implied)" if cols["source"][i] == CHEN else ""
            out.append([f"{cols['source'][i]}: {cols['setting'][i]}", f"{cols['a'][i]:.2f}{implied}",
                        f"{cols['c'][i]:.3f}", f"{cols['paper'][i]:.2f}×", f"{cols['model'][i]:.2f}×"])
        return TableView(
            caption=(f"Leviathan et al.: Theorem 3.8 at the table's a and k with c = 0. Chen et al.: the acceptance "
                     f"rate at which Theorem 3.8 gives the measured speedup when c = {chen.c:.3f} (measured), "
                     f"then the model's speedup at that rate when c = {chen.c_roofline:.3f} (weights over weights)"),
            headers=["Setting", "Acceptance a", "c", "Published", "Model"], rows=out)

    description = ("Dot plot of published against modelled speedups: the six rows of Leviathan et al. Table 1 "
                   "agree to within {gap}; for Chen et al. the model, pricing the draft by its weights, lands "
                   "about {over} above each measured speedup.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        lev = cols["source"] == LEVIATHAN
        gap = float(np.max(np.abs(cols["paper"][lev] - cols["model"][lev])))
        over = float(np.mean(cols["model"][~lev] / cols["paper"][~lev])) - 1
        return {"gap": f"{gap:.3f}", "over": f"{over:.0%}"}
