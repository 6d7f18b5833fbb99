"""One server under Poisson traffic (models.serving): latencies, goodput, capacity, the workload.

Scheduler names are "prefill-first" and "chunked"; `chunk` is ignored for prefill-first. Rates
are requests per second and latencies seconds. Arguments broadcast, like every term's.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from models import kvcache, roofline, serving
from models.units import BYTES, COUNT, RATIO, TIME

from ..derivation import Derivation, Symbol, closed_form, one_after_another, search, show, simulation, value
from ..resolved import Resolved
from ..sliders import CHUNK, PREFIX, RATE
from .registry import AS_PUBLISHED, Returns, Topic
from .roofline import pass_form

topic = Topic("serving")

RATE_DIM = COUNT / TIME  # requests per second


def _each(fn, *args) -> np.ndarray | float:
    """`fn` at every combination of broadcast arguments (the simulation takes one setting a call)."""
    arrays = np.broadcast_arrays(*(np.asarray(a) for a in args))
    out = np.empty(arrays[0].shape)
    for idx in np.ndindex(out.shape):
        out[idx] = fn(*(a[idx].item() for a in arrays))
    return out if out.ndim else float(out)


def _schedulers(scheduler) -> None:
    """A scheduler is a name ("prefill-first" or "chunked"); anything else is an argument of the wrong type."""
    if np.asarray(scheduler).dtype.kind != "U":
        raise TypeError(f"scheduler is a name, one of {', '.join(serving.SCHEDULERS)}; got {scheduler!r}")


def _numbers(**given) -> None:
    """Lengths and chunk sizes are numbers; anything else is an argument of the wrong type."""
    for name, x in given.items():
        if np.asarray(x).dtype.kind not in "biuf":
            raise TypeError(f"{name} is a number of positions; got {x!r}")


def _stat(scenario: Resolved, field: str, scheduler, rate, chunk, prefix):
    _schedulers(scheduler)
    return _each(lambda s, r, c, p: getattr(serving.summary(s, r, c, p, scenario.acc, scenario.target, scenario.cards,
                                                             scenario.precision), field),
                 scheduler, rate, chunk, prefix)


# -- how each number is made (compute/derivation.py) ------------------------------------------------
#
# A run is a simulation: its derivation says what was run (the traffic, the rate, the scheduler,
# its chunk and the cached share, the server's caps and cards) and the spread between draws of
# the traffic that models.serving.seed_spread reports. The runs are memoised, so asking for them
# again here costs nothing; the spread's draws are the ones `serve_error` makes. A capacity is a
# search over runs (the rates either side of it), a pass's time a closed form over the kernel
# pieces models.roofline.Kernels prices it by.

def _sources(scenario: Resolved, *more: str) -> tuple[str, ...]:
    """The datasheet of the cards and the config of the target every pass is priced from."""
    return (scenario.acc.source, f"{scenario.target.name}: {scenario.target.source}", *more)


def _workload(n: int = serving.N_REQUESTS, seed: int | None = serving.SEED) -> str:
    """The traffic; `seed` None: each run its own draw (models.serving.ERROR_SEEDS)."""
    lo, hi = serving.PROMPT_RANGE
    olo, ohi = serving.OUTPUT_RANGE
    drawn = f"seed {seed}" if seed is not None else "each run its own draw"
    return (f"{n:,} requests ({drawn}), prompts log-normal around {serving.PROMPT_MEAN:,} tokens (log spread "
            f"{serving.PROMPT_SPREAD}, clipped to {lo:,}–{hi:,}), answers around {serving.OUTPUT_MEAN:,} tokens "
            f"(log spread {serving.OUTPUT_SPREAD}, clipped to {olo:,}–{ohi:,})")


def _server(scenario: Resolved, scheduler: str, chunk, prefix) -> str:
    """One simulated server: its scheduler, its prefix cache, its caps and its cards."""
    if scheduler == "chunked":
        how = (f"chunked prefill, passes of at most {int(chunk):,} positions: every running decode, then pieces of "
               f"the waiting prompts")
    else:
        how = (f"prefill first: a pass prefills the waiting prompts (at most {serving.PREFILL_TOKENS:,} of their "
               f"tokens) while every running decode waits")
    cached = (f"{float(prefix):.0%} of every prompt after the first already in the prefix cache" if float(prefix)
              else "no prefix cache")
    tokens = serving.cache_tokens(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    return (f"{how}; {cached}; at most {serving.MAX_RUNNING} requests running, each charged its prompt and whole "
            f"answer in KV cache on admission ({tokens:,} tokens fit); every pass at its roofline floor on "
            f"{scenario.cards} × {scenario.acc.name} running {scenario.target.name}")


def _run(scenario: Resolved, scheduler: str, rate, chunk, prefix, n: int = serving.N_REQUESTS,
         seed: int | None = serving.SEED) -> str:
    """One run: its traffic, at what rate (None: at each rate tried), through which server."""
    at = "at each rate tried" if rate is None else f"at {float(rate):g} per second"
    return (f"{_workload(n, seed)} arriving as a Poisson process {at}, through "
            f"{_server(scenario, scheduler, chunk, prefix)}")


_FIELDS = {  # a models.serving.Summary field: its words, and its dimension
    "ttft_median": ("median time to first token over the run's requests", TIME),
    "ttft_p99": ("p99 of the time to first token over the run's requests", TIME),
    "tpot_median": ("median over requests of each one's mean time per output token after its first", TIME / COUNT),
    "tpot_p99": ("p99 over requests of each one's mean time per output token after its first", TIME / COUNT),
    "tbt_median": ("median of every gap between two consecutive tokens of any request", TIME),
    "tbt_p99": ("p99 of every gap between two consecutive tokens of any request", TIME),
    "goodput": ("requests per second that met both objectives", RATE_DIM),
}


def _field(field: str) -> tuple[str, object]:
    return _FIELDS.get(field, (field.replace("_", " "), None))


def _seeds() -> str:
    return (f"{len(serving.ERROR_SEEDS)} other draws of the traffic, seeds {serving.ERROR_SEEDS[0]} to "
            f"{serving.ERROR_SEEDS[-1]}")


def _spread_of(scenario: Resolved, field: str, scheduler, rate, chunk, prefix) -> str:
    spread = serving.seed_spread(scheduler, float(rate), int(chunk), float(prefix), scenario.acc, scenario.target,
                                 scenario.cards, scenario.precision, field)
    return (f"Between {_seeds()} it moves by {spread:.1%} (relative standard deviation, "
            f"models.serving.seed_spread).")


def _derive_stat(scenario: Resolved, what: str, scheduler, rate, chunk, prefix, stat) -> Derivation:
    field = f"{what}_{stat}"
    words, dim = _field(field)
    result = float(_stat(scenario, field, scheduler, rate, chunk, prefix))
    return simulation(f"{words}, {scheduler} at {float(rate):g} requests per second", dim, result,
                      f"Simulated: {_run(scenario, scheduler, rate, chunk, prefix)}. "
                      f"{_spread_of(scenario, field, scheduler, rate, chunk, prefix)}", *_sources(scenario))


def _derive_ttft(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    return _derive_stat(scenario, "ttft", scheduler, rate, chunk, prefix, stat)


def _derive_tpot(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    return _derive_stat(scenario, "tpot", scheduler, rate, chunk, prefix, stat)


def _derive_tbt(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    return _derive_stat(scenario, "tbt", scheduler, rate, chunk, prefix, stat)


def _objectives(metric: str) -> str:
    later = {"tpot": "each request's mean time per output token", "tbt": "every gap between tokens"}[metric]
    return (f"the p99 of the time to first token within {show(serving.TTFT_OBJECTIVE, TIME)} and the p99 of {later} "
            f"within {show(serving.OBJECTIVES[metric], TIME)}")


def _p99s_at(s: serving.Summary, rate: float, metric: str) -> str:
    later = getattr(s, f"{metric}_p99")
    ok = s.ttft_p99 <= serving.TTFT_OBJECTIVE and later <= serving.OBJECTIVES[metric]
    return (f"at {rate:g} requests/s the TTFT p99 is {show(s.ttft_p99, TIME)} and the {metric.upper()} p99 "
            f"{show(later, TIME)} ({'meets' if ok else 'misses'})")


def _edge(rates, found: float, summary_at, metric: str) -> str:
    """The runs either side of a capacity read between `rates` (`summary_at(i)`: the run at rates[i])."""
    if found <= 0.0:
        return f"even the lowest rate misses: {_p99s_at(summary_at(0), float(rates[0]), metric)}"
    if found >= rates[-1]:
        return f"the highest rate of the search meets: {_p99s_at(summary_at(len(rates) - 1), float(rates[-1]), metric)}"
    hi = int(np.searchsorted(rates, found, side="right"))
    return (f"{_p99s_at(summary_at(hi - 1), float(rates[hi - 1]), metric)}; "
            f"{_p99s_at(summary_at(hi), float(rates[hi]), metric)}; between those two rates the p99s, read "
            f"linearly, reach their objectives at {found:.4g} requests/s")


def _cut(scenario: Resolved, scheduler, chunk, prefix, found: float) -> str:
    bound = serving.sustainable_rate(scheduler, int(chunk), float(prefix), scenario.acc, scenario.target,
                                     scenario.cards, scenario.precision)
    if found > bound:
        return (f" That is past {bound:.4g} requests/s, the rate no run can keep up with however long "
                f"(serve_bound), so the capacity is cut to it.")
    return ""


def _derive_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default, metric="tpot"):
    result = float(serve_capacity(scenario, scheduler, chunk, prefix, metric))
    rates = np.asarray(serving.CAPACITY_RATES, dtype=float)
    c, p, n = int(chunk), float(prefix), serving.LONG_REQUESTS
    # The search again (models.serving._crossing): every run it reads is memoised.
    found = serving._crossing(scheduler, rates, c, p, scenario.acc, scenario.target, scenario.cards,
                              scenario.precision, n, metric)

    def at(i):
        return serving.summary(scheduler, float(rates[i]), c, p, scenario.acc, scenario.target, scenario.cards,
                               scenario.precision, serving.SEED, n)
    return search(f"steady capacity of {scheduler}, {metric.upper()} objective, requests per second", RATE_DIM,
                  result,
                  f"The highest arrival rate with {_objectives(metric)}, over runs of {n:,} requests, searched "
                  f"among {rates[0]:g} to {rates[-1]:g} requests/s in steps of {rates[1] - rates[0]:g} (from where the "
                  f"short runs cross, steps that double, then halving, so only runs near the edge are made): {_edge(rates, found, at, metric)}."
                  f"{_cut(scenario, scheduler, chunk, prefix, found)} Each run: "
                  f"{_run(scenario, scheduler, None, chunk, prefix, n)}. The model computes no spread between "
                  f"draws for runs this long: they are long enough that doubling them moves the p99s at the "
                  f"capacity by less than the spread between draws (tests/test_serving_steady.py).",
                  *_sources(scenario))


def _derive_short_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default,
                           metric="tpot"):
    result = float(serve_short_capacity(scenario, scheduler, chunk, prefix, metric))
    rates = np.asarray(RATE.values(), dtype=float)
    c, p = int(chunk), float(prefix)
    runs = serving.sweep(scheduler, rates, c, p, scenario.acc, scenario.target, scenario.cards, scenario.precision)
    found = serving.capacity(rates, [s.ttft_p99 for s in runs], [getattr(s, f"{metric}_p99") for s in runs],
                             serving.TTFT_OBJECTIVE, serving.OBJECTIVES[metric])
    # The first rate that misses, and the one before it (models.serving.capacity reads the first crossing).
    ok = [s.ttft_p99 <= serving.TTFT_OBJECTIVE and getattr(s, f"{metric}_p99") <= serving.OBJECTIVES[metric]
          for s in runs]
    if ok[0] and not all(ok):
        j = ok.index(False)
        edge = (f"{_p99s_at(runs[j - 1], float(rates[j - 1]), metric)}; {_p99s_at(runs[j], float(rates[j]), metric)}"
                f", the first rate that misses; between those two rates the p99s, read linearly, reach their "
                f"objectives at {found:.4g} requests/s")
    else:
        edge = _edge(rates, found, lambda i: runs[i], metric)
    spread = serving.capacity_spread(scheduler, serving.CAPACITY_RATES, c, p, scenario.acc, scenario.target,
                                     scenario.cards, scenario.precision, metric)
    step = serving.CAPACITY_RATES[1] - serving.CAPACITY_RATES[0]
    return search(f"short runs' capacity of {scheduler}, {metric.upper()} objective, requests per second",
                  RATE_DIM, result,
                  f"The highest arrival rate with {_objectives(metric)}, over runs of {serving.N_REQUESTS:,} "
                  f"requests at the rates the page's figures draw ({rates[0]:g} to {rates[-1]:g} requests/s in "
                  f"steps of {rates[1] - rates[0]:g}): {edge}.{_cut(scenario, scheduler, chunk, prefix, found)} "
                  f"Each run: {_run(scenario, scheduler, None, chunk, prefix)}. Read instead on a finer grid of {step:g} "
                  f"requests/s, this capacity moves by {spread:.1%} between {_seeds()} (relative standard "
                  f"deviation, models.serving.capacity_spread).", *_sources(scenario))


# What a prompt's piece carries, as vocabulary/roofline.pass_form words it.
_PIECE = {"t": "positions of the piece", "c": "prompt tokens already cached before it",
          "a": "cached tokens its positions attend to: t × (c + t ÷ 2), each position to those before it",
          "l": "positions through the output head: the prompt's last, in its last piece"}


def _pass_form(scenario: Resolved, passes: list[tuple[float, float, float, bool]], quantity: str,
               result: float) -> Derivation:
    """The seconds of `passes` one after another, each (positions, cached tokens read, positions
    through the output head, whether it is a prompt's piece), as the step model writes a priced
    pass (vocabulary/roofline.pass_form, the one home of that closed form; each pass priced by
    models.roofline.pass_time, which models.serving.PassCost agrees with). A prompt's piece of t
    positions after c cached ones attends to t (c + t / 2) cached tokens
    (models.serving.prefill_alone); a pass with no cache and no logits runs no attention and no head."""
    acc, model, precision, cards = scenario.acc, scenario.target, scenario.precision, scenario.cards
    forms = []
    for t, c, logits, prompt in passes:
        attended = t * (c + t / 2.0) if prompt else 0.0
        st = roofline.pass_time(acc, model, cards, t, c, attended, precision, logits)
        forms.append(pass_form(acc, model, cards, precision, st, carried=_PIECE if prompt else None))
    return one_after_another(quantity, result, forms)


def _derive_pass(scenario: Resolved, positions):
    result = float(serve_pass(scenario, positions))
    return _pass_form(scenario, [(float(positions), 0.0, 0.0, False)],
                      f"time of one pass over {float(positions):,.0f} positions at its floor, with no cache to read "
                      f"and no logits", result)


def _derive_prefill_alone(scenario: Resolved, prompt, chunk=0):
    result = float(serve_prefill_alone(scenario, prompt, chunk))
    prompt, chunk = int(prompt), int(chunk)
    size = chunk or prompt
    pieces, have = [], 0
    for start in range(0, prompt, size):  # models.serving.prefill_alone's pieces
        take = min(size, prompt - start)
        pieces.append((float(take), float(have), 1.0 if have + take == prompt else 0.0, True))
        have += take
    how = f"in {len(pieces)} passes of at most {chunk:,} positions" if chunk else "in one pass"
    return _pass_form(scenario, pieces, f"time to prefill one {prompt:,}-token prompt alone, {how}, at its floor",
                      result)


def _derive_bound(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    result = float(serve_bound(scenario, scheduler, chunk, prefix))
    c, p = int(chunk), float(prefix)
    prompt, decode = serving.work_per_request(c, p)
    cost = serving.PassCost.of(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    sym = {"p": Symbol(prompt, COUNT, f"prompt positions a request needs computed, mean over the "
                                      f"{serving.N_REQUESTS} requests" + (f" ({p:.0%} of each prompt after the "
                                                                         f"first cached)" if p else "")),
           "d": Symbol(decode, COUNT, "decode positions a request needs (answer tokens after the first), mean")}
    if scheduler == "chunked":
        sym.update(C=Symbol(float(c), COUNT, "positions in a full chunked pass"),
                   T=Symbol(cost.seconds(c, 0.0, 0.0, 0), TIME, f"time of a pass over {c:,} positions at its floor"))
        formula, parts = "1 / ((p + d) * T / C)", (_derive_pass(scenario, c),)
    else:
        P, D = serving.PREFILL_TOKENS, serving.MAX_RUNNING
        sym.update(P=Symbol(float(P), COUNT, "positions in a full prompt pass"),
                   Tp=Symbol(cost.seconds(P, 0.0, 0.0, 0), TIME, f"time of a pass over {P:,} positions at its floor"),
                   D=Symbol(float(D), COUNT, "positions in a full decode pass (the cap on running requests)"),
                   Td=Symbol(cost.seconds(D, 0.0, 0.0, 0), TIME, f"time of a pass over {D:,} positions at its floor"))
        formula, parts = "1 / (p * Tp / P + d * Td / D)", (_derive_pass(scenario, P), _derive_pass(scenario, D))
    d = closed_form(f"requests per second {scheduler} cannot keep up with past, however long the run",
                    RATE_DIM, result, formula, _sources(scenario, f"the {serving.N_REQUESTS} requests of "
                                                                  f"models.serving.traffic (seed {serving.SEED})"),
                    **sym)
    return dataclasses.replace(d, parts=parts)


def _derive_capacity_error(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    result = float(serve_capacity_error(scenario, scheduler, chunk, prefix))
    rates = np.asarray(serving.CAPACITY_RATES, dtype=float)
    c, p = int(chunk), float(prefix)
    args = (scheduler, rates, c, p, scenario.acc, scenario.target, scenario.cards, scenario.precision)
    # models.serving.capacity_spread's draws, again from its memoised runs, to show them.
    start = serving._first_failure(*args)
    near = serving.capacity_near(serving._p99s(*args), rates, start)
    start = min(int(np.searchsorted(rates, near)), len(rates) - 1)
    values = np.array([serving.capacity_near(serving._p99s(*args, seed), rates, start)
                       for seed in serving.ERROR_SEEDS])
    shown = ""
    if values.mean() and np.isclose(values.std(ddof=1) / values.mean(), result, rtol=1e-9, atol=0):
        shown = (f": {', '.join(f'{v:.3g}' for v in values)} requests/s, a standard deviation of "
                 f"{values.std(ddof=1):.3g} over a mean of {values.mean():.3g}")
    return simulation(f"relative spread of the short runs' capacity of {scheduler} between draws of the traffic",
                      RATIO, result,
                      f"The capacity under {_objectives('tpot')}, read from runs of {serving.N_REQUESTS:,} requests "
                      f"on a grid of {rates[1] - rates[0]:g} requests/s, found again for each of {_seeds()}{shown} "
                      f"(models.serving.capacity_spread). Each run: "
                      f"{_run(scenario, scheduler, None, chunk, prefix, seed=None)}.",
                      *_sources(scenario))


def _derive_long_requests():
    return value("requests in a long run", COUNT, float(serve_long_requests()),
                 "models/serving.py: LONG_REQUESTS, chosen so that doubling the runs moves the p99s at the capacity "
                 "they give by less than the spread between draws of the traffic (tests/test_serving_steady.py)")


def _derive_error(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, field="ttft_p99"):
    _schedulers(scheduler)
    result = float(serve_error(scenario, scheduler, rate, chunk, prefix, field))
    words, dim = _field(field)
    values = np.array([getattr(serving.summary(scheduler, float(rate), int(chunk), float(prefix), scenario.acc,
                                               scenario.target, scenario.cards, scenario.precision, seed), field)
                       for seed in serving.ERROR_SEEDS])
    return simulation(f"relative spread of the {words}, {scheduler} at {float(rate):g} requests per second, between "
                      f"draws of the traffic", RATIO, result,
                      f"The same setting run again on each of {_seeds()}: {', '.join(show(v, dim) for v in values)}; "
                      f"their standard deviation, {show(values.std(ddof=1), dim)}, over their mean, "
                      f"{show(values.mean(), dim)} (models.serving.seed_spread). Each run: "
                      f"{_run(scenario, scheduler, rate, chunk, prefix, seed=None)}.", *_sources(scenario))


def _derive_peak(scenario: Resolved, which, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default):
    _schedulers(scheduler)
    result = float(serve_peak(scenario, which, scheduler, rate, chunk, prefix))
    run = serving.simulate(scheduler, float(rate), int(chunk), float(prefix), scenario.acc, scenario.target,
                           scenario.cards, scenario.precision)
    if which == "memory":
        fit = serving.cache_tokens(scenario.acc, scenario.target, scenario.cards, scenario.precision)
        quantity, dim = "most KV cache promised at once, as a share of what fits", RATIO
        what = (f"the most KV cache tokens promised to admitted requests at once, {run.peak_reserved:,}, over the "
                f"{fit:,} that fit")
    else:
        quantity, dim = "most requests admitted at once", COUNT
        what = f"the most requests admitted at once (the cap is {serving.MAX_RUNNING})"
    return simulation(f"{quantity}, {scheduler} at {float(rate):g} requests per second", dim, result,
                      f"Over one run, {what}. Simulated: {_run(scenario, scheduler, rate, chunk, prefix)}. One draw "
                      f"of the traffic: the model reports no spread for a run's peaks.", *_sources(scenario))


def _derive_cache_tokens(scenario: Resolved):
    acc, model, precision = scenario.acc, scenario.target, scenario.precision
    result = float(serve_cache_tokens(scenario))
    sym = {"n": Symbol(float(scenario.cards), COUNT, "cards"),
           "M": Symbol(acc.memory_bytes, BYTES, f"HBM of one {acc.name}"),
           "r": Symbol(kvcache.RESERVE, RATIO, "share held back for activations and the runtime (assumed)"),
           "W": Symbol(model.weight_bytes(precision), BYTES,
                       f"weights of {model.name} in memory ({precision.weights.name})"),
           "Ly": Symbol(float(model.layers), COUNT, "layers"),
           "h": Symbol(float(model.kv_heads), COUNT, "key/value heads"),
           "dh": Symbol(float(model.head_dim), COUNT, "dimensions of one head"),
           "v": Symbol(precision.kv.bytes, BYTES, f"bytes per cached value ({precision.kv.name})")}
    return closed_form(f"tokens of KV cache that fit beside {model.name}'s weights", COUNT, result,
                       "max(n * M * (1 - r) - W, 0) // (2 * Ly * h * dh * v)",
                       (acc.source, f"{model.name}: {model.source}", "models/kvcache.py: RESERVE (assumed)"), **sym)


def _derive_requests():
    return value("requests in a simulated run", COUNT, float(serve_requests()),
                 f"models/serving.py: N_REQUESTS, the workload fixed so that every figure and number on the page "
                 f"agrees (seed {serving.SEED})")


def _derive_seeds():
    return value("traffic draws behind the error", COUNT, float(serve_seeds()),
                 f"models/serving.py: ERROR_SEEDS, seeds {serving.ERROR_SEEDS[0]} to {serving.ERROR_SEEDS[-1]}, "
                 f"each a fresh draw of the page's traffic")


def _derive_lengths(which="prompt", stat="mean"):
    result = float(serve_lengths(which, stat))
    mean, spread, (lo, hi) = ((serving.PROMPT_MEAN, serving.PROMPT_SPREAD, serving.PROMPT_RANGE) if which == "prompt"
                              else (serving.OUTPUT_MEAN, serving.OUTPUT_SPREAD, serving.OUTPUT_RANGE))
    noun, field = ("prompt", "PROMPT") if which == "prompt" else ("answer", "OUTPUT")
    stat_words = {"max": "longest", "min": "shortest"}.get(stat, stat)
    return simulation(f"{stat_words} {noun} length of the workload, tokens", COUNT, result,
                      f"The {stat_words} of the {serving.N_REQUESTS:,} {noun} lengths drawn (models.serving.traffic, "
                      f"seed {serving.SEED}): log-normal with mean {mean:,} tokens before clipping and log spread "
                      f"{spread}, rounded and clipped to {lo:,}–{hi:,}. Every run on the page serves this same draw.",
                      f"models/serving.py: {field}_MEAN, {field}_SPREAD, {field}_RANGE, N_REQUESTS, SEED")


_LIMITS = {
    "running": ("most requests running at once", COUNT,
                "vLLM's default cap on running sequences, max_num_seqs (models/serving.py: MAX_RUNNING)"),
    "prefill_tokens": ("most prompt tokens in a prefill-first pass", COUNT,
                       "vLLM's max_num_batched_tokens with an 8,192-token model length (models/serving.py: "
                       "PREFILL_TOKENS)"),
    "ttft": ("objective on the time to first token's p99", TIME,
             "the page's objective, our choice: a first token within a second for 99 requests in 100 "
             "(models/serving.py: TTFT_OBJECTIVE)"),
    "tpot": ("objective on the p99 of each request's mean time per output token", TIME,
             "the page's objective, our choice, in the form MLPerf's objectives take (models/serving.py: "
             "TPOT_OBJECTIVE)"),
    "tbt": ("objective on the p99 of every gap between tokens", TIME,
            "the page's objective, our choice, in the form Sarathi-Serve's takes (models/serving.py: TBT_OBJECTIVE)"),
}


def _derive_limit(which):
    words, dim, source = _LIMITS[which]
    return value(words, dim, float(serve_limit(which)), source)


_SETTINGS = {
    "rate_min": ("lowest arrival rate on the page's dial", RATE_DIM,
                 "RATE, the arrival-rate slider: its lowest position"),
    "rate_max": ("highest arrival rate on the page's dial", RATE_DIM,
                 "RATE, the arrival-rate slider: its highest position"),
    "rate_step": ("step of the page's arrival-rate dial", RATE_DIM, "RATE, the arrival-rate slider: its step"),
    "rate": ("arrival rate the timeline starts at", RATE_DIM, "RATE, the arrival-rate slider: its default"),
    "chunk": ("default chunk, positions per pass", COUNT, "CHUNK, the chunk-size slider: its default"),
    "chunk_max": ("largest chunk on the page's dial, positions per pass", COUNT,
                  "CHUNK, the chunk-size slider: its highest position"),
    "prefix_step": ("first cached share above none", RATIO, "PREFIX, the cached-share slider: its step"),
}


def _derive_setting(which):
    result = float(serve_setting(which))
    if which == "capacity_step":
        rates = serving.CAPACITY_RATES
        return value("spacing of the rates a steady capacity is read between", RATE_DIM, result,
                     f"models/serving.py: CAPACITY_RATES, {rates[0]:g} to {rates[-1]:g} requests per second")
    words, dim, where = _SETTINGS[which]
    return value(words, dim, result, f"explainer_gen/compute/sliders.py: {where} (the page's dial, and the serving "
                                     f"terms' default)")


@topic.term(depends=("scenario",), returns=Returns("time", "time to first token, median or p99"), simulated=True,
            derive=_derive_ttft)
def serve_ttft(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time to first token at `rate`: its "median" or "p99" over the run's requests."""
    return _stat(scenario, f"ttft_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time per count", "time per output token, median or p99"),
            simulated=True, derive=_derive_tpot)
