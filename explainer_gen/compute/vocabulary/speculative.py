"""Speculative decoding: tokens per verify step, the speedup, and where batching erases it.

`a` is the acceptance rate, `k` the lookahead (draft tokens per verify step).
"""
from __future__ import annotations

from models import speculative

from ...sources.controls import Resolved
from ..figures import tokens
from .registry import Topic

topic = Topic("speculative")


@topic.term(depends=())
def E(a, k):
    """Expected tokens per verify step, E(a, k) = (1 - a^(k+1)) / (1 - a)."""
    return speculative.expected_tokens(a, k)


@topic.term(depends=("scenario",))
def speedup(scenario: Resolved, a, k, batch=1):
    return speculative.speedup(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, a, k)


@topic.term(depends=("scenario",))
def breakeven(scenario: Resolved, a, k):
    """The batch from which speculation no longer pays."""
    return speculative.breakeven_batch(scenario.acc, scenario.target, scenario.draft, scenario.cards, a, k)


@topic.term(depends=("scenario",))
def spec_step(scenario: Resolved, k, batch=1):
    """Seconds for k draft steps and one verify pass."""
    return speculative.speculative_step_s(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, k)


@topic.term(depends=())
def timeline_tokens() -> int:
    """Tokens the token-timeline figure draws."""
    return tokens.N_TOKENS
