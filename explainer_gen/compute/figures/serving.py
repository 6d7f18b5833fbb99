"""One server under Poisson traffic (models.serving): latency, goodput and one request's path.

Every figure here draws the same simulated runs, one per arrival rate, scheduler, chunk size and
cached-prefix share, so the four figures of a page agree with each other and with its prose.
Prefill-first scheduling has no chunk size: its rows carry chunk 0 and follow only the prefix
slider (and the rate slider, on the timeline); chunked rows follow every slider.
"""
from __future__ import annotations

import numpy as np

from models import serving

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import BOLD, colour
from ..sliders import CHUNK, PREFIX, RATE
from . import overlay
from .base import alt, Column, Columns, FigureKind, register, rows_at, slider_filter, slider_params, table_data, TableView
from .longform import part, stack

# Arrival rates drawn on the x axis, and the rate slider of the timeline, are the same grid: RATE.
LABELS = {"prefill-first": "Prefill first", "chunked": "Chunked prefill"}
# The columns every figure here shares: where on the sliders, and at what arrival rate, a row is.
SETTING = {"sched": Column("scheduler"), "chunk": Column("chunk size", "count", "positions"),
           "prefix": Column("cached share of each prompt", "ratio")}
RATE_COLUMN = Column("arrival rate", "rate", "requests/s")
STATS = ("median", "p99")  # a latency figure's statistics, each a column of its own


def _rates() -> np.ndarray:
    return RATE.values()


def _settings(grid: dict[str, np.ndarray]):
    """(scheduler, chunk, prefix) for every line a figure draws: prefill-first once per prefix."""
    for prefix in grid["prefix"]:
        yield "prefill-first", 0, float(prefix)
        for chunk in grid["chunk"]:
            yield "chunked", int(chunk), float(prefix)


def _summaries(r: Resolved, scheduler: str, chunk: int, prefix: float) -> list[serving.Summary]:
    return serving.sweep(scheduler, _rates(), chunk, prefix, r.acc, r.target, r.cards, r.precision)


def _capacity(r: Resolved, scheduler: str, chunk: int, prefix: float) -> tuple[float, bool]:
    """The capacity these short runs show, and whether it was cut to the rate the scheduler can
    sustain at all (models.serving.short_capacity): the prose prints the same."""
    return serving.short_capacity(scheduler, chunk or CHUNK.default, prefix, r.acc, r.target, r.cards, r.precision,
                                  rates=_rates())


def _follow(sliders: dict[str, Slider]) -> str:
    """Vega: the row belongs to the sliders' position; prefill-first rows ignore the chunk slider."""
    shared = [sliders[n] for n in ("prefix", "rate") if n in sliders]
    first = f"(datum.sched == '{LABELS['prefill-first']}' && {slider_filter(shared)})"
    chunked = f"(datum.sched == '{LABELS['chunked']}' && {slider_filter(sliders)})"
    return f"({first} || {chunked})"


def _mine(cols: Columns, sliders: dict[str, Slider], scheduler: str, position: dict[str, float] | None = None) -> np.ndarray:
    """Python's `_follow`: the rows of one scheduler at a slider position (default: the defaults)."""
    position = dict(position or {s.name: s.default for s in sliders.values()})
    if scheduler == "prefill-first":
        position.pop("chunk", None)
    return rows_at(cols, sliders, position) & (cols["sched"] == LABELS[scheduler])


def _colour() -> alt.Color:
    return alt.Color("sched:N", title="Scheduler",
                     scale=alt.Scale(domain=list(LABELS.values()), range=[colour("series-2"), colour("series-1")]),
                     legend=alt.Legend(orient="bottom", direction="horizontal"))


def _rate_axis() -> alt.X:
    return alt.X("rate:Q", title="Arrival rate (requests per second)",
                 scale=alt.Scale(domain=[0, RATE.max], nice=False), axis=alt.Axis(values=list(RATE.values())))


