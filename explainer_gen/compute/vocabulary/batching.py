"""Static against continuous batching: the simulated schedulers and their request set."""
from __future__ import annotations

from models import batching
from models.units import COUNT, TIME

from ..derivation import simulation, value
from ..resolved import Resolved
from .registry import Returns, Topic

topic = Topic("batching")


# -- how each number is made (compute/derivation.py) ------------------------------------------------

_SCHEDULERS = {
    "static": "the static scheduler fills its {b} slots with the next {b} requests and holds them until the "
              "group's longest request ends",
    "continuous": "the continuous scheduler hands each freed slot of its {b} to the next waiting request at the "
                  "next pass",
}


def _derive_tps(scenario: Resolved, scheduler: str, batch, spread):
    """A scheduler's throughput: one run of the seeded request set (memoised, the term's own run),
    its tokens over its seconds."""
    result = float(batching.tokens_per_s(scheduler, batch, spread, scenario.acc, scenario.target, scenario.cards,
                                         scenario.context, precision=scenario.precision))
    b, s = int(batch), float(spread)
    run = batching.simulate(scheduler, b, s, scenario.acc, scenario.target, scenario.cards, scenario.context,
                            precision=scenario.precision)
    lengths = batching.output_lengths(s)
    return simulation(
        f"{scheduler} batching throughput, tokens per second, at {b} slots and spread {s:g}", COUNT / TIME, result,
        f"Simulated: {batching.N_REQUESTS} requests, all waiting at the start, each from a {scenario.context:,}-token "
        f"prompt already in its cache, asking for output lengths drawn log-normal around {batching.MEAN_TOKENS} tokens "
        f"(log spread {s:g}, capped at {batching.MAX_TOKENS}; seed {batching.SEED}; these lengths "
        f"{lengths.min()}–{lengths.max()}, mean {lengths.mean():.1f}); {_SCHEDULERS[scheduler].format(b=b)}. Every "
        f"pass is priced at its roofline step time over the requests running in it on {scenario.cards} × "
        f"{scenario.acc.name} ({scenario.target.name}); prefill is left out. The run emits {run.tokens:,} tokens in "
        f"{len(run.step_s):,} passes taking {run.seconds:.3g} s, its slots busy {run.occupancy:.0%} of the time: "
        f"{run.tokens:,} tokens / {run.seconds:.4g} s. One seeded request set: the model reports no spread between "
        f"draws.", scenario.acc.source, f"{scenario.target.name}: {scenario.target.source}")


def _derive_static(scenario: Resolved, batch, spread):
    return _derive_tps(scenario, "static", batch, spread)


def _derive_continuous(scenario: Resolved, batch, spread):
    return _derive_tps(scenario, "continuous", batch, spread)


def _derive_requests():
    return value("requests in the simulated set", COUNT, float(batching.N_REQUESTS),
                 f"models/batching.py: N_REQUESTS, the request set every batching page and figure uses (seed "
                 f"{batching.SEED})")


def _derive_mean_tokens():
    return value("mean output tokens per request", COUNT, float(batching.MEAN_TOKENS),
                 "models/batching.py: MEAN_TOKENS, the log-normal draw's mean before the cap")


def _derive_max_tokens():
    return value("output token cap per request", COUNT, float(batching.MAX_TOKENS),
                 "models/batching.py: MAX_TOKENS: servers cap output length, and the cap keeps one outlier from "
                 "owning the run")


@topic.term(depends=("scenario",), returns=Returns("rate", "static batching throughput"), simulated=True,
            derive=_derive_static)
def static_tps(scenario: Resolved, batch, spread):
    """Tokens per second of the static scheduler at `batch` slots and output-length `spread`."""
    return batching.tokens_per_s("static", batch, spread, scenario.acc, scenario.target, scenario.cards,
                               scenario.context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("rate", "continuous batching throughput"), simulated=True,
            derive=_derive_continuous)
def continuous_tps(scenario: Resolved, batch, spread):
    """Tokens per second of the continuous (iteration-level) scheduler."""
    return batching.tokens_per_s("continuous", batch, spread, scenario.acc, scenario.target, scenario.cards,
                               scenario.context, precision=scenario.precision)


@topic.term(depends=(), returns=Returns("count", "requests in the simulated set"), derive=_derive_requests)
def requests() -> int:
    return batching.N_REQUESTS


@topic.term(depends=(), returns=Returns("count", "mean output tokens per request"),
            derive=_derive_mean_tokens)
def mean_tokens() -> int:
    return batching.MEAN_TOKENS


@topic.term(depends=(), returns=Returns("count", "output token cap per request"), derive=_derive_max_tokens)
def max_tokens() -> int:
    return batching.MAX_TOKENS
