"""Trees of draft guesses (models.trees): the closed form, the node-by-node rule, the price."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models import sampling, speculative, trees
from models.catalogue import load_catalogue

pytestmark = pytest.mark.unit

CAT = load_catalogue()
ACC, TARGET, DRAFT = CAT.accelerator("h100-sxm"), CAT.model("llama-3-70b"), CAT.model("llama-3.2-1b")
A = np.linspace(0.0, 1.0, 21)


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_a_tree_of_one_branch_is_the_chain(k):
    assert np.allclose(trees.chain(k).expected_tokens(A), speculative.expected_tokens(A, k), rtol=1e-12)
    for batch in (1, 16, 256):
        assert math.isclose(trees.speedup(ACC, TARGET, DRAFT, 4, batch, 0.8, trees.chain(k), 512),
                            speculative.speedup(ACC, TARGET, DRAFT, 4, batch, 0.8, k, 512), rel_tol=1e-12)
    assert (trees.breakeven_batch(ACC, TARGET, DRAFT, 4, 0.8, trees.chain(k), 512)
            == speculative.breakeven_batch(ACC, TARGET, DRAFT, 4, 0.8, k, 512))


@pytest.mark.parametrize("branches,depth", [(2, 2), (3, 2), (2, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("a", [0.1, 0.5, 0.8, 0.97])
def test_the_closed_form_is_the_rule_summed_over_every_outcome(branches, depth, a):
    """Every way the nodes can be accepted or not, weighted by its probability: the exact
    distribution of tokens per pass under the rule, against `tokens_distribution`, with every
    node kept at a independently (the acceptance vector [a] * branches, where the rule and the
    closed form can both be summed by hand)."""
    tree = trees.Tree(branches, depth)
    exact = np.zeros(depth + 1)
    for outcome in itertools.product((0, 1), repeat=tree.nodes):
        kept = np.array(outcome).reshape(branches, depth)
        weight = a ** kept.sum() * (1 - a) ** (tree.nodes - kept.sum())
        first = [j for j in range(branches) if kept[j, 0]]  # the target tries the first guesses in order
        depth_reached = int(np.cumprod(kept[first[0]]).sum()) if first else 0
        exact[depth_reached] += weight
    independent = [a] * branches
    assert np.allclose(tree.tokens_distribution(a, independent), exact, rtol=1e-12, atol=1e-15)
    assert math.isclose(tree.expected_tokens(a, independent), (exact * np.arange(1, depth + 2)).sum(), rel_tol=1e-12)


def _check(tokens: np.ndarray, tree: trees.Tree, a: float) -> tuple[float, float]:
    """The mean of simulated passes and the closed form's distance from it (the sampler's pair's
    acceptance vector), with the radius a correct simulation stays within: Hoeffding for n values
    in [1, depth + 1], failing once in a million runs."""
    radius = sampling.hoeffding_radius(len(tokens), tree.depth, 1e-6)
    return abs(tokens.mean() - tree.expected_tokens(a)), radius


def test_passes_played_node_by_node_match_the_closed_form():
    tree, a = trees.Tree(4, 4), 0.8
    tokens = trees.accepted_depths(tree, a, 200_000, np.random.default_rng(17))
    gap, radius = _check(tokens, tree, a)
    assert radius < 0.02 * tree.expected_tokens(a)  # tight enough to mean something
    assert gap <= radius


@pytest.mark.parametrize("wrong", ["deepest of independent branches", "first branch only", "independent siblings"])
def test_the_check_catches_a_wrong_rule(wrong):
    """Negative controls: following every branch whose guesses hold and keeping the deepest
    (siblings kept independently, which the target cannot do) yields too much; trying only the
    first branch yields a chain's tokens, too little; trying the branches in turn but keeping
    each first guess at a (the independent rule) yields too much as well. All three means lie
    outside the radius."""
    tree, a = trees.Tree(4, 4), 0.8
    if wrong == "independent siblings":
        tokens = trees.accepted_depths(tree, a, 200_000, np.random.default_rng(17), siblings=[a] * 4)
    else:
        kept = np.random.default_rng(17).random((200_000, tree.branches, tree.depth)) < a
        runs = np.cumprod(kept, axis=-1).sum(axis=-1)
        tokens = (runs.max(axis=-1) if wrong.startswith("deepest") else runs[:, 0]) + 1
    gap, radius = _check(tokens, tree, a)
    assert gap > radius


def test_a_tree_yields_more_but_stops_paying_at_a_smaller_batch():
    """The issue's comparison on the default scenario (Llama 3 70B on 4 H100s, Llama 3.2 1B as
    draft, 512 tokens of context, a = 0.8): 4 branches of depth 4 against a chain of 4."""
    tree, chain = trees.Tree(4, 4), trees.chain(4)
    assert tree.expected_tokens(0.8) > chain.expected_tokens(0.8)
    assert (trees.speedup(ACC, TARGET, DRAFT, 4, 1, 0.8, tree, 512)
            > trees.speedup(ACC, TARGET, DRAFT, 4, 1, 0.8, chain, 512))
    tree_b = trees.breakeven_batch(ACC, TARGET, DRAFT, 4, 0.8, tree, 512)
    chain_b = trees.breakeven_batch(ACC, TARGET, DRAFT, 4, 0.8, chain, 512)
    assert 1 < tree_b < chain_b


def test_the_tree_breakeven_is_a_single_crossing():
    """The bisection assumes that once slower, the tree stays slower: scan every batch."""
    tree = trees.Tree(4, 4)
    batches = np.arange(1, 2049)
    pays = trees.speedup(ACC, TARGET, DRAFT, 4, batches, 0.8, tree, 512) >= 1.0
    first = trees.breakeven_batch(ACC, TARGET, DRAFT, 4, 0.8, tree, 512)
    assert pays[:first - 1].all() and not pays[first - 1:].any()


# -- greedy decoding: the ranked vector ----------------------------------------------------------

PUBLISHED_TOPK = {field: values for field, values in __import__("yaml").safe_load(
    (__import__("pathlib").Path(__file__).parents[1] / "models" / "published.yaml").read_text())["cai2024"].items()}


def _greedy_contexts(n: int, vocab: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n contexts, each a (target, draft) pair of random distributions over `vocab` tokens, the
    draft a noisy copy of the target; returns the target's greedy token and the draft's ranking."""
    rng = np.random.default_rng(seed)
    target = rng.dirichlet(np.full(vocab, 0.3), size=n)
    draft = 0.3 * target + 0.7 * rng.dirichlet(np.full(vocab, 0.3), size=n)
    return target.argmax(axis=1), np.argsort(-draft, axis=1, kind="stable")


