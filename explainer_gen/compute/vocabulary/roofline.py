"""The roofline: step time of one forward pass, and where arithmetic overtakes the reads.

`tokens` is the number of requests in a decode pass, each computing one position over the
scenario's context (its KV cache), unless `context` says otherwise.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import replace

import numpy as np

from models.catalogue import Catalogue
from models.precision import WEIGHT_FORMATS
from models import estimate as fitted_estimate, roofline
from models.units import BYTES, COUNT, FLOP, RATIO, TIME

from ..derivation import Derivation, FormsDiffer, Symbol, closed_form, each, peak_words, from_catalogue, search, value
from ..resolved import Resolved
from .registry import Returns, Topic

topic = Topic("roofline")


def _pass(scenario: Resolved, tokens, which: str = "target", context=None, weights=None, on=None):
    """A decode pass of `tokens` requests at the scenario's context (or `context`), with the
    weights in the scenario's format (or `weights`), on the scenario's cards (or `on` of them)."""
    return scenario.in_formats(weights).forward(tokens, context, which=which, on=on)


# What a pass carries, in words, for a decode pass (`_derive_steptime` takes others: a prefill's).
_CARRIED = {"t": "positions in the pass (one per request)", "c": "cached tokens read",
            "a": "cached tokens attended to", "l": "positions through the output head"}

_PARTS = {"seconds": "time of one decode pass, at its floor", "weights_s": "time to read the weights",
          "kv_s": "time to read the KV cache", "compute_s": "time of the pass's arithmetic at peak",
          "comm_s": "time in collectives across the cards", "gemm_s": "time of the block GEMMs in one decode pass",
          "head_s": "time of the output head in one decode pass",
          "lookup_s": "time of the embedding lookups in one decode pass",
          "attention_s": "time of attention in one decode pass", "intensity": "arithmetic intensity of one decode pass",
          "utilisation": "share of peak FLOP/s one decode pass uses", "estimate": "time of one decode pass, estimated"}

FITTED = "the estimate's terms, fitted on the training measurements of models/measurements.yaml (models.estimate)"


def _value(x):
    """A number, or over a grid of passes (Term.derives_arrays) an array of them."""
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _alike(held, what: str) -> bool:
    """Whether `held` holds, where over a grid of passes it must hold for all or for none: the
    closed form is written once for all of them."""
    held = np.asarray(held)
    if held.all():
        return True
    if not held.any():
        return False
    raise FormsDiffer(f"{what}: some passes of the grid have them and some not; derive them one at a time")


def _derive_steptime(r: Resolved, st: roofline.StepTime, which: str = "target", on=None, part: str = "seconds",
                     eff: roofline.Efficiency | None = None, quantity: str | None = None,
                     carried: dict[str, str] | None = None) -> Derivation:
    """`pass_form` for a pass of `r`'s `which` model on its cards, or on `on` of them."""
    return pass_form(r.acc, r.model(which), r.cards if on is None else on, r.precision, st, part, eff, quantity, carried)


