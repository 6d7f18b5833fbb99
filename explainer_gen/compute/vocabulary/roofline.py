"""The roofline: step time of one forward pass, and where arithmetic overtakes the reads.

`tokens` is the number of requests in a decode pass, each computing one position over the
scenario's context (its KV cache), unless `context` says otherwise.
"""
from __future__ import annotations

import re

import numpy as np

from models.catalogue import Catalogue
from models.precision import WEIGHT_FORMATS
from models import roofline
from models.units import BYTES, COUNT, FLOP, TIME

from ..derivation import Derivation, Symbol, closed_form
from ..resolved import Resolved
from .registry import Returns, Topic

topic = Topic("roofline")


def _pass(scenario: Resolved, tokens, which: str = "target", context=None, weights=None, on=None):
    """A decode pass of `tokens` requests at the scenario's context (or `context`), with the
    weights in the scenario's format (or `weights`), on the scenario's cards (or `on` of them)."""
    return scenario.in_formats(weights).forward(tokens, context, which=which, on=on)


def _derive_pass(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None,
                 part: str = "seconds", logits=None) -> Derivation:
    """A decode pass's time at its floor as a closed form over what it reads and computes, from
    the same kernel pieces `roofline.pass_time` prices it by (models.roofline.Kernels.times): each
    kernel the longer of its reads at the cards' bandwidth and its arithmetic at their peak, one
    after another, then the collectives. `part` picks the pass's reads of the weights or of the
    cache, or its arithmetic, alone."""
    r = scenario.in_formats(weights)
    st = r.forward(tokens, context, which=which, on=on, logits=logits)
    k = st.pieces
    t, c, a, lg = (float(np.asarray(x)) for x in st.carried)
    n = float(scenario.cards if on is None else on)
    acc, model = r.acc, r.model(which)
    bw, peak, f16 = acc.bandwidth, acc.peak(r.precision.weights), acc.flops
    sym = {
        "n": Symbol(n, COUNT, "cards"), "B": Symbol(bw, BYTES / TIME, f"HBM bandwidth of one {acc.name}"),
        "F": Symbol(peak, FLOP / TIME, f"peak of one card in the weights' format"),
        "F16": Symbol(f16, FLOP / TIME, "16-bit peak of one card"),
        "t": Symbol(t, COUNT, "positions in the pass (one per request)"),
        "Wd": Symbol(k.dense_read * n * bw, BYTES, "block weights read"),
        "Ad": Symbol(k.dense_position * n * peak, FLOP, "block arithmetic per position"),
        "Wh": Symbol(k.head_read * n * bw, BYTES, "output head read"),
        "Ah": Symbol(k.head_logit * n * f16, FLOP, "output head arithmetic per position"),
        "l": Symbol(lg, COUNT, "positions through the output head"),
        "Le": Symbol(k.lookup_position * n * bw, BYTES, "embedding row looked up per position"),
        "Kc": Symbol(k.kv_cached * n * bw, BYTES / COUNT, "KV cache per cached token"),
        "c": Symbol(c, COUNT, "cached tokens read"),
        "Aa": Symbol(k.attention_attended * n * f16, FLOP / COUNT, "attention arithmetic per attended token"),
        "a": Symbol(a, COUNT, "cached tokens attended to"),
    }
    gemm = "max(Wd / (n * B), Ad * t / (n * F))"
    if k.expert_read:
        sym["We"] = Symbol(k.expert_read * k.reach(t) * n * bw, BYTES, "expert weights the positions reach")
        sym["Ae"] = Symbol(k.expert_position * n * peak, FLOP, "routed expert arithmetic per position")
        gemm += " + max(We / (n * B), Ae * t / (n * F))"
    head = "max(Wh / (n * B), Ah * l / (n * F16))" if lg > 0 else ""
    attention = "max(Kc * c / (n * B), Aa * a / (n * F16))"
    comm = ""
    if n > 1:
        group = max(n, 2.0)
        rate = float(acc.peer_bandwidth(group))
        sym.update(R=Symbol(float(roofline.allreduces(model)), COUNT, "all-reduces in the pass"),
                   tau=Symbol(acc.allreduce_latency, TIME, "fixed cost of one collective (assumed)"),
                   M=Symbol(k.comm_position * rate / roofline.allreduces(model), BYTES, "bytes each card sends per all-reduce per position"),
                   L=Symbol(rate, BYTES / TIME, "one-way rate from a card to its group"),
                   G=Symbol(k.gather_logit * rate, BYTES, "logit bytes gathered per position"))
        comm = "R * (tau + M * t / L)" + (" + tau + G * l / L" if lg > 0 else "")
    terms = {"seconds": " + ".join(x for x in (gemm, head, "Le * t / (n * B)", attention, comm) if x),
             "weights_s": "(Wd" + (" + We" if k.expert_read else "") + (" + Wh" if lg > 0 else "") + " + Le * t) / (n * B)",
             "kv_s": "Kc * c / (n * B)",
             "compute_s": "((Ad" + (" + Ae" if k.expert_read else "") + ") * t) / (n * F)"
                          + (" + Ah * l / (n * F16)" if lg > 0 else "") + " + Aa * a / (n * F16)",
             "comm_s": comm or "0"}
    words = {"seconds": "time of one decode pass, at its floor", "weights_s": "time to read the weights",
             "kv_s": "time to read the KV cache", "compute_s": "time of the pass's arithmetic at peak",
             "comm_s": "time in collectives across the cards"}
    formula = terms[part]
    used = {name for name in sym if re.search(rf"\b{name}\b", formula)}
    sources = [acc.source] + ([acc.allreduce_source] if "tau" in used else []) + [f"{model.name}: {model.source}"]
    return closed_form(words[part], TIME, float(np.asarray(getattr(st, part))), formula, tuple(sources),
                       **{name: s for name, s in sym.items() if name in used})


