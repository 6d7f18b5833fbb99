"""The functions an author may call in an inline number, bound to one scenario.

Every function broadcasts over numpy arrays, so one call covers a whole slider grid.
Quantities are in SI units (seconds, bytes, FLOP/s); the format spec converts.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from models import roofline, speculative
from models.catalogue import LLM

from .controls import Resolved


def vocabulary(r: Resolved) -> dict[str, Callable]:
    """Name -> function for inline numbers under scenario `r`."""
    acc, cards = r.acc, r.cards

    def model(which: str = "target") -> LLM:
        if which == "target":
            return r.target
        if which == "draft":
            return r.draft
        raise ValueError(f"model must be 'target' or 'draft', got {which!r}")

    def step(tokens=1, which="target"):
        return roofline.step_time(acc, model(which), cards, tokens).seconds

    return {
        "E": speculative.expected_tokens,
        "speedup": lambda a, k, batch=1: speculative.speedup(acc, r.target, r.draft, cards, batch, a, k),
        "breakeven": lambda a, k: speculative.breakeven_batch(acc, r.target, r.draft, cards, a, k),
        "step": step,
        "spec_step": lambda k, batch=1: speculative.speculative_step_s(acc, r.target, r.draft, cards, batch, k),
        "util": lambda tokens=1, which="target": roofline.step_time(acc, model(which), cards, tokens).utilisation,
        "compute_time": lambda tokens=1, which="target": roofline.step_time(acc, model(which), cards, tokens).compute_s,
        "weight_bytes": lambda which="target": model(which).weight_bytes(),
        "kv_bytes": lambda which="target": model(which).kv_bytes_per_token(),
        "params": lambda which="target": model(which).params,
        "ridge": lambda: acc.ridge,
        "ridge_tokens": lambda which="target": roofline.ridge_tokens(acc, model(which)),
        "bandwidth": lambda: acc.bandwidth,
        "flops": lambda: acc.flops,
        "memory": lambda: acc.memory_bytes,
        "cards": lambda: cards,
        "min": np.minimum,
        "max": np.maximum,
    }


# Names that make sense without a scenario; the rest read the page's scenario.
SCENARIO_FREE = frozenset({"E", "min", "max"})