def pass_form(acc, model, cards: float, precision, st: roofline.StepTime, part: str = "seconds",
              eff: roofline.Efficiency | None = None, quantity: str | None = None,
              carried: dict[str, str] | None = None) -> Derivation:
    """A priced pass `st` (models.roofline.StepTime, of `model` on `cards` of `acc` in `precision`)
    as a closed form over what it reads and computes, from the same kernel pieces
    `roofline.pass_time` prices it by (models.roofline.Kernels.times): each kernel the longer of
    its reads at the cards' bandwidth and its arithmetic at their peak, one after another, then
    the collectives. Any pass: a decode pass, a verify pass, a prefill. The one home of this
    closed form: the pages' step times and the measurements' floors and estimates are all it.

    `part` picks the whole pass ("seconds"), one kernel class ("gemm_s", "head_s", "lookup_s",
    "attention_s", "comm_s"), its reads of the weights or of the cache or its arithmetic alone
    ("weights_s", "kv_s", "compute_s"), its FLOP per byte read ("intensity"), its share of the
    peak ("utilisation"), or with `eff` (models.estimate's fitted Efficiency) the estimate of the
    pass ("estimate": every kernel below its roofline, plus the fixed costs). `carried`: the words
    for what the pass carries (t, c, a, l) where they are not a decode pass's. The fitted terms'
    symbols (eb, eg, e16, K, P, N, Y, el, S) are named apart from what a formula built on this one
    may name (a batch b, steps s)."""
    k = st.pieces
    t, c, a, lg = (_value(x) for x in st.carried)  # arrays, over a grid of passes (Term.derives_arrays)
    has_head, has_cache = _alike(lg > 0, "positions through the head"), _alike(c > 0, "cached tokens")
    n = float(cards)
    bw, peak, f16 = acc.bandwidth, acc.peak(precision.weights), acc.flops
    said = {**_CARRIED, **(carried or {})}
    sym = {
        "n": Symbol(n, COUNT, "cards"), "B": Symbol(bw, BYTES / TIME, f"HBM bandwidth of one {acc.name}"),
        "F": Symbol(peak, FLOP / TIME, peak_words(acc, precision.weights)),
        "F16": Symbol(f16, FLOP / TIME, "16-bit peak of one card"),
        "t": Symbol(t, COUNT, said["t"]),
        "Wd": Symbol(k.dense_read * n * bw, BYTES, "block weights read"),
        "Ad": Symbol(k.dense_position * n * peak, FLOP, "block arithmetic per position"),
        "Wh": Symbol(k.head_read * n * bw, BYTES, "output head read"),
        "Ah": Symbol(k.head_logit * n * f16, FLOP, "output head arithmetic per position"),
        "l": Symbol(lg, COUNT, said["l"]),
        "Le": Symbol(k.lookup_position * n * bw, BYTES, "embedding row looked up per position"),
        "Kc": Symbol(k.kv_cached * n * bw, BYTES / COUNT, "KV cache per cached token"),
        "c": Symbol(c, COUNT, said["c"]),
        "Aa": Symbol(k.attention_attended * n * f16, FLOP / COUNT, "attention arithmetic per attended token"),
        "a": Symbol(a, COUNT, said["a"]),
    }
    # The rates each kernel runs at: the datasheet's (the floor), or the fitted shares of them.
    estimated = part == "estimate"
    if estimated and eff is None:
        raise ValueError("an estimate's derivation needs the fitted terms (eff)")
    if estimated:
        blocks = k.block_arithmetic
        sym.update(eb=Symbol(eff.bandwidth, RATIO, "share of the HBM bandwidth a kernel's reads attain (fitted)"),
                   eg=Symbol(eff.compute(blocks), RATIO,
                             f"share of the {blocks.upper()} peak the block GEMMs attain (fitted)"),
                   e16=Symbol(eff.bf16, RATIO, "share of the 16-bit peak the head and attention attain (fitted)"))
        rb, rf, r16 = "(n * B * eb)", "(n * F * eg)", "(n * F16 * e16)"
        if eff.overlap == math.inf:
            join = "max({}, {})".format
        else:
            sym["K"] = Symbol(eff.overlap, RATIO, "how a kernel's reads and arithmetic overlap: (r^K + a^K)^(1/K), "
                                                  "1 none, infinite entirely (fitted)")
            join = "(({}) ** K + ({}) ** K) ** (1 / K)".format
    else:
        rb, rf, r16, join = "(n * B)", "(n * F)", "(n * F16)", "max({}, {})".format
    gemm = join(f"Wd / {rb}", f"Ad * t / {rf}")
    if k.expert_read:
        sym["We"] = Symbol(k.expert_read * k.reach(t) * n * bw, BYTES, "expert weights the positions reach")
        sym["Ae"] = Symbol(k.expert_position * n * peak, FLOP, "routed expert arithmetic per position")
        gemm += " + " + join(f"We / {rb}", f"Ae * t / {rf}")
    head = join(f"Wh / {rb}", f"Ah * l / {r16}") if has_head else ""
    lookup = f"Le * t / {rb}"
    # A pass that reads no cache (a prefill: its keys and values are made in the pass) has
    # attention's arithmetic alone.
    attention = join(f"Kc * c / {rb}", f"Aa * a / {r16}") if has_cache else f"Aa * a / {r16}"
    comm = ""
    if n > 1:
        group = max(n, 2.0)
        rate = float(acc.peer_bandwidth(group))
        link = "L"
        if estimated:
            sym["el"] = Symbol(eff.link, RATIO, "share of the peer rate the collectives' bytes attain (fitted)")
            link = "(L * el)"
        sym.update(R=Symbol(float(roofline.allreduces(model)), COUNT, "all-reduces in the pass"),
                   tau=Symbol(acc.allreduce_latency, TIME, "fixed cost of one collective (assumed)"),
                   M=Symbol(k.comm_position * rate / roofline.allreduces(model), BYTES, "bytes each card sends per all-reduce per position"),
                   L=Symbol(rate, BYTES / TIME, "one-way rate from a card to its group"),
                   G=Symbol(k.gather_logit * rate, BYTES, "logit bytes gathered per position"))
        comm = f"R * (tau + M * t / {link})" + (f" + tau + G * l / {link}" if has_head else "")
    whole = " + ".join(x for x in (gemm, head, lookup, attention, comm) if x)
    flops = ("(Ad + Ae) * t" if k.expert_read else "Ad * t") + (" + Ah * l" if has_head else "") + " + Aa * a"
    read = ("Wd" + (" + We" if k.expert_read else "") + (" + Wh" if has_head else "") + " + Le * t"
            + (" + Kc * c" if has_cache else ""))
    parts: tuple[Derivation, ...] = ()
    if part == "utilisation":
        floor = pass_form(acc, model, cards, precision, st, "seconds", quantity="time of that pass, at its floor",
                          carried=carried)
        sym["T"] = Symbol(_value(st.seconds), TIME, "time of the pass, at its floor (below)")
        parts = (floor,)
    if estimated:
        edge = fitted_estimate.fitted().at_limit  # the terms the data pushed to the edge of their range
        limit = " (fitted, pushed to the edge of its range: near 0)"
        sym.update(P=Symbol(eff.pass_s, TIME, "fixed cost of a pass" + (limit if "pass_s" in edge else " (fitted)")),
                   N=Symbol(float(k.layers), COUNT, "layers"),
                   Y=Symbol(eff.layer_s, TIME, "fixed cost of a layer, each pass"
                            + (limit if "layer_s" in edge else " (fitted)")))
        whole = f"{whole} + P + N * Y"
        if eff.scale != 1.0:
            sym["S"] = Symbol(eff.scale, RATIO, "factor on the estimate across its band: every time priced this many times")
            whole = f"({whole}) * S"
    terms = {"seconds": whole, "estimate": whole,
             "weights_s": f"({read.replace(' + Kc * c', '')}) / (n * B)",
             "kv_s": "Kc * c / (n * B)",
             "compute_s": "((Ad" + (" + Ae" if k.expert_read else "") + ") * t) / (n * F)"
                          + (" + Ah * l / (n * F16)" if has_head else "") + " + Aa * a / (n * F16)",
             "comm_s": comm or "0", "gemm_s": gemm, "head_s": head or "0", "lookup_s": lookup,
             "attention_s": attention, "intensity": f"({flops}) / ({read})", "utilisation": f"({flops}) / (n * F * T)"}
    dims = {"intensity": FLOP / BYTES, "utilisation": RATIO}
    result = st.at(eff) if estimated else getattr(st, part)
    formula = terms[part]
    used = _names_in(formula, tuple(sym))
    sources = ([acc.source] + ([acc.allreduce_source] if "tau" in used else [])
               + ([acc.link_source] if "L" in used else []) + [f"{model.name}: {model.source}"]
               + ([FITTED] if estimated else []))
    named = quantity if isinstance(quantity, np.ndarray) or quantity else _PARTS[part]  # words at each pass, or one
    d = closed_form(named, dims.get(part, TIME), _value(result), formula, tuple(sources),
                    **{name: s for name, s in sym.items() if name in used})
    return replace(d, parts=parts) if parts else d


