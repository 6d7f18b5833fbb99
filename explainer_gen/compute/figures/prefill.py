"""Time per token against prompt length: prefill of the prompt beside decode, one token a pass.

Prefill shares one weight read among all the prompt's tokens, so its cost per token falls in
proportion to the prompt until the ridge, where arithmetic takes over and it levels off. Decode
at batch one pays the whole read for every token. On log-log axes both are straight lines
either side of the ridge, so a few points per doubling and the ridge itself draw them exactly.
Points on the two lines follow the prompt slider shared with the roofline and step-time figures.

Everything comes from `models.prefill` (the roofline step time, causal attention included);
decode is the token that follows a prompt of that length, reading its cache. Only prompt lengths
whose KV cache fits beside the weights are drawn.
"""
from __future__ import annotations

import numpy as np

from models import prefill, roofline

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_params, table_data, TableView
from ..sliders import PHASE_SLIDERS
from . import overlay
from .longform import follows, part, stack

LONGEST = 32768
# Prompt lengths 1 to 32k tokens, four per doubling.
TOKENS = np.unique(np.round(2 ** (np.arange(0, 61) / 4))).astype(float)
SHOWN = (1, 16, 256, 4096, 32768)
PHASES = {"prefill": "prefill, per prompt token", "decode": "decode, per generated token"}
AXIS_VALUES = [1, 8, 64, 512, 4096, 32768]
LABELLED = 16  # the prompt length at which the estimate and the floor are named, where measured points are drawn
GAP_TAIL = "× as long per token"  # the end of the gap's words, after its ratio


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


