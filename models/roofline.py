"""Roofline step time: one forward pass of T tokens over N cards.

A pass must read every weight once (bandwidth side) and do 2 x params FLOPs per token
(compute side); it takes whichever is longer. Attention FLOPs and KV reads are left out.
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
    return 2.0 * model.params


def step_time(acc: Accelerator, model: LLM, cards, tokens,
              bytes_per_param: float = BYTES_PER_BF16) -> StepTime:
    cards = np.asarray(cards, dtype=float)
    tokens = np.asarray(tokens, dtype=float)
    weight_bytes = model.weight_bytes(bytes_per_param)
    memory_s = weight_bytes / (cards * acc.bandwidth) + 0.0 * tokens
    compute_s = flops_per_token(model) * tokens / (cards * acc.flops)
    seconds = np.maximum(memory_s, compute_s)
    return StepTime(
        memory_s=memory_s,
        compute_s=compute_s,
        seconds=seconds,
        compute_bound=compute_s > memory_s,
        intensity=flops_per_token(model) * tokens / weight_bytes + 0.0 * cards,
        utilisation=compute_s / seconds,
    )


def ridge_tokens(acc: Accelerator, model: LLM, bytes_per_param: float = BYTES_PER_BF16) -> float:
    """Tokens per pass at which the compute time equals the weight-read time."""
    return acc.ridge * model.weight_bytes(bytes_per_param) / flops_per_token(model)
