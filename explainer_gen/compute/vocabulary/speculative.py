"""Speculative decoding: tokens per verify step, the speedup, and where batching erases it.

`a` is the acceptance rate, `k` the lookahead (draft tokens per verify step).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from models import estimate, speculative

from ..resolved import Resolved
from ..figures import tokens
from .registry import Returns, Topic

topic = Topic("speculative")


@topic.term(depends=(), returns=Returns("count", "expected tokens per verify pass"))
def E(a, k):
    """Expected tokens per verify step, E(a, k) = (1 - a^(k+1)) / (1 - a)."""
    return speculative.expected_tokens(a, k)


@lru_cache(maxsize=4096)
def _breakeven(acc, target, draft, cards: int, context: float, precision, a: bytes, k: bytes, shape: tuple,
               eff=None) -> np.ndarray:
    """The bisection, once per setting: a page asks for the same one under many scenarios that
    differ only in fields it does not read (the table's rows name their context outright)."""
    a, k = (np.frombuffer(x, dtype=float).reshape(shape) for x in (a, k))
    out = np.asarray(speculative.breakeven_batch(acc, target, draft, cards, a, k, context,
                                                 precision=precision, eff=eff))
    out.setflags(write=False)
    return out


PRICED = ("floor", "estimate")


def _first_slower(scenario: Resolved, a, k, context, weights=None, priced: str = "floor"):
    """The bisection's answer, each pass priced at its floor or at the estimate fitted on published
    measurements (models.estimate)."""
    if priced not in PRICED:
        raise ValueError(f"priced is 'floor' or 'estimate', not {priced!r}")
    scenario = scenario.in_formats(weights)
    a, k = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(k, dtype=float))
    eff = estimate.fitted().eff if priced == "estimate" else None
    return _breakeven(scenario.acc, scenario.target, scenario.draft, scenario.cards,
                      float(scenario.context_or(context)), scenario.precision, a.tobytes(), k.tobytes(), a.shape, eff)


@topic.term(depends=("scenario",), returns=Returns("ratio", "speedup over plain decoding"))
def speedup(scenario: Resolved, a, k, batch=1, context=None, weights=None, on=None):
    """The speedup with every pass at its roofline floor, the draft split over the cards (or on `on`)."""
    return priced_speedup(scenario, a, k, batch, context, weights, on, eff=None)


def priced_speedup(scenario: Resolved, a, k, batch, context, weights, on, eff):
    """The one call behind `speedup` (floors) and `speedup_estimate` (eff, models.estimate)."""
    scenario = scenario.in_formats(weights)
    return speculative.speedup(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, a, k,
                               scenario.context_or(context), scenario.precision, eff, on)


@topic.term(depends=("scenario",), returns=Returns("time", "time of one verify pass"))
def verify(scenario: Resolved, k, batch=1):
    """Seconds for the verify pass alone: k + 1 positions a request, one read of each cache."""
    return speculative.verify_step_s(scenario.acc, scenario.target, scenario.cards, batch, k, scenario.context,
                                     scenario.precision)


@topic.term(depends=(), returns=Returns("ratio", "accepted share of drafted tokens"))
def drafted_share(a, k):
    """Accepted over drafted tokens, counted up to each step's first rejection (vLLM's rate)."""
    return speculative.drafted_share(a, k)


@topic.term(depends=(), returns=Returns("count", "mean acceptance length"))
def tau(a, k):
    """The mean acceptance length EAGLE and SGLang report: E(a, k), the target's token included."""
    return speculative.acceptance_length(a, k)


@topic.term(depends=(), returns=Returns("ratio", "per-token acceptance rate"))
def a_from_share(share, k):
    """The per-token acceptance that gives an accepted-over-drafted `share` at lookahead k."""
    return speculative.per_token_acceptance("drafted_share", share, k)


@topic.term(depends=(), returns=Returns("ratio", "per-token acceptance rate"))
def a_from_tau(length, k):
    """The per-token acceptance that gives a mean acceptance length `length` at lookahead k."""
    return speculative.per_token_acceptance("acceptance_length", length, k)


@topic.term(depends=(), returns=Returns("count", "tokens in the timeline figure"))
def timeline_tokens() -> int:
    """Tokens the token-timeline figure draws."""
    return tokens.N_TOKENS


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch that fits in memory"))
def memory_cap(scenario: Resolved, context=None, weights=None):
    """Requests that fit at once with the draft loaded beside the target, each holding `context`
    tokens (the scenario's by default) in both caches: the largest batch that can run."""
    return scenario.in_formats(weights).memory_cap(with_draft=True, context=context)


@topic.term(depends=("scenario",), returns=Returns("count", "first batch at which speculation is slower"))
def stops_paying_at(scenario: Resolved, a, k, context=None, weights=None):
    """The first batch at which speculation is slower than plain decoding among those that fit in
    memory: 1 where even batch one is slower, inf where it pays at every batch that fits."""
    cap = memory_cap(scenario, context, weights)
    first = _first_slower(scenario, a, k, context, weights)
    return np.where((first < 0) | (first > cap), np.inf, np.maximum(first, 1)).astype(float)


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch at which speculation pays"))
def pays_up_to(scenario: Resolved, a, k, context=None, weights=None, priced="floor"):
    """The largest batch at which speculation still pays and the batch fits in memory: the
    memory cap where speculation pays all the way to it, 0 where it never pays. Every pass at its
    floor, or with `priced="estimate"` at the estimate fitted on published measurements."""
    cap = memory_cap(scenario, context, weights)
    first = _first_slower(scenario, a, k, context, weights, priced)
    return np.where((first < 0) | (first > cap), cap, np.maximum(first - 1, 0))
