"""KV-cache memory: bytes per token of context, and how many requests the cards hold at once.

`context` is tokens per request, `n` a card count (the scenario's by default), and `draft=1`
charges a speculative draft's weights and cache as well. Bytes per token come from one formula,
models.kvcache.bytes_per_token.
"""
from __future__ import annotations

import dataclasses

from models import kvcache
from models.catalogue import LLM
from models.precision import NumberFormat
from models.units import BYTES, COUNT, RATIO

from ..derivation import Derivation, Symbol, closed_form, search, show, value
from ..resolved import Resolved
from .registry import Returns, Topic
from .scenario import model

topic = Topic("kv")


def _draft(scenario: Resolved, draft):
    return scenario.draft if draft else None


# -- how each number is made (compute/derivation.py): closed forms over the catalogue's shapes and
# memory, in the functions of models.kvcache ------------------------------------------------------

_RESERVE = "models/kvcache.py: RESERVE, assumed: a round, common setting for serving engines"


def _per_token(m: LLM, fmt: NumberFormat) -> Derivation:
    """Cache bytes per token of `m`: 2 (K and V) x layers x KV heads x head dim x bytes per value
    (models.kvcache.bytes_per_token)."""
    return closed_form(f"cache bytes per token of context ({m.name}, {fmt.name} cache)", BYTES / COUNT,
                       kvcache.bytes_per_token(m, fmt.bytes), "2 * Ly * h * dh * v",
                       (f"{m.name}: {m.source}", f"{fmt.name}: {fmt.source}"),
                       Ly=Symbol(float(m.layers), COUNT, "layers"),
                       h=Symbol(float(m.kv_heads), COUNT, "key/value heads"),
                       dh=Symbol(float(m.head_dim), COUNT, "dimensions of one head"),
                       v=Symbol(fmt.bytes, BYTES, f"bytes per cached value ({fmt.name})"))


def _memory(scenario: Resolved, n, draft: LLM | None, precision) -> tuple[str, dict[str, Symbol], tuple[str, ...]]:
    """Bytes left for cache as models.kvcache.cache_budget has them: the cards' memory less the
    reserve, less the weights (the draft's too): its formula, symbols and sources."""
    acc, target = scenario.acc, scenario.target
    sym = {"n": Symbol(float(n), COUNT, "cards"), "M": Symbol(acc.memory_bytes, BYTES, f"HBM of one {acc.name}"),
           "r": Symbol(kvcache.RESERVE, RATIO, "share held back for activations and the runtime (assumed)"),
           "W": Symbol(target.weight_bytes(precision), BYTES,
                       f"weights of {target.name} in memory ({precision.weights.name})")}
    sources = (acc.source, f"{target.name}: {target.source}", _RESERVE)
    if draft is None:
        return "n * M * (1 - r) - W", sym, sources
    sym["Wd"] = Symbol(draft.weight_bytes(precision), BYTES,
                       f"weights of the draft, {draft.name} ({precision.weights.name})")
    return "n * M * (1 - r) - (W + Wd)", sym, (*sources, f"{draft.name}: {draft.source}")


def _slots_form(scenario: Resolved, context, n, draft: LLM | None, precision) -> tuple[str, dict, tuple, tuple]:
    """Requests that fit as models.kvcache.slots counts them, floor(budget / bytes per request), none
    below 0: its formula, symbols, sources and the parts (bytes per token) it is built on."""
    budget, sym, sources = _memory(scenario, n, draft, precision)
    fmt = precision.kv
    per = [_per_token(scenario.target, fmt)]
    sym["b"] = Symbol(per[0].result, BYTES / COUNT, f"cache bytes per token of {scenario.target.name}")
    tokens = "b"
    if draft is not None:
        per.append(_per_token(draft, fmt))
        sym["bd"] = Symbol(per[1].result, BYTES / COUNT, f"cache bytes per token of the draft, {draft.name}")
        tokens = "(b + bd)"
    sym["c"] = Symbol(float(context), COUNT, "tokens of context each request holds")
    return f"max(({budget}) // ({tokens} * c), 0)", sym, sources, tuple(per)


def _derive_bytes(scenario: Resolved, which: str = "target", kv=None):
    return _per_token(model(scenario, which), scenario.in_formats(kv=kv).precision.kv)


def _derive_value_bytes(scenario: Resolved):
    fmt = scenario.precision.kv
    return value(f"bytes per cached value ({fmt.name}: {fmt.bits:g} bits)", BYTES, fmt.bytes,
                 f"the scenario's cache format, models/precision.py: {fmt.key}: {fmt.source}")


def _derive_budget(scenario: Resolved, n=None, draft=0):
    n = scenario.cards if n is None else n
    formula, sym, sources = _memory(scenario, n, _draft(scenario, draft), scenario.precision)
    result = float(kv_budget(scenario, n, draft))
    return closed_form(f"memory left for the KV cache on {float(n):g} × {scenario.acc.name}"
                       + (" beside the draft" if draft else ""), BYTES, result, formula, sources, **sym)


def _derive_slots(scenario: Resolved, context, n=None, draft=0, kv=None):
    n = scenario.cards if n is None else n
    result = float(kv_slots(scenario, context, n, draft, kv))
    quantity = (f"requests of {float(context):,.0f} tokens that fit at once on {float(n):g} × {scenario.acc.name}"
                + (" beside the draft" if draft else ""))
    if not float(context) > 0:
        return value(quantity, COUNT, result, "models/kvcache.py: slots; with no context a request holds no cache, "
                                              "so memory caps nothing once the weights fit")
    formula, sym, sources, parts = _slots_form(scenario, context, n, _draft(scenario, draft),
                                               scenario.in_formats(kv=kv).precision)
    return dataclasses.replace(closed_form(quantity, COUNT, result, formula, sources, **sym), parts=parts)