@functools.lru_cache(maxsize=None)
def _names_in(formula: str, names: tuple[str, ...]) -> set[str]:
    """Those of `names` that `formula` uses (a pass's formulas are few, made at state after state)."""
    return {name for name in names if re.search(rf"\b{name}\b", formula)}


def _derive_pass(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None,
                 part: str = "seconds", logits=None, eff: roofline.Efficiency | None = None) -> Derivation:
    """A decode pass of `tokens` requests (`_pass`'s) as `_derive_steptime` derives it: its time at
    its floor, or `part` of it (`eff`: its estimate)."""
    r = scenario.in_formats(weights)
    st = r.forward(tokens, context, which=which, on=on, logits=logits)
    return _derive_steptime(r, st, which, on, part, eff)


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


def _derive_util(scenario: Resolved, tokens=1, which: str = "target", context=None):
    return _derive_pass(scenario, tokens, which, context, part="utilisation")


def _derive_intensity(scenario: Resolved, tokens=1, context=None):
    return _derive_pass(scenario, tokens, "target", context, part="intensity")


def _derive_tps(scenario: Resolved, batch=1, context=None):
    """Requests over the pass's time: each request makes one token a pass."""
    st = _pass(scenario, batch, "target", context)
    b = float(np.asarray(batch, dtype=float))
    d = closed_form(f"tokens per second of plain decoding at batch {b:,.0f}", COUNT / TIME,
                    float(np.asarray(b / st.seconds)), "b / T",
                    ("models/roofline.py: one token per request each pass",),
                    b=Symbol(b, COUNT, "requests in the batch, one token each per pass"),
                    T=Symbol(float(np.asarray(st.seconds)), TIME, "time of one decode pass, at its floor (below)"))
    return replace(d, parts=(_derive_pass(scenario, batch, "target", context),))


