"""The simulated speculative sampler against the theory it is meant to check.

Reproducible: every generator is seeded by `stats.seed`, a SHA-256 digest of the test's label and its
case, never by the built-in hash(), which Python salts afresh in every process (PYTHONHASHSEED).

Every tolerance is a concentration radius for the sample size at hand, never a number picked to
make a run pass. Each check may fail by bad luck with probability at most DELTA = 1e-6; the file
makes fewer than 200 checks of the real sampler, so by the union bound one fails by bad luck with
probability below 2e-4, and as the seeds are fixed a run either always passes or always fails.
Write LOG = ln(2 / DELTA) = 14.51. The radii:

- Output distribution (`_frequencies_check`). A speculative run, its steps laid end to end and
  cut to a fixed length, must be that many i.i.d. draws from p. For n i.i.d. draws over V tokens,
  Weissman et al. (2003) give P(||p_hat - p||_1 >= e) <= (2^V - 2) exp(-n e^2 / 2); solving for e
  at DELTA and halving gives the total-variation radius 1/2 sqrt(2 (V ln 2 + ln(1/DELTA)) / n)
  (`sampling.tv_radius`): 0.0105 for the n = 200 x 500 = 100,000 tokens and V = 12 used here.
  It needs no range: it holds for every p.
- First guess kept (`_first_kept_check`). Whether a step's first guess is kept is an i.i.d.
  Bernoulli(alpha) draw per step, alpha = sum_x min(p(x), q(x)). The indicator lies in [0, 1], a
  range of width 1, so Hoeffding bounds the mean of n of them by 1 * sqrt(LOG / (2 n))
  (`sampling.hoeffding_radius`): 0.0085 for n = 100,000 steps.
- Pooled acceptance (`_pooled_acceptance_check`). The sampler's own rate, kept guesses over judged
  guesses, is a ratio over a random count T. Number the n k guess slots of a run in order. Slot t
  is judged when every earlier guess of its step was kept, which is known before slot t is drawn,
  and a judged guess is then kept with probability alpha whatever came before. So
  D_t = [t judged] ([t kept] - alpha) is a martingale increment that, given the past, lies in
  [-alpha, 1 - alpha] (or is 0, which is inside): an interval of width c_t = 1. Azuma-Hoeffding
  for increments in predictable intervals of widths c_t (Hoeffding 1963, McDiarmid 1989) gives
  P(|sum_t D_t| >= s) <= 2 exp(-2 s^2 / sum_t c_t^2), so with sum_t c_t^2 = n k the bound is
  s = sqrt(n k LOG / 2). As sum_t D_t = kept - alpha T, |rate - alpha| < s / T, where T (at least
  n, one judged guess per step) is the run's own judged count. For n = 100,000 and k = 4:
  s = 1703.5 and s / T <= 0.0170.
- Tokens per step (`_tokens_per_step_check`). Steps are independent and each yields between 1 and
  k + 1 tokens, so one strays from the mean mu = E(alpha, k) by at most M = max(mu - 1, k + 1 - mu),
  at most k. Its law is known exactly when each guess is kept independently with probability
  alpha (`sampling.tokens_per_step_distribution`), which gives the variance sigma^2, and
  Bernstein's inequality bounds the mean of n steps by sqrt(2 sigma^2 LOG / n) + 2 M LOG / (3 n)
  (`sampling.bernstein_radius`); n = 100,000 steps of the real sampler, 200,000 i.i.d. counts.
- The figure (`_figure_grid_check`) applies the output radius to its frequency rows (n = 8,000
  tokens, V = 8: 0.0348), plain Hoeffding over the range [1, k + 1], width k, to its tokens per
  step (k sqrt(LOG / (2 n)), n = 4,000 steps: 0.0426 k, the radius the page itself shows), and
  the pooled radius to its acceptance rate (n = 8,000 steps, k = 4; the grid keeps no judged
  count, so T >= n: s / n = 0.0602).

Every check has negative controls: the same check function, fed a deliberately broken sampler
(`_broken_steps`, the real one with one line changed, or a broken count or alias draw), must
reject it, and every case of every positive test has at least one. A control case is kept only
where theory says the mutation is visible at this sample size. Where the broken draws are
independent (acceptance, tokens per step, alias draws), the broken law is known exactly and has a
radius of its own; a case is kept when the two radii cannot overlap, so the check catches the
mutant with probability at least 1 - DELTA whatever the seed. A broken sampler's output tokens are
not independent, so there the case is kept when its long-run law lies more than three radii plus
the cut's effect from p (`_output_controls`). Cases where a mutation changes nothing are not
controls: when q = p, min(1, q/p) is min(1, p/q), and a missing bonus token leaves the output law
at p whatever q is (it changes only the tokens per step).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from models import sampling, speculative
from stats import (DELTA, LOG, PAIRS, V, Verdict, law_moments, seed, seeded_rng, separated, tokens_per_step_radius, tv,
                   tv_check)

# Sample sizes, shared by each test and its negative control.
OUTPUT_KS = (1, 4, 8)
OUTPUT_STREAMS, OUTPUT_LENGTH = 200, 500
ACCEPTANCE_STEPS, ACCEPTANCE_K = 100_000, 4
STEPS_PAIRS = ("dirichlet-1", "peaked-vs-flat", "near-one-hot-p", "q-equals-p")
STEPS_KS = (1, 2, 4, 8)
STEPS_N = 100_000
IID_AS = (0.3, 0.6, 0.8, 0.95)
IID_N = 200_000
ALIAS_N = 200_000
ALIAS_DISTS = {
    "draft-missing-two-tokens": PAIRS["q-misses-p-mass"][1],
    "near-one-hot": PAIRS["near-one-hot-p"][0],
    "point-mass": np.r_[0.0, 1.0, 0.0],
}
FIGURE_DRIFT = np.round(np.arange(0.0, 1.01, 0.1), 1)


# -- the checks: each positive test asserts its verdict passes, each negative control that it fails

def _frequencies_check(tokens: np.ndarray, dist: np.ndarray) -> Verdict:
    """Could `tokens` be i.i.d. draws from `dist`?"""
    dist = sampling.normalise(dist)
    return tv_check("TV(frequencies, p)", sampling.frequencies(tokens, dist.size), tokens.size, dist)


def _first_kept_check(steps: sampling.Steps, alpha: float) -> Verdict:
    """Fraction of steps whose first guess was kept, against alpha: Hoeffding for an indicator."""
    lo, hi = 0.0, 1.0  # the range of an indicator
    return Verdict("first guesses kept - alpha", abs(float((steps.accepted >= 1).mean()) - alpha),
                   sampling.hoeffding_radius(steps.accepted.size, hi - lo, DELTA))


def _pooled_radius(slots: int, judged: int, alpha: float) -> float:
    """s / T of the module docstring: Azuma-Hoeffding over `slots` increments, each confined to
    [-alpha, 1 - alpha], divided by the number of judged guesses."""
    width = (1.0 - alpha) - (-alpha)
    return math.sqrt(slots * width ** 2 * LOG / 2) / judged


def _pooled_acceptance_check(steps: sampling.Steps, alpha: float) -> Verdict:
    """The sampler's own pooled rate (kept over judged guesses) against alpha."""
    n, k = steps.accepted.size, steps.k
    judged = int(np.minimum(steps.accepted + 1, k).sum())
    return Verdict("pooled acceptance rate - alpha", abs(steps.acceptance_rate() - alpha),
                   _pooled_radius(n * k, judged, alpha))


