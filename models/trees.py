"""Drafts that branch: a tree of guesses verified in one target pass.

The draft proposes `branches` separate chains of guesses, each `depth` tokens long, all starting
from the last accepted token. The target checks every node in one pass. The acceptance rule
(the page states it): the target emits one token per position, so of a node's children at most
one can be kept. It tries them one after another (SpecInfer's multi-draft rule,
`models.sampling.tree_steps`): the j-th is judged against what the target's distribution has
left after the j - 1 rejections before it, so it is kept less often than the first
(`sampling.sibling_acceptance`, the acceptance vector). The first child kept continues the path,
alone, as a chain kept at `a` a guess; the pass yields the accepted path plus the target's own
token. Only the root has several children here. Trying siblings as if each were kept at `a`
independently would overstate the yield: two different first guesses cannot both be the target's
token, and a guess the draft ranks second is a worse guess. A chain of k guesses is the tree of
one branch of depth k (`speculative.expected_tokens`).

The vector depends on the draft's and the target's distributions, not on `a` alone. The page's
one dial is mapped onto the sampler's pair (`sampling.figure_target` and `figure_draft`: a Zipf
target over 8 tokens and a draft drifting towards a reversed one), which covers `a` from 0.252 up;
a caller with a measured vector passes it as `siblings`; under greedy decoding that is a draft
head's top-b accuracies, turned into a vector by `ranked_acceptance`.

Cost, priced by `roofline.step_time` like a chain's:
- drafting: `depth` draft passes, reading each request's draft cache once: the first over one
  position per request (all first guesses come from the same next-token distribution), each
  later one over `branches` positions per request (one new node on every branch);
- verifying: one target pass over nodes + 1 positions per request, reading each request's
  cache once. A tree verifies many positions per request, so a batch reaches the ridge sooner.
Attention within the tree (each node to its ancestors) is a few positions per node and is left
out, as a chain's is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import speculative
from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision
from .roofline import step_seconds
from .sampling import sibling_acceptance


@dataclass(frozen=True)
class Tree:
    branches: int
    depth: int

    @property
    def nodes(self) -> int:
        return self.branches * self.depth

    def root(self, a, siblings=None) -> np.ndarray:
        """P(the root keeps one of its children's guesses) = 1 - prod_j (1 - a_j), over the
        acceptance vector a_1 = a, a_2, ... (`siblings`, default the sampler's pair at `a`:
        `sampling.sibling_acceptance`; pass [a] * branches for siblings kept independently)."""
        a = np.asarray(a, dtype=float)
        if self.branches == 1:  # a chain: its one first guess is kept at `a`, whatever the pair
            return a + 0.0
        if siblings is not None:
            vec = np.broadcast_to(np.asarray(siblings, dtype=float), a.shape + (self.branches,))
        else:
            vec = np.array([sibling_acceptance(float(x), self.branches) for x in a.ravel()]).reshape(
                a.shape + (self.branches,))
        return 1.0 - np.prod(1.0 - vec, axis=-1)

    def reach(self, a, siblings=None) -> np.ndarray:
        """P(the accepted path reaches depth i), for i = 1 .. depth: the root keeps a first guess
        (`root`), and then the followed branch's next i - 1 guesses hold, each at `a`."""
        a = np.asarray(a, dtype=float)
        i = np.arange(1, self.depth + 1)
        return self.root(a, siblings)[..., None] * a[..., None] ** (i - 1)

    def expected_tokens(self, a, siblings=None) -> np.ndarray:
        """Mean tokens a verify pass yields: 1 (the target's own) + sum over i of P(depth >= i)."""
        out = 1.0 + self.reach(a, siblings).sum(axis=-1)
        return out if out.ndim else float(out)

    def tokens_distribution(self, a: float, siblings=None) -> np.ndarray:
        """P(a pass yields t tokens) for t = 1 .. depth + 1."""
        reach = np.concatenate([[1.0], self.reach(a, siblings), [0.0]])
        return reach[:-1] - reach[1:]


def ranked_acceptance(covered) -> np.ndarray:
    """Greedy decoding's acceptance vector, from how often the target's token is among the draft's
    b most likely distinct tokens, c_1 <= c_2 <= ... (a draft head's top-b accuracy). The root's
    children are those tokens, best first, and the j-th is kept when the target's token is the
    draft's j-th choice; the target reaches it only when the j - 1 before it missed, so
    a_j = (c_j - c_(j-1)) / (1 - c_(j-1)), with c_0 = 0. `Tree.root` over this vector gives back
    c_b: a top-b accuracy measured against the target's greedy tokens is the tree's first-position
    coverage under greedy decoding (one measured against a text's tokens stands in for it)."""
    c = np.asarray(covered, dtype=float)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"need a list of top-1, top-2, ... accuracies, got {covered!r}")
    before = np.concatenate([[0.0], c[:-1]])
    if np.any(c < before) or c[0] < 0.0 or c[-1] > 1.0:
        raise ValueError(f"top-b accuracies must rise from 0 to at most 1 with b, got {covered!r}")
    if np.any(before >= 1.0):
        raise ValueError(f"a top-b accuracy of 1 leaves nothing for the guesses after it: {covered!r}")
    return (c - before) / (1.0 - before)


