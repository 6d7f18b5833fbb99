"""The roofline: step time of one forward pass, and where arithmetic overtakes the weight read.

`tokens` is the number of tokens in the pass (the batch when decoding, the prompt in prefill).
"""
from __future__ import annotations

import numpy as np

from models.catalogue import Catalogue
from models.roofline import ridge_tokens as _ridge_tokens, step_time

from ...sources.controls import Resolved
from .registry import Topic
from .scenario import model

topic = Topic("roofline")


@topic.term(depends=("scenario",))
def step(scenario: Resolved, tokens=1, which: str = "target"):
    """Seconds for one pass of `tokens` tokens on the scenario's cards: step(1), step(1, 'draft')."""
    return step_time(scenario.acc, model(scenario, which), scenario.cards, tokens).seconds


@topic.term(depends=("scenario",))
def compute_time(scenario: Resolved, tokens=1, which: str = "target"):
    """The arithmetic alone of that pass, seconds."""
    return step_time(scenario.acc, model(scenario, which), scenario.cards, tokens).compute_s


@topic.term(depends=("scenario",))
def util(scenario: Resolved, tokens=1, which: str = "target"):
    """Share of peak FLOP/s the pass uses."""
    return step_time(scenario.acc, model(scenario, which), scenario.cards, tokens).utilisation


@topic.term(depends=("scenario",))
def intensity(scenario: Resolved, tokens=1):
    """FLOP per byte of the target's weights read."""
    return step_time(scenario.acc, scenario.target, scenario.cards, tokens).intensity


@topic.term(depends=("scenario",))
def tps(scenario: Resolved, batch=1):
    """Tokens per second of plain decoding at `batch` requests."""
    return np.asarray(batch, dtype=float) / step_time(scenario.acc, scenario.target, scenario.cards, batch).seconds


@topic.term(depends=("scenario",))
def ridge(scenario: Resolved) -> float:
    """The scenario's accelerator's ridge, FLOP per byte."""
    return scenario.acc.ridge


@topic.term(depends=("catalogue",))
def ridge_of(catalogue: Catalogue, accelerator: str) -> float:
    """Any catalogue accelerator's ridge, by key, not just the scenario's: ridge_of("h200")."""
    try:
        return catalogue.accelerator(accelerator).ridge
    except KeyError as exc:  # UnknownKey: fail at the page's line, with the valid keys
        raise ValueError(str(exc)) from None


@topic.term(depends=("scenario",))
def ridge_tokens(scenario: Resolved, which: str = "target") -> float:
    """Tokens per pass at which the arithmetic takes as long as the weight read."""
    return _ridge_tokens(scenario.acc, model(scenario, which))


@topic.term(depends=("scenario",))
def compute_bound_batch(scenario: Resolved):
    """The smallest whole batch whose arithmetic outlasts the weight read."""
    return np.floor(_ridge_tokens(scenario.acc, scenario.target)) + 1