def _derive_context(scenario: Resolved):
    return value("tokens in each request's KV cache", COUNT, scenario.context,
                 "the page's scenario (its front matter, or the catalogue's defaults: scenario:)")


def _derive_allreduces(scenario: Resolved, which: str = "target"):
    m = scenario.model(which)
    return closed_form(f"all-reduces in one forward pass of {m.name}", COUNT, roofline.allreduces(m), "p * N + e",
                       ("models/roofline.py: ALLREDUCES_PER_LAYER (Megatron-LM, Shoeybi et al. 2019: one after "
                        "attention, one after the MLP) and EMBEDDING_ALLREDUCES (the vocabulary-split input "
                        "embedding sums its rows: vLLM's VocabParallelEmbedding)", f"{m.name}: {m.source}"),
                       p=Symbol(roofline.ALLREDUCES_PER_LAYER, COUNT, "all-reduces a layer"),
                       N=Symbol(m.layers, COUNT, "layers"),
                       e=Symbol(roofline.EMBEDDING_ALLREDUCES, COUNT, "the embedding's all-reduce"))


def _derive_allreduce_us(scenario: Resolved):
    acc = scenario.acc
    return from_catalogue(f"fixed cost of one all-reduce ({acc.name}, assumed)", TIME, acc.allreduce_latency,
                          f"accelerators.{acc.key}", "allreduce_us", acc.allreduce_source)


def _derive_allreduce_range_us(scenario: Resolved, end: str = "low"):
    value_us = allreduce_range_us(scenario, end)  # its check of `end`, and its value
    acc = scenario.acc
    return from_catalogue(f"{end} end of the all-reduce cost's range ({acc.name})", TIME, value_us * 1e-6,
                          f"accelerators.{acc.key}", f"allreduce_range_us ({end} end)", acc.allreduce_source)


def _derive_peer_gbps(scenario: Resolved):
    acc = scenario.acc
    group = max(scenario.cards, 2)
    rate = float(acc.peer_bandwidth(group))
    if acc.topology != "mesh":
        return from_catalogue(f"one-way bandwidth from a card to its peers ({acc.name}, behind a switch: all its "
                              f"links)", BYTES / TIME, rate, f"accelerators.{acc.key}", "link_gbps", acc.link_source)
    return closed_form(f"one-way bandwidth from a card to its peers ({acc.name}, a full mesh)", BYTES / TIME, rate,
                       "min(N - 1, m) * K / m", (acc.link_source,),
                       N=Symbol(float(group), COUNT, "cards in the group"),
                       m=Symbol(float(acc.mesh_links), COUNT, "point-to-point links of one card"),
                       K=Symbol(acc.link_gbps * 1e9, BYTES / TIME, "all the card's links together, one way"))


