"""Drafts that branch: trees of guesses, the ways of drafting, and mixture-of-experts targets.

`a` is the acceptance rate, `b` a tree's branches and `d` its depth (models.trees); `kind` one of
models.drafts.KINDS; `key` a catalogue model (the mixture of experts, say, "mixtral-8x7b").
"""
from __future__ import annotations

import numpy as np

from models import drafts, sampling, speculative, trees
from models.catalogue import LLM, Catalogue

from ..resolved import Resolved
from .papers import published_entry
from .registry import Returns, TEXT, Topic
from .speculative import memory_cap

topic = Topic("trees")


@topic.term(depends=(), returns=Returns("count", "expected tokens per tree verify pass"))
def tree_tokens(a, b, d):
    """Mean tokens a verify pass of a tree of b branches of depth d yields (b = 1: a chain of d)."""
    return trees.Tree(int(b), int(d)).expected_tokens(a)


@topic.term(depends=(), returns=Returns("ratio", "chance a first guess is kept"))
def tree_root(a, b):
    """The chance that the target keeps one of the b first guesses, tried in turn, each at its
    acceptance in the sampler's pair at `a` (models.trees.Tree.root): 1 - prod_j (1 - a_j)."""
    return trees.Tree(int(b), 1).root(a)


@topic.term(depends=(), returns=Returns("ratio", "acceptance of the j-th first guess"))
def sibling_rate(a, j):
    """How often the target keeps the j-th first guess it tries, given that it rejected the j - 1
    before it (j = 1 is `a`), in the sampler's pair at `a` (models.sampling.sibling_acceptance)."""
    return np.vectorize(lambda x, n: sampling.sibling_acceptance(float(x), int(n))[int(n) - 1])(a, j)


def _ranked(paper: str, field: str, n) -> np.ndarray:
    """The published vector, checked to cover guesses 1 .. every n asked for."""
    vec = trees.ranked_acceptance(published_entry(paper, field))
    n = np.asarray(n)
    if np.any(n < 1) or np.any(n > vec.size) or np.any(n != np.round(n)):
        raise ValueError(f"{paper}.{field} has top-1 to top-{vec.size} accuracies; asked for {n.tolist()}")
    return vec


@topic.term(depends=(), returns=Returns("ratio", "acceptance of the draft's j-th choice"))
def ranked_rate(paper: str, field: str, j):
    """Greedy decoding's acceptance vector from a published list of top-1, top-2, ... accuracies
    (models/published.yaml): how often the target keeps the draft's j-th choice, given that it
    rejected the j - 1 before it (models.trees.ranked_acceptance). j = 1 is the top-1 accuracy."""
    vec = _ranked(paper, field, j)
    return np.vectorize(lambda n: vec[int(n) - 1])(j)


@topic.term(depends=(), returns=Returns("ratio", "chance one of the b best guesses is kept"))
def ranked_root(paper: str, field: str, b):
    """The chance that the target keeps one of the draft's b best distinct first guesses, tried in
    turn at the published vector's rates (models.trees.Tree.root over `ranked_rate`)."""
    vec = _ranked(paper, field, b)
    return np.vectorize(lambda n: float(trees.Tree(int(n), 1).root(vec[0], siblings=vec[:int(n)])))(b)


@topic.term(depends=("scenario",), returns=Returns("ratio", "tree speedup over plain decoding"))
def tree_speedup(scenario: Resolved, a, b, d, batch=1):
    """The tree's speedup over plain decoding on the scenario, roofline floors."""
    return trees.speedup(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, a,
                         trees.Tree(int(b), int(d)), scenario.context, scenario.precision)


