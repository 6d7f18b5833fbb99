"""Speculative sampling simulated: the rejection scheme of Leviathan et al. and Chen et al.

A draft distribution q proposes k tokens; each guess x is kept with probability
min(1, p(x) / q(x)) under the target p. At the first rejection the step emits one token
drawn from the positive part of p - q, renormalised, and stops. If all k guesses survive it
emits one bonus token drawn from p. Every emitted token is then distributed as p, whatever q.

The distributions here do not depend on the context, so steps are independent and a whole
batch of them is drawn with a handful of array operations. Pure numpy: no MkDocs, no altair.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .speculative import expected_tokens

# The figure's grid: a small vocabulary, a target that falls off like Zipf's law, and the
# sample sizes that keep the whole grid to a few tens of milliseconds.
FIGURE_VOCAB = 8
FIGURE_ZIPF = 1.1
FIGURE_FAR_ZIPF = 2.0               # the far draft: a steeper Zipf, reversed
FIGURE_LOOKAHEAD = 4                # k for the output-frequency panel
FIGURE_LOOKAHEADS = (1, 2, 4, 8)    # k for the tokens-per-step panel
FIGURE_TOKENS = 8_000               # tokens per distribution and slider position
FIGURE_STEPS = 4_000                # verify steps per lookahead and slider position
FIGURE_SEED = 20230202


def normalise(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError("a distribution needs non-negative finite weights with a positive sum")
    return w / w.sum()


def zipf(vocab: int, s: float = FIGURE_ZIPF) -> np.ndarray:
    """p(i) proportional to 1 / (i + 1)^s over `vocab` tokens."""
    return normalise(1.0 / np.arange(1, vocab + 1, dtype=float) ** s)


def mix(p, r, t: float) -> np.ndarray:
    """(1 - t) p + t r: a draft that drifts from p (t = 0) to r (t = 1)."""
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"mixing weight must be in [0, 1], got {t}")
    return normalise((1.0 - t) * normalise(p) + t * normalise(r))


def acceptance(p, q) -> float:
    """Per-guess acceptance rate sum_x min(p(x), q(x)), which is 1 - TV(p, q)."""
    return float(np.minimum(normalise(p), normalise(q)).sum())


def total_variation(p, q) -> float:
    return 0.5 * float(np.abs(normalise(p) - normalise(q)).sum())


def residual(p, q) -> np.ndarray:
    """norm(max(0, p - q)): where a rejected guess is replaced from. p itself when p == q
    (then no guess is ever rejected, so the choice never matters)."""
    r = np.maximum(normalise(p) - normalise(q), 0.0)
    return r / r.sum() if r.sum() > 0 else normalise(p)


def alias_table(dist) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table: column i keeps token i with probability keep[i], else gives alias[i].

    Built with Vose's two-list method. A token of zero mass keeps nothing, so it never comes out.
    """
    p = normalise(dist)
    scaled = p * p.size
    keep, alias = np.zeros(p.size), np.arange(p.size)
    small = [i for i in range(p.size) if scaled[i] < 1.0]
    large = [i for i in range(p.size) if scaled[i] >= 1.0]
    while small and large:
        lo, hi = small.pop(), large.pop()
        keep[lo], alias[lo] = scaled[lo], hi
        scaled[hi] += scaled[lo] - 1.0
        (small if scaled[hi] < 1.0 else large).append(hi)
    for i in small + large:  # whatever rounding left over is a full column of its own token
        keep[i], alias[i] = (1.0, i) if p[i] > 0 else (0.0, int(np.argmax(p)))
    return keep, alias


def draw(dist, u: np.ndarray) -> np.ndarray:
    """One token per uniform in `u` (any shape), by the alias method: the integer part of
    u * V picks a column, the fractional part decides between its two tokens."""
    keep, alias = alias_table(dist)
    x = np.asarray(u) * keep.size
    column = np.minimum(x.astype(np.intp), keep.size - 1)
    return np.where(x - column < keep[column], column, alias[column])


@dataclass(frozen=True)
class Steps:
    """`n` independent verify steps of lookahead `k`."""

    tokens: np.ndarray    # (n, k + 1) emitted tokens in order, -1 after the last one
    accepted: np.ndarray  # (n,) guesses kept before the first rejection, 0..k

    @property
    def emitted(self) -> np.ndarray:
        """Tokens each step yields: the kept guesses plus the replacement or bonus token."""
        return self.accepted + 1

    @property
    def k(self) -> int:
        return self.tokens.shape[1] - 1

    def acceptance_rate(self) -> float:
        """Kept guesses over guesses the target judged (each step judges up to its first rejection)."""
        judged = np.minimum(self.accepted + 1, self.k)
        return float(self.accepted.sum() / judged.sum())