def _tokens_per_step_check(emitted: np.ndarray, alpha: float, k: int) -> Verdict:
    """Mean tokens per step against E(alpha, k), with the exact law's variance."""
    law = sampling.tokens_per_step_distribution(alpha, k)
    want = float(speculative.expected_tokens(alpha, k))
    return Verdict("mean tokens per step - E(alpha, k)", abs(float(emitted.mean()) - want),
                   tokens_per_step_radius(emitted.size, law))


def _figure_grid_check(g: sampling.FigureGrid) -> list[Verdict]:
    """Every statistical claim the figure makes, one verdict each; the figure passes if all do."""
    verdicts = []
    for i, d in enumerate(g.distance.tolist()):
        verdicts.append(tv_check(f"plain frequencies at distance {d}", g.plain[i], g.tokens, g.target))
        verdicts.append(tv_check(f"speculative frequencies at distance {d}", g.speculative[i], g.tokens, g.target))
        for j, k in enumerate(g.lookaheads.tolist()):
            lo, hi = 1, k + 1  # tokens a step yields
            verdicts.append(Verdict(f"tokens per step at distance {d}, k = {k}",
                                    abs(g.measured[i, j] - g.expected[i, j]),
                                    sampling.hoeffding_radius(g.steps, hi - lo, DELTA)))
        # The k = FIGURE_LOOKAHEAD run has g.tokens steps, so at least that many judged guesses.
        verdicts.append(Verdict(f"pooled acceptance at distance {d}", abs(g.measured_alpha[i] - g.alpha[i]),
                                _pooled_radius(g.tokens * sampling.FIGURE_LOOKAHEAD, g.tokens, float(g.alpha[i]))))
    return verdicts


