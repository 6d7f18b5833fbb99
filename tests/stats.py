"""The statistical checks of the samplers, shared by tests/test_sampling.py (the chain of guesses)
and tests/test_tree_sampling.py (the tree): seeds that are a digest of the case, the pairs of
laws both sample from, and the concentration radii each statistic is held to. Why each radius
holds is written out in test_sampling.py's docstring. Each check may fail by bad luck with
probability at most DELTA; LOG = ln(2 / DELTA)."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from models import sampling

DELTA = 1e-6
LOG = math.log(2 / DELTA)
V = 12


def seed(*parts: str | int | float) -> int:
    """A generator seed that depends on nothing but `parts`: the first 8 bytes, big-endian, of
    the SHA-256 of their text joined by "/". Unlike hash(), it is the same in every process."""
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "big")


def seeded_rng(*parts: str | int | float) -> np.random.Generator:
    """A generator seeded by `seed(*parts)`: the same draws for the same case in every process."""
    return np.random.default_rng(seed(*parts))


def _pairs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Target and draft laws (p, q) over V tokens, by name: random ones, and the extremes."""
    rng = np.random.default_rng(7)
    pairs = {f"dirichlet-{i}": (rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))) for i in range(3)}
    peaked = rng.dirichlet(np.full(V, 0.2))
    pairs["peaked-vs-flat"] = (peaked, np.full(V, 1.0 / V))
    pairs["disjoint-supports"] = (np.r_[rng.dirichlet(np.ones(V // 2)), np.zeros(V // 2)],
                                  np.r_[np.zeros(V // 2), rng.dirichlet(np.ones(V // 2))])
    p = rng.dirichlet(np.ones(V))
    pairs["q-equals-p"] = (p, p.copy())
    pairs["near-one-hot-p"] = (np.r_[1 - 1e-3, np.full(V - 1, 1e-3 / (V - 1))], rng.dirichlet(np.ones(V)))
    pairs["near-one-hot-q-elsewhere"] = (rng.dirichlet(np.ones(V)), np.r_[np.full(V - 1, 1e-4 / (V - 1)), 1 - 1e-4])
    pairs["q-misses-p-mass"] = (rng.dirichlet(np.ones(V)), np.r_[0.0, 0.0, rng.dirichlet(np.ones(V - 2))])
    return pairs


PAIRS = _pairs()


@dataclass(frozen=True)
class Verdict:
    """A statistic against its concentration radius: the check passes when it is inside."""

    what: str
    statistic: float
    radius: float

    @property
    def passed(self) -> bool:
        return bool(self.statistic < self.radius)

    def __str__(self) -> str:
        return f"{self.what}: {self.statistic:.6g} {'<' if self.passed else '>='} radius {self.radius:.6g}"


def tv(freq: np.ndarray, p: np.ndarray) -> float:
    """The total-variation distance between two laws over the same tokens."""
    return 0.5 * float(np.abs(freq - p).sum())


def tv_check(what: str, freq: np.ndarray, n: int, dist: np.ndarray) -> Verdict:
    """Frequencies of n draws against dist, within the Weissman radius for n draws over dist.size tokens."""
    return Verdict(what, tv(freq, dist), sampling.tv_radius(n, dist.size, DELTA))


def law_moments(law: np.ndarray) -> tuple[float, float]:
    """Mean and variance of a law over 1, 2, ..., law.size tokens per step."""
    values = np.arange(1, law.size + 1)
    mean = float(law @ values)
    return mean, float(law @ (values - mean) ** 2)


def tokens_per_step_radius(n: int, law: np.ndarray) -> float:
    """Bernstein for the mean of n steps drawn from `law` over 1..k+1 tokens."""
    k = law.size - 1
    mean, variance = law_moments(law)
    most = max(mean - 1, (k + 1) - mean)  # the furthest a count in [1, k + 1] can stray from the mean
    return sampling.bernstein_radius(n, variance, most, DELTA)


def separated(n: int, want: np.ndarray, got: np.ndarray) -> bool:
    """Are the means of two tokens-per-step laws further apart than their two Bernstein radii?"""
    return abs(law_moments(got)[0] - law_moments(want)[0]) > \
        tokens_per_step_radius(n, want) + tokens_per_step_radius(n, got)