@register
class PrefillVsDecode(FigureKind):
    name = "prefill-vs-decode"
    title = "Time per token against prompt length: prefill and decode"
    reads = ("accelerator", "cards", "target", "weights", "kv")
    sliders = {"prompt": PHASE_SLIDERS["prompt"]}
    columns = {"what": Column("row"), "phase": Column("phase"), "tokens": Column("prompt length", "count", "tokens"),
               "ms": Column("time per token of the row's phase", "time per count", "ms"),
               "ms_decode": Column("decode time per token at that length", "time per count", "ms"),
               "ratio": Column("decode over prefill, per token", "ratio", "x"),
               "attention": Column("share causal attention adds to prefill arithmetic", "ratio"),
               "prompt": Column("prompt length at the slider", "count", "tokens"),
               **overlay.columns("time per count", "ms")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        acc, m, n = r.acc, r.target, r.cards
        longest = prefill.longest_fit(acc, m, n, LONGEST, r.precision)
        ridge = r.ridge_tokens()

        def rows(what: str, tokens: np.ndarray, phase: str, prompt) -> Columns:
            tokens = tokens[prefill.fits(acc, m, n, tokens, r.precision)]  # only what fits in memory is drawn
            pre = prefill.prefill_s_per_token(acc, m, n, tokens, r.precision) * 1e3
            dec = prefill.decode_s_per_token(acc, m, n, tokens, r.precision) * 1e3  # the next token, reading the prompt's cache
            return part(what, len(tokens), phase=phase, tokens=tokens, ms=dec if phase == "decode" else pre,
                        ms_decode=dec, ratio=dec / pre, attention=prefill.attention_share(m, tokens),
                        prompt=tokens if prompt else 0)

        # The lines: the grid, the ridge (where prefill bends) and the longest prompt that fits.
        line = np.unique(np.concatenate([TOKENS, [ridge], [longest] if 0 < longest < LONGEST else []]))
        prompts = grid["prompt"].astype(float)
        parts = [overlay.with_blank(p) for p in (
            rows("prefill", line, "prefill", False),
            rows("decode", line, "decode", False),
            rows("ridge", np.array([ridge]), "prefill", False),
            rows("prefill-at", prompts, "prefill", True),
            rows("decode-at", prompts, "decode", True),
            rows("gap", prompts, "", True))]
        return stack(parts + measured_parts(r, line[prefill.fits(acc, m, n, line, r.precision)]), list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        prompt = sliders["prompt"]
        base = alt.Chart(table_data())
        x = alt.X("tokens:Q", title="Prompt length (tokens)",
                  scale=alt.Scale(type="log", base=2, domain=[1, LONGEST]),
                  axis=alt.Axis(values=AXIS_VALUES, labelExpr="datum.value >= 1024 ? datum.value / 1024 + 'k' : datum.value"))
        def on_y(column: str) -> alt.Y:
            return alt.Y(f"{column}:Q", title="Time per token (ms)", scale=alt.Scale(type="log"),
                         axis=alt.Axis(format="~g"))
        y = on_y("ms")
        legend = alt.Legend(orient="bottom", labelExpr=_legend_expr(), symbolType="stroke", symbolStrokeWidth=2.5)
        phase = alt.Color("phase:N", title="Time per token", scale=alt.Scale(domain=list(PHASES)), legend=legend)
        dash = alt.StrokeDash("phase:N", title="Time per token", legend=legend,
                              scale=alt.Scale(domain=list(PHASES), range=[[1, 0], [6, 3]]))
        tooltip = [alt.Tooltip("phase:N", title="phase"), alt.Tooltip("tokens:Q", title="prompt (tokens)", format=",.0f"),
                   alt.Tooltip("ms:Q", title="ms per token", format=",.4g")]
        lines = base.transform_filter("datum.what == 'prefill' || datum.what == 'decode'").mark_line(
            strokeWidth=2.5).encode(x=x, y=y, color=phase, strokeDash=dash, tooltip=tooltip)

        ridge = base.transform_filter("datum.what == 'ridge'")
        ridge_rule = ridge.mark_rule(strokeDash=[2, 3], color=colour("muted")).encode(x=x)
        ridge_dot = ridge.mark_point(shape="diamond", size=90, filled=True, color=colour("muted")).encode(x=x, y=y)
        ridge_text = ridge.transform_calculate(label="'ridge: ' + format(datum.tokens, ',.0f') + ' tokens'").mark_text(
            align="left", dx=6, baseline="top", y=4, color=colour("muted")).encode(x=x, text="label:N")

        at = base.transform_filter(follows(["prefill-at", "decode-at"], [prompt]))
        dots = at.mark_point(size=120, filled=True, opacity=1).encode(x=x, y=y, color=phase, tooltip=tooltip)
        gap = base.transform_filter(follows(["gap"], [prompt])).transform_calculate(
            label="'decode takes ' + format(datum.ratio, ',.0f') + '" + GAP_TAIL + "'")
        gap_rule = gap.mark_rule(strokeWidth=1.5, color=colour("fg")).encode(x=x, y=y, y2="ms_decode:Q")
        # Below the decode line and left of the point, so that it stays inside the plot at the longest
        # prompts and clear of the prefill line at the shortest.
        gap_text = gap.mark_text(align="right", dx=-6, dy=14, color=colour("fg")).encode(
            x=x, y=alt.Y("ms_decode:Q"), text="label:N")
        # Where published measurements of this setup exist (overlay): the estimate, dotted in each
        # phase's colour with its band shaded, and the points; the solid and dashed lines are floors.
        estimate = base.transform_filter("datum.what == 'estimate'")
        # The bands in the phases' colours (the category range's first two, as `phase` draws them),
        # set as values so that their faint fill stays out of the legend's symbols.
        shaded = [estimate.transform_filter(f"datum.phase == '{p}'").mark_area(opacity=0.16, color=c)
                  .encode(x=x, y=on_y("low"), y2="high:Q")
                  for p, c in zip(PHASES, (colour("series-1"), colour("series-2")))]
        dotted = estimate.mark_line(strokeWidth=1.5, strokeDash=[1, 3]).encode(x=x, y=y, color=phase)
        named = estimate.transform_filter(f"datum.phase == 'prefill' && datum.tokens == {LABELLED}")
        # Where the prefill lines slope down: the estimate's name above its band, ending to the right
        # where the band is lower, and the floor's below its line, ending to the left where it is higher.
        estimate_text = named.transform_calculate(label="'estimate, band shaded'").mark_text(
            align="left", dx=2, dy=-4, baseline="bottom", color=colour("fg")).encode(
            x=x, y=on_y("high"), text="label:N")
        floor_text = named.transform_calculate(label="'floor'").mark_text(
            align="right", dx=-2, dy=4, baseline="top", color=colour("fg")).encode(
            x=x, y=on_y("floor"), text="label:N")
        points = overlay.layers(base, x, on_y, "ms", "ms per token", ",.4g", bars=False)
        return (alt.layer(*shaded, lines, dotted, ridge_rule, ridge_dot, ridge_text, gap_rule, dots, gap_text,
                          estimate_text, floor_text, *points)
                .add_params(*slider_params(sliders)).properties(height=320))

    def narrow(self, spec: dict) -> dict:
        # The gap's words, ending left of its rule, need less width on a phone at the shortest prompts.
        return overlay.narrow(spec, {GAP_TAIL: ["×", GAP_TAIL[2:]]})

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        acc, m, n = r.acc, r.target, r.cards
        p = sliders["prompt"].default
        picks = [(f"{t:,}", (cols["what"] == "prefill") & (cols["tokens"] == t), t) for t in SHOWN]
        picks.append((f"{r.ridge_tokens():,.0f} (the ridge)", cols["what"] == "ridge",
                      r.ridge_tokens()))
        picks.append((f"{p:,.0f} (the prompt slider)", rows_at(cols, sliders, what="prefill-at"), p))
        rows = []
        for label, mask, tokens in sorted(picks, key=lambda x: x[2]):
            if not mask.any():
                rows.append([label] + ["does not fit in memory"] * 5)
                continue
            i = int(np.flatnonzero(mask)[0])
            bound = "compute" if bool(r.prefill(cols["tokens"][i]).compute_bound) else "bandwidth"
            rows.append([label, _time(cols["ms"][i] / 1e3), _time(cols["ms_decode"][i] / 1e3),
                         f"{cols['ratio'][i]:,.0f}×", bound, f"{cols['attention'][i]:.1%}"])
        return TableView(
            also=overlay.table(cols, "ms", "ms per token", lambda v: _time(v / 1e3)),
            caption=(f"Time per token for {m.name} on {n} × {acc.name}, {r.precision.weights.name} weights and "
                     f"{r.precision.kv.name} cache, at datasheet peaks: weight and cache reads, arithmetic with causal attention (the last column "
                     f"says how much attention adds to prefill's arithmetic), and the all-reduces between cards"),
            headers=["Prompt (tokens)", "Prefill, per prompt token", "Decode, per generated token",
                     "Decode over prefill", "Prefill bound by", "Causal attention adds"],
            rows=rows)

    description = ("Log-log chart of time per token against prompt length for {target} on {cards} × {acc}, "
                   "from weight and cache reads, arithmetic with causal attention, and the all-reduces between "
                   "cards. {shape} {now}{measured}")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        # From the model, as the rows are: facts() gets no slider steps to look rows up by.
        acc, m, n = r.acc, r.target, r.cards
        longest = prefill.longest_fit(acc, m, n, LONGEST, r.precision)
        ridge = r.ridge_tokens()
        decode = _time(float(prefill.decode_s_per_token(acc, m, n, 1, r.precision)))
        if longest == 0:
            shape = "The weights and one token of KV cache do not fit in memory, so nothing is drawn."
        elif longest < ridge:
            shape = (f"Decode takes {decode} per generated token; prefill starts level with it and falls in "
                     f"proportion to the prompt up to the longest prompt that fits in memory, {longest:,} tokens, "
                     f"short of the ridge at {ridge:,.0f}.")
        else:
            floor = _time(float(prefill.prefill_s_per_token(acc, m, n, ridge, r.precision)))
            last = _time(float(prefill.decode_s_per_token(acc, m, n, min(longest, LONGEST), r.precision)))
            shape = (f"Decode takes {decode} per generated token after a one-token prompt and {last} after the "
                     f"longest, whose cache it reads; prefill starts level with it and falls almost in proportion "
                     f"to the prompt up to the ridge at {ridge:,.0f} tokens, where it takes {floor} per prompt "
                     f"token, then rises slowly as attention grows with the prompt.")
            if longest < LONGEST:
                shape += f" Prompts longer than {longest:,} tokens do not fit in memory."
        p = position["prompt"]
        if prefill.fits(acc, m, n, p, r.precision):
            per = float(prefill.prefill_s_per_token(acc, m, n, p, r.precision))
            ratio = float(prefill.decode_s_per_token(acc, m, n, p, r.precision)) / per
            now = f"At a prompt of {p:,.0f} tokens prefill takes {_time(per)} per token, {ratio:,.0f}× less than decode."
        else:
            now = f"A prompt of {p:,.0f} tokens does not fit in memory."
        measured = overlay.tally(cols)
        if measured:
            measured = (" Its lines are floors; the estimate fitted on published measurements is drawn dotted "
                        "above them, its band shaded." + measured)
        return {"target": m.name, "cards": f"{n}", "acc": acc.name, "shape": shape, "now": now,
                "measured": measured}


def measured_points(r: Resolved) -> list[overlay.Point]:
    """The published measurements of this setup that the figure's axes hold: first tokens at batch
    one, per prompt token at their prompt's length, and decodes at batch one, per token at the
    length of the cache they read."""
    prefills = overlay.points(r, ["prefill"], lambda m: m.args["tokens"], lambda m, v: v / m.args["tokens"] * 1e3)
    decodes = overlay.points(r, ["decode"], lambda m: max(m.args["context"], 1.0), lambda m, v: v * 1e3,
                             keep=lambda m: m.args["batch"] == 1)
    return prefills + decodes


def measured_parts(r: Resolved, line: np.ndarray) -> list[Columns]:
    """The measured rows, and the estimate along both lines with its band, where there are any."""
    placed = measured_points(r)
    if not placed:
        return []
    eff = overlay.eff()
    passes = {"prefill": r.prefill(line), "decode": r.forward(1.0, context=line)}
    per = {"prefill": line / 1e3, "decode": 1e-3}  # seconds a pass -> ms a token
    pre, dec = (passes[p].at(eff) / per[p] for p in ("prefill", "decode"))
    floors = {p: passes[p].seconds / per[p] for p in passes}
    out = []
    for phase, values in (("prefill", pre), ("decode", dec)):
        low, high = overlay.band("latency", values)
        out.append(overlay.with_blank(part("estimate", len(line), phase=phase, tokens=line, ms=values, ms_decode=dec,
                                           ratio=0.0, attention=0.0, prompt=0.0))
                   | {"low": low, "high": high, "floor": floors[phase]})
    for phase in ("prefill", "decode"):
        mine = [p for p in placed if (p.m.quantity == "prefill") == (phase == "prefill")]
        if mine:
            out.append(overlay.rows(mine, "ms", "tokens", phase=phase, ms_decode=0.0, ratio=0.0, attention=0.0,
                                    prompt=0.0))
    return out


def _legend_expr() -> str:
    cases = " : ".join(f"datum.label == '{k}' ? '{v}'" for k, v in PHASES.items())
    return f"{cases} : datum.label"