def _derive_mesh_links(scenario: Resolved):
    acc = scenario.acc
    if acc.topology == "mesh":
        return from_catalogue(f"mesh links of one card ({acc.name})", COUNT, acc.mesh_links,
                              f"accelerators.{acc.key}", "mesh_links", acc.link_source)
    return from_catalogue(f"mesh links of one card ({acc.name}: none, its links go to a switch)", COUNT, 0,
                          f"accelerators.{acc.key}", "topology: switch (no mesh_links)", acc.link_source)


def _ridge_form(acc, fmt, quantity: str) -> Derivation:
    peak = acc.peak(fmt)
    return closed_form(quantity, FLOP / BYTES, peak / acc.bandwidth, "F / B", (acc.source,),
                       F=Symbol(peak, FLOP / TIME, peak_words(acc, fmt)),
                       B=Symbol(acc.bandwidth, BYTES / TIME, f"HBM bandwidth of one {acc.name}"))


def _derive_ridge(scenario: Resolved):
    fmt = scenario.precision.weights
    return _ridge_form(scenario.acc, fmt, f"ridge of the {scenario.acc.name}, {fmt.name} weights")


def _derive_ridge_of(catalogue: Catalogue, accelerator: str, weights: str = "bf16"):
    ridge_of(catalogue, accelerator, weights)  # its checks of the arguments
    acc = catalogue.accelerator(accelerator)
    fmt = WEIGHT_FORMATS[weights]
    return _ridge_form(acc, fmt, f"ridge of the {acc.name}, {fmt.name} weights")


def _derive_weight_value_bytes(scenario: Resolved, weights=None):
    fmt = scenario.in_formats(weights).precision.weights
    return closed_form(f"bytes of one {fmt.name} block weight", BYTES, fmt.bytes, "bits / 8",
                       (f"{fmt.name}: {fmt.source} (models/precision.py)",),
                       bits=Symbol(fmt.bits, COUNT, "bits a stored weight takes, scales and zero points included"))


def _ridge_tokens_form(r: Resolved, which: str) -> Derivation:
    """The GEMMs' ridge from the pieces `roofline.ridge_tokens` divides, on one card: a class's
    weights over its arithmetic per position, times the card's peak over its bandwidth."""
    acc, model = r.acc, r.model(which)
    k = roofline.Kernels.of(acc, model, 1, r.precision)
    bw, peak = acc.bandwidth, acc.peak(r.precision.weights)
    sym = dict(Wd=Symbol(k.dense_read * bw, BYTES, "block weights read"),
               Ad=Symbol(k.dense_position * peak, FLOP, "block arithmetic per position"),
               F=Symbol(peak, FLOP / TIME, peak_words(acc, r.precision.weights)),
               B=Symbol(bw, BYTES / TIME, f"HBM bandwidth of one {acc.name}"))
    formula = "Wd / Ad * (F / B)"
    if k.expert_read:
        sym.update(We=Symbol(k.expert_read * bw, BYTES, "every expert's weights"),
                   Ae=Symbol(k.expert_position * peak, FLOP, "routed expert arithmetic per position"))
        formula = "max(Wd / Ad * (F / B), We / Ae * (F / B))"
    return closed_form(f"positions per pass at the block GEMMs' ridge ({model.name}, {r.precision.weights.name})",
                       COUNT, float(np.asarray(r.ridge_tokens(which))), formula,
                       (acc.source, f"{model.name}: {model.source}"), **sym)


def _derive_ridge_tokens(scenario: Resolved, which: str = "target", weights=None):
    return _ridge_tokens_form(scenario.in_formats(weights), which)


