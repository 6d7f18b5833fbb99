"""The page's scenario itself: its accelerator, its card count, and its target and draft models.

Every term here reads the scenario and says so. `which` picks the model, "target" or "draft".
"""
from __future__ import annotations

from models.catalogue import LLM, Catalogue

from ...sources.controls import Resolved, default_scenario
from .registry import Topic

topic = Topic("scenario")


def model(scenario: Resolved, which: str = "target") -> LLM:
    """The scenario's target or draft (not a term: the terms below take `which` and use it)."""
    if which == "target":
        return scenario.target
    if which == "draft":
        return scenario.draft
    raise ValueError(f"model must be 'target' or 'draft', got {which!r}")


@topic.term(depends=("scenario",))
def name(scenario: Resolved, which: str = "accelerator") -> str:
    """The accelerator's name, or the target's or draft's: name('target')."""
    return scenario.acc.name if which == "accelerator" else model(scenario, which).name


@topic.term(depends=("catalogue",))
def default_context(catalogue: Catalogue) -> float:
    """The site's default context in tokens (the catalogue's `defaults: scenario:`)."""
    return float(default_scenario(catalogue).context)


@topic.term(depends=("scenario",))
def cards(scenario: Resolved) -> int:
    return scenario.cards


@topic.term(depends=("scenario",))
def bandwidth(scenario: Resolved) -> float:
    """One card's HBM bandwidth, bytes per second."""
    return scenario.acc.bandwidth


@topic.term(depends=("scenario",))
def flops(scenario: Resolved) -> float:
    """One card's dense BF16 FLOP/s."""
    return scenario.acc.flops


@topic.term(depends=("scenario",))
def memory(scenario: Resolved) -> float:
    """One card's HBM, bytes."""
    return scenario.acc.memory_bytes


@topic.term(depends=("scenario",))
def params(scenario: Resolved, which: str = "target") -> float:
    return model(scenario, which).params


@topic.term(depends=("scenario",))
def weight_bytes(scenario: Resolved, which: str = "target") -> float:
    """The model's weights in bf16 as memory holds them, bytes."""
    return model(scenario, which).weight_bytes()


@topic.term(depends=("scenario",))
def read_bytes(scenario: Resolved, which: str = "target") -> float:
    """The weight bytes one decode step reads for one token (models.catalogue.LLM.read_bytes)."""
    return model(scenario, which).read_bytes()


@topic.term(depends=("scenario",))
def embedding_bytes(scenario: Resolved, which: str = "target") -> float:
    """What memory holds of the weights but a decode step does not read: the untied input
    embedding's rows that no token looks up."""
    m = model(scenario, which)
    return m.weight_bytes() - m.read_bytes()


# The model's shape, from the catalogue: layers(), kv_heads('draft'), ...

@topic.term(depends=("scenario",))
def layers(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).layers)


@topic.term(depends=("scenario",))
def hidden(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).hidden)


@topic.term(depends=("scenario",))
def heads(scenario: Resolved, which: str = "target") -> float:
    """Query heads."""
    return float(model(scenario, which).heads)


@topic.term(depends=("scenario",))
def kv_heads(scenario: Resolved, which: str = "target") -> float:
    """Key/value heads: fewer than query heads under grouped-query attention."""
    return float(model(scenario, which).kv_heads)


@topic.term(depends=("scenario",))
def head_dim(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).head_dim)
