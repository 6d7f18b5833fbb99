"""The page's scenario itself: its accelerator, its card count, and its target and draft models.

Every term here reads the scenario and says so. `which` picks the model, "target" or "draft".
"""
from __future__ import annotations

import re
from pathlib import Path

from models.catalogue import LLM, Catalogue
from models.precision import ACTIVATION_BYTES
from models.units import BYTES, COUNT, NAMED
from models.yamlsource import SourceMap

from ..derivation import Derivation, Symbol, closed_form, from_catalogue, value
from ..resolved import Resolved, default_scenario
from .registry import TEXT, Returns, Topic

topic = Topic("scenario")
_REPO = Path(__file__).resolve().parents[3]


def model(scenario: Resolved, which: str = "target") -> LLM:
    """The scenario's target or draft (not a term: the terms below take `which` and use it)."""
    return scenario.model(which)


def _card(scenario: Resolved, field: str, words: str, dimension: str, result, shown_field: str | None = None):
    """A value of the scenario's accelerator, read from the catalogue, with the datasheet it names."""
    acc = scenario.acc
    return from_catalogue(f"{words} ({acc.name})", NAMED[dimension], result, f"accelerators.{acc.key}",
                          shown_field or field, acc.source)


def _shape(scenario: Resolved, which: str, field: str, words: str):
    """A number of the target's or draft's shape, read from the catalogue with the config it names."""
    m = model(scenario, which)
    return from_catalogue(f"{words} ({m.name})", NAMED["count"], float(getattr(m, field)), f"models.{m.key}",
                          field, m.source)


def _shape_of(field: str, words: str):
    """The derivation of the term that reads the model's `field` (the six shape terms below)."""
    def derive(scenario: Resolved, which: str = "target"):
        return _shape(scenario, which, field, words)
    return derive


def _derive_cards(scenario: Resolved):
    return value("cards in the scenario", NAMED["count"], scenario.cards,
                 "the page's scenario (its front matter, or the catalogue's defaults: scenario:)")


def _derive_bandwidth(scenario: Resolved):
    return _card(scenario, "bandwidth_tbps", "HBM bandwidth of one card", "bandwidth", scenario.acc.bandwidth)


def _derive_flops(scenario: Resolved):
    fmt = scenario.precision.weights
    field = "fp8_tflops" if fmt.arithmetic == "fp8" and scenario.acc.fp8_tflops else "bf16_tflops"
    return _card(scenario, field, f"dense peak of one card for {fmt.name} weights", "FLOP rate",
                 scenario.acc.peak(fmt))


def _derive_memory(scenario: Resolved):
    return _card(scenario, "memory_gb", "HBM capacity of one card", "bytes", scenario.acc.memory_bytes)


def _derive_name(scenario: Resolved, which: str = "accelerator"):
    said = name(scenario, which)
    if which == "accelerator":
        acc = scenario.acc
        entry, source = f"models/catalogue.yaml: accelerators.{acc.key}, name", acc.source
    elif which in ("weights", "kv"):
        fmt = getattr(scenario.precision, which)
        entry = f"the scenario's {which} format, {fmt.key} (models/precision.py)"
        source = fmt.source
    else:
        m = model(scenario, which)
        entry, source = f"models/catalogue.yaml: models.{m.key}, name (the scenario's {which})", m.source
    words = {"accelerator": "name of the accelerator", "weights": "number format of the block weights",
             "kv": "number format of the KV cache"}.get(which, f"name of the {which} model")
    return Derivation("value", words, said, None, method=entry, sources=(source,))


def _derive_default_context(catalogue: Catalogue):
    raw = catalogue.defaults.get("scenario")
    line = raw.line_of("context") if isinstance(raw, SourceMap) else 1
    return value("site's default context, tokens", NAMED["count"], default_context(catalogue),
                 f"{_relative(catalogue.path)}:{line}: defaults: scenario: context")


def _relative(path) -> str:
    """`path` from the repository's root, as the pages name files."""
    try:
        return Path(path).resolve().relative_to(_REPO).as_posix()
    except ValueError:
        return str(path)


_SIXTEEN = Symbol(float(ACTIVATION_BYTES), BYTES / COUNT, "bytes of a 16-bit weight (the tables stay in 16 bits)")