def _derive_step(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    return _derive_pass(scenario, tokens, which, context, weights, on)


def _derive_compute(scenario: Resolved, tokens=1, which: str = "target", context=None, logits=None):
    return _derive_pass(scenario, tokens, which, context, part="compute_s", logits=logits)


def _derive_weights(scenario: Resolved, tokens=1, which: str = "target"):
    return _derive_pass(scenario, tokens, which, part="weights_s")


def _derive_kv(scenario: Resolved, tokens=1, which: str = "target", context=None):
    return _derive_pass(scenario, tokens, which, context, part="kv_s")


def _derive_comm(scenario: Resolved, tokens=1, which: str = "target"):
    return _derive_pass(scenario, tokens, which, part="comm_s")


@topic.term(depends=("scenario",), returns=Returns("time", "time of one decode pass, at its floor"),
            derive=_derive_step)
def step(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """Seconds for a decode pass over `tokens` requests, its roofline floor: step(1), step(1, 'draft'),
    step(8, 'target', 0), step(1, weights='int4'), step(1, 'draft', on=1) (the draft whole on one card)."""
    return _pass(scenario, tokens, which, context, weights, on).seconds


@topic.term(depends=("scenario",), returns=Returns("time", "arithmetic time of one decode pass"),
            derive=_derive_compute)
def compute_time(scenario: Resolved, tokens=1, which: str = "target", context=None, logits=None):
    """The arithmetic alone of that pass (attention included), seconds; `logits` positions through
    the output head (default: every position, as in decode; 0 for a prompt position that makes no token)."""
    return scenario.forward(tokens, context, which=which, logits=logits).compute_s


@topic.term(depends=("scenario",), returns=Returns("time", "weight-read time of one decode pass"),
            derive=_derive_weights)
def weights_time(scenario: Resolved, tokens=1, which: str = "target"):
    """The weight read alone of that pass, seconds."""
    return _pass(scenario, tokens, which).weights_s


@topic.term(depends=("scenario",), returns=Returns("time", "KV-cache read time of one decode pass"),
            derive=_derive_kv)
def kv_time(scenario: Resolved, tokens=1, which: str = "target", context=None):
    """The KV-cache read alone of that pass, seconds."""
    return _pass(scenario, tokens, which, context).kv_s


@topic.term(depends=("scenario",), returns=Returns("time", "communication time of one decode pass"),
            derive=_derive_comm)
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
