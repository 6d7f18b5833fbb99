"""Roofline step time: one forward pass over N cards, tensor-parallel.

A pass computes `tokens` positions that belong to `requests` sequences, each of which already
holds `context` tokens of KV cache. It must

- read, from HBM, the weights it multiplies once (of a mixture of experts, the experts its
  positions are routed to: `LLM.expert_share`), one input-embedding row per position (an
  untied input embedding is looked up, not read whole: `LLM.step_params`), and the KV cache of
  every request once, however many of its positions the pass computes (a verify pass's k + 1
  positions share one read of their request's cache);
- do 2 FLOPs per multiplied weight per position, and attention over the cache: per position,
  layer and cached token, 2 x heads x head_dim FLOPs for the scores and as many for the
  weighted sum of the values (`attention_flops_per_position`). The blocks' products run at the
  peak of their weights' format (FP8 where the card has it), the output head's and attention's
  at the 16-bit peak (`models.precision`);
- all-reduce its activations across the cards twice per layer, after attention and after the
  MLP (Megatron-style tensor parallelism, Shoeybi et al. 2019): `comm_s`.

Reading and arithmetic overlap, so the pass takes the longer of the two; the all-reduces sit
between layers, where the next layer waits for them, so their time is added. Left out: the new
keys and values a pass writes (one token's worth per position), activations, and kernel launch
costs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .catalogue import LLM, Accelerator
from .kvcache import bytes_per_token as kv_bytes_per_token
from .precision import ACTIVATION_BYTES, BF16_ALL, Precision


@dataclass(frozen=True)
class StepTime:
    """Arrays broadcast over the inputs; times in seconds."""

    weights_s: np.ndarray   # time to read the weights (and looked-up embedding rows)
    kv_s: np.ndarray        # time to read the requests' KV cache
    memory_s: np.ndarray    # the two reads together
    compute_s: np.ndarray   # time to do the arithmetic, attention included
    comm_s: np.ndarray      # time in all-reduces across the cards (0 on one card)
    seconds: np.ndarray     # the step time: the larger of memory and compute, plus communication
    compute_bound: np.ndarray
    intensity: np.ndarray   # FLOP per byte read from HBM
    utilisation: np.ndarray  # share of peak FLOP/s used during the step


def flops_per_token(model: LLM) -> float:
    """A multiply and an add for every weight the pass multiplies (not the embedding lookup)."""
    return 2.0 * model.step_params


def attention_flops_per_position(model: LLM, context):
    """Attention FLOPs of one position over `context` cached tokens: for every layer, the scores
    Q K^T and the weighted sum of V each take 2 x heads x head_dim FLOPs per cached token
    (Hoffmann et al. 2022, Appendix F, "logits" and "attention reduce")."""
    return 4.0 * model.layers * model.heads * model.head_dim * np.asarray(context, dtype=float)


ALLREDUCES_PER_LAYER = 2  # Megatron-LM: one after attention, one after the MLP (forward pass)


def comm_s(acc: Accelerator, model: LLM, cards, tokens):
    """Seconds a pass spends in all-reduces: 2 per layer, each a fixed cost plus its bytes.

    Each all-reduce sums a `tokens` x hidden activation of 16-bit values across the cards. A ring (or its
    equivalent over a switch) sends 2 (N - 1) / N of the message from every card, at the
    one-way link rate. One card sends nothing.
    """
    cards = np.asarray(cards, dtype=float)
    tokens = np.asarray(tokens, dtype=float)
    message = tokens * model.hidden * ACTIVATION_BYTES
    one = acc.allreduce_latency + 2.0 * (cards - 1.0) / cards * message / acc.link_bandwidth
    return np.where(cards > 1, ALLREDUCES_PER_LAYER * model.layers * one, 0.0)


def compute_seconds(acc: Accelerator, model: LLM, tokens, context=0.0, precision: Precision = BF16_ALL,
                    attended=None, logits=None):
    """Seconds of arithmetic on one card for a pass over `tokens` positions: the blocks' products
    at their format's peak, the output head's and attention's at the 16-bit peak. Each position
    attends to `context` cached tokens, unless `attended` gives the total over all positions.
    The output head runs for `logits` positions, by default all of them (see `pass_time`)."""
    tokens = np.asarray(tokens, dtype=float)
    attended = tokens * np.asarray(context, dtype=float) if attended is None else np.asarray(attended, dtype=float)
    logits = tokens if logits is None else np.asarray(logits, dtype=float)
    blocks = 2.0 * model.active_block_params * tokens / acc.peak(precision.weights)
    rest = (logits * 2.0 * model.head_params + attention_flops_per_position(model, attended)) / acc.flops
    return blocks + rest


def step_time(acc: Accelerator, model: LLM, cards, tokens, context=0.0, requests=None,
              precision: Precision = BF16_ALL, logits=None) -> StepTime:
    """One pass over `tokens` positions of `requests` sequences (default: one position each, a
    decode step), each with `context` tokens already in its cache; `logits` of the positions go
    through the output head (default: all, as in decode and in a verify pass)."""
    tokens = np.asarray(tokens, dtype=float)
    context = np.asarray(context, dtype=float)
    requests = tokens if requests is None else np.asarray(requests, dtype=float)
    return pass_time(acc, model, cards, tokens, requests * context, tokens * context, precision, logits)


def pass_time(acc: Accelerator, model: LLM, cards, tokens, cached, attended,
              precision: Precision = BF16_ALL, logits=None) -> StepTime:
    """One pass over `tokens` positions whose requests hold `cached` tokens of KV cache between
    them, each read once, while the positions attend to `attended` cached tokens in all.

    The general form of `step_time`, for a pass that mixes requests of different contexts: a
    server's step that carries decodes and chunks of prompts together (`models.serving`). Only
    `logits` of the positions (default: all) go through the output head: a server needs the
    next-token distribution of a decode, and of a prompt's last position, and of no other prompt
    position. The head's weights are read either way.
    """
    cards = np.asarray(cards, dtype=float)
    tokens = np.asarray(tokens, dtype=float)
    weights = model.read_bytes(tokens, precision)
    kv = np.asarray(cached, dtype=float) * kv_bytes_per_token(model, precision.kv.bytes)
    rows = tokens if logits is None else np.asarray(logits, dtype=float)  # positions through the head
    skipped = 2.0 * model.head_params * (tokens - rows)  # head products of positions that make no token
    flops = tokens * flops_per_token(model) - skipped + attention_flops_per_position(model, attended)
    weights_s = weights / (cards * acc.bandwidth)
    kv_s = kv / (cards * acc.bandwidth)
    memory_s = weights_s + kv_s
    compute_s = compute_seconds(acc, model, tokens, precision=precision, attended=attended, logits=rows) / cards
    talk = comm_s(acc, model, cards, tokens)
    seconds = np.maximum(memory_s, compute_s) + talk
    return StepTime(
        weights_s=weights_s,
        kv_s=kv_s,
        memory_s=memory_s,
        compute_s=compute_s,
        comm_s=talk,
        seconds=seconds,
        compute_bound=compute_s > memory_s,
        intensity=flops / (weights + kv) + 0.0 * cards,
        utilisation=compute_s / seconds,
    )


def ridge_tokens(acc: Accelerator, model: LLM, context=0.0, precision: Precision = BF16_ALL):
    """Decode batch at which the arithmetic takes as long as the reads (one position a request).

    Both sides grow linearly in the batch B: reads = fixed weights + B x (embedding row + context
    x KV bytes a token), arithmetic = B x (seconds of one position's products). Solves for B. Past
    a certain context every request brings more bytes than its arithmetic can cover, and decode
    never turns compute-bound: then `inf`.
    """
    context = np.asarray(context, dtype=float)
    # A mixture of experts reads more experts as the batch grows (`LLM.expert_share`); by the
    # batches where a ridge can lie, the positions reach every expert (Mixtral 8x7B: 99.98% from
    # 30 positions), so the fixed reads are all the multiplied weights.
    fixed = model.multiplied_bytes(np.inf, precision) / acc.bandwidth
    per_request = (model.lookup_bytes(1) + context * kv_bytes_per_token(model, precision.kv.bytes)) / acc.bandwidth
    gain = compute_seconds(acc, model, 1.0, context, precision) - per_request
    with np.errstate(divide="ignore"):
        out = np.where(gain > 0, fixed / np.where(gain > 0, gain, 1.0), np.inf)
    return out if out.ndim else float(out)
