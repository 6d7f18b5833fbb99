"""One server under Poisson traffic (models.serving): latencies, goodput, capacity, the workload.

Scheduler names are "prefill-first" and "chunked"; `chunk` is ignored for prefill-first. Rates
are requests per second and latencies seconds. Arguments broadcast, like every term's.
"""
from __future__ import annotations

import numpy as np

from models import serving

from ..resolved import Resolved
from ..sliders import CHUNK, PREFIX, RATE
from .registry import AS_PUBLISHED, Returns, Topic

topic = Topic("serving")


def _each(fn, *args) -> np.ndarray | float:
    """`fn` at every combination of broadcast arguments (the simulation takes one setting a call)."""
    arrays = np.broadcast_arrays(*(np.asarray(a) for a in args))
    out = np.empty(arrays[0].shape)
    for idx in np.ndindex(out.shape):
        out[idx] = fn(*(a[idx].item() for a in arrays))
    return out if out.ndim else float(out)


def _stat(scenario: Resolved, field: str, scheduler, rate, chunk, prefix):
    return _each(lambda s, r, c, p: getattr(serving.summary(s, r, c, p, scenario.acc, scenario.target, scenario.cards,
                                                             scenario.precision), field),
                 scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time", "time to first token, median or p99"), simulated=True)
def serve_ttft(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time to first token at `rate`: its "median" or "p99" over the run's requests."""
    return _stat(scenario, f"ttft_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time per count", "time per output token, median or p99"),
            simulated=True)
def serve_tpot(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time per output token after the first at `rate`, "median" or "p99"."""
    return _stat(scenario, f"tpot_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time", "time between tokens, median or p99"), simulated=True)
def serve_tbt(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, stat="p99"):
    """Time between tokens at `rate`, over every gap between two consecutive tokens of any request:
    its "median" or "p99"."""
    return _stat(scenario, f"tbt_{stat}", scheduler, rate, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("rate", "steady capacity, requests per second"), simulated=True)
def serve_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default, metric="tpot"):
    """The highest arrival rate of a steady stream (runs of models.serving.LONG_REQUESTS requests) at
    which the first token's p99 and `metric`'s p99 ("tpot", the default, or "tbt") meet their
    objectives, read between models.serving.CAPACITY_RATES."""
    return _each(lambda s, c, p, m: serving.steady_capacity(s, serving.CAPACITY_RATES, int(c), float(p), scenario.acc,
                                                            scenario.target, scenario.cards, scenario.precision,
                                                            metric=m), scheduler, chunk, prefix, metric)


@topic.term(depends=("scenario",), returns=Returns("rate", "short run's capacity, requests per second"),
            simulated=True)
def serve_short_capacity(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default, metric="tpot"):
    """The capacity the figures' runs of models.serving.N_REQUESTS requests show at the rates they
    draw (a short run's figure, cut to `serve_bound` where it would pass it: models.serving.short_capacity)."""
    return _each(lambda s, c, p, m: serving.short_capacity(s, int(c), float(p), scenario.acc, scenario.target,
                                                           scenario.cards, scenario.precision, m, RATE.values())[0],
                 scheduler, chunk, prefix, metric)


@topic.term(depends=("scenario",), returns=Returns("rate", "highest sustainable requests per second"))
def serve_bound(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    """Requests per second no run of the scheduler can keep up with past (models.serving.sustainable_rate)."""
    return _each(lambda s, c, p: serving.sustainable_rate(s, int(c), float(p), scenario.acc, scenario.target,
                                                          scenario.cards, scenario.precision), scheduler, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("ratio", "relative spread of the short capacity"), simulated=True)
def serve_capacity_error(scenario: Resolved, scheduler, chunk=CHUNK.default, prefix=PREFIX.default):
    """Relative standard deviation of `serve_short_capacity` between draws of the traffic."""
    return _each(lambda s, c, p: serving.capacity_spread(s, serving.CAPACITY_RATES, int(c), float(p), scenario.acc,
                                                         scenario.target, scenario.cards, scenario.precision),
                 scheduler, chunk, prefix)


@topic.term(depends=("scenario",), returns=Returns("time", "time of one pass, at its floor"))
def serve_pass(scenario: Resolved, positions):
    """The least a pass over `positions` positions takes: no cache to read and no logits, seconds."""
    cost = serving.PassCost.of(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    return _each(lambda p: cost.seconds(float(p), 0.0, 0.0, 0), positions)


@topic.term(depends=("scenario",), returns=Returns("time", "time to prefill one prompt alone"))
def serve_prefill_alone(scenario: Resolved, prompt, chunk=0):
    """Seconds to prefill one `prompt`-token prompt on an idle server, in one pass (chunk 0) or
    in pieces of `chunk` positions (models.serving.prefill_alone)."""
    cost = serving.PassCost.of(scenario.acc, scenario.target, scenario.cards, scenario.precision)
    return _each(lambda p, c: serving.prefill_alone(cost, int(p), int(c) or None), prompt, chunk)


@topic.term(depends=(), returns=Returns("count", "requests in a long run"))
def serve_long_requests() -> int:
    """Requests in the long runs behind `serve_steady_capacity`."""
    return serving.LONG_REQUESTS


@topic.term(depends=("scenario",), returns=Returns("ratio", "relative spread of a run's statistic"), simulated=True)
def serve_error(scenario: Resolved, scheduler, rate, chunk=CHUNK.default, prefix=PREFIX.default, field="ttft_p99"):
    """Relative standard deviation of a run's `field` (a models.serving.Summary field) between
    draws of the traffic: the statistical error of one run."""
    return _each(lambda s, r, c, p, f: serving.seed_spread(s, r, c, p, scenario.acc, scenario.target, scenario.cards,
                                                           scenario.precision, f),
                 scheduler, rate, chunk, prefix, field)


@topic.term(depends=("scenario",), returns=Returns(AS_PUBLISHED, "peak memory share or requests running"),
            simulated=True)
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


@topic.term(depends=("scenario",), returns=Returns("count", "tokens of KV cache that fit"))
def serve_cache_tokens(scenario: Resolved):
    """Tokens of KV cache that fit beside the target's weights."""
    return float(serving.cache_tokens(scenario.acc, scenario.target, scenario.cards, scenario.precision))


@topic.term(depends=(), returns=Returns("count", "requests in a simulated run"))
def serve_requests() -> int:
    """Requests in every simulated run."""
    return serving.N_REQUESTS


@topic.term(depends=(), returns=Returns("count", "traffic draws behind the error"))
def serve_seeds() -> int:
    """Draws of the traffic behind `serve_error`."""
    return len(serving.ERROR_SEEDS)


@topic.term(depends=(), returns=Returns("count", "prompt or output length in tokens"))
def serve_lengths(which="prompt", stat="mean"):
    """The workload's prompt or output lengths in tokens: their "mean", "median", "min" or "max"."""
    stream = serving.traffic()
    values = stream.prompt if which == "prompt" else stream.output
    return float(getattr(np, stat)(values))


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "server's fixed limit or objective"))
def serve_limit(which):
    """The server's and the page's fixed settings: "running" (most requests at once),
    "prefill_tokens" (a prefill-first pass's prompt tokens), "ttft", "tpot" and "tbt" (the
    objective, s)."""
    return {"running": serving.MAX_RUNNING, "prefill_tokens": serving.PREFILL_TOKENS,
            "ttft": serving.TTFT_OBJECTIVE, "tpot": serving.TPOT_OBJECTIVE, "tbt": serving.TBT_OBJECTIVE}[which]


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "page's dial setting"))
def serve_setting(which):
    """The page's dials: "rate_min", "rate_max", "rate_step", "rate" (the timeline's default),
    "chunk" (the default chunk), "chunk_max", "prefix_step" (the first cached share above 0); and
    "capacity_step", the spacing of the rates a steady capacity is read between."""
    return {"rate_min": RATE.min, "rate_max": RATE.max, "rate_step": RATE.step, "rate": RATE.default,
            "chunk": CHUNK.default, "chunk_max": CHUNK.max, "prefix_step": PREFIX.step,
            "capacity_step": float(serving.CAPACITY_RATES[1] - serving.CAPACITY_RATES[0])}[which]
