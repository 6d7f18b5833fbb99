"""The simulated speculative sampler against the theory it is meant to check.

Every tolerance is a concentration radius for the sample size at hand, never a number picked to
make a run pass. Each check may fail by bad luck with probability at most DELTA (the seeds are
fixed, so a run either always passes or always fails). The radii:

- Output distribution. A speculative run, its steps laid end to end and cut to a fixed length,
  must be that many i.i.d. draws from p. For n i.i.d. draws over V tokens, Weissman et al. (2003)
  give P(||p_hat - p||_1 >= e) <= (2^V - 2) exp(-n e^2 / 2); solving for e at DELTA and halving
  gives a total-variation radius (`sampling.tv_radius`).
- Acceptance. Whether a step's first guess is kept is an i.i.d. Bernoulli(alpha) draw per step,
  alpha = sum_x min(p(x), q(x)); Hoeffding bounds the mean of n of them by sqrt(ln(2/DELTA)/(2n)).
  The sampler's own pooled rate (kept guesses over judged guesses) is a ratio over a random count:
  the centred sum over judged guesses is a martingale with increments in an interval of width 1
  and at most n k terms, so Azuma-Hoeffding bounds it by sqrt(2 n k ln(2/DELTA)), and there are at
  least n judged guesses to divide by.
- Tokens per step. Steps are independent and each yields between 1 and k + 1 tokens. Its law is
  known exactly under i.i.d. acceptance (`sampling.tokens_per_step_distribution`), so Bernstein's
  inequality with that variance and a span of k bounds the mean (`sampling.bernstein_radius`);
  the figure's check uses plain Hoeffding with span k, which needs nothing but the range.

Each radius is also shown to be tight enough to catch a real mistake.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from models import sampling, speculative

DELTA = 1e-6
V = 12


def _pairs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
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


def _bernstein(n: int, a: float, k: int) -> float:
    law = sampling.tokens_per_step_distribution(a, k)
    values = np.arange(1, k + 2)
    mean = float((law * values).sum())
    assert mean == pytest.approx(float(speculative.expected_tokens(a, k)))  # the law and E agree
    return sampling.bernstein_radius(n, float((law * (values - mean) ** 2).sum()), k, DELTA)


def _tv(freq: np.ndarray, p: np.ndarray) -> float:
    return 0.5 * float(np.abs(freq - p).sum())


@pytest.mark.parametrize("k", [1, 4, 8])
@pytest.mark.parametrize("name", list(PAIRS))
def test_output_is_distributed_as_the_target(name, k):
    p, q = PAIRS[name]
    streams, length = 200, 500
    tokens = sampling.speculative_sequence(p, q, k, length, np.random.default_rng(hash((name, k)) % 2**32),
                                           streams=streams)
    assert tokens.shape == (streams, length) and tokens.min() >= 0
    # Tokens the target never produces must never come out, whatever the draft proposes.
    assert not np.isin(tokens, np.flatnonzero(p == 0)).any()
    radius = sampling.tv_radius(tokens.size, V, DELTA)
    assert _tv(sampling.frequencies(tokens, V), sampling.normalise(p)) < radius


def test_the_output_check_catches_a_sampler_without_the_residual():
    # The classic mistake: replace a rejected guess with a fresh draw from p instead of from
    # norm(max(0, p - q)). Its output leans towards the draft; the same radius must see it.
    p, q = PAIRS["dirichlet-0"]
    n = 200 * 500
    broken = sampling.speculative_sequence(p, q, 4, 500, np.random.default_rng(1), streams=200, resample=p)
    assert _tv(sampling.frequencies(broken, V), p) > 3 * sampling.tv_radius(n, V, DELTA)


@pytest.mark.parametrize("name", list(PAIRS))
def test_measured_acceptance_is_the_overlap_of_p_and_q(name):
    p, q = PAIRS[name]
    n, k = 100_000, 4
    steps = sampling.speculative_steps(p, q, k, n, np.random.default_rng(11))
    alpha = sampling.acceptance(p, q)
    assert alpha == pytest.approx(np.minimum(p, q).sum() / 1.0)
    first_kept = (steps.accepted >= 1).mean()
    assert abs(first_kept - alpha) < sampling.hoeffding_radius(n, 1.0, DELTA)
    pooled = math.sqrt(2 * n * k * math.log(2 / DELTA)) / n
    assert abs(steps.acceptance_rate() - alpha) < pooled


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("name", ["dirichlet-1", "peaked-vs-flat", "near-one-hot-p", "q-equals-p"])
def test_tokens_per_step_of_the_real_sampler_match_E(name, k):
    p, q = PAIRS[name]
    n = 100_000
    steps = sampling.speculative_steps(p, q, k, n, np.random.default_rng(k))
    alpha = sampling.acceptance(p, q)
    want = float(speculative.expected_tokens(alpha, k))
    assert abs(steps.emitted.mean() - want) < _bernstein(n, alpha, k)
    assert steps.emitted.min() >= 1 and steps.emitted.max() <= k + 1


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("a", [0.3, 0.6, 0.8, 0.95])
def test_tokens_per_step_under_iid_acceptance_match_E(a, k):
    n = 200_000
    got = sampling.iid_tokens_per_step(a, k, n, np.random.default_rng(int(a * 100) + k)).mean()
    radius = _bernstein(n, a, k)
    assert abs(got - float(speculative.expected_tokens(a, k))) < radius
    # The radius is narrow enough to tell this a from one 0.05 lower, so the check has teeth.
    if k > 1:
        assert float(speculative.expected_tokens(a, k) - speculative.expected_tokens(a - 0.05, k)) > 2 * radius


def test_q_equal_p_accepts_every_guess_and_disjoint_supports_none():
    p, q = PAIRS["q-equals-p"]
    steps = sampling.speculative_steps(p, q, 4, 10_000, np.random.default_rng(3))
    assert (steps.accepted == 4).all()
    p, q = PAIRS["disjoint-supports"]
    steps = sampling.speculative_steps(p, q, 4, 10_000, np.random.default_rng(3))
    assert (steps.accepted == 0).all()


def test_alias_draws_follow_the_distribution_and_skip_zero_mass():
    rng = np.random.default_rng(5)
    for dist in (PAIRS["q-misses-p-mass"][1], PAIRS["near-one-hot-p"][0], np.r_[0.0, 1.0, 0.0]):
        n = 200_000
        got = sampling.draw(dist, rng.random(n))
        assert not np.isin(got, np.flatnonzero(dist == 0)).any()
        assert _tv(sampling.frequencies(got, dist.size), dist) < sampling.tv_radius(n, dist.size, DELTA)


def test_the_figure_grid_passes_its_own_check():
    drift = np.round(np.arange(0.0, 1.01, 0.1), 1)
    g = sampling.figure_grid(drift)
    vocab = g.target.size
    radius = sampling.tv_radius(g.tokens, vocab, DELTA)
    for i in range(len(drift)):
        assert _tv(g.plain[i], g.target) < radius
        assert _tv(g.speculative[i], g.target) < radius
    # The draft really does move: at the far end it is further from p than sampling noise by far.
    assert _tv(g.draft[-1], g.target) > 20 * radius
    assert g.alpha[0] == pytest.approx(1.0) and np.all(np.diff(g.alpha) < 0)
    spread = np.array([sampling.hoeffding_radius(g.steps, k, DELTA) for k in g.lookaheads])
    assert np.all(np.abs(g.measured - g.expected) < spread)
    assert np.all(np.abs(g.measured_alpha - g.alpha) < math.sqrt(2 * g.tokens * sampling.FIGURE_LOOKAHEAD
                                                                  * math.log(2 / DELTA)) / g.tokens)


def test_the_figure_grid_is_seeded_and_small():
    drift = np.round(np.arange(0.0, 1.01, 0.1), 1)
    a = sampling._figure_grid.__wrapped__(tuple(drift), sampling.FIGURE_TOKENS, sampling.FIGURE_STEPS,
                                          sampling.FIGURE_SEED)
    b = sampling.figure_grid(drift)
    assert np.array_equal(a.speculative, b.speculative) and np.array_equal(a.measured, b.measured)
    # The build-time cost is bounded by construction: a few million uniform draws for the whole grid.
    assert a.draws < 3_000_000
