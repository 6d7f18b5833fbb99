"""The models set beside published results: Leviathan et al. Table 1 and Chen et al.'s 70B runs.

Everything published is read from `published.yaml`; everything else here is the model's own
arithmetic. Pure: no MkDocs, no altair.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from .speculative import expected_tokens

PUBLISHED_PATH = Path(__file__).with_name("published.yaml")


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def published() -> dict:
    """The published figures, re-read when the file changes."""
    return _load(str(PUBLISHED_PATH), PUBLISHED_PATH.stat().st_mtime_ns)


def walltime_improvement(a, k, c=0.0):
    """Leviathan et al. Theorem 3.8: E(a, k) / (k c + 1), with c = draft step / target step.

    A verify step costs one target step plus k draft steps and yields E(a, k) tokens.
    """
    k = np.asarray(k, dtype=float)
    return expected_tokens(a, k) / (k * np.asarray(c, dtype=float) + 1.0)


def ops_increase(a, k, c_ops=0.0):
    """Leviathan et al. Theorem 3.11: arithmetic per emitted token, over plain decoding."""
    k = np.asarray(k, dtype=float)
    return (k * np.asarray(c_ops, dtype=float) + k + 1.0) / expected_tokens(a, k)


def implied_acceptance(speedup, k, c, tol: float = 1e-12):
    """The acceptance rate at which Theorem 3.8 gives `speedup`; NaN outside what k and c allow.

    The improvement rises strictly with a on [0, 1], so bisection finds the one root.
    """
    target = np.asarray(speedup, dtype=float)
    lo, hi = np.zeros_like(target), np.ones_like(target)
    floor, ceiling = walltime_improvement(0.0, k, c), walltime_improvement(1.0, k, c)
    while np.max(hi - lo) > tol:
        mid = (lo + hi) / 2
        below = walltime_improvement(mid, k, c) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where((target >= floor) & (target <= ceiling), (lo + hi) / 2, np.nan)


@dataclass(frozen=True)
class LeviathanRow:
    a: float
    k: int
    paper_speed: float
    paper_ops: float
    model_speed: float
    model_ops: float


def leviathan_table1() -> list[LeviathanRow]:
    """Table 1 (c = c_ops = 0) beside Theorems 3.8 and 3.11 at the same a and k."""
    return list(_leviathan(PUBLISHED_PATH.stat().st_mtime_ns))


@lru_cache(maxsize=4)
def _leviathan(mtime_ns: int) -> tuple[LeviathanRow, ...]:
    return tuple(LeviathanRow(a=r["a"], k=r["k"], paper_speed=r["speed"], paper_ops=r["ops"],
                         model_speed=float(walltime_improvement(r["a"], r["k"], 0.0)),
                         model_ops=float(ops_increase(r["a"], r["k"], 0.0)))
            for r in published()["leviathan2023_table1"])


@dataclass(frozen=True)
class ChenRow:
    task: str
    paper_ms: float          # measured ms per token with speculation
    paper_speedup: float     # measured speedup as published
    implied_a: float         # acceptance at which Theorem 3.8, at the measured c, gives that speedup
    roofline_speedup: float  # the same acceptance with the draft priced by its weight read


@dataclass(frozen=True)
class Chen:
    target_s: float      # plain decoding, seconds per token
    draft_s: float       # one draft step, seconds
    k: int
    c: float             # measured: draft step over target step
    c_roofline: float    # what a bandwidth-bound roofline charges: draft weights over target weights
    target_params: float
    draft_params: float
    floor: float         # the model's speedup if every guess fails, at the measured c
    ceiling: float       # ... and if every guess holds
    rows: tuple[ChenRow, ...]


def chen2023() -> Chen:
    """Chen et al.'s setting and runs, with what the model makes of them (cached per file version:
    the page asks for it once per inline number and scenario)."""
    return _chen(PUBLISHED_PATH.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _chen(mtime_ns: int) -> Chen:
    d = published()["chen2023"]
    k = int(d["lookahead"])
    c = d["draft_ms_per_token"] / d["target_ms_per_token"]
    c_roof = d["draft_params_b"] / d["target_params_b"]
    speedups = np.array([m["speedup"] for m in d["measured"]], dtype=float)
    a = implied_acceptance(speedups, k, c)
    roof = walltime_improvement(a, k, c_roof)
    rows = tuple(ChenRow(task=m["task"], paper_ms=m["ms_per_token"], paper_speedup=m["speedup"],
                         implied_a=float(ai), roofline_speedup=float(ri))
                 for m, ai, ri in zip(d["measured"], a, roof))
    return Chen(target_s=d["target_ms_per_token"] / 1e3, draft_s=d["draft_ms_per_token"] / 1e3, k=k, c=c,
                c_roofline=c_roof, target_params=d["target_params_b"] * 1e9, draft_params=d["draft_params_b"] * 1e9,
                floor=float(walltime_improvement(0.0, k, c)),
                ceiling=float(walltime_improvement(1.0, k, c)), rows=rows)