# -- broken samplers for the negative controls, and their exact laws --------------------------

MUTATIONS = {
    "inverted-ratio": "keeps a guess x with probability min(1, q(x)/p(x)) instead of min(1, p(x)/q(x))",
    "ratio-without-q": "keeps a guess x with probability p(x), forgetting to divide by q(x)",
    "no-residual": "replaces a rejected guess with a draw from p instead of from norm(max(0, p - q))",
    "no-bonus": "ends a step whose k guesses were all kept without the bonus token from p",
}


def _keep_probability(p: np.ndarray, q: np.ndarray, mutation: str | None) -> np.ndarray:
    """Probability of keeping a guess of each token: min(1, p/q) (0 where q = 0, never drawn), or a mutation's."""
    if mutation == "inverted-ratio":
        return np.minimum(1.0, np.divide(q, p, out=np.ones_like(p), where=p > 0))
    if mutation == "ratio-without-q":
        return p.copy()
    return np.minimum(1.0, np.divide(p, q, out=np.zeros_like(p), where=q > 0))


def _broken_steps(mutation: str | None, p, q, k: int, n: int, rng: np.random.Generator,
                  resample=None) -> sampling.Steps:
    """`sampling.speculative_steps` with one of MUTATIONS; the same draws in the same order, so
    with mutation None it is the real sampler bit for bit (a test below holds it to that)."""
    p, q = sampling.normalise(p), sampling.normalise(q)
    guesses = sampling.draw(q, rng.random((n, k)))
    kept = rng.random((n, k)) < _keep_probability(p, q, mutation)[guesses]
    accepted = np.where(kept.all(axis=1), k, np.argmin(kept, axis=1))
    replace_from = p if mutation == "no-residual" else (
        sampling.residual(p, q) if resample is None else sampling.normalise(resample))
    fix = sampling.draw(replace_from, rng.random(n))
    bonus = sampling.draw(p, rng.random(n))
    last = np.where(accepted == k, bonus, fix)
    col = np.arange(k + 1)
    tokens = np.where(col < accepted[:, None], np.concatenate([guesses, guesses[:, :1]], axis=1), -1)
    tokens[np.arange(n), accepted] = last
    if mutation == "no-bonus":
        tokens[accepted == k, k] = -1
    return sampling.Steps(tokens, accepted)


def _emitted(steps: sampling.Steps) -> np.ndarray:
    """Tokens each step actually emitted, counted in its token row."""
    return (steps.tokens >= 0).sum(axis=1)


def _per_guess_acceptance(p, q, mutation: str | None) -> float:
    """Probability that a guess drawn from q is kept: alpha for the real sampler."""
    p, q = sampling.normalise(p), sampling.normalise(q)
    return float((q * _keep_probability(p, q, mutation)).sum())


def _tokens_per_step_law(beta: float, k: int, mutation: str | None) -> np.ndarray:
    """Law over 1..k+1 tokens per step when each guess is kept with probability beta."""
    law = sampling.tokens_per_step_distribution(beta, k)
    if mutation == "no-bonus":  # all k kept: k tokens, not k + 1
        law = np.r_[law[:-2], law[-2] + law[-1], 0.0]
    return law