def _derive_draft_slots(scenario: Resolved, context, n=None):
    n = scenario.cards if n is None else n
    result = float(draft_slots(scenario, context, n))
    quantity = f"slots the draft, {scenario.draft.name}, costs at {float(context):,.0f} tokens of context"
    if not float(context) > 0:
        return value(quantity, COUNT, result, "models/kvcache.py: draft_cost; with no context no request holds cache")
    alone, sym, sources, parts = _slots_form(scenario, context, n, None, scenario.precision)
    beside, more, more_sources, more_parts = _slots_form(scenario, context, n, scenario.draft, scenario.precision)
    sym.update(more)
    return dataclasses.replace(closed_form(quantity, COUNT, result, f"{alone} - {beside}",
                                           tuple(dict.fromkeys((*sources, *more_sources))), **sym),
                               parts=more_parts)


def _derive_min_cards(scenario: Resolved, context, draft=0):
    result = float(kv_min_cards(scenario, context, draft))
    d = _draft(scenario, draft)
    acc, target, precision = scenario.acc, scenario.target, scenario.precision
    sizes = kvcache.tensor_parallel_sizes(target, *([d] if d else []))

    def held(n: int) -> str:
        budget = float(kvcache.cache_budget(acc, target, n, d, precision=precision))
        count = float(kvcache.slots(acc, target, n, context, d, precision=precision))
        cards = f"{n} card{'s' if n > 1 else ''}"
        if budget < 0:
            return f"{cards} fall{'s' if n == 1 else ''} {show(-budget, BYTES)} short of holding the weights alone"
        each = show(kvcache.cache_bytes_per_token(target, d, precision.kv.bytes) * float(context), BYTES)
        return (f"{cards} leave {show(budget, BYTES)} for the cache, room for {count:,.0f} "
                f"request{'' if count == 1 else 's'} of {each} each")
    pair = f"{target.name}" + (f" and its draft {d.name}" if d else "")
    if result == 0:
        found = f"none fits: {held(sizes[-1])}, the most"
    else:
        i = sizes.index(int(result))
        found = (f"{held(sizes[i - 1])}; {held(sizes[i])}" if i else f"{held(sizes[0])}, the fewest there are")
    return search(f"fewest cards of {acc.name} that hold one request of {float(context):,.0f} tokens", COUNT, result,
                  f"Scanned over the card counts {pair} split{'' if d else 's'} over evenly "
                  f"({', '.join(map(str, sizes))}"
                  f": whole attention and KV heads on every card), the weights and one request's cache in the "
                  f"memory less the reserve (models.kvcache.min_cards): {found}.",
                  acc.source, f"{target.name}: {target.source}", *([f"{d.name}: {d.source}"] if d else ()), _RESERVE)


def _derive_reserve():
    return value("share of memory held back from the cache", RATIO, kv_reserve(),
                 f"{_RESERVE}; the pages state it, and every function in models/kvcache.py takes it")


@topic.term(depends=("scenario",), returns=Returns("bytes per count", "cache bytes per token of context"),
            derive=_derive_bytes)
def kv_bytes(scenario: Resolved, which: str = "target", kv=None) -> float:
    """Cache bytes one token of context holds in the target (or the draft), in the scenario's
    cache format (or `kv`)."""
    return kvcache.bytes_per_token(model(scenario, which), scenario.in_formats(kv=kv).precision.kv.bytes)


@topic.term(depends=("scenario",), returns=Returns("bytes", "bytes per cached value"),
            derive=_derive_value_bytes)
def kv_value_bytes(scenario: Resolved) -> float:
    """Bytes one cached key or value element takes in the scenario's cache format."""
    return scenario.precision.kv.bytes


@topic.term(depends=("scenario",), returns=Returns("bytes", "memory left for the cache"),
            derive=_derive_budget)
def kv_budget(scenario: Resolved, n=None, draft=0):
    """Bytes left for cache on `n` cards once the weights are in; negative if they do not fit."""
    return kvcache.cache_budget(scenario.acc, scenario.target, scenario.cards if n is None else n,
                                _draft(scenario, draft), precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "requests that fit at once"),
            derive=_derive_slots)
def kv_slots(scenario: Resolved, context, n=None, draft=0, kv=None):
    """Requests of `context` tokens that fit at once on `n` cards, the cache in the scenario's
    format (or `kv`)."""
    return kvcache.slots(scenario.acc, scenario.target, scenario.cards if n is None else n, context,
                         _draft(scenario, draft), precision=scenario.in_formats(kv=kv).precision)


@topic.term(depends=("scenario",), returns=Returns("count", "slots the draft costs"),
            derive=_derive_draft_slots)
def draft_slots(scenario: Resolved, context, n=None):
    """Slots the draft costs: its weights and its own cache."""
    return kvcache.draft_cost(scenario.acc, scenario.target, scenario.draft,
                              scenario.cards if n is None else n, context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "fewest cards that hold one request"),
            derive=_derive_min_cards)
def kv_min_cards(scenario: Resolved, context, draft=0):
    """The fewest cards on which one request of `context` tokens fits."""
    return kvcache.min_cards(scenario.acc, scenario.target, context, _draft(scenario, draft),
                             precision=scenario.precision)


@topic.term(depends=(), returns=Returns("ratio", "share of memory held back"), derive=_derive_reserve)
def kv_reserve() -> float:
    """Share of HBM held back from the cache."""
    return kvcache.RESERVE
