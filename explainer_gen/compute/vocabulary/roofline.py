"""The roofline: step time of one forward pass, and where arithmetic overtakes the reads.

`tokens` is the number of requests in a decode pass, each computing one position over the
scenario's context (its KV cache), unless `context` says otherwise.
"""
from __future__ import annotations

import numpy as np

from models.catalogue import Catalogue
from models.precision import WEIGHT_FORMATS
from models import roofline

from ..resolved import Resolved
from .registry import Returns, Topic

topic = Topic("roofline")


def _pass(scenario: Resolved, tokens, which: str = "target", context=None, weights=None, on=None):
    """A decode pass of `tokens` requests at the scenario's context (or `context`), with the
    weights in the scenario's format (or `weights`), on the scenario's cards (or `on` of them)."""
    return scenario.in_formats(weights).forward(tokens, context, which=which, on=on)


@topic.term(depends=("scenario",), returns=Returns("time", "time of one decode pass, at its floor"))
def step(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """Seconds for a decode pass over `tokens` requests, its roofline floor: step(1), step(1, 'draft'),
    step(8, 'target', 0), step(1, weights='int4'), step(1, 'draft', on=1) (the draft whole on one card)."""
    return _pass(scenario, tokens, which, context, weights, on).seconds


@topic.term(depends=("scenario",), returns=Returns("time", "arithmetic time of one decode pass"))
def compute_time(scenario: Resolved, tokens=1, which: str = "target", context=None, logits=None):
    """The arithmetic alone of that pass (attention included), seconds; `logits` positions through
    the output head (default: every position, as in decode; 0 for a prompt position that makes no token)."""
    return scenario.forward(tokens, context, which=which, logits=logits).compute_s


@topic.term(depends=("scenario",), returns=Returns("time", "weight-read time of one decode pass"))
def weights_time(scenario: Resolved, tokens=1, which: str = "target"):
    """The weight read alone of that pass, seconds."""
    return _pass(scenario, tokens, which).weights_s


@topic.term(depends=("scenario",), returns=Returns("time", "KV-cache read time of one decode pass"))
def kv_time(scenario: Resolved, tokens=1, which: str = "target", context=None):
    """The KV-cache read alone of that pass, seconds."""
    return _pass(scenario, tokens, which, context).kv_s


@topic.term(depends=("scenario",), returns=Returns("time", "communication time of one decode pass"))
def comm_time(scenario: Resolved, tokens=1, which: str = "target"):
    """Seconds that pass spends in all-reduces and the logits gather across the cards (0 on one card)."""
    return _pass(scenario, tokens, which).comm_s


@topic.term(depends=("scenario",), returns=Returns("ratio", "share of peak FLOP/s one decode pass uses"))
def util(scenario: Resolved, tokens=1, which: str = "target", context=None):
    """Share of peak FLOP/s the pass uses."""
    return _pass(scenario, tokens, which, context).utilisation


@topic.term(depends=("scenario",), returns=Returns("intensity", "arithmetic intensity of one decode pass"))
def intensity(scenario: Resolved, tokens=1, context=None):
    """FLOP per byte the target's decode pass reads (weights and cache)."""
    return _pass(scenario, tokens, "target", context).intensity


@topic.term(depends=("scenario",), returns=Returns("rate", "tokens per second of plain decoding"))
def tps(scenario: Resolved, batch=1, context=None):
    """Tokens per second of plain decoding at `batch` requests."""
    return np.asarray(batch, dtype=float) / _pass(scenario, batch, "target", context).seconds


@topic.term(depends=("scenario",), returns=Returns("count", "tokens in each request's KV cache"))
def context(scenario: Resolved) -> float:
    """Tokens each request holds in its KV cache, the scenario's context."""
    return float(scenario.context)


@topic.term(depends=("scenario",), returns=Returns("count", "all-reduces in one forward pass"))
def allreduces(scenario: Resolved, which: str = "target") -> int:
    """All-reduces in one tensor-parallel forward pass: two a layer and the embedding's one."""
    return roofline.allreduces(scenario.model(which))


@topic.term(depends=("scenario",), returns=Returns("time", "fixed cost of one all-reduce", scale=1e-6))
def allreduce_us(scenario: Resolved) -> float:
    """The assumed fixed cost of one all-reduce on the scenario's accelerator, microseconds."""
    return scenario.acc.allreduce_us


@topic.term(depends=("scenario",), returns=Returns("time", "end of the all-reduce cost's range", scale=1e-6))
def allreduce_range_us(scenario: Resolved, end: str = "low") -> float:
    """An end ("low" or "high") of the range the catalogue declares that cost may lie in,
    microseconds: what the libraries measured, and what every choice of words is checked across."""
    if end not in ("low", "high"):
        raise ValueError(f"allreduce_range_us takes 'low' or 'high', not {end!r}")
    return scenario.acc.allreduce_range_us[0 if end == "low" else 1]


@topic.term(depends=("scenario",),


             returns=Returns("bandwidth", "one-way bandwidth from a card to its peers", scale=1e9))
def peer_gbps(scenario: Resolved) -> float:
    """The rate one card of the scenario sends to the other cards of its group, GB/s one way: all
    its links behind a switch, the links to its group's cards on a full mesh."""
    return scenario.acc.peer_bandwidth(max(scenario.cards, 2)) / 1e9


@topic.term(depends=("scenario",), returns=Returns("count", "mesh links of one card"))
def mesh_links(scenario: Resolved) -> int:
    """Point-to-point links a card of the scenario has when its cards form a full mesh with no
    switch (the MI300X: 7); 0 behind a switch."""
    return scenario.acc.mesh_links or 0


@topic.term(depends=("scenario",), returns=Returns("intensity", "ridge of the scenario's accelerator"))
def ridge(scenario: Resolved) -> float:
    """The scenario's accelerator's ridge, FLOP per byte, at the peak its weights' format runs at."""
    return scenario.ridge


@topic.term(depends=("catalogue",), returns=Returns("intensity", "ridge of an accelerator"))
def ridge_of(catalogue: Catalogue, accelerator: str, weights: str = "bf16") -> float:
    """Any catalogue accelerator's ridge, by key, not just the scenario's, for products with weights
    in `weights`: ridge_of("h200"), ridge_of("h100-sxm", "fp8")."""
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"unknown weight format {weights!r}; one of {', '.join(WEIGHT_FORMATS)}")
    try:
        acc = catalogue.accelerator(accelerator)
    except KeyError as exc:  # UnknownKey: fail at the page's line, with the valid keys
        raise ValueError(str(exc)) from None
    return acc.peak(WEIGHT_FORMATS[weights]) / acc.bandwidth