def _table_words(m: LLM) -> str:
    return ("the tied embedding table, vocab x hidden" if m.tied_embeddings
            else "the embedding table and the output head, vocab x hidden each")


def _derive_weight_bytes(scenario: Resolved, which: str = "target", weights=None):
    """What memory holds: the block weights in their format, the tables in 16 bits (LLM.weight_bytes)."""
    m, fmt = model(scenario, which), scenario.in_formats(weights).precision.weights
    return closed_form(f"weights of {m.name} in memory, {fmt.name}", BYTES,
                       weight_bytes(scenario, which, weights), "(N - T) * w + T * h",
                       (f"{m.name}: {m.source}", f"{fmt.name}: {fmt.source}"),
                       N=Symbol(float(m.params), COUNT, "parameters"),
                       T=Symbol(float(m.table_params), COUNT, _table_words(m)),
                       w=Symbol(fmt.bytes, BYTES / COUNT, f"bytes of a {fmt.name} block weight"),
                       h=_SIXTEEN)


def _read_symbols(m: LLM, precision) -> tuple[str, str, dict]:
    """(what memory holds but a step does not read, what it reads of the blocks, their symbols):
    the pieces of LLM.read_bytes for one token, in the terms of `_derive_weight_bytes`."""
    sym = dict(w=Symbol(precision.weights.bytes, BYTES / COUNT, f"bytes of a {precision.weights.name} block weight"),
               h=_SIXTEEN)
    unread, blocks = [], "(N - T"
    if m.experts:
        sym.update(X=Symbol(float(m.expert_params), COUNT, "expert weights, all layers"),
                   k=Symbol(float(m.active_experts), COUNT, "experts a token is routed to"),
                   e=Symbol(float(m.experts), COUNT, "experts a layer"))
        unread.append("X * (1 - k / e) * w")
        blocks += " - X * (1 - k / e)"
    if not m.tied_embeddings:
        sym.update(V=Symbol(float(m.vocab), COUNT, "embedding rows (the vocabulary)"),
                   d=Symbol(float(m.hidden), COUNT, "weights a row (the hidden size)"))
        unread.insert(0, "(V - 1) * d * h")
    return " + ".join(unread), blocks + ") * w", sym


def _derive_read_bytes(scenario: Resolved, which: str = "target"):
    """The weights one decode step reads for one token (LLM.read_bytes): the blocks' (in a mixture,
    the experts the token is routed to), the head, and an untied embedding's one row."""
    m, fmt = model(scenario, which), scenario.precision.weights
    _, blocks, pieces = _read_symbols(m, scenario.precision)
    sym = dict(N=Symbol(float(m.params), COUNT, "parameters"), T=Symbol(float(m.table_params), COUNT, _table_words(m)),
               **pieces, H=Symbol(float(m.head_params), COUNT, "output head, vocab x hidden"))
    formula = blocks + " + H * h" + ("" if m.tied_embeddings else " + d * h")
    return closed_form(f"weight bytes one decode step of {m.name} reads, {fmt.name}", BYTES,
                       read_bytes(scenario, which), formula,
                       (f"{m.name}: {m.source}", f"{fmt.name}: {fmt.source}"),
                       **{k: v for k, v in sym.items() if re.search(rf"\b{k}\b", formula)})


def _derive_embedding_bytes(scenario: Resolved, which: str = "target"):
    """Memory's weights less a step's reads: the rows of an untied embedding no token looks up
    (and, in a mixture, the experts the token's router passes by)."""
    m = model(scenario, which)
    held = embedding_bytes(scenario, which)
    formula, _, sym = _read_symbols(m, scenario.precision)
    quantity = f"weight bytes of {m.name} held but not read by a decode step"
    if not formula:
        return value(quantity, BYTES, held, f"{m.name}: tie_word_embeddings, so its output head is the embedding "
                     f"table, read whole every step: nothing is held unread ({m.source})")
    return closed_form(quantity, BYTES, held, formula, (f"{m.name}: {m.source}",),
                       **{k: v for k, v in sym.items() if re.search(rf"\b{k}\b", formula)})


@topic.term(depends=("scenario",), returns=Returns(TEXT, "name of the accelerator, model or number format"),
            derive=_derive_name)
