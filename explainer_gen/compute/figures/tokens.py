"""The same tokens made twice on one time axis: plain decoding against speculative decoding."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from models import roofline, speculative

from ...sources.controls import Slider
from .. import layout
from ..resolved import Resolved
from ...theme import BOLD
from .base import alt, Column, Columns, count, FigureKind, register, rows_at, slider_filter, slider_params, table_data, TableView
from ..sliders import ACCEPTANCE, LOOKAHEAD

N_TOKENS = 48
SEED = 20230211  # fixed so every build draws the same outcomes

KINDS = ["Target pass", "Draft steps", "Plain token", "Accepted guess", "Rejected guess",
         "Discarded guess", "Target's correction", "Bonus token"]
SHAPES = ["square", "square", "circle", "circle", "cross", "square", "diamond", "triangle-up"]
ROWS = ["Plain: weight reads", "Plain: tokens", "Speculative: passes", "Speculative: tokens"]
# Between the headline's two parts; on a phone the headline breaks its line there instead.
HEADLINE_BREAK = " · "


@lru_cache(maxsize=8)
def _draws(a: tuple[float, ...], k: tuple[float, ...]) -> list[list[int]]:
    """Accepted guesses per step at each position; the same for every scenario, so drawn once."""
    uniforms = np.random.default_rng(SEED).random(N_TOKENS * 8 + 8)
    return [speculative.accepted_runs(ai, int(ki), N_TOKENS, uniforms) for ai, ki in zip(a, k)]


@register
class TokenTimeline(FigureKind):
    name = "token-timeline"
    title = f"The same {N_TOKENS} tokens with and without speculation"
    sliders = {"a": ACCEPTANCE, "k": LOOKAHEAD}
    columns = {"a": Column("acceptance rate", "ratio"), "k": Column("lookahead k", "count"),
               "steps": Column("verify steps", "count"), "acc": Column("accepted guesses per step", "count"),
               "step": Column("each step's number, from 0", "count"), "plain_ms": Column("plain step", "time", "ms"),
               "draft_ms": Column("draft step", "time", "ms"), "verify_ms": Column("verify pass", "time", "ms"),
               "plain_total_ms": Column("plain total", "time", "ms"),
               "spec_total_ms": Column("speculative total", "time", "ms"), "n": Column("tokens", "count"),
               "label": Column("summary")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        a, k = (m.ravel() for m in np.meshgrid(grid["a"], grid["k"], indexing="ij"))
        runs = np.empty(len(a), dtype=object)
        for i, run in enumerate(_draws(tuple(a.tolist()), tuple(k.tolist()))):
            runs[i] = run
        steps = np.array([len(run) for run in runs])
        plain = speculative.plain_step_s(r.acc, r.target, r.cards, 1, r.context, r.precision) * 1e3 + 0 * a
        draft = speculative.draft_step_s(r.acc, r.draft, r.cards, 1, r.context, r.precision) * 1e3 + 0 * a
        verify = speculative.verify_step_s(r.acc, r.target, r.cards, 1, k, r.context, r.precision) * 1e3
        step_index = np.empty(len(a), dtype=object)
        for i, n in enumerate(steps):
            step_index[i] = list(range(n))
        plain_total, spec_total = plain * N_TOKENS, steps * (k * draft + verify)
        # The headline is formatted here, so the browser and the table print the same digits.
        label = np.array([f"plain {p:.0f} ms{HEADLINE_BREAK}speculative {s:.0f} ms ({p / s:.2f}× faster)"
                          for p, s in zip(plain_total, spec_total)])
        return {"a": a, "k": k, "steps": steps, "acc": runs, "step": step_index, "plain_ms": plain,
                "draft_ms": draft, "verify_ms": verify, "plain_total_ms": plain_total,
                "spec_total_ms": spec_total, "n": np.full(len(a), N_TOKENS), "label": label}

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        y = alt.Y("row:N", title=None, sort=ROWS, scale=alt.Scale(domain=ROWS),
                  axis=alt.Axis(labelLimit=160, ticks=False, domain=False))
        color = alt.Color("what:N", title=None, scale=alt.Scale(domain=KINDS),
                          legend=alt.Legend(orient="bottom", columns=4, symbolStrokeWidth=2))
        # Shape repeats colour, so no outcome is told apart by colour alone; one merged legend shows both.
        shape = alt.Shape("what:N", title=None, scale=alt.Scale(domain=KINDS, range=SHAPES),
                          legend=alt.Legend(orient="bottom", columns=4, symbolStrokeWidth=2))
        x_title = "Time (ms)"

        # The plain lane is the same at every slider position: read it from the first position,
        # with a filter that names no param, so moving a slider leaves these marks alone.
        first = " && ".join(f"datum.{s.name} == {float(s.values()[0])!r}" for s in sliders.values())
        plain = (alt.Chart(table_data()).transform_filter(first)
                 .transform_calculate(i="sequence(0, datum.n)").transform_flatten(["i"]))
        plain_bars = plain.transform_calculate(
            x0="datum.i * datum.plain_ms", x1="(datum.i + 0.9) * datum.plain_ms",
            row=f"'{ROWS[0]}'", what="'Target pass'",
        ).mark_bar(height=14).encode(x=alt.X("x0:Q", title=x_title), x2="x1:Q", y=y, color=color,
                                     tooltip=[alt.Tooltip("what:N", title="pass"),
                                              alt.Tooltip("plain_ms:Q", title="ms", format=".2f")])
        plain_tokens = plain.transform_calculate(
            x0="(datum.i + 0.45) * datum.plain_ms", row=f"'{ROWS[1]}'", what="'Plain token'",
        ).mark_point(filled=True, size=22).encode(x="x0:Q", y=y, color=color, shape=shape)

        steps = base.transform_flatten(["step", "acc"]).transform_calculate(
            t0="datum.step * (datum.k * datum.draft_ms + datum.verify_ms)",
            v0="datum.step * (datum.k * datum.draft_ms + datum.verify_ms) + datum.k * datum.draft_ms",
        )
        draft_bars = steps.transform_calculate(
            x1="datum.v0", row=f"'{ROWS[2]}'", what="'Draft steps'",
        ).mark_bar(height=14).encode(x="t0:Q", x2="x1:Q", y=y, color=color,
                                     tooltip=[alt.Tooltip("what:N", title="pass"), alt.Tooltip("k:Q", title="draft steps")])
        verify_bars = steps.transform_calculate(
            x1="datum.v0 + 0.9 * datum.verify_ms", row=f"'{ROWS[2]}'", what="'Target pass'",
        ).mark_bar(height=14).encode(x="v0:Q", x2="x1:Q", y=y, color=color,
                                     tooltip=[alt.Tooltip("what:N", title="pass"),
                                              alt.Tooltip("acc:Q", title="guesses accepted")])
        spec_tokens = steps.transform_calculate(j="sequence(0, datum.k + 1)").transform_flatten(["j"]).transform_calculate(
            x0="datum.v0 + (datum.j + 0.5) * 0.9 * datum.verify_ms / (datum.k + 1)",
            row=f"'{ROWS[3]}'",
            what=("datum.j < datum.acc ? 'Accepted guess' : datum.j == datum.k ? "
                  "(datum.acc == datum.k ? 'Bonus token' : \"Target's correction\") : "
                  "datum.j == datum.acc ? 'Rejected guess' : 'Discarded guess'"),
        ).mark_point(filled=True, size=22).encode(x="x0:Q", y=y, color=color, shape=shape,
                                                  tooltip=[alt.Tooltip("what:N", title="token")])

        totals = base.mark_text(align="left", baseline="bottom", dy=-4, fontWeight=BOLD).encode(
            x=alt.datum(0), y=alt.value(0), text="label:N")
        return (alt.layer(plain_bars, plain_tokens, draft_bars, verify_bars, spec_tokens, totals)
                .add_params(*slider_params(sliders)).properties(height=170, padding={"top": 24, "left": 5, "right": 5, "bottom": 5}))

    def narrow(self, spec: dict) -> dict:
        # On a phone the headline is two lines, plain decoding's time over speculative decoding's,
        # and the room above the lanes holds both.
        added = 0
        for mark, layer in layout.text_marks(spec):
            if layer.get("encoding", {}).get("text", {}).get("field") == "label":
                mark["lineBreak"] = HEADLINE_BREAK
                added = layout.line_px(mark)
        spec["padding"] = {**spec["padding"], "top": spec["padding"]["top"] + added}
        return spec

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        i = int(np.argmax(rows_at(cols, sliders)))
        runs, k = cols["acc"][i], int(cols["k"][i])
        accepted = sum(runs)
        rejected = sum(1 for n in runs if n < k)
        rows = [
            ["Plain decoding", f"{N_TOKENS}", f"{N_TOKENS}", "–", "–", f"{cols['plain_total_ms'][i]:.0f} ms"],
            ["Speculative decoding", f"{len(runs)}", f"{accepted + len(runs)}", f"{accepted}", f"{rejected}",
             f"{cols['spec_total_ms'][i]:.0f} ms"],
        ]
        return TableView(
            caption=f"{N_TOKENS} tokens at acceptance rate {cols['a'][i]:.2f} and lookahead {k}, "
                    f"{r.cards} × {r.acc.name}, {r.target.name} target, {r.draft.name} draft",
            headers=["Lane", "Target passes", "Tokens made", "Guesses accepted", "Guesses rejected", "Total time"],
            rows=rows)

    description = ("Timeline of {n} tokens on {cards} × {acc}: plain decoding takes {plain} over {n} weight "
                   "reads; speculative decoding at acceptance {a} and lookahead {k} takes {spec} over {passes}.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        i = int(np.argmax(at))
        return {"n": f"{N_TOKENS}", "cards": f"{r.cards}", "acc": r.acc.name,
                "plain": f"{cols['plain_total_ms'][i]:.0f} ms", "a": f"{cols['a'][i]:.2f}", "k": f"{int(cols['k'][i])}",
                "spec": f"{cols['spec_total_ms'][i]:.0f} ms", "passes": count(cols["steps"][i], "verify pass")}
