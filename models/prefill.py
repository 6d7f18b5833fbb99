"""Prefill against decode, per token, priced by the roofline step time.

A forward pass over T tokens takes `roofline.step_time(..., T)`: the longer of the weight read
(bf16 weights over HBM bandwidth) and the dense arithmetic (2 x params FLOPs per token over the
peak bf16 FLOP/s), both from the catalogue's datasheet numbers. Attention is left out there, and
so here, except in `attention_share`, which says how much it would add.

- Prefill of a P-token prompt is one pass over P tokens: each prompt token costs
  `step_time(P) / P`. The weight read is shared among the P tokens, so below the ridge
  (`roofline.ridge_tokens`) the cost per token falls as 1/P; past it the arithmetic sets it,
  2 x params FLOPs per token, whatever P.
- Decode at batch one makes one token per pass: each generated token costs `step_time(1)`,
  a whole weight read, however long the output.

At the ridge the whole prefill takes exactly one decode step; from there on decode costs
`ridge_tokens` times more per token than prefill, and below it P times more.

Only what fits in memory counts: a sequence of P tokens (the prompt being prefilled, or P
generated tokens) needs the weights plus P tokens of KV cache, which is `kvcache.slots >= 1`.
"""
from __future__ import annotations

import numpy as np

from . import kvcache, roofline
from .catalogue import LLM, Accelerator


def prefill_s_per_token(acc: Accelerator, model: LLM, cards, prompt):
    """Seconds per prompt token when a `prompt`-token prompt is prefilled in one pass."""
    prompt = np.asarray(prompt, dtype=float)
    return roofline.step_time(acc, model, cards, prompt).seconds / prompt


def decode_s_per_token(acc: Accelerator, model: LLM, cards, tokens=1.0):
    """Seconds per generated token when one sequence is decoded a token per pass (batch one).

    The same for every token under this model (no KV reads), so broadcast over `tokens`.
    """
    return roofline.step_time(acc, model, cards, 1.0).seconds + 0.0 * np.asarray(tokens, dtype=float)


def fits(acc: Accelerator, model: LLM, cards, tokens):
    """Whether the weights and `tokens` tokens of one sequence's KV cache fit on `cards` cards."""
    return kvcache.slots(acc, model, cards, tokens) >= 1


def longest_fit(acc: Accelerator, model: LLM, cards, limit: int) -> int:
    """The longest sequence, at most `limit` tokens, that `fits` (0 if not even one token does)."""
    ok = np.flatnonzero(fits(acc, model, cards, np.arange(1, limit + 1)))
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
    return attention_flops(model, prompt) / (roofline.flops_per_token(model) * prompt)