def _scenario(r: Resolved) -> str:
    return f"{r.target.name} on {r.cards} × {r.acc.name}"


def _ms(seconds: float) -> str:
    """A latency as a reader says it: "47 ms", "1.15 s"."""
    return f"{seconds * 1e3:,.0f} ms" if seconds < 0.9995 else f"{seconds:,.3g} s"


def _latency_columns(what: str, dimension: str) -> dict[str, Column]:
    """A latency figure's columns: a line's row holds each statistic in a column of its own
    ("time to first token, p99 (ms)"), the objective's row the objective in the p99's (it is the
    p99's objective), a measured row the published mean in `ms`."""
    words = what[0].lower() + what[1:]
    return {"what": Column("row"), **SETTING, "rate": RATE_COLUMN,
            **{stat: Column(f"{words}, {stat}", dimension, "ms") for stat in STATS},
            "ms": Column(f"{words}, published mean", dimension, "ms"), **overlay.columns(dimension, "ms")}


class _Latency(FigureKind):
    """Median and p99 of one latency against arrival rate, both schedulers, with the objective."""

    metric: str          # "ttft", "tpot" or "tbt": the Summary fields <metric>_median and <metric>_p99
    what: str            # the metric in words
    objective: float     # seconds
    measured: tuple[str, ...] = ()  # the published quantities (models/estimate.py) drawn over the lines
    reads = ("accelerator", "cards", "target", "weights", "kv")
    sliders = {"chunk": CHUNK, "prefix": PREFIX}

    def points(self, r: Resolved) -> list[overlay.Point]:
        """Published means of this setup at their arrival rate, in ms."""
        return overlay.points(r, self.measured, lambda m: m.args["rate"], lambda m, v: v * 1e3)

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = [part("objective", 1, sched="", chunk=0.0, prefix=0.0, rate=0.0, median=0.0,
                      p99=self.objective * 1e3, ms=0.0)]
        placed = self.points(r)
        if placed:
            parts.append(overlay.rows(placed, "ms", "rate", sched="", chunk=0.0, prefix=0.0, median=0.0, p99=0.0))
        for sched, chunk, prefix in _settings(grid):
            runs = _summaries(r, sched, chunk, prefix)
            parts.append(part("line", len(runs), sched=LABELS[sched], chunk=float(chunk), prefix=prefix,
                              rate=_rates(), ms=0.0,
                              **{stat: np.array([getattr(s, f"{self.metric}_{stat}") for s in runs]) * 1e3
                                 for stat in STATS}))
        return stack([overlay.with_blank(p) for p in parts], list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        def on_y(column: str) -> alt.Y:
            return alt.Y(f"{column}:Q", title=f"{self.what} (ms, log scale)", scale=alt.Scale(type="log"),
                         axis=alt.Axis(format="~s"))
        y = on_y("ms")
        dash = alt.StrokeDash("stat:N", title="Statistic",
                              scale=alt.Scale(domain=["p99", "median"], range=[[1, 0], [5, 4]]),
                              legend=alt.Legend(orient="bottom", direction="horizontal", symbolType="stroke",
                                                symbolStrokeWidth=2.5, symbolSize=400))
        # A line's row holds both statistics; the lines are drawn one a statistic, so they are folded
        # into a statistic and its value (`stat`, `ms`) here, in the chart, not in the table. The
        # fold gives a rate's statistics together; `drawn` draws each line's points together, a
        # scheduler's median, then its p99 (along the rates, as their rows come).
        drawn = f"indexof({list(LABELS.values())!r}, datum.sched) * {len(STATS)} + indexof({list(STATS)!r}, datum.stat)"
        lines = base.transform_filter(f"datum.what == 'line' && {_follow(sliders)}").transform_fold(
            list(STATS), as_=["stat", "ms"]).transform_calculate(drawn=drawn).mark_line(
            strokeWidth=2.5, point=alt.OverlayMarkDef(size=30, filled=True)).encode(
            x=_rate_axis(), y=y, color=_colour(), strokeDash=dash, order="drawn:Q",
            tooltip=[alt.Tooltip("sched:N", title="scheduler"), alt.Tooltip("stat:N", title="statistic"),
                     alt.Tooltip("rate:Q", title="requests/s"), alt.Tooltip("ms:Q", title="ms", format=",.0f")])
        goal = base.transform_filter("datum.what == 'objective'")
        rule = goal.mark_rule(strokeDash=[2, 3], color=colour("muted")).encode(y="p99:Q")
        # Under its line: at a setting where every latency is lower, the line is the plot's top edge.
        text = goal.transform_calculate(label="'objective for the p99: ' + format(datum.p99, ',.0f') + ' ms'").mark_text(
            align="left", baseline="top", dy=3, color=colour("muted")).encode(
            x=alt.datum(0.3), y="p99:Q", text="label:N")
        # Published means of this setup (overlay), each with its own estimate, for its own traffic, as
        # a bar over its band: the lines are the page's traffic with every pass at its floor.
        # Its key along the top, which the curves reach only at the highest rates, far right.
        points = overlay.layers(base, _rate_axis(), on_y, "ms", "ms", ",.1f", bars=True, key_at="top")
        return alt.layer(rule, text, lines, *points).add_params(*slider_params(sliders)).properties(height=320)

    def narrow(self, spec: dict) -> dict:
        return overlay.narrow(spec)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        rows = []
        picked = {k: _mine(cols, sliders, k) for k in LABELS}
        for rate in _rates():
            row = [f"{rate:g}"]
            for k in LABELS:
                for stat in STATS:
                    i = picked[k] & (cols["rate"] == rate)
                    row.append(f"{cols[stat][i][0]:,.0f}")
            rows.append(row)
        c, p = sliders["chunk"].default, sliders["prefix"].default
        # Headed as the CSV is, by the columns' declarations, each statistic under each scheduler.
        return TableView(also=overlay.table(cols, "ms", "ms", lambda v: f"{v:,.1f} ms"),
                         caption=f"{self.what} in ms, {_scenario(r)}, {serving.N_REQUESTS} requests a run; "
                                 f"chunks of {c:,.0f} positions, {p:.0%} of each prompt cached",
                         headers=[self.columns["rate"].title] + [f"{LABELS[k]}: {self.columns[stat].header}"
                                                                 for k in LABELS for stat in STATS], rows=rows)

    description = ("{what} against arrival rate for {scenario}, median and p99, under prefill-first and chunked "
                   "scheduling with chunks of {chunk} positions and {prefix} of each prompt cached. At {low} requests "
                   "per second the p99 is {pf_low} with prefill first and {ch_low} chunked; at {high}, {pf_high} and "
                   "{ch_high}. The objective for the p99 is {goal}. Every pass is priced at its floor.{measured}")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        lo, hi = RATE.min, RATE.max

        def p99(k: str, rate: float) -> str:
            i = _mine(cols, self.sliders, k, position) & (cols["rate"] == rate)
            return _ms(cols["p99"][i][0] / 1e3)

        return {"what": self.what, "scenario": _scenario(r), "chunk": f"{position['chunk']:,.0f}",
                "prefix": f"{position['prefix']:.0%}", "low": f"{lo:g}", "high": f"{hi:g}",
                "pf_low": p99("prefill-first", lo), "ch_low": p99("chunked", lo),
                "pf_high": p99("prefill-first", hi), "ch_high": p99("chunked", hi), "goal": _ms(self.objective),
                "measured": self.tally(cols)}

    def tally(self, cols: Columns) -> str:
        said = overlay.tally(cols)
        return said and (said + " Each is a mean over requests all of one length, not this page's traffic, so each "
                         "carries its own estimate, for its own traffic served prefill first, as a bar over its band.")


@register
class ServeTTFT(_Latency):
    name = "serve-ttft"
    title = "Time to first token against arrival rate"
    metric, what, objective = "ttft", "Time to first token", serving.TTFT_OBJECTIVE
    measured = ("serving-ttft",)
    columns = _latency_columns(what, "time")


@register
class ServeTPOT(_Latency):
    name = "serve-tpot"
    title = "Time per output token against arrival rate"
    metric, what, objective = "tpot", "Time per output token", serving.TPOT_OBJECTIVE
    columns = _latency_columns(what, "time per count")
    # The published mean time between tokens: with every answer one length, each request has as
    # many gaps as the next, so it is also the mean time per output token.
    measured = ("serving-itl",)


@register
class ServeTBT(_Latency):
    name = "serve-tbt"
    title = "Time between tokens against arrival rate"
    metric, what, objective = "tbt", "Time between tokens", serving.TBT_OBJECTIVE
    columns = _latency_columns(what, "time")


@register
class ServeGoodput(FigureKind):
    name = "serve-goodput"
    title = "Goodput and capacity against arrival rate"
    reads = ("accelerator", "cards", "target", "weights", "kv")
    sliders = {"chunk": CHUNK, "prefix": PREFIX}
    columns = {"what": Column("row"), **SETTING, "rate": RATE_COLUMN,
               "rps": Column("goodput, requests meeting the objective", "rate", "requests/s"),
               "capped": Column("1 where the runs' capacity is cut to the rate the scheduler can sustain", "ratio")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = [part("offered", 2, sched="", chunk=0.0, prefix=0.0, rate=np.array([0.0, RATE.max]),
                      rps=np.array([0.0, RATE.max]), capped=0)]
        for sched, chunk, prefix in _settings(grid):
            runs = _summaries(r, sched, chunk, prefix)
            pos = dict(sched=LABELS[sched], chunk=float(chunk), prefix=prefix)
            parts.append(part("goodput", len(runs), **pos, rate=_rates(), rps=[s.goodput for s in runs], capped=0))
            cap, capped = _capacity(r, sched, chunk, prefix)
            parts.append(part("capacity", 1, **pos, rate=cap, rps=cap, capped=int(capped)))
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        x = _rate_axis()
        y = alt.Y("rps:Q", title="Goodput (requests per second)", scale=alt.Scale(domain=[0, RATE.max], nice=False))
        offered = base.transform_filter("datum.what == 'offered'").mark_line(
            strokeDash=[2, 3], color=colour("muted")).encode(x=x, y=y)
        # The label sits just above the diagonal, ending four fifths of the way along it.
        offered_text = base.transform_filter("datum.what == 'offered' && datum.rate > 0").transform_calculate(
            at=f"0.8 * datum.rate", label="'every request on time'").mark_text(
            align="right", baseline="bottom", dx=-6, color=colour("muted")).encode(
            x=alt.X("at:Q"), y=alt.Y("at:Q"), text="label:N")
        lines = base.transform_filter(f"datum.what == 'goodput' && {_follow(sliders)}").mark_line(
            strokeWidth=2.5, point=alt.OverlayMarkDef(size=30, filled=True)).encode(
            x=x, y=y, color=_colour(),
            tooltip=[alt.Tooltip("sched:N", title="scheduler"), alt.Tooltip("rate:Q", title="arrivals/s"),
                     alt.Tooltip("rps:Q", title="on time/s", format=".1f")])
        caps = base.transform_filter(f"datum.what == 'capacity' && {_follow(sliders)}")
        rules = caps.mark_rule(strokeDash=[5, 3], strokeWidth=1.5).encode(x=x, color=_colour())
        label = caps.transform_calculate(
            text=f"(datum.capped ? 'sustainable at most ' : datum.rate >= {RATE.max} ? 'capacity above ' : 'capacity ') "
                 f"+ format(datum.rate, '.1f') + '/s'",
            row=f"datum.sched == '{LABELS['prefill-first']}' ? 6 : 22").mark_text(
            align="right", dx=-4, baseline="top", fontWeight=BOLD).encode(
            x=x, y=alt.Y("row:Q", scale=None), text="text:N", color=_colour())
        return (alt.layer(offered, offered_text, lines, rules, label).add_params(*slider_params(sliders))
                .properties(height=320))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        picked = {k: _mine(cols, sliders, k) for k in LABELS}
        rows = []
        for rate in _rates():
            rows.append([f"{rate:g}"] + [f"{cols['rps'][picked[k] & (cols['what'] == 'goodput') & (cols['rate'] == rate)][0]:.1f}"
                                         for k in LABELS])
        rows.append(["Capacity in these runs"] + [_capacity_text(*_cap_row(cols, picked[k])) for k in LABELS])
        c, p = sliders["chunk"].default, sliders["prefix"].default
        return TableView(caption=f"Requests per second that meet the objective, {_scenario(r)}, runs of "
                                 f"{serving.N_REQUESTS} requests; chunks of {c:,.0f} positions, {p:.0%} of each prompt "
                                 f"cached",
                         headers=["Arrivals per second", "Prefill first", "Chunked prefill"], rows=rows)

    description = ("Goodput against arrival rate for {scenario}, in runs of {requests} requests, with chunks of {chunk} "
                   "positions and {prefix} of each prompt cached: the requests per second whose first token comes "
                   "within {ttft} and whose later tokens come every {tpot} or faster on average. Capacity in these "
                   "runs, where the p99s reach the objective, is {pf} with prefill first and {ch} with chunked prefill.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        def cap(k: str) -> str:
            return _capacity_text(*_cap_row(cols, _mine(cols, self.sliders, k, position)))

        return {"scenario": _scenario(r), "chunk": f"{position['chunk']:,.0f}", "prefix": f"{position['prefix']:.0%}",
                "ttft": _ms(serving.TTFT_OBJECTIVE), "tpot": _ms(serving.TPOT_OBJECTIVE),
                "pf": cap("prefill-first"), "ch": cap("chunked"), "requests": f"{serving.N_REQUESTS}"}


def _cap_row(cols: Columns, mine: np.ndarray) -> tuple[float, bool]:
    i = mine & (cols["what"] == "capacity")
    return float(cols["rate"][i][0]), bool(int(cols["capped"][i][0]))


def _capacity_text(rate: float, capped: bool = False) -> str:
    if capped:
        return f"at most {rate:.1f} requests per second, the most it can sustain"
    if rate <= 0:
        return f"below {RATE.min:g} requests per second"
    if rate >= RATE.max:
        return f"above {RATE.max:g} requests per second"
    return f"{rate:.1f} requests per second"


PHASES = {"queue": "Waiting in the queue", "prefill": "Prefill", "decode": "Decode", "stall": "Paused for other prompts"}


@register
class ServeTimeline(FigureKind):
    name = "serve-timeline"
    title = "One request's path through the server"
    reads = ("accelerator", "cards", "target", "weights", "kv")
    sliders = {"rate": RATE, "chunk": CHUNK, "prefix": PREFIX}
    columns = {"what": Column("row"), "sched": SETTING["sched"], "rate": RATE_COLUMN, "chunk": SETTING["chunk"],
               "prefix": SETTING["prefix"], "phase": Column("phase"),
               "t0": Column("start of the phase, after arrival", "time", "s"),
               "t1": Column("end of the phase, after arrival", "time", "s")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = []
        for rate in grid["rate"]:
            for sched, chunk, prefix in _settings(grid):
                run = serving.simulate(sched, float(rate), chunk, prefix, r.acc, r.target, r.cards, r.precision)
                t0 = run.trace[0][1]
                pieces = [p for p in run.trace if p[2] > p[1] or p[0] == "queue"]
                parts.append(part("phase", len(pieces), sched=LABELS[sched], rate=float(rate), chunk=float(chunk),
                                  prefix=prefix, phase=[PHASES[p[0]] for p in pieces],
                                  t0=[p[1] - t0 for p in pieces], t1=[p[2] - t0 for p in pieces]))
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(_follow(sliders))
        x = alt.X("t0:Q", title="Seconds after the request arrives", scale=alt.Scale(zero=True, nice=False))
        y = alt.Y("sched:N", title=None, scale=alt.Scale(domain=list(LABELS.values())),
                  axis=alt.Axis(labelFontWeight=BOLD, labelAngle=-90, labelAlign="center", labelBaseline="bottom",
                                labelPadding=4, ticks=False, domain=False))
        color = alt.Color("phase:N", title="Phase", scale=alt.Scale(
            domain=list(PHASES.values()), range=[colour("series-8"), colour("series-2"), colour("series-1"),
                                                 colour("series-7")]),
            legend=alt.Legend(orient="bottom", direction="horizontal", columns=2))
        tooltip = [alt.Tooltip("phase:N", title="phase"), alt.Tooltip("t0:Q", title="from (s)", format=".3f"),
                   alt.Tooltip("t1:Q", title="to (s)", format=".3f")]
        bars = base.transform_filter(f"datum.phase != '{PHASES['stall']}'").mark_bar(height={"band": 0.55}).encode(
            x=x, x2="t1:Q", y=y, color=color, tooltip=tooltip)
        stalls = base.transform_filter(f"datum.phase == '{PHASES['stall']}'").mark_bar(
            height={"band": 0.3}).encode(x=x, x2="t1:Q", y=y, color=color, tooltip=tooltip)
        return alt.layer(bars, stalls).add_params(*slider_params(sliders)).properties(height=200)

    def _phases(self, cols: Columns, mine: np.ndarray) -> dict[str, float]:
        def total(phase: str) -> float:
            i = mine & (cols["phase"] == PHASES[phase])
            return float((cols["t1"][i] - cols["t0"][i]).sum())

        ends = cols["t1"][mine]
        decode = mine & (cols["phase"] == PHASES["decode"])
        first = float(cols["t0"][decode][0]) if decode.any() else float(ends.max())
        return {"queue": total("queue"), "first": first, "stall": total("stall"), "done": float(ends.max())}

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        rows = []
        for k, label in LABELS.items():
            p = self._phases(cols, _mine(cols, sliders, k))
            rows.append([label, _ms(p["queue"]), _ms(p["first"]), _ms(p["stall"]), f"{p['done']:.2f} s"])
        stream = serving.traffic()
        i = stream.traced
        return TableView(caption=f"Request {i + 1} of {stream.n} ({stream.prompt[i]:,} prompt tokens, "
                                 f"{stream.output[i]:,} output tokens) at {sliders['rate'].default:g} requests per "
                                 f"second, {_scenario(r)}",
                         headers=["Scheduler", "Queued", "First token", "Paused in decode", "Done"], rows=rows)

    description = ("One request of {prompt} prompt tokens and {output} output tokens, arriving at {rate} requests per "
                   "second on {scenario}. With prefill first it {pf_queue}, has its first token at {pf_first}, "
                   "is paused for {pf_stall} by other requests' prefills, and is done at {pf_done}. With chunked "
                   "prefill in chunks of {chunk}: first token at {ch_first}, done at {ch_done}.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        stream = serving.traffic()
        pf = self._phases(cols, _mine(cols, self.sliders, "prefill-first", position))
        ch = self._phases(cols, _mine(cols, self.sliders, "chunked", position))
        return {"prompt": f"{stream.prompt[stream.traced]:,}", "output": f"{stream.output[stream.traced]:,}",
                "rate": f"{position['rate']:g}", "scenario": _scenario(r), "chunk": f"{position['chunk']:,.0f}",
                "pf_queue": f"waits {_ms(pf['queue'])} in the queue" if pf["queue"] >= 5e-4 else "starts at once",
                "pf_first": _ms(pf["first"]), "pf_stall": _ms(pf["stall"]),
                "pf_done": f"{pf['done']:.2f} s", "ch_first": _ms(ch["first"]), "ch_done": f"{ch['done']:.2f} s"}
