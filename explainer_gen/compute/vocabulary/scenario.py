"""The page's scenario itself: its accelerator, its card count, and its target and draft models.

Every term here reads the scenario and says so. `which` picks the model, "target" or "draft".
"""
from __future__ import annotations

from models.catalogue import LLM, Catalogue

from ..resolved import Resolved, default_scenario
from .registry import TEXT, Returns, Topic

topic = Topic("scenario")


def model(scenario: Resolved, which: str = "target") -> LLM:
    """The scenario's target or draft (not a term: the terms below take `which` and use it)."""
    return scenario.model(which)


@topic.term(depends=("scenario",), returns=Returns(TEXT, "name of the accelerator, model or number format"))
def name(scenario: Resolved, which: str = "accelerator") -> str:
    """The accelerator's name, the target's or draft's, or the number format of the weights or
    of the KV cache: name('target'), name('weights'), name('kv')."""
    if which == "accelerator":
        return scenario.acc.name
    if which in ("weights", "kv"):
        return getattr(scenario.precision, which).name
    return model(scenario, which).name


@topic.term(depends=("catalogue",), returns=Returns("count", "site's default context, tokens"))
def default_context(catalogue: Catalogue) -> float:
    """The site's default context in tokens (the catalogue's `defaults: scenario:`)."""
    return float(default_scenario(catalogue).context)


@topic.term(depends=("scenario",), returns=Returns("count", "cards in the scenario"))
def cards(scenario: Resolved) -> int:
    return scenario.cards


@topic.term(depends=("scenario",), returns=Returns("bandwidth", "HBM bandwidth of one card"))
def bandwidth(scenario: Resolved) -> float:
    """One card's HBM bandwidth, bytes per second."""
    return scenario.acc.bandwidth


@topic.term(depends=("scenario",), returns=Returns("FLOP rate", "peak dense FLOP/s of one card"))
def flops(scenario: Resolved) -> float:
    """One card's dense FLOP/s at the peak the weights' format runs at (BF16, or FP8 where both
    the weights and the card have it)."""
    return scenario.acc.peak(scenario.precision.weights)


@topic.term(depends=("scenario",), returns=Returns("bytes", "HBM capacity of one card"))
def memory(scenario: Resolved) -> float:
    """One card's HBM, bytes."""
    return scenario.acc.memory_bytes


@topic.term(depends=("scenario",), returns=Returns("count", "parameters of the model"))
def params(scenario: Resolved, which: str = "target") -> float:
    return model(scenario, which).params


@topic.term(depends=("scenario",), returns=Returns("bytes", "weights of the model in memory"))
def weight_bytes(scenario: Resolved, which: str = "target", weights=None) -> float:
    """The model's weights as memory holds them, in the scenario's format (or `weights`), bytes."""
    return model(scenario, which).weight_bytes(scenario.in_formats(weights).precision)


@topic.term(depends=("scenario",), returns=Returns("bytes", "weight bytes one decode step reads"))
def read_bytes(scenario: Resolved, which: str = "target") -> float:
    """The weight bytes one decode step reads for one token (models.catalogue.LLM.read_bytes)."""
    return model(scenario, which).read_bytes(1, scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("bytes", "embedding bytes held but not read"))
def embedding_bytes(scenario: Resolved, which: str = "target") -> float:
    """What memory holds of the weights but a decode step does not read: the untied input
    embedding's rows that no token looks up."""
    m = model(scenario, which)
    return m.weight_bytes(scenario.precision) - m.read_bytes(1, scenario.precision)


# The model's shape, from the catalogue: layers(), kv_heads('draft'), ...

@topic.term(depends=("scenario",), returns=Returns("count", "layers of the model"))
def layers(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).layers)


@topic.term(depends=("scenario",), returns=Returns("count", "hidden size of the model"))
def hidden(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).hidden)


@topic.term(depends=("scenario",), returns=Returns("count", "query heads of the model"))
def heads(scenario: Resolved, which: str = "target") -> float:
    """Query heads."""
    return float(model(scenario, which).heads)


@topic.term(depends=("scenario",), returns=Returns("count", "key/value heads of the model"))
def kv_heads(scenario: Resolved, which: str = "target") -> float:
    """Key/value heads: fewer than query heads under grouped-query attention."""
    return float(model(scenario, which).kv_heads)


@topic.term(depends=("scenario",), returns=Returns("count", "dimensions of one attention head"))
def head_dim(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).head_dim)
