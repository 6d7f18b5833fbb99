"""Static against continuous batching: the simulated schedulers and their request set."""
from __future__ import annotations

from models import batching

from ..resolved import Resolved
from .registry import Returns, Topic

topic = Topic("batching")


@topic.term(depends=("scenario",), returns=Returns("rate", "static batching throughput"), simulated=True)
def static_tps(scenario: Resolved, batch, spread):
    """Tokens per second of the static scheduler at `batch` slots and output-length `spread`."""
    return batching.tokens_per_s("static", batch, spread, scenario.acc, scenario.target, scenario.cards,
                               scenario.context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("rate", "continuous batching throughput"), simulated=True)
def continuous_tps(scenario: Resolved, batch, spread):
    """Tokens per second of the continuous (iteration-level) scheduler."""
    return batching.tokens_per_s("continuous", batch, spread, scenario.acc, scenario.target, scenario.cards,
                               scenario.context, precision=scenario.precision)


@topic.term(depends=(), returns=Returns("count", "requests in the simulated set"))
def requests() -> int:
    return batching.N_REQUESTS


@topic.term(depends=(), returns=Returns("count", "mean output tokens per request"))
def mean_tokens() -> int:
    return batching.MEAN_TOKENS


@topic.term(depends=(), returns=Returns("count", "output token cap per request"))
def max_tokens() -> int:
    return batching.MAX_TOKENS