def chain(k: int) -> Tree:
    return Tree(1, k)


def accepted_depths(tree: Tree, a: float, n: int, rng: np.random.Generator, siblings=None) -> np.ndarray:
    """`n` verify passes played out node by node under the acceptance rule: every node draws
    its own acceptance, the j-th first guess at the vector's a_j (`Tree.root`) and every guess
    below it at `a`; the first branch (in order) whose first guess holds is followed, and keeps
    guesses up to its first rejection. Returns the tokens each pass yields (accepted depth + 1)."""
    if siblings is None:
        siblings = [a] if tree.branches == 1 else sibling_acceptance(float(a), tree.branches)
    vec = np.asarray(siblings, dtype=float)
    rate = np.concatenate([np.broadcast_to(vec, (tree.branches,))[:, None],
                           np.full((tree.branches, tree.depth - 1), float(a))], axis=1)
    kept = rng.random((n, tree.branches, tree.depth)) < rate
    run = np.cumprod(kept, axis=-1).sum(axis=-1)  # accepted prefix of each branch
    any_first = kept[:, :, 0].any(axis=-1)
    followed = np.argmax(kept[:, :, 0], axis=-1)  # the first branch whose first guess holds
    return np.where(any_first, run[np.arange(n), followed], 0) + 1


def step_s(acc: Accelerator, target: LLM, draft: LLM, cards, batch, tree: Tree, context=0.0,
           precision: Precision = BF16_ALL) -> np.ndarray:
    """Draft the tree level by level, then verify every node in one target pass. The first level
    is one draft pass over the batch: every branch's first guess is drawn from the same next-token
    distribution. Each later level extends every branch, over batch x branches positions."""
    batch = np.asarray(batch, dtype=float)
    first = step_seconds(acc, draft, cards, batch, context, precision=precision)
    level = step_seconds(acc, draft, cards, batch * tree.branches, context, requests=batch, precision=precision)
    verify = speculative.verify_step_s(acc, target, cards, batch, tree.nodes, context, precision)
    return first + (tree.depth - 1) * level + verify


def speedup(acc: Accelerator, target: LLM, draft: LLM, cards, batch, a, tree: Tree, context=0.0,
            precision: Precision = BF16_ALL) -> np.ndarray:
    """Tokens per second with the tree over tokens per second of plain decoding, same batch."""
    plain = speculative.plain_step_s(acc, target, cards, batch, context, precision)
    return tree.expected_tokens(a) * plain / step_s(acc, target, draft, cards, batch, tree, context, precision)


def breakeven_batch(acc: Accelerator, target: LLM, draft: LLM, cards, a, tree: Tree, context=0.0,
                    max_batch: int = 1 << 16, precision: Precision = BF16_ALL):
    """Smallest batch at which the tree is slower than plain decoding (`speculative.breakeven_batch`)."""
    a = np.asarray(a, dtype=float)
    out = speculative.first_slower_batch(
        lambda batch: speedup(acc, target, draft, cards, batch, a, tree, context, precision) < 1.0, a.shape, max_batch)
    return out if out.ndim else int(out)