def _tree_breakeven(scenario: Resolved, a, b, d):
    """The batch from which the tree no longer pays, memory aside (-1: not below 65,536)."""
    return trees.breakeven_batch(scenario.acc, scenario.target, scenario.draft, scenario.cards, a,
                                 trees.Tree(int(b), int(d)), scenario.context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch at which the tree pays"))
def tree_pays_up_to(scenario: Resolved, a, b, d):
    """The largest batch at which the tree still pays and fits in memory, with the draft's weights
    and cache beside the target's (`speculative.pays_up_to` for a chain): the cap where it pays
    all the way there, 0 where it never pays."""
    cap = memory_cap(scenario)
    first = np.asarray(_tree_breakeven(scenario, a, b, d))
    return np.where((first < 0) | (first > cap), cap, np.maximum(first - 1, 0))


def _drafter(scenario: Resolved, kind: str, k) -> drafts.Drafter:
    if kind not in drafts.KINDS:
        raise ValueError(f"unknown drafter {kind!r}; one of {', '.join(drafts.KINDS)}")
    return drafts.drafters(scenario.target, scenario.draft, int(k))[kind]


def _each_k(scenario: Resolved, kind: str, k, fn, *args):
    """fn(drafter, k, *args) broadcast over arrays of k (a slider) and of the other arguments:
    a drafter's shape depends on k, so it is built once for each k in the grid."""
    out = np.vectorize(lambda kk, *rest: float(fn(_drafter(scenario, kind, kk), kk, *rest)), otypes=[float])(k, *args)
    return out if out.ndim else float(out)


@topic.term(depends=("scenario",), returns=Returns("bytes", "weight bytes the drafter adds"))
def drafter_weights(scenario: Resolved, kind: str, k=4):
    """Bytes of weights the drafter adds to the target's (shared ones not counted)."""
    return _each_k(scenario, kind, k, lambda way, kk: way.held_bytes(scenario.precision))


@topic.term(depends=("scenario",), returns=Returns("time", "drafting time per step"))
def drafter_time(scenario: Resolved, kind: str, k=4, batch=1):
    """Seconds a step spends drafting k guesses for `batch` requests."""
    return _each_k(scenario, kind, k, lambda way, kk, b: way.draft_s(scenario.acc, scenario.cards, b, scenario.context,
                                                                     scenario.precision), batch)


@topic.term(depends=("scenario",), returns=Returns("ratio", "drafter speedup over plain decoding"))
def drafter_speedup(scenario: Resolved, kind: str, a, k=4, batch=1):
    """Speedup over plain decoding with this drafter, roofline floors."""
    return _each_k(scenario, kind, k, lambda way, kk, aa, b: drafts.speedup(
        scenario.acc, scenario.target, way, scenario.cards, b, aa, kk, scenario.context, scenario.precision), a, batch)


def _model(catalogue: Catalogue, key: str) -> LLM:
    try:
        return catalogue.model(key)
    except KeyError as exc:  # UnknownKey: fail at the page's line, with the valid keys
        raise ValueError(str(exc)) from None


@topic.term(depends=("catalogue",), returns=Returns(TEXT, "model name"))
def model_name(catalogue: Catalogue, key: str) -> str:
    return _model(catalogue, key).name


@topic.term(depends=("catalogue",), returns=Returns("count", "parameters"))
def params_of(catalogue: Catalogue, key: str, active: bool = False) -> float:
    """All of a catalogue model's parameters, or with `active` those one token uses (embeddings
    included, as papers count them): params_of("mixtral-8x7b", active=True)."""
    m = _model(catalogue, key)
    return float(m.active_block_params + m.table_params if active else m.params)


@topic.term(depends=("catalogue",), returns=Returns("count", "experts per layer"))
def experts(catalogue: Catalogue, key: str, which: str = "all") -> float:
    """A mixture's experts per layer ("all") or experts each token is routed to ("active")."""
    m = _model(catalogue, key)
    if not m.experts:
        raise ValueError(f"{m.name} is not a mixture of experts")
    return float(m.experts if which == "all" else m.active_experts)


@topic.term(depends=("catalogue",), returns=Returns("ratio", "share of experts a pass reads"))
def expert_share(catalogue: Catalogue, key: str, tokens=1):
    """The share of a layer's experts that `tokens` positions read under uniform routing."""
    return _model(catalogue, key).expert_share(tokens)


@topic.term(depends=("catalogue",), returns=Returns("bytes", "weight bytes one pass reads"))
def pass_bytes(catalogue: Catalogue, key: str, tokens=1):
    """Weight bytes a pass over `tokens` positions of a catalogue model reads, in BF16."""
    return _model(catalogue, key).read_bytes(tokens)


@topic.term(depends=("scenario", "catalogue"), returns=Returns("ratio", "verify pass time over plain step time"))
def verify_cost(scenario: Resolved, catalogue: Catalogue, key: str, k, batch=1):
    """A verify pass of k guesses a request, over one plain step, for a catalogue model on the
    scenario's cards and context."""
    m = _model(catalogue, key)
    return (speculative.verify_step_s(scenario.acc, m, scenario.cards, batch, k, scenario.context, scenario.precision)
            / speculative.plain_step_s(scenario.acc, m, scenario.cards, batch, scenario.context, scenario.precision))