def _long_run_output_law(p, q, k: int, mutation: str | None) -> np.ndarray:
    """Token frequencies of a long run of steps (renewal-reward): expected count of each token in a
    step over expected tokens per step. Guess j is kept and emitted with probability beta^j, each
    a draw from q * keep normalised; one rejection (probability 1 - beta^k) emits a replacement,
    and all k kept (probability beta^k) a bonus token from p."""
    p, q = sampling.normalise(p), sampling.normalise(q)
    kept = q * _keep_probability(p, q, mutation)
    beta = float(kept.sum())
    replacement = p if mutation == "no-residual" else sampling.residual(p, q)
    bonus = 0.0 if mutation == "no-bonus" else beta ** k
    per_step = kept * sum(beta ** j for j in range(k)) + (1 - beta ** k) * replacement + bonus * p
    return per_step / per_step.sum()


def _output_controls():
    """(pair, k, mutation) whose long-run law is at least three output radii plus the most the
    cut at OUTPUT_LENGTH can move it (k / OUTPUT_LENGTH in total variation) away from p. A broken
    sampler's tokens are not independent, so no radius bounds their noise and this is a margin,
    not a guarantee; every case is still asserted to be rejected."""
    radius = sampling.tv_radius(OUTPUT_STREAMS * OUTPUT_LENGTH, V, DELTA)
    return [(name, k, m) for name, (p, q) in PAIRS.items() for k in OUTPUT_KS
            for m in ("no-residual", "inverted-ratio", "ratio-without-q")
            if tv(_long_run_output_law(p, q, k, m), sampling.normalise(p)) > 3 * radius + k / OUTPUT_LENGTH]


def _acceptance_controls():
    """(pair, mutation) whose per-guess acceptance beta is so far from alpha that the two radii
    around them cannot overlap, for both checks: the broken sampler's keeps are i.i.d.
    Bernoulli(beta), so the same bounds hold around beta."""
    first = sampling.hoeffding_radius(ACCEPTANCE_STEPS, 1.0, DELTA)
    out = []
    for name, (p, q) in PAIRS.items():
        alpha = sampling.acceptance(p, q)
        for m in ("inverted-ratio", "ratio-without-q"):
            beta = _per_guess_acceptance(p, q, m)
            # Pooled: T >= n judged guesses for either sampler, so s / n bounds both radii.
            pooled = max(_pooled_radius(ACCEPTANCE_STEPS * ACCEPTANCE_K, ACCEPTANCE_STEPS, a) for a in (alpha, beta))
            if abs(beta - alpha) > 2 * max(first, pooled):
                out.append((name, m))
    return out


def _steps_controls():
    out = []
    for name in STEPS_PAIRS:
        p, q = PAIRS[name]
        alpha = sampling.acceptance(p, q)
        for k in STEPS_KS:
            for m in ("inverted-ratio", "ratio-without-q", "no-bonus"):
                law = _tokens_per_step_law(_per_guess_acceptance(p, q, m), k, m)
                if separated(STEPS_N, sampling.tokens_per_step_distribution(alpha, k), law):
                    out.append((name, k, m))
    return out


IID_SHORTFALL = 0.05
IID_MUTATIONS = {
    "acceptance-too-low": f"keeps each guess with probability a - {IID_SHORTFALL} instead of a",
    "no-bonus": "counts k tokens, not k + 1, for a step whose k guesses were all kept",
}