def serve_tpot(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time per output token after the first at `rate`, "median" or "p99"."""
    return _stat(scenario, f"tpot_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time", "time between tokens, median or p99"), simulated=True,
            derive=_derive_tbt)
def serve_tbt(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time between tokens at `rate`, over every gap between two consecutive tokens of any request:
    its "median" or "p99"."""
    return _stat(scenario, f"tbt_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("rate", "steady capacity, requests per second"), simulated=True,
            derive=_derive_capacity)
def serve_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default, metric="tpot"):
    """The highest arrival rate of a steady stream (runs of models.serving.LONG_REQUESTS requests) at
    which the first token's p99 and `metric`'s p99 ("tpot", the default, or "tbt") meet their
    objectives, read between models.serving.CAPACITY_RATES."""
    return _each(lambda s, c, p, m: serving.steady_capacity(s, serving.CAPACITY_RATES, int(c), float(p), scenario.acc,
                                                            scenario.target, scenario.cards, scenario.precision,
                                                            metric=m), scheduler, chunk, prefix, metric)


@topic.term(depends=("scenario",), returns=Returns("rate", "short run's capacity, requests per second"),
            simulated=True, derive=_derive_short_capacity)
def serve_short_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default, metric="tpot"):
    """The capacity the figures' runs of models.serving.N_REQUESTS requests show at the rates they
    draw (a short run's figure, cut to `serve_bound` where it would pass it: models.serving.short_capacity)."""
    return _each(lambda s, c, p, m: serving.short_capacity(s, int(c), float(p), scenario.acc, scenario.target,
                                                           scenario.cards, scenario.precision, m, RATE.values())[0],
                 scheduler, chunk, prefix, metric)