@topic.term(depends=("scenario",), returns=Returns("bytes", "bytes of one block weight"))
def weight_value_bytes(scenario: Resolved, weights=None) -> float:
    """Bytes a block weight takes in the scenario's format, or in `weights` (INT4 counts its group scales)."""
    return scenario.in_formats(weights).precision.weights.bytes


@topic.term(depends=("scenario",), returns=Returns("count", "positions per pass at the GEMMs' ridge"))
def ridge_tokens(scenario: Resolved, which: str = "target", weights=None):
    """Positions per pass at which the weight GEMMs take as long in arithmetic as in reads (the
    GEMMs' ridge, models.roofline.ridge_tokens); the same at every context."""
    return scenario.in_formats(weights).ridge_tokens(which)


@topic.term(depends=("scenario",), returns=Returns("count", "smallest compute-bound decode batch"))
def compute_bound_batch(scenario: Resolved, weights=None):
    """The smallest whole decode batch whose weight GEMMs are compute-bound: the first past the ridge."""
    return np.floor(scenario.in_formats(weights).ridge_tokens()) + 1


KERNELS = {"gemm": "gemm_s", "head": "head_s", "lookup": "lookup_s", "attention": "attention_s", "comm": "comm_s"}


@topic.term(depends=("scenario",), returns=Returns("time", "time of one kernel class in a decode pass"))
def kernel_time(scenario: Resolved, kernel: str, tokens=1, which: str = "target", context=None):
    """Seconds one kernel class takes in a decode pass of `tokens` requests, at its own roofline:
    kernel_time('gemm') (the block GEMMs), 'head', 'lookup' (embedding rows), 'attention', 'comm'."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; one of {', '.join(KERNELS)}")
    return getattr(_pass(scenario, tokens, which, context), KERNELS[kernel])


@topic.term(depends=("scenario",), returns=Returns("time", "time of one prefill pass, at its floor"))
def prefill_time(scenario: Resolved, prompt):
    """Seconds for the pass that prefills a `prompt`-token prompt (models.prefill.prefill_step)."""
    return scenario.prefill(prompt).seconds


@topic.term(depends=("scenario",), returns=Returns("ratio", "share of peak FLOP/s one prefill pass uses"))
def prefill_util(scenario: Resolved, prompt):
    """Share of peak FLOP/s that prefill pass uses."""
    return scenario.prefill(prompt).utilisation


@topic.term(depends=("scenario",), returns=Returns("intensity", "arithmetic intensity of one prefill pass"))
def prefill_intensity(scenario: Resolved, prompt):
    """FLOP per byte that prefill pass reads."""
    return scenario.prefill(prompt).intensity