def speculative_steps(p, q, k: int, n: int, rng: np.random.Generator, resample=None) -> Steps:
    """Run `n` independent speculative steps of lookahead `k` with draft q and target p.

    `resample` overrides the distribution a rejected guess is replaced from; it exists so that
    tests can show what goes wrong without the residual. Leave it out for the real algorithm.
    """
    p, q = normalise(p), normalise(q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must share a vocabulary, got {p.size} and {q.size} tokens")
    if k < 1 or n < 1:
        raise ValueError(f"need k >= 1 and n >= 1, got k={k}, n={n}")
    guesses = draw(q, rng.random((n, k)))
    # Keep x with probability min(1, p(x)/q(x)). A drawn x has q(x) > 0; the ratio elsewhere is unused.
    keep_prob = np.minimum(1.0, np.divide(p, q, out=np.zeros_like(p), where=q > 0))
    kept = rng.random((n, k)) < keep_prob[guesses]
    accepted = np.where(kept.all(axis=1), k, np.argmin(kept, axis=1))
    fix = draw(residual(p, q) if resample is None else normalise(resample), rng.random(n))
    bonus = draw(p, rng.random(n))
    last = np.where(accepted == k, bonus, fix)
    col = np.arange(k + 1)
    tokens = np.where(col < accepted[:, None], np.concatenate([guesses, guesses[:, :1]], axis=1), -1)
    tokens[np.arange(n), accepted] = last
    return Steps(tokens, accepted)


def speculative_sequence(p, q, k: int, length: int, rng: np.random.Generator, streams: int = 1,
                         resample=None) -> np.ndarray:
    """(streams, length) tokens: each stream's steps laid end to end, cut at `length`.

    A step yields at least one token, so `length` steps per stream always suffice. Because
    every emitted token is p-distributed given all tokens before it, each row is `length`
    independent draws from p when the algorithm is right.
    """
    steps = speculative_steps(p, q, k, streams * length, rng, resample)
    flat = steps.tokens.reshape(streams, length * (k + 1))
    valid = flat >= 0
    position = np.cumsum(valid, axis=1) - 1
    keep = valid & (position < length)
    out = np.empty((streams, length), dtype=np.int64)
    rows, cols = np.nonzero(keep)
    out[rows, position[rows, cols]] = flat[rows, cols]
    return out


def plain_sample(p, n: int, rng: np.random.Generator) -> np.ndarray:
    """Ordinary decoding: n tokens straight from p."""
    return draw(normalise(p), rng.random(n))


def iid_tokens_per_step(a: float, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens per verify step when each guess is kept independently with probability a."""
    kept = rng.random((n, k)) < a
    return np.where(kept.all(axis=1), k, np.argmin(kept, axis=1)) + 1


def tv_radius(n: int, vocab: int, delta: float) -> float:
    """Total-variation distance from p that the frequencies of n i.i.d. draws from p exceed
    with probability at most delta.

    Weissman et al. (2003), "Inequalities for the L1 deviation of the empirical distribution":
    P(||p_hat - p||_1 >= e) <= (2^V - 2) exp(-n e^2 / 2) for any p over V symbols. Setting the
    right-hand side to delta and halving (TV is half the L1 distance) gives the radius.
    """
    return 0.5 * float(np.sqrt(2.0 * (vocab * np.log(2.0) + np.log(1.0 / delta)) / n))


def hoeffding_radius(n: int, span: float, delta: float) -> float:
    """|mean - expectation| that n i.i.d. draws confined to an interval of width `span` exceed
    with probability at most delta: Hoeffding's 2 exp(-2 n t^2 / span^2) = delta, solved for t."""
    return span * float(np.sqrt(np.log(2.0 / delta) / (2.0 * n)))


def bernstein_radius(n: int, variance: float, span: float, delta: float) -> float:
    """The same for draws of known variance that stray at most `span` from their mean
    (Bernstein's inequality): sqrt(2 var ln(2/delta) / n) + 2 span ln(2/delta) / (3 n)."""
    log = float(np.log(2.0 / delta))
    return float(np.sqrt(2.0 * variance * log / n)) + 2.0 * span * log / (3.0 * n)


def tokens_per_step_distribution(a: float, k: int) -> np.ndarray:
    """P(a step yields j tokens) for j = 1..k+1 when each guess is kept independently with
    probability a: the first j - 1 kept and the next rejected, or all k kept."""
    j = np.arange(1, k + 1)
    return np.r_[a ** (j - 1) * (1.0 - a), a ** k]


def frequencies(tokens: np.ndarray, vocab: int) -> np.ndarray:
    return np.bincount(tokens.ravel(), minlength=vocab) / tokens.size


# -- the figure's pair and grid ------------------------------------------------------------

def figure_target(vocab: int = FIGURE_VOCAB) -> np.ndarray:
    return zipf(vocab)


def figure_far_draft(vocab: int = FIGURE_VOCAB) -> np.ndarray:
    """The draft at the far end of the slider: a steep Zipf in reverse, confident where p is not."""
    return zipf(vocab, FIGURE_FAR_ZIPF)[::-1].copy()


def figure_draft(distance: float, vocab: int = FIGURE_VOCAB) -> np.ndarray:
    """q at slider position `distance`: p at 0, the reversed target at 1, linear between,
    so the acceptance rate falls linearly from 1."""
    return mix(figure_target(vocab), figure_far_draft(vocab), distance)


@dataclass(frozen=True)
class FigureGrid:
    distance: np.ndarray     # (D,) slider positions
    alpha: np.ndarray        # (D,) exact acceptance sum min(p, q)
    target: np.ndarray       # (V,) p
    draft: np.ndarray        # (D, V) q at each position
    plain: np.ndarray        # (D, V) token frequencies of plain sampling
    speculative: np.ndarray  # (D, V) token frequencies of speculative sampling, k = FIGURE_LOOKAHEAD
    lookaheads: np.ndarray   # (K,)
    measured: np.ndarray     # (D, K) mean tokens per verify step
    expected: np.ndarray     # (D, K) E(alpha, k)
    measured_alpha: np.ndarray  # (D,) kept guesses over judged guesses, k = FIGURE_LOOKAHEAD run
    tokens: int              # sample size behind each frequency row
    steps: int               # sample size behind each tokens-per-step value

    @property
    def draws(self) -> int:
        """Uniform random numbers the grid consumed: the measure of its cost."""
        per_pos = self.tokens + self.tokens * (2 * FIGURE_LOOKAHEAD + 2) \
            + sum(self.steps * (2 * k + 2) for k in self.lookaheads.tolist())
        return per_pos * len(self.distance)


def figure_grid(distances, tokens: int = FIGURE_TOKENS, steps: int = FIGURE_STEPS,
                seed: int = FIGURE_SEED) -> FigureGrid:
    """Simulate every slider position; seeded, so the same inputs give the same bytes."""
    return _figure_grid(tuple(round(float(d), 9) for d in np.asarray(distances).ravel()), tokens, steps, seed)


@lru_cache(maxsize=8)
def _figure_grid(distances: tuple[float, ...], tokens: int, steps: int, seed: int) -> FigureGrid:
    rng = np.random.default_rng(seed)
    p = figure_target()
    ks = np.array(FIGURE_LOOKAHEADS)
    drafts, plain, spec, measured, alpha, measured_alpha = [], [], [], [], [], []
    for d in distances:
        q = figure_draft(d)
        drafts.append(q)
        alpha.append(acceptance(p, q))
        plain.append(frequencies(plain_sample(p, tokens, rng), p.size))
        run = speculative_steps(p, q, FIGURE_LOOKAHEAD, tokens, rng)
        # The first `tokens` tokens of the steps laid end to end, exactly as a reader would get them.
        flat = run.tokens[run.tokens >= 0][:tokens]
        spec.append(frequencies(flat, p.size))
        measured_alpha.append(run.acceptance_rate())
        measured.append([speculative_steps(p, q, int(k), steps, rng).emitted.mean() for k in ks])
    alpha_arr = np.array(alpha)
    return FigureGrid(
        distance=np.array(distances), alpha=alpha_arr, target=p, draft=np.array(drafts),
        plain=np.array(plain), speculative=np.array(spec), lookaheads=ks, measured=np.array(measured),
        expected=expected_tokens(alpha_arr[:, None], ks[None, :]), measured_alpha=np.array(measured_alpha),
        tokens=tokens, steps=steps,
    )