@topic.term(depends=("scenario",), returns=Returns("rate", "highest sustainable requests per second"),
            derive=_derive_bound)
def serve_bound(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    """Requests per second no run of the scheduler can keep up with past (models.serving.sustainable_rate)."""
    return _each(lambda s, c, p: serving.sustainable_rate(s, int(c), float(p), scenario.acc, scenario.target,
                                                          scenario.cards, scenario.precision), scheduler, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("ratio", "relative spread of the short capacity"), simulated=True,
            derive=_derive_capacity_error)
def serve_capacity_error(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    """Relative standard deviation of `serve_short_capacity` between draws of the traffic."""
    return _each(lambda s, c, p: serving.capacity_spread(s, serving.CAPACITY_RATES, int(c), float(p), scenario.acc,
                                                         scenario.target, scenario.cards, scenario.precision),
                 scheduler, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time", "time of one pass, at its floor"), derive=_derive_pass)
def serve_pass(scenario: Resolved, positions):
    """The least a pass over `positions` positions takes: no cache to read and no logits, seconds."""
    _numbers(positions=positions)
    cost = serving.PassCost.of(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    return _each(lambda p: cost.seconds(float(p), 0.0, 0.0, 0), positions)


@topic.term(depends=("scenario",), returns=Returns("time", "time to prefill one prompt alone"),
            derive=_derive_prefill_alone)
def serve_prefill_alone(scenario: Resolved, prompt, chunk=0):
    """Seconds to prefill one `prompt`-token prompt on an idle server, in one pass (chunk 0) or
    in pieces of `chunk` positions (models.serving.prefill_alone)."""
    _numbers(prompt=prompt, chunk=chunk)
    cost = serving.PassCost.of(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    return _each(lambda p, c: serving.prefill_alone(cost, int(p), int(c) or None), prompt, chunk)


@topic.term(depends=(), returns=Returns("count", "requests in a long run"), derive=_derive_long_requests)
def serve_long_requests() -> int:
    """Requests in the long runs behind `serve_steady_capacity`."""
    return serving.LONG_REQUESTS


@topic.term(depends=("scenario",), returns=Returns("ratio", "relative spread of a run's statistic"), simulated=True,
            derive=_derive_error)
def serve_error(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, field="ttft_p99"):
    """Relative standard deviation of a run's `field` (a models.serving.Summary field) between
    draws of the traffic: the statistical error of one run."""
    return _each(lambda s, r, c, p, f: serving.seed_spread(s, r, c, p, scenario.acc, scenario.target, scenario.cards,
                                                           scenario.precision, f),
                 scheduler, rate, chunk, prefix, field)


def _peak_shape(which, *rest, **kwargs):
    """What `serve_peak(which, ...)` returns, by `which` alone: a share of memory, or a count of requests."""
    return {"memory": (RATIO, 1.0), "running": (COUNT, 1.0)}.get(which)


@topic.term(depends=("scenario",), returns=Returns(AS_PUBLISHED, "peak memory share or requests running",
                                                    of_arguments=_peak_shape),
            simulated=True, derive=_derive_peak)
def serve_peak(scenario: Resolved, which, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default):
    """Over one run: "memory", the most KV cache promised at once as a share of what fits, or
    "running", the most requests admitted at once."""
    def one(w, s, r, c, p):
        run = serving.simulate(s, r, c, p, scenario.acc, scenario.target, scenario.cards, scenario.precision)
        if w == "memory":
            return run.peak_reserved / serving.cache_tokens(scenario.acc, scenario.target, scenario.cards,
                                                            scenario.precision)
        return run.peak_running
    return _each(one, which, scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("count", "tokens of KV cache that fit"),
            derive=_derive_cache_tokens)
def serve_cache_tokens(scenario: Resolved):
    """Tokens of KV cache that fit beside the target's weights."""
    return float(serving.cache_tokens(scenario.acc, scenario.target, scenario.cards, scenario.precision))


@topic.term(depends=(), returns=Returns("count", "requests in a simulated run"), derive=_derive_requests)
def serve_requests() -> int:
    """Requests in every simulated run."""
    return serving.N_REQUESTS


@topic.term(depends=(), returns=Returns("count", "traffic draws behind the error"), derive=_derive_seeds)
def serve_seeds() -> int:
    """Draws of the traffic behind `serve_error`."""
    return len(serving.ERROR_SEEDS)


@topic.term(depends=(), returns=Returns("count", "prompt or output length in tokens"), derive=_derive_lengths)
def serve_lengths(which="prompt", stat="mean"):
    """The workload's prompt or output lengths in tokens: their "mean", "median", "min" or "max"."""
    if which not in ("prompt", "output") or stat not in ("mean", "median", "min", "max"):
        raise ValueError(f"serve_lengths takes 'prompt' or 'output', then 'mean', 'median', 'min' or 'max'; "
                         f"got {which!r}, {stat!r}")
    stream = serving.traffic()
    values = stream.prompt if which == "prompt" else stream.output
    return float(getattr(np, stat)(values))


def _pick(term: str, which, table: dict):
    """table[which], or a ValueError naming the choices (a page's number then fails at its line)."""
    if not isinstance(which, str) or which not in table:
        raise ValueError(f"{term} takes one of {', '.join(map(repr, table))}, not {which!r}")
    return table[which]


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "server's fixed limit or objective"), derive=_derive_limit)
def serve_limit(which):
    """The server's and the page's fixed settings: "running" (most requests at once),
    "prefill_tokens" (a prefill-first pass's prompt tokens), "ttft", "tpot" and "tbt" (the
    objective, s)."""
    return _pick("serve_limit", which, {
        "running": serving.MAX_RUNNING, "prefill_tokens": serving.PREFILL_TOKENS,
        "ttft": serving.TTFT_OBJECTIVE, "tpot": serving.TPOT_OBJECTIVE, "tbt": serving.TBT_OBJECTIVE})


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "page's dial setting"), derive=_derive_setting)
def serve_setting(which):
    """The page's dials: "rate_min", "rate_max", "rate_step", "rate" (the timeline's default),
    "chunk" (the default chunk), "chunk_max", "prefix_step" (the first cached share above 0); and
    "capacity_step", the spacing of the rates a steady capacity is read between."""
    return _pick("serve_setting", which, {
        "rate_min": RATE.min, "rate_max": RATE.max, "rate_step": RATE.step, "rate": RATE.default,
        "chunk": CHUNK.default, "chunk_max": CHUNK.max, "prefix_step": PREFIX.step,
        "capacity_step": float(serving.CAPACITY_RATES[1] - serving.CAPACITY_RATES[0])})
