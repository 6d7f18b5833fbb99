"""Prefill against decode, per token, priced by the roofline step time.

A forward pass takes `roofline.step_time`: each kernel the longer of its HBM reads and its
arithmetic, one after another, plus the all-reduces between the cards, from the catalogue's
datasheet numbers.

- Prefill of a P-token prompt is one pass over P positions of one request. The weight read is
  shared among the P positions, so below the ridge (`roofline.ridge_tokens`) the cost per token
  falls as 1/P; past it the arithmetic sets it. The prompt's keys and values are made in the
  pass itself, so nothing is read from a cache; causal attention over the prompt does
  2 x layers x P^2 x heads x head_dim FLOPs (`attention_flops`), which is P positions
  attending to P / 2 earlier tokens on average. Only the last position goes through the output
  head: it alone makes a token (the first of the reply).
- Decode at batch one makes one token per pass: each generated token costs a whole weight read,
  plus the read of the cache it has built so far.

Only what fits in memory counts: a sequence of P tokens (the prompt being prefilled, or P
generated tokens) needs the weights plus P tokens of KV cache (`kvcache.fits`).
"""
from __future__ import annotations

import numpy as np

from . import kvcache, roofline
from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision


def prefill_step(acc: Accelerator, model: LLM, cards, prompt, precision: Precision = BF16_ALL) -> roofline.StepTime:
    """The pass that prefills a `prompt`-token prompt: no cache to read yet (requests=0), each
    position attending to half the prompt on average under the causal mask, and one position's
    logits: the first token of the reply."""
    prompt = np.asarray(prompt, dtype=float)
    return roofline.step_time(acc, model, cards, prompt, context=prompt / 2.0, requests=0.0, precision=precision,
                              logits=1.0)


def prefill_s_per_token(acc: Accelerator, model: LLM, cards, prompt, precision: Precision = BF16_ALL):
    """Seconds per prompt token when a `prompt`-token prompt is prefilled in one pass."""
    return prefill_step(acc, model, cards, prompt, precision).seconds / np.asarray(prompt, dtype=float)


def decode_s_per_token(acc: Accelerator, model: LLM, cards, context=0.0, precision: Precision = BF16_ALL):
    """Seconds for one generated token of one sequence (batch one) whose cache already holds
    `context` tokens: a whole weight read, plus that cache."""
    return roofline.step_time(acc, model, cards, 1.0, context=context, precision=precision).seconds


def fits(acc: Accelerator, model: LLM, cards, tokens, precision: Precision = BF16_ALL):
    """Whether the weights and `tokens` tokens of one sequence's KV cache fit on `cards` cards."""
    return kvcache.fits(acc, model, cards, tokens, precision=precision)


def longest_fit(acc: Accelerator, model: LLM, cards, limit: int, precision: Precision = BF16_ALL) -> int:
    """The longest sequence, at most `limit` tokens, that `fits` (0 if not even one token does)."""
    ok = np.flatnonzero(fits(acc, model, cards, np.arange(1, limit + 1), precision))
    return int(ok[-1]) + 1 if len(ok) else 0


def attention_flops(model: LLM, prompt):
    """FLOPs of causal self-attention over a `prompt`-token prompt, left out of `step_time`.

    Per layer, the scores Q K^T and the weighted sum of V each take 2 x P^2 x (heads x head_dim)
    FLOPs without a mask (Hoffmann et al. 2022, Appendix F: "logits" and "attention reduce");
    a causal mask needs only half of each, so 2 x layers x P^2 x heads x head_dim in all.
    """
    prompt = np.asarray(prompt, dtype=float)
    return 2.0 * model.layers * prompt ** 2 * model.heads * model.head_dim


def attention_share(model: LLM, prompt):
    """How much causal attention would add to a prefill's arithmetic, as a share of what is counted."""
    prompt = np.asarray(prompt, dtype=float)
    # Every position through the blocks, and only the last through the head (`prefill_step`).
    counted = roofline.flops_per_token(model) * prompt - roofline.FLOP_PER_WEIGHT * model.head_params * (prompt - 1.0)
    return attention_flops(model, prompt) / counted
