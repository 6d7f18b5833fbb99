"""KV-cache memory: bytes per token of context, and how many requests the cards hold at once.

`context` is tokens per request, `n` a card count (the scenario's by default), and `draft=1`
charges a speculative draft's weights and cache as well. Bytes per token come from one formula,
models.kvcache.bytes_per_token.
"""
from __future__ import annotations

from models import kvcache

from ..resolved import Resolved
from .registry import Returns, Topic
from .scenario import model

topic = Topic("kv")


def _draft(scenario: Resolved, draft):
    return scenario.draft if draft else None


@topic.term(depends=("scenario",), returns=Returns("bytes per count", "cache bytes per token of context"))
def kv_bytes(scenario: Resolved, which: str = "target", kv=None) -> float:
    """Cache bytes one token of context holds in the target (or the draft), in the scenario's
    cache format (or `kv`)."""
    return kvcache.bytes_per_token(model(scenario, which), scenario.in_formats(kv=kv).precision.kv.bytes)


@topic.term(depends=("scenario",), returns=Returns("bytes", "bytes per cached value"))
def kv_value_bytes(scenario: Resolved) -> float:
    """Bytes one cached key or value element takes in the scenario's cache format."""
    return scenario.precision.kv.bytes


@topic.term(depends=("scenario",), returns=Returns("bytes", "memory left for the cache"))
def kv_budget(scenario: Resolved, n=None, draft=0):
    """Bytes left for cache on `n` cards once the weights are in; negative if they do not fit."""
    return kvcache.cache_budget(scenario.acc, scenario.target, scenario.cards if n is None else n,
                                _draft(scenario, draft), precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "requests that fit at once"))
def kv_slots(scenario: Resolved, context, n=None, draft=0, kv=None):
    """Requests of `context` tokens that fit at once on `n` cards, the cache in the scenario's
    format (or `kv`)."""
    return kvcache.slots(scenario.acc, scenario.target, scenario.cards if n is None else n, context,
                         _draft(scenario, draft), precision=scenario.in_formats(kv=kv).precision)


@topic.term(depends=("scenario",), returns=Returns("count", "slots the draft costs"))
def draft_slots(scenario: Resolved, context, n=None):
    """Slots the draft costs: its weights and its own cache."""
    return kvcache.draft_cost(scenario.acc, scenario.target, scenario.draft,
                              scenario.cards if n is None else n, context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "fewest cards that hold one request"))
def kv_min_cards(scenario: Resolved, context, draft=0):
    """The fewest cards on which one request of `context` tokens fits."""
    return kvcache.min_cards(scenario.acc, scenario.target, context, _draft(scenario, draft),
                             precision=scenario.precision)


@topic.term(depends=(), returns=Returns("ratio", "share of memory held back"))
def kv_reserve() -> float:
    """Share of HBM held back from the cache."""
    return kvcache.RESERVE