def _derive_compute_bound_batch(scenario: Resolved, weights=None):
    r = scenario.in_formats(weights)
    ridge_t = float(np.asarray(r.ridge_tokens()))
    first = float(compute_bound_batch(scenario, weights))
    k = roofline.Kernels.of(r.acc, r.target, r.cards, r.precision)

    def share(batch: float) -> str:
        """The block GEMMs' arithmetic over their reads at `batch`, each class as the ridge prices it."""
        ratios = [k.dense_position * batch / k.dense_read]
        if k.expert_read:
            ratios.append(k.expert_position * batch / k.expert_read)
        return f"{min(ratios):.4f}x"
    method = (f"the first whole batch past the block GEMMs' ridge of {ridge_t:,.2f} positions (below): "
              f"at batch {first - 1:,.0f} their arithmetic takes {share(first - 1)} their read time (memory-bound), "
              f"at {first:,.0f} {share(first)} (compute-bound)")
    d = search(f"smallest compute-bound decode batch ({r.target.name}, {r.precision.weights.name})", COUNT, first,
               method)
    return replace(d, parts=(_ridge_tokens_form(r, "target"),))


def _derive_kernel_time(scenario: Resolved, kernel: str, tokens=1, which: str = "target", context=None):
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; one of {', '.join(KERNELS)}")
    return _derive_pass(scenario, tokens, which, context, part=KERNELS[kernel])


# What a prefill pass carries (models.prefill.prefill_step), in words.
_PREFILL = {"t": "prompt tokens, each a position of the pass",
            "a": "earlier prompt tokens attended to in all (t x t / 2 under the causal mask)",
            "c": "cached tokens read (none: the prompt's keys and values are made in the pass)",
            "l": "positions through the output head (the last alone makes a token)"}


def _derive_prefill(scenario: Resolved, prompt, part: str, words: str) -> Derivation:
    """The prefill pass (models.prefill.prefill_step) as `_derive_steptime` derives any pass."""
    return _derive_steptime(scenario, scenario.prefill(prompt), "target", None, part,
                            quantity=each(lambda p: words.format(p=f"{p:,.0f}"), prompt), carried=_PREFILL)


def _derive_prefill_time(scenario: Resolved, prompt):
    return _derive_prefill(scenario, prompt, "seconds", "time of the prefill pass of a {p}-token prompt, at its floor")


def _derive_prefill_util(scenario: Resolved, prompt):
    return _derive_prefill(scenario, prompt, "utilisation",
                           "share of peak FLOP/s the prefill pass of a {p}-token prompt uses")


def _derive_prefill_intensity(scenario: Resolved, prompt):
    return _derive_prefill(scenario, prompt, "intensity",
                           "arithmetic intensity of the prefill pass of a {p}-token prompt")


@topic.term(depends=("scenario",), returns=Returns("time", "time of one decode pass, at its floor"),
            derive=_derive_step, derives_arrays=True)