def test_greedy_trees_keep_siblings_at_the_ranked_vector():
    """Under greedy decoding the root's children are the draft's best distinct tokens and the
    j-th is kept when it is the target's token. Played out context by context, the share of
    tried j-th children that are kept is the vector `ranked_acceptance` derives from the same
    contexts' top-b hit rates, and the root's coverage is the top-b rate, exactly (both are counts
    of one sample, so no tolerance). The vector's shape is the draft's, not a law: this draft is
    mostly noise over 12 tokens, so once its first choices miss, the few tokens left are likelier,
    and later choices are kept more often (Medusa's heads, below, do the opposite). Either way the
    independent rule, every child kept at the top-1 rate, is wrong by more than 0.1 from three
    children on (the negative control)."""
    target_token, ranking = _greedy_contexts(20_000, 12, 20240101)
    rank = np.argmax(ranking == target_token[:, None], axis=1) + 1  # where the target's token sits
    branches = 5
    covered = np.array([np.mean(rank <= b) for b in range(1, branches + 1)])
    vec = trees.ranked_acceptance(covered)
    for j in range(1, branches + 1):
        tried = rank >= j  # the j - 1 before it were rejected
        assert vec[j - 1] == pytest.approx(np.mean(rank[tried] == j), abs=1e-12)
    assert np.all(np.diff(vec) > 0), vec  # this draft's later choices are better guesses
    for b in range(1, branches + 1):
        root = float(trees.Tree(b, 1).root(covered[0], siblings=vec[:b]))
        assert root == pytest.approx(np.mean(rank <= b), abs=1e-12)
        independent = 1.0 - (1.0 - covered[0]) ** b
        if b >= 3:
            assert abs(independent - root) > 0.1, (b, independent, root)


@pytest.mark.parametrize("field", sorted(PUBLISHED_TOPK))
def test_medusas_published_top_b_accuracies_as_a_vector(field):
    """Medusa's first head (models/published.yaml, read here as the file holds it): the vector's
    tree gives back every published top-b accuracy; each later choice is kept less often than the
    one before; and the independent rule misses the top-4 accuracy by more than 0.15."""
    covered = np.asarray(PUBLISHED_TOPK[field], dtype=float)
    vec = trees.ranked_acceptance(covered)
    assert vec[0] == covered[0]
    assert np.all(np.diff(vec) < 0), vec
    for b in range(1, covered.size + 1):
        assert float(trees.Tree(b, 1).root(vec[0], siblings=vec[:b])) == pytest.approx(covered[b - 1], abs=1e-12)
    assert (1.0 - (1.0 - covered[0]) ** 4) - covered[3] > 0.15


@pytest.mark.parametrize("covered", [[0.6, 0.5], [-0.1, 0.5], [0.5, 1.2], [1.0, 1.0], [], [[0.5]]])
def test_ranked_acceptance_refuses_what_is_not_a_top_b_list(covered):
    with pytest.raises(ValueError, match="top"):
        trees.ranked_acceptance(covered)
