"""Speculative sampling simulated: the rejection scheme of Leviathan et al. and Chen et al.

A draft distribution q proposes k tokens; each guess x is kept with probability
min(1, p(x) / q(x)) under the target p. At the first rejection the step emits one token
drawn from the positive part of p - q, renormalised, and stops. If all k guesses survive it
emits one bonus token drawn from p. Every emitted token is then distributed as p, whatever q.
`tree_steps` plays the same scheme on a tree of guesses, several first guesses tried in turn.

The distributions here do not depend on the context, so steps are independent and a whole
batch of them is drawn with a handful of array operations. Pure numpy: no MkDocs, no altair.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .speculative import expected_tokens

if TYPE_CHECKING:  # only for annotations: trees pulls in the roofline, which sampling does not need
    from .trees import Tree

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


def keep_probability(target, draft) -> np.ndarray:
    """min(1, target(x) / draft(x)) for every token x: the chance that a guess x drawn from the
    draft survives verification against `target` (which may stack several targets along leading
    axes). A drawn x has draft(x) > 0; the 0 given elsewhere is never used."""
    target, draft = np.asarray(target, dtype=float), np.asarray(draft, dtype=float)
    shape = np.broadcast_shapes(target.shape, draft.shape)
    return np.minimum(1.0, np.divide(target, draft, out=np.zeros(shape), where=draft > 0))


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
    kept = rng.random((n, k)) < keep_probability(p, q)[guesses]
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
    return lay_end_to_end(speculative_steps(p, q, k, streams * length, rng, resample).tokens, streams, length)


def lay_end_to_end(tokens: np.ndarray, streams: int, length: int) -> np.ndarray:
    """(streams, length): the rows of `tokens` (one step or pass each, -1 padded, `length`
    consecutive rows per stream) laid end to end within each stream and cut at `length`. Every
    row holds at least one token, so `length` rows always fill a stream."""
    flat = np.asarray(tokens).reshape(streams, -1)
    valid = flat >= 0
    position = np.cumsum(valid, axis=1) - 1
    keep = valid & (position < length)
    out = np.empty((streams, length), dtype=np.int64)
    rows, cols = np.nonzero(keep)
    out[rows, position[rows, cols]] = flat[rows, cols]
    return out


# -- trees of guesses ---------------------------------------------------------------------

def sibling_targets(p, q, branches: int) -> np.ndarray:
    """(branches + 1, V): r_1 = p and r_(j+1) = residual(r_j, q). The root verifies its j-th child
    against r_j, and emits a draw from r_(b+1) when all b children are rejected. A rejection moves
    r the same way whichever token was rejected, so the sequence is fixed in advance."""
    if branches < 1:
        raise ValueError(f"need at least one branch, got {branches}")
    q = normalise(q)
    out = [normalise(p)]
    for _ in range(branches):
        out.append(residual(out[-1], q))
    return np.array(out)


def root_coverage(p, q, branches: int) -> float:
    """P(the root keeps one of its children's guesses) = 1 - prod_j (1 - acceptance(r_j, q)):
    child j is tried only when the j - 1 before it were rejected, and is then a fresh draw from q
    judged against r_j. When p is uniform on part of q's uniform support every r_j is p, and this
    is the closed form's 1 - (1 - a)^branches (`trees.Tree.reach`); in general the residuals sit
    where q is thin, so later children are kept less often than the first."""
    q = normalise(q)
    rejected = [1.0 - acceptance(r, q) for r in sibling_targets(p, q, branches)[:-1]]
    return 1.0 - float(np.prod(rejected))


@dataclass(frozen=True)
class TreeSteps(Steps):
    """`n` independent verify passes of a tree: `tokens` is (n, depth + 1) and `accepted` counts
    the guesses kept along the followed path, 0..depth, so `k` is the tree's depth."""

    branch: np.ndarray  # (n,) the branch followed, 0-based, or -1 where the root kept no guess
    branches: int

    def acceptance_rate(self) -> float:
        """Kept guesses over guesses the target judged: at the root the first guesses tried, up
        to the one kept (all of them when none is), then the followed branch's guesses up to its
        first rejection. With one branch this is `Steps.acceptance_rate`."""
        at_root = np.where(self.branch >= 0, self.branch + 1, self.branches)
        below = np.where(self.accepted >= 1, np.minimum(self.accepted, self.k - 1), 0)
        return float(self.accepted.sum() / (at_root + below).sum())


def _below_root(p, q, k: int, n: int, rng: np.random.Generator) -> Steps:
    """What a followed branch does after its first guess: a chain step over its k remaining
    guesses, or for k = 0 just the bonus token from p."""
    if k >= 1:
        return speculative_steps(p, q, k, n, rng)
    return Steps(draw(p, rng.random(n))[:, None], np.zeros(n, dtype=np.intp))


def tree_steps(p, q, tree: Tree, n: int, rng: np.random.Generator) -> TreeSteps:
    """Run `n` independent verify passes of a draft tree (`trees.Tree`) with draft q and target p:
    exact multi-draft speculative sampling (SpecInfer, Miao et al. 2024, arXiv 2305.09781).

    The draft proposes `tree.branches` chains of `tree.depth` guesses, each guess a draw from q.
    The root tries the branches' first guesses in order, the j-th against r_j
    (`sibling_targets`): kept with probability min(1, r_j(x) / q(x)), else on to the next. The
    first one kept is followed, and its branch alone goes on as an ordinary chain step: kept with
    probability min(1, p/q) up to the first rejection, which is replaced from residual(p, q), or a
    bonus token from p when every guess holds. If the root keeps none, the pass emits one token
    drawn from r_(b+1). Branches whose first guesses coincide are not merged: merging (one node
    holding the union of their children) could only add depth, and exactness does not need it.
    The guesses below the root of branches that are not followed are never judged, so only the
    followed branch's are drawn: they are fresh draws from q either way.

    Why the output is p. One try with target r: a guess x ~ q is kept and emitted with
    probability q(x) min(1, r(x)/q(x)) = min(q(x), r(x)), and rejected with probability
    1 - acceptance(r, q), and (1 - acceptance(r, q)) residual(r, q) = max(0, r - q). Since
    min(q, r) + max(0, r - q) = r, a try that, when rejected, hands over to anything that emits
    residual(r, q) whatever was rejected emits r exactly. The next child is a fresh draw
    from q, independent of the rejected ones, so by induction back from r_(b+1) (emitted outright
    when every child fails) the j-th try emits r_j, and the root emits r_1 = p. Below the root the
    followed branch is the chain sampler, whose every token is p given the ones before it. So
    given all that came before, each token a pass emits is p-distributed, and passes laid end to
    end (`tree_sequence`) are i.i.d. draws from p. With one branch, r_2 = residual(p, q) and the
    pass is the chain step of lookahead `depth` (`speculative_steps`), in law.
    """
    p, q = normalise(p), normalise(q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must share a vocabulary, got {p.size} and {q.size} tokens")
    b, depth = tree.branches, tree.depth
    if b < 1 or depth < 1 or n < 1:
        raise ValueError(f"need branches, depth and n >= 1, got {b}, {depth} and {n}")
    targets = sibling_targets(p, q, b)
    firsts = draw(q, rng.random((n, b)))
    kept = rng.random((n, b)) < keep_probability(targets[:b], q)[np.arange(b), firsts]
    rooted = kept.any(axis=1)
    branch = np.where(rooted, np.argmax(kept, axis=1), -1)
    fallback = draw(targets[b], rng.random(n))
    below = _below_root(p, q, depth - 1, n, rng)
    first = np.where(rooted, firsts[np.arange(n), np.maximum(branch, 0)], fallback)
    tokens = np.concatenate([first[:, None], np.where(rooted[:, None], below.tokens, -1)], axis=1)
    return TreeSteps(tokens, np.where(rooted, below.accepted + 1, 0), branch, b)


def tree_sequence(p, q, tree: Tree, length: int, rng: np.random.Generator, streams: int = 1) -> np.ndarray:
    """(streams, length) tokens: each stream's tree passes laid end to end, cut at `length`; as
    `speculative_sequence`, `length` i.i.d. draws from p per row when the sampler is right."""
    return lay_end_to_end(tree_steps(p, q, tree, streams * length, rng).tokens, streams, length)


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


def figure_distance(a: float, vocab: int = FIGURE_VOCAB) -> float:
    """The slider position at which the figure's draft is kept with probability `a`: acceptance
    falls linearly, sum min(p, (1 - d) p + d r) = 1 - d TV(p, r), so d = (1 - a) / TV(p, r). The
    pair reaches down to a = 1 - TV(p, r) (0.252 for the figure's pair) and no further."""
    floor = 1.0 - total_variation(figure_target(vocab), figure_far_draft(vocab))
    if not floor - 1e-12 <= a <= 1.0:
        raise ValueError(f"the figure's pair of distributions keeps a guess with probability {floor:.3f} to 1, "
                         f"not {a:g}")
    return min(max((1.0 - a) / (1.0 - floor), 0.0), 1.0)


@lru_cache(maxsize=4096)
def sibling_acceptance(a: float, branches: int, vocab: int = FIGURE_VOCAB) -> tuple[float, ...]:
    """How often the root keeps its j-th child's guess, j = 1 .. branches, given that it tried it
    (all before it rejected), for the figure's pair at acceptance `a`: the first against p, at `a`;
    each later one against the residual left by the rejections before it (`sibling_targets`).
    Sequoia calls this the acceptance vector. It falls with j: the residuals sit where q is thin."""
    p, q = figure_target(vocab), figure_draft(figure_distance(a, vocab), vocab)
    return tuple(acceptance(r, q) for r in sibling_targets(p, q, branches)[:branches])


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
