"""KV-cache memory: what one token of context costs, and how many requests fit at once.

Every request being decoded keeps the keys and values of all its earlier tokens in HBM. Once
the weights are loaded, what is left of the cards' memory (less a reserve for activations and
the runtime) is divided among requests; that count of concurrent requests, the slots, caps the
batch whatever the compute could do. A speculative draft model loads its own weights and keeps
its own cache for every request, so it is paid for from the same memory. Weights and cache take
the bytes of their formats (`models.precision`); a draft is stored in the same formats as its target.
"""
from __future__ import annotations

import numpy as np

from .catalogue import LLM, Accelerator
from .precision import ACTIVATION_BYTES, BF16_ALL, Precision

# Share of HBM held back from the cache for activations, workspace and the runtime. A tenth is a
# round, common setting for serving engines; the pages state it, and every function takes it.
RESERVE = 0.10


def bytes_per_token(model: LLM, bytes_per_value: float = ACTIVATION_BYTES) -> float:
    """K and V, for every layer and every KV head: 2 x layers x KV heads x head dim x bytes.

    The site's one formula for this quantity: the pages' `kv_bytes()` and every function here use it.
    """
    return 2.0 * model.layers * model.kv_heads * model.head_dim * bytes_per_value


def cache_budget(acc: Accelerator, target: LLM, cards, draft: LLM | None = None,
                 reserve: float = RESERVE, precision: Precision = BF16_ALL):
    """Bytes left for KV cache on `cards` cards: memory, less the reserve, less the weights.

    Negative where the weights alone do not fit; callers clamp where a count is wanted.
    """
    cards = np.asarray(cards, dtype=float)
    weights = target.weight_bytes(precision) + (draft.weight_bytes(precision) if draft else 0.0)
    return cards * acc.memory_bytes * (1.0 - reserve) - weights


def cache_bytes_per_token(target: LLM, draft: LLM | None = None,
                          bytes_per_value: float = ACTIVATION_BYTES) -> float:
    """Cache bytes one token of context holds: the target's, plus the draft's when it runs too."""
    return bytes_per_token(target, bytes_per_value) + (bytes_per_token(draft, bytes_per_value) if draft else 0.0)


def slots(acc: Accelerator, target: LLM, cards, context, draft: LLM | None = None,
          reserve: float = RESERVE, precision: Precision = BF16_ALL):
    """Requests that fit at once, each holding `context` tokens of cache (0 if nothing fits).

    Every request is charged its full context up front, as a server that must never run out
    mid-generation would; paging (see the page) lets a real server overcommit a little.
    """
    context = np.asarray(context, dtype=float)
    budget = cache_budget(acc, target, cards, draft, reserve, precision)
    per_request = cache_bytes_per_token(target, draft, precision.kv.bytes) * context
    with np.errstate(divide="ignore"):  # no context: as many requests as you like, if the weights fit
        return np.maximum(np.floor(budget / per_request), 0.0)


def draft_cost(acc: Accelerator, target: LLM, draft: LLM, cards, context,
               reserve: float = RESERVE, precision: Precision = BF16_ALL):
    """Slots lost by running `draft` beside `target`: its weights and its own cache."""
    return (slots(acc, target, cards, context, None, reserve, precision)
            - slots(acc, target, cards, context, draft, reserve, precision))


def tensor_parallel(model: LLM, cards: int) -> bool:
    """Whether `model` splits evenly over `cards` cards: every card must get whole attention
    heads and whole KV heads (Megatron-style tensor parallelism splits both)."""
    return cards >= 1 and model.heads % cards == 0 and model.kv_heads % cards == 0


def tensor_parallel_sizes(*models: LLM) -> list[int]:
    """Card counts every one of `models` splits over: the common divisors of their head counts."""
    limit = min(min(m.heads, m.kv_heads) for m in models)
    return [n for n in range(1, limit + 1) if all(tensor_parallel(m, n) for m in models)]


def fits(acc: Accelerator, target: LLM, cards, context, draft: LLM | None = None,
         reserve: float = RESERVE, precision: Precision = BF16_ALL):
    """Whether the weights (the draft's too) and one request of `context` tokens of cache fit in
    `cards` cards' memory less the reserve: the least a configuration needs to run at all."""
    return slots(acc, target, cards, context, draft, reserve, precision) >= 1


def min_cards(acc: Accelerator, target: LLM, context, draft: LLM | None = None,
              reserve: float = RESERVE, precision: Precision = BF16_ALL):
    """The fewest cards, among the tensor-parallel sizes both models split over, on which one
    request of `context` tokens fits; 0 where even the largest size is too small."""
    context = np.asarray(context, dtype=float)
    out = np.zeros(context.shape)
    for n in reversed(tensor_parallel_sizes(target, *([draft] if draft else []))):
        out = np.where(fits(acc, target, n, context, draft, reserve, precision), n, out)
    return out if out.ndim else float(out)