def name(scenario: Resolved, which: str = "accelerator") -> str:
    """The accelerator's name, the target's or draft's, or the number format of the weights or
    of the KV cache: name('target'), name('weights'), name('kv')."""
    if which == "accelerator":
        return scenario.acc.name
    if which in ("weights", "kv"):
        return getattr(scenario.precision, which).name
    return model(scenario, which).name


@topic.term(depends=("catalogue",), returns=Returns("count", "site's default context, tokens"),
            derive=_derive_default_context)
def default_context(catalogue: Catalogue) -> float:
    """The site's default context in tokens (the catalogue's `defaults: scenario:`)."""
    return float(default_scenario(catalogue).context)


@topic.term(depends=("scenario",), returns=Returns("count", "cards in the scenario"),
            derive=_derive_cards)
def cards(scenario: Resolved) -> int:
    return scenario.cards


@topic.term(depends=("scenario",), returns=Returns("bandwidth", "HBM bandwidth of one card"),
            derive=_derive_bandwidth)
def bandwidth(scenario: Resolved) -> float:
    """One card's HBM bandwidth, bytes per second."""
    return scenario.acc.bandwidth


@topic.term(depends=("scenario",), returns=Returns("FLOP rate", "peak dense FLOP/s of one card"),
            derive=_derive_flops)
def flops(scenario: Resolved) -> float:
    """One card's dense FLOP/s at the peak the weights' format runs at (BF16, or FP8 where both
    the weights and the card have it)."""
    return scenario.acc.peak(scenario.precision.weights)


@topic.term(depends=("scenario",), returns=Returns("bytes", "HBM capacity of one card"),
            derive=_derive_memory)
def memory(scenario: Resolved) -> float:
    """One card's HBM, bytes."""
    return scenario.acc.memory_bytes


@topic.term(depends=("scenario",), returns=Returns("count", "parameters of the model"),
            derive=_shape_of("params", "parameters"))
def params(scenario: Resolved, which: str = "target") -> float:
    return model(scenario, which).params


@topic.term(depends=("scenario",), returns=Returns("bytes", "weights of the model in memory"),
            derive=_derive_weight_bytes)
def weight_bytes(scenario: Resolved, which: str = "target", weights=None) -> float:
    """The model's weights as memory holds them, in the scenario's format (or `weights`), bytes."""
    return model(scenario, which).weight_bytes(scenario.in_formats(weights).precision)


@topic.term(depends=("scenario",), returns=Returns("bytes", "weight bytes one decode step reads"),
            derive=_derive_read_bytes)
def read_bytes(scenario: Resolved, which: str = "target") -> float:
    """The weight bytes one decode step reads for one token (models.catalogue.LLM.read_bytes)."""
    return model(scenario, which).read_bytes(1, scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("bytes", "embedding bytes held but not read"),
            derive=_derive_embedding_bytes)
def embedding_bytes(scenario: Resolved, which: str = "target") -> float:
    """What memory holds of the weights but a decode step does not read: the untied input
    embedding's rows that no token looks up."""
    m = model(scenario, which)
    return m.weight_bytes(scenario.precision) - m.read_bytes(1, scenario.precision)


# The model's shape, from the catalogue: layers(), kv_heads('draft'), ...

@topic.term(depends=("scenario",), returns=Returns("count", "layers of the model"),
            derive=_shape_of("layers", "layers"))
def layers(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).layers)


@topic.term(depends=("scenario",), returns=Returns("count", "query heads of the model"),
            derive=_shape_of("heads", "query heads"))
def heads(scenario: Resolved, which: str = "target") -> float:
    """Query heads."""
    return float(model(scenario, which).heads)


@topic.term(depends=("scenario",), returns=Returns("count", "key/value heads of the model"),
            derive=_shape_of("kv_heads", "key/value heads"))
def kv_heads(scenario: Resolved, which: str = "target") -> float:
    """Key/value heads: fewer than query heads under grouped-query attention."""
    return float(model(scenario, which).kv_heads)


@topic.term(depends=("scenario",), returns=Returns("count", "dimensions of one attention head"),
            derive=_shape_of("head_dim", "dimensions of one head"))
def head_dim(scenario: Resolved, which: str = "target") -> float:
    return float(model(scenario, which).head_dim)