def step(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """Seconds for a decode pass over `tokens` requests, its roofline floor: step(1), step(1, 'draft'),
    step(8, 'target', 0), step(1, weights='int4'), step(1, 'draft', on=1) (the draft whole on one card)."""
    return _pass(scenario, tokens, which, context, weights, on).seconds


@topic.term(depends=("scenario",), returns=Returns("time", "arithmetic time of one decode pass"),
            derive=_derive_compute, derives_arrays=True)
def compute_time(scenario: Resolved, tokens=1, which: str = "target", context=None, logits=None):
    """The arithmetic alone of that pass (attention included), seconds; `logits` positions through
    the output head (default: every position, as in decode; 0 for a prompt position that makes no token)."""
    return scenario.forward(tokens, context, which=which, logits=logits).compute_s


@topic.term(depends=("scenario",), returns=Returns("time", "weight-read time of one decode pass"),
            derive=_derive_weights, derives_arrays=True)
def weights_time(scenario: Resolved, tokens=1, which: str = "target"):
    """The weight read alone of that pass, seconds."""
    return _pass(scenario, tokens, which).weights_s


@topic.term(depends=("scenario",), returns=Returns("time", "KV-cache read time of one decode pass"),
            derive=_derive_kv, derives_arrays=True)
def kv_time(scenario: Resolved, tokens=1, which: str = "target", context=None):
    """The KV-cache read alone of that pass, seconds."""
    return _pass(scenario, tokens, which, context).kv_s


@topic.term(depends=("scenario",), returns=Returns("time", "communication time of one decode pass"),
            derive=_derive_comm, derives_arrays=True)
def comm_time(scenario: Resolved, tokens=1, which: str = "target"):
    """Seconds that pass spends in all-reduces and the logits gather across the cards (0 on one card)."""
    return _pass(scenario, tokens, which).comm_s


@topic.term(depends=("scenario",), returns=Returns("ratio", "share of peak FLOP/s one decode pass uses"),
            derive=_derive_util, derives_arrays=True)
def util(scenario: Resolved, tokens=1, which: str = "target", context=None):
    """Share of peak FLOP/s the pass uses."""
    return _pass(scenario, tokens, which, context).utilisation


@topic.term(depends=("scenario",), returns=Returns("intensity", "arithmetic intensity of one decode pass"),
            derive=_derive_intensity, derives_arrays=True)
def intensity(scenario: Resolved, tokens=1, context=None):
    """FLOP per byte the target's decode pass reads (weights and cache)."""
    return _pass(scenario, tokens, "target", context).intensity


@topic.term(depends=("scenario",), returns=Returns("rate", "tokens per second of plain decoding"),
            derive=_derive_tps)
def tps(scenario: Resolved, batch=1, context=None):
    """Tokens per second of plain decoding at `batch` requests."""
    return np.asarray(batch, dtype=float) / _pass(scenario, batch, "target", context).seconds


@topic.term(depends=("scenario",), returns=Returns("count", "tokens in each request's KV cache"),
            derive=_derive_context)
def context(scenario: Resolved) -> float:
    """Tokens each request holds in its KV cache, the scenario's context."""
    return float(scenario.context)


@topic.term(depends=("scenario",), returns=Returns("count", "all-reduces in one forward pass"),
            derive=_derive_allreduces)
def allreduces(scenario: Resolved, which: str = "target") -> int:
    """All-reduces in one tensor-parallel forward pass: two a layer and the embedding's one."""
    return roofline.allreduces(scenario.model(which))


@topic.term(depends=("scenario",), returns=Returns("time", "fixed cost of one all-reduce", scale=1e-6),
            derive=_derive_allreduce_us)
def allreduce_us(scenario: Resolved) -> float:
    """The assumed fixed cost of one all-reduce on the scenario's accelerator, microseconds."""
    return scenario.acc.allreduce_us


@topic.term(depends=("scenario",), returns=Returns("time", "end of the all-reduce cost's range", scale=1e-6),
            derive=_derive_allreduce_range_us)
def allreduce_range_us(scenario: Resolved, end: str = "low") -> float:
    """An end ("low" or "high") of the range the catalogue declares that cost may lie in,
    microseconds: what the libraries measured, and what every choice of words is checked across."""
    if end not in ("low", "high"):
        raise ValueError(f"allreduce_range_us takes 'low' or 'high', not {end!r}")
    return scenario.acc.allreduce_range_us[0 if end == "low" else 1]


@topic.term(depends=("scenario",),
            returns=Returns("bandwidth", "one-way bandwidth from a card to its peers", scale=1e9),
            derive=_derive_peer_gbps)
def peer_gbps(scenario: Resolved) -> float:
    """The rate one card of the scenario sends to the other cards of its group, GB/s one way: all
    its links behind a switch, the links to its group's cards on a full mesh."""
    return scenario.acc.peer_bandwidth(max(scenario.cards, 2)) / 1e9


@topic.term(depends=("scenario",), returns=Returns("count", "mesh links of one card"),
            derive=_derive_mesh_links)
def mesh_links(scenario: Resolved) -> int:
    """Point-to-point links a card of the scenario has when its cards form a full mesh with no
    switch (the MI300X: 7); 0 behind a switch."""
    return scenario.acc.mesh_links or 0


@topic.term(depends=("scenario",), returns=Returns("intensity", "ridge of the scenario's accelerator"),
            derive=_derive_ridge)
def ridge(scenario: Resolved) -> float:
    """The scenario's accelerator's ridge, FLOP per byte, at the peak its weights' format runs at."""
    return scenario.ridge


@topic.term(depends=("catalogue",), returns=Returns("intensity", "ridge of an accelerator"),
            derive=_derive_ridge_of)
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


@topic.term(depends=("scenario",), returns=Returns("bytes", "bytes of one block weight"),
            derive=_derive_weight_value_bytes)
def weight_value_bytes(scenario: Resolved, weights=None) -> float:
    """Bytes a block weight takes in the scenario's format, or in `weights` (INT4 counts its group scales)."""
    return scenario.in_formats(weights).precision.weights.bytes


def _derive_weight_intensity(scenario: Resolved, weights=None):
    fmt = scenario.in_formats(weights).precision.weights
    return replace(closed_form(
        f"FLOP per byte of {fmt.name} block weights read, for each position of a pass", FLOP / BYTES,
        roofline.FLOP_PER_WEIGHT / fmt.bytes, "f / w", (f"{fmt.name}: {fmt.source} (models/precision.py)",),
        f=Symbol(roofline.FLOP_PER_WEIGHT, FLOP / COUNT, "FLOP of one weight for one position: a multiply and an add"),
        w=Symbol(fmt.bytes, BYTES / COUNT, "bytes of one stored weight (below)")),
        parts=(_derive_weight_value_bytes(scenario, weights),))


@topic.term(depends=("scenario",), returns=Returns("intensity", "FLOP per byte of block weights read, per position"),
            derive=_derive_weight_intensity)
def weight_intensity(scenario: Resolved, weights=None) -> float:
    """The arithmetic a pass does for each byte of block weights it reads, per position: a multiply
    and an add per weight, over the bytes a weight takes in the scenario's format (or `weights`)."""
    return roofline.FLOP_PER_WEIGHT / scenario.in_formats(weights).precision.weights.bytes


@topic.term(depends=("scenario",), returns=Returns("count", "positions per pass at the GEMMs' ridge"),
            derive=_derive_ridge_tokens)
def ridge_tokens(scenario: Resolved, which: str = "target", weights=None):
    """Positions per pass at which the weight GEMMs take as long in arithmetic as in reads (the
    GEMMs' ridge, models.roofline.ridge_tokens); the same at every context."""
    return scenario.in_formats(weights).ridge_tokens(which)


@topic.term(depends=("scenario",), returns=Returns("count", "smallest compute-bound decode batch"),
            derive=_derive_compute_bound_batch)
def compute_bound_batch(scenario: Resolved, weights=None):
    """The smallest whole decode batch whose weight GEMMs are compute-bound: the first past the ridge."""
    return np.floor(scenario.in_formats(weights).ridge_tokens()) + 1


KERNELS = {"gemm": "gemm_s", "head": "head_s", "lookup": "lookup_s", "attention": "attention_s", "comm": "comm_s"}


@topic.term(depends=("scenario",), returns=Returns("time", "time of one kernel class in a decode pass"),
            derive=_derive_kernel_time)
def kernel_time(scenario: Resolved, kernel: str, tokens=1, which: str = "target", context=None):
    """Seconds one kernel class takes in a decode pass of `tokens` requests, at its own roofline:
    kernel_time('gemm') (the block GEMMs), 'head', 'lookup' (embedding rows), 'attention', 'comm'."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; one of {', '.join(KERNELS)}")
    return getattr(_pass(scenario, tokens, which, context), KERNELS[kernel])


@topic.term(depends=("scenario",), returns=Returns("time", "time of one prefill pass, at its floor"),
            derive=_derive_prefill_time, derives_arrays=True)
def prefill_time(scenario: Resolved, prompt):
    """Seconds for the pass that prefills a `prompt`-token prompt (models.prefill.prefill_step)."""
    return scenario.prefill(prompt).seconds


@topic.term(depends=("scenario",), returns=Returns("ratio", "share of peak FLOP/s one prefill pass uses"),
            derive=_derive_prefill_util, derives_arrays=True)
def prefill_util(scenario: Resolved, prompt):
    """Share of peak FLOP/s that prefill pass uses."""
    return scenario.prefill(prompt).utilisation


@topic.term(depends=("scenario",), returns=Returns("intensity", "arithmetic intensity of one prefill pass"),
            derive=_derive_prefill_intensity, derives_arrays=True)
def prefill_intensity(scenario: Resolved, prompt):
    """FLOP per byte that prefill pass reads."""
    return scenario.prefill(prompt).intensity
