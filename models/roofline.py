"""Roofline step time: one forward pass of T tokens over N cards.

A pass must read the weights it multiplies once, plus one input-embedding row per token
(bandwidth side), and do 2 FLOPs per multiplied weight per token (compute side); it takes
whichever is longer. An untied input embedding is looked up, not read whole or multiplied
(`LLM.step_params`). Attention FLOPs and KV reads are left out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .catalogue import BYTES_PER_BF16, LLM, Accelerator


@dataclass(frozen=True)
class StepTime:
    """Arrays broadcast over the inputs; times in seconds."""

    memory_s: np.ndarray    # time to read the weights
    compute_s: np.ndarray   # time to do the arithmetic
    seconds: np.ndarray     # the step time: the larger of the two
    compute_bound: np.ndarray
    intensity: np.ndarray   # FLOP per byte of weights read
    utilisation: np.ndarray  # share of peak FLOP/s used during the step


def flops_per_token(model: LLM) -> float:
    """A multiply and an add for every weight the pass multiplies (not the embedding lookup)."""
    return 2.0 * model.step_params


def step_time(acc: Accelerator, model: LLM, cards, tokens,
              bytes_per_param: float = BYTES_PER_BF16) -> StepTime:
    cards = np.asarray(cards, dtype=float)
    tokens = np.asarray(tokens, dtype=float)
    read = model.read_bytes(tokens, bytes_per_param)
    memory_s = read / (cards * acc.bandwidth)
    compute_s = flops_per_token(model) * tokens / (cards * acc.flops)
    seconds = np.maximum(memory_s, compute_s)
    return StepTime(
        memory_s=memory_s,
        compute_s=compute_s,
        seconds=seconds,
        compute_bound=compute_s > memory_s,
        intensity=flops_per_token(model) * tokens / read + 0.0 * cards,
        utilisation=compute_s / seconds,
    )


def ridge_tokens(acc: Accelerator, model: LLM, bytes_per_param: float = BYTES_PER_BF16) -> float:
    """Tokens per pass at which the compute time equals the weight-read time: T with
    flops_per_token * T = ridge * read_bytes(T), the read growing by one embedding row a token."""
    fixed = model.read_bytes(0, bytes_per_param)
    return acc.ridge * fixed / (flops_per_token(model) - acc.ridge * model.lookup_bytes(1, bytes_per_param))