def _broken_iid_tokens_per_step(mutation: str, a: float, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    if mutation == "acceptance-too-low":
        return sampling.iid_tokens_per_step(a - IID_SHORTFALL, k, n, rng)
    return np.minimum(sampling.iid_tokens_per_step(a, k, n, rng), k)


def _broken_iid_law(mutation: str, a: float, k: int) -> np.ndarray:
    if mutation == "acceptance-too-low":
        return sampling.tokens_per_step_distribution(a - IID_SHORTFALL, k)
    return _tokens_per_step_law(a, k, "no-bonus")


def _iid_controls():
    return [(a, k, m) for a in IID_AS for k in STEPS_KS for m in IID_MUTATIONS
            if separated(IID_N, sampling.tokens_per_step_distribution(a, k), _broken_iid_law(m, a, k))]


ALIAS_MUTATIONS = {
    "flipped-coin": "gives the alias where the column's own token should come out, and vice versa",
    "no-alias": "returns the column the integer part of u V picks, ignoring the table: uniform",
}


def _broken_draw(mutation: str, dist, u: np.ndarray) -> np.ndarray:
    keep, alias = sampling.alias_table(dist)
    x = np.asarray(u) * keep.size
    column = np.minimum(x.astype(np.intp), keep.size - 1)
    if mutation == "flipped-coin":
        return np.where(x - column < keep[column], alias[column], column)
    return column


def _broken_draw_law(mutation: str, dist) -> np.ndarray:
    keep, alias = sampling.alias_table(dist)
    size = keep.size
    if mutation == "no-alias":
        return np.full(size, 1.0 / size)
    law = (1.0 - keep) / size  # column i now gives token i with probability 1 - keep[i] ...
    np.add.at(law, alias, keep / size)  # ... and its alias with probability keep[i]
    return law


def _alias_controls():
    """(dist, mutation) whose broken law is more than two radii from dist: the broken draws are
    i.i.d. too, so the check rejects them with probability at least 1 - DELTA."""
    return [(name, m) for name, dist in ALIAS_DISTS.items() for m in ALIAS_MUTATIONS
            if tv(_broken_draw_law(m, dist), sampling.normalise(dist))
            > 2 * sampling.tv_radius(ALIAS_N, dist.size, DELTA)]


# -- reproducibility and the harness --------------------------------------------------------

def test_seeds_are_a_stable_digest_of_the_case():
    # Computed once with
    #   python -c 'import hashlib; print(int.from_bytes(hashlib.sha256(b"output/dirichlet-0/4").digest()[:8], "big"))'
    # A literal cannot follow PYTHONHASHSEED, so neither can the seed if this holds.
    assert seed("output", "dirichlet-0", 4) == 9176091365832568760
    assert seed("output", "dirichlet-0", 4) != seed("output", "dirichlet-0", 8)
    assert np.array_equal(seeded_rng("a", 1).random(3), seeded_rng("a", 1).random(3))


@pytest.mark.parametrize("name", ["dirichlet-0", "disjoint-supports", "q-equals-p"])
@pytest.mark.parametrize("k", [1, 4])
def test_the_broken_sampler_without_a_mutation_is_the_real_sampler(name, k):
    p, q = PAIRS[name]
    real = sampling.speculative_steps(p, q, k, 1_000, seeded_rng("harness", name, k))
    copy = _broken_steps(None, p, q, k, 1_000, seeded_rng("harness", name, k))
    assert np.array_equal(real.tokens, copy.tokens) and np.array_equal(real.accepted, copy.accepted)
    assert np.array_equal(_emitted(real), real.emitted)


@pytest.mark.parametrize("k", OUTPUT_KS)
@pytest.mark.parametrize("name", list(PAIRS))
def test_the_long_run_law_of_the_real_sampler_is_p(name, k):
    # The model that picks the output controls, held to the theorem for the unbroken sampler.
    p, q = PAIRS[name]
    assert np.allclose(_long_run_output_law(p, q, k, None), sampling.normalise(p), atol=1e-12)
    assert _per_guess_acceptance(p, q, None) == pytest.approx(sampling.acceptance(p, q))


def test_every_case_of_every_statistical_test_has_a_negative_control():
    # So that no positive case is a check that could not have failed.
    assert {(n, k) for n, k, _ in _output_controls()} == {(n, k) for n in PAIRS for k in OUTPUT_KS}
    assert {n for n, _ in _acceptance_controls()} == set(PAIRS)
    assert {(n, k) for n, k, _ in _steps_controls()} == {(n, k) for n in STEPS_PAIRS for k in STEPS_KS}
    assert {(a, k) for a, k, _ in _iid_controls()} == {(a, k) for a in IID_AS for k in STEPS_KS}
    assert {n for n, _ in _alias_controls()} == set(ALIAS_DISTS)


@pytest.mark.parametrize("k", STEPS_KS)
@pytest.mark.parametrize("a", IID_AS + (0.0, 1.0))
def test_the_exact_tokens_per_step_law_has_mean_E(a, k):
    law = sampling.tokens_per_step_distribution(a, k)
    assert law.sum() == pytest.approx(1.0) and (law >= 0).all()
    assert law_moments(law)[0] == pytest.approx(float(speculative.expected_tokens(a, k)))


# -- output distribution --------------------------------------------------------------------

@pytest.mark.parametrize("k", OUTPUT_KS)
@pytest.mark.parametrize("name", list(PAIRS))
def test_output_is_distributed_as_the_target(name, k):
    p, q = PAIRS[name]
    tokens = sampling.speculative_sequence(p, q, k, OUTPUT_LENGTH, seeded_rng("output", name, k),
                                           streams=OUTPUT_STREAMS)
    assert tokens.shape == (OUTPUT_STREAMS, OUTPUT_LENGTH) and tokens.min() >= 0
    # Tokens the target never produces must never come out, whatever the draft proposes.
    assert not np.isin(tokens, np.flatnonzero(p == 0)).any()
    verdict = _frequencies_check(tokens, p)
    assert verdict.passed, verdict


@pytest.mark.parametrize("name, k, mutation", _output_controls())
def test_the_output_check_rejects_a_broken_sampler(name, k, mutation, monkeypatch):
    # The real speculative_sequence, cutting the broken sampler's steps exactly as it cuts the real ones.
    p, q = PAIRS[name]
    monkeypatch.setattr(sampling, "speculative_steps", functools.partial(_broken_steps, mutation))
    tokens = sampling.speculative_sequence(p, q, k, OUTPUT_LENGTH, seeded_rng("output", name, k, mutation),
                                           streams=OUTPUT_STREAMS)
    verdict = _frequencies_check(tokens, p)
    assert not verdict.passed, f"{MUTATIONS[mutation]} went unnoticed: {verdict}"


# -- acceptance ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(PAIRS))
def test_measured_acceptance_is_the_overlap_of_p_and_q(name):
    p, q = PAIRS[name]
    steps = sampling.speculative_steps(p, q, ACCEPTANCE_K, ACCEPTANCE_STEPS, seeded_rng("acceptance", name))
    alpha = sampling.acceptance(p, q)
    assert alpha == pytest.approx(np.minimum(p, q).sum())
    for verdict in (_first_kept_check(steps, alpha), _pooled_acceptance_check(steps, alpha)):
        assert verdict.passed, verdict


@pytest.mark.parametrize("name, mutation", _acceptance_controls())
def test_the_acceptance_checks_reject_a_broken_sampler(name, mutation):
    p, q = PAIRS[name]
    steps = _broken_steps(mutation, p, q, ACCEPTANCE_K, ACCEPTANCE_STEPS, seeded_rng("acceptance", name, mutation))
    alpha = sampling.acceptance(p, q)
    for verdict in (_first_kept_check(steps, alpha), _pooled_acceptance_check(steps, alpha)):
        assert not verdict.passed, f"{MUTATIONS[mutation]} went unnoticed: {verdict}"


def test_q_equal_p_accepts_every_guess_and_disjoint_supports_none():
    p, q = PAIRS["q-equals-p"]
    steps = sampling.speculative_steps(p, q, 4, 10_000, seeded_rng("extremes", "q-equals-p"))
    assert (steps.accepted == 4).all()
    p, q = PAIRS["disjoint-supports"]
    steps = sampling.speculative_steps(p, q, 4, 10_000, seeded_rng("extremes", "disjoint-supports"))
    assert (steps.accepted == 0).all()


# -- tokens per step -----------------------------------------------------------------------

@pytest.mark.parametrize("k", STEPS_KS)
@pytest.mark.parametrize("name", STEPS_PAIRS)
def test_tokens_per_step_of_the_real_sampler_match_E(name, k):
    p, q = PAIRS[name]
    steps = sampling.speculative_steps(p, q, k, STEPS_N, seeded_rng("tokens-per-step", name, k))
    emitted = _emitted(steps)
    assert np.array_equal(emitted, steps.emitted)
    assert emitted.min() >= 1 and emitted.max() <= k + 1
    verdict = _tokens_per_step_check(emitted, sampling.acceptance(p, q), k)
    assert verdict.passed, verdict


@pytest.mark.parametrize("name, k, mutation", _steps_controls())
def test_the_tokens_per_step_check_rejects_a_broken_sampler(name, k, mutation):
    p, q = PAIRS[name]
    steps = _broken_steps(mutation, p, q, k, STEPS_N, seeded_rng("tokens-per-step", name, k, mutation))
    verdict = _tokens_per_step_check(_emitted(steps), sampling.acceptance(p, q), k)
    assert not verdict.passed, f"{MUTATIONS[mutation]} went unnoticed: {verdict}"


@pytest.mark.parametrize("k", STEPS_KS)
@pytest.mark.parametrize("a", IID_AS)
def test_tokens_per_step_under_iid_acceptance_match_E(a, k):
    verdict = _tokens_per_step_check(sampling.iid_tokens_per_step(a, k, IID_N, seeded_rng("iid", a, k)), a, k)
    assert verdict.passed, verdict


@pytest.mark.parametrize("a, k, mutation", _iid_controls())
def test_the_tokens_per_step_check_rejects_broken_iid_counts(a, k, mutation):
    counts = _broken_iid_tokens_per_step(mutation, a, k, IID_N, seeded_rng("iid", a, k, mutation))
    verdict = _tokens_per_step_check(counts, a, k)
    assert not verdict.passed, f"a sampler that {IID_MUTATIONS[mutation]} went unnoticed: {verdict}"


# -- the alias method ----------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ALIAS_DISTS))
def test_alias_draws_follow_the_distribution_and_skip_zero_mass(name):
    dist = ALIAS_DISTS[name]
    got = sampling.draw(dist, seeded_rng("alias", name).random(ALIAS_N))
    assert not np.isin(got, np.flatnonzero(dist == 0)).any()
    verdict = _frequencies_check(got, dist)
    assert verdict.passed, verdict


@pytest.mark.parametrize("name, mutation", _alias_controls())
def test_the_frequency_check_rejects_a_broken_alias_draw(name, mutation):
    dist = ALIAS_DISTS[name]
    draws = _broken_draw(mutation, dist, seeded_rng("alias", name, mutation).random(ALIAS_N))
    verdict = _frequencies_check(draws, dist)
    assert not verdict.passed, f"a draw that {ALIAS_MUTATIONS[mutation]} went unnoticed: {verdict}"


# -- the figure ----------------------------------------------------------------------------

def test_the_figure_grid_passes_its_own_check():
    g = sampling.figure_grid(FIGURE_DRIFT)
    failed = [str(v) for v in _figure_grid_check(g) if not v.passed]
    assert not failed, failed
    # The draft really does move: at the far end it is further from p than sampling noise by far.
    assert tv(g.draft[-1], g.target) > 20 * sampling.tv_radius(g.tokens, g.target.size, DELTA)
    assert g.alpha[0] == pytest.approx(1.0) and np.all(np.diff(g.alpha) < 0)


# Not "no-bonus": the grid counts a step's tokens as accepted + 1 (`Steps.emitted`), not from its
# token row, and a missing bonus token leaves the output law at p, so nothing in the grid shows it.
# The real-sampler test counts the token row and its control catches the mutation.
FIGURE_MUTATIONS = ("inverted-ratio", "ratio-without-q", "no-residual")


@pytest.mark.parametrize("mutation", FIGURE_MUTATIONS)
def test_the_figure_grid_check_rejects_a_broken_sampler(mutation, monkeypatch):
    # The grid's own code with the broken steps in; __wrapped__ keeps the result out of its cache.
    monkeypatch.setattr(sampling, "speculative_steps", functools.partial(_broken_steps, mutation))
    g = sampling._figure_grid.__wrapped__(tuple(FIGURE_DRIFT), sampling.FIGURE_TOKENS, sampling.FIGURE_STEPS,
                                          sampling.FIGURE_SEED)
    assert any(not v.passed for v in _figure_grid_check(g)), f"{MUTATIONS[mutation]} went unnoticed"


def test_the_figure_grid_is_seeded_and_small():
    a = sampling._figure_grid.__wrapped__(tuple(FIGURE_DRIFT), sampling.FIGURE_TOKENS, sampling.FIGURE_STEPS,
                                          sampling.FIGURE_SEED)
    b = sampling.figure_grid(FIGURE_DRIFT)
    assert np.array_equal(a.speculative, b.speculative) and np.array_equal(a.measured, b.measured)
    # The build-time cost is bounded by construction: a few million uniform draws for the whole grid.
    assert a.draws < 3_000_000
