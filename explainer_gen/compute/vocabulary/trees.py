"""Drafts that branch: trees of guesses, the ways of drafting, and mixture-of-experts targets.

`a` is the acceptance rate, `b` a tree's branches and `d` its depth (models.trees); `kind` one of
models.drafts.KINDS; `key` a catalogue model (the mixture of experts, say, "mixtral-8x7b").
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from models import drafts, sampling, speculative, trees
from models.catalogue import LLM, Catalogue
from models.precision import ACTIVATION_BYTES, BF16_ALL
from models.roofline import step_time
from models.units import BYTES, COUNT, RATIO, TIME

from ..derivation import Derivation, Symbol, closed_form, from_catalogue, search, value
from ..resolved import Resolved
from .papers import published_entry
from .registry import Returns, TEXT, Topic
from .roofline import _derive_pass
from .speculative import (LEVIATHAN, _derive_memory_cap, _derive_positions, _expected, _num, _relabel, _requests,
                          _breakeven_method, memory_cap)

topic = Topic("trees")


# -- derivations (compute/derivation.py) ----------------------------------------------------------

PAIR = ("models/sampling.py: sibling_acceptance, in the figure's pair of distributions: the target p a Zipf law "
        f"(s = {sampling.FIGURE_ZIPF:g}) over {sampling.FIGURE_VOCAB} tokens, the draft q mixed from p towards a "
        f"Zipf of s = {sampling.FIGURE_FAR_ZIPF:g} reversed until sum min(p, q) = a; "
        "the j-th first guess is judged against r_j, what the target has left after the j - 1 rejections before "
        "it (r_1 = p, r_(j+1) = norm(max(0, r_j - q))): SpecInfer's multi-draft rule (miao2024)")


def _nth(j: int) -> str:
    return f"{j}{'th' if j % 100 in (11, 12, 13) else {1: 'st', 2: 'nd', 3: 'rd'}.get(j % 10, 'th')}"


def _siblings(a: float, b: int) -> tuple[float, ...]:
    """The acceptance vector `Tree.root` multiplies out: the sampler's pair at `a` (a chain: `a`)."""
    return (a,) if b == 1 else tuple(sampling.sibling_acceptance(a, b))


def _root_form(a: float, b: int) -> tuple[str, dict[str, Symbol]]:
    """1 - prod_j (1 - a_j) over the first guesses' acceptances; `a` itself for a chain."""
    if b == 1:
        return "a", {"a": Symbol(a, RATIO, "per-token acceptance rate (a chain: its one first guess)")}
    vec = _siblings(a, b)
    return ("1 - " + " * ".join(f"(1 - a{j})" for j in range(1, b + 1)),
            {f"a{j}": Symbol(float(x), RATIO, f"acceptance of the {_nth(j)} first guess, after {j - 1} rejected"
                             if j > 1 else "acceptance of the 1st first guess: a") for j, x in enumerate(vec, 1)})


def _derive_tree_root(a, b):
    a, b = _num(a), int(_num(b))
    formula, sym = _root_form(a, b)
    return closed_form(f"chance the target keeps one of {b} first guesses, tried in turn, at a = {a:g}", RATIO,
                       _num(tree_root(a, b)), formula, (PAIR,) if b > 1 else ("models/trees.py: Tree.root",), **sym)


def _derive_sibling_rate(a, j):
    a, j = _num(a), int(_num(j))
    p, q = sampling.figure_target(), sampling.figure_draft(sampling.figure_distance(a))
    r = sampling.normalise(sampling.sibling_targets(p, q, j)[j - 1])
    q = sampling.normalise(q)
    name = "p" if j == 1 else "r"
    sym: dict[str, Symbol] = {}
    for x in range(len(q)):
        sym[f"{name}{x + 1}"] = Symbol(float(r[x]), RATIO, f"target's probability of token {x + 1}" + (
            f", left after {j - 1} rejection{'s' if j > 2 else ''} (r_{j})" if j > 1 else ""))
    for x in range(len(q)):
        sym[f"q{x + 1}"] = Symbol(float(q[x]), RATIO, f"draft's probability of token {x + 1}")
    formula = " + ".join(f"min({name}{x + 1}, q{x + 1})" for x in range(len(q)))
    return closed_form(f"acceptance of the {_nth(j)} first guess tried, at a = {a:g}: the mass the draft and "
                       f"{'the target' if j == 1 else 'what the target has left'} share", RATIO,
                       _num(sibling_rate(a, j)), formula, (PAIR,), **sym)


def _cite(paper: str, field: str, n: int) -> str:
    return f"{paper}, models/published.yaml: {field} (its top-1 to top-{n} accuracies)"


def _covered(paper: str, field: str) -> list[float]:
    return [float(c) for c in published_entry(paper, field)]


def _ranked_form(j: int) -> str:
    """a_j = (c_j - c_(j-1)) / (1 - c_(j-1)), c_0 = 0 (trees.ranked_acceptance)."""
    return "c1" if j == 1 else f"(c{j} - c{j - 1}) / (1 - c{j - 1})"


def _cs(c: list[float], upto: int) -> dict[str, Symbol]:
    return {f"c{i}": Symbol(c[i - 1], RATIO, f"top-{i} accuracy: how often the text's token is "
                            + ("the draft's likeliest" if i == 1 else f"among the draft's {i} likeliest"))
            for i in range(1, upto + 1)}


def _derive_ranked_rate(paper: str, field: str, j):
    j = int(_num(j))
    result = _num(ranked_rate(paper, field, j))
    c = _covered(paper, field)
    sym = {k: v for k, v in _cs(c, j).items() if k in (f"c{j}", f"c{j - 1}")}
    return closed_form(f"acceptance of the draft's {_nth(j)} choice, once the {j - 1} before it missed "
                       f"(greedy decoding)" if j > 1 else "acceptance of the draft's 1st choice: its top-1 accuracy",
                       RATIO, result, _ranked_form(j),
                       (_cite(paper, field, len(c)), "models/trees.py: ranked_acceptance"), **sym)


def _derive_ranked_root(paper: str, field: str, b):
    b = int(_num(b))
    result = _num(ranked_root(paper, field, b))
    c = _covered(paper, field)
    formula = "1 - " + " * ".join(f"(1 - {_ranked_form(j)})" for j in range(1, b + 1)) if b > 1 else "c1"
    d = closed_form(f"chance the target keeps one of the draft's {b} best first guesses (greedy decoding)", RATIO,
                    result, formula, (_cite(paper, field, len(c)), "models/trees.py: ranked_acceptance, Tree.root"),
                    **_cs(c, b))
    return replace(d, method=f"each factor is 1 less the acceptance of the j-th choice (ranked_rate); the product "
                             f"telescopes to 1 - c{b}, so the chance is the top-{b} accuracy itself") if b > 1 else d


def _tree_tokens_form(a: float, b: int) -> tuple[str, dict[str, Symbol]]:
    """1 + R (1 + a + ... + a^(d-1)): the root keeps a first guess (R), then each guess below at a."""
    sym = {"a": Symbol(a, RATIO, "per-token acceptance rate"), "d": Symbol(0.0, COUNT, "depth: guesses a branch holds")}
    root = "a" if b == 1 else "R"
    if b > 1:
        sym["R"] = Symbol(_num(tree_root(a, b)), RATIO,
                          f"chance the target keeps one of the {b} first guesses (tree_root)")
    return (f"1 + {root} * (1 - a ** d) / (1 - a)" if a < 1.0 else f"1 + {root} * d"), sym


def _with_depth(sym: dict[str, Symbol], d: int) -> dict[str, Symbol]:
    return {**sym, "d": Symbol(float(d), COUNT, sym["d"].words)}


def _derive_tree_tokens(a, b, d):
    a, b, d = _num(a), int(_num(b)), int(_num(d))
    formula, sym = _tree_tokens_form(a, b)
    shape = f"a tree of {b} branches of depth {d}" if b > 1 else f"a chain of {d} guesses"
    out = closed_form(f"expected tokens per verify pass of {shape}, at a = {a:g}", COUNT, _num(tree_tokens(a, b, d)),
                      formula, ("models/trees.py: Tree.expected_tokens, 1 + the chance of reaching each depth",
                                *(() if b > 1 else (LEVIATHAN,))), **_with_depth(sym, d))
    return replace(out, parts=(_derive_tree_root(a, b),)) if b > 1 else out


def _derive_tree_speedup(scenario: Resolved, a, b, d, batch=1):
    a, b, d, batch = _num(a), int(_num(b)), int(_num(d)), _num(batch)
    acc, t, dr, n = scenario.acc, scenario.target, scenario.draft, scenario.cards
    ctx, p = scenario.context, scenario.precision
    tree = trees.Tree(b, d)
    plain = _num(speculative.plain_step_s(acc, t, n, batch, ctx, p))
    first = _num(step_time(acc, dr, n, batch, ctx, precision=p).seconds)
    level = _num(step_time(acc, dr, n, batch * b, ctx, requests=batch, precision=p).seconds)
    verify_ = _num(speculative.verify_step_s(acc, t, n, batch, tree.nodes, ctx, p))
    tokens, sym = _tree_tokens_form(a, b)
    shape = f"a tree of {b} branches of depth {d}" if b > 1 else f"a chain of {d} guesses"
    out = closed_form(
        f"speedup of {shape} over plain decoding ({t.name} with {dr.name} on {n} × {acc.name}, batch {batch:g}, "
        f"{ctx:,} tokens of context, every pass at its floor)", RATIO, _num(tree_speedup(scenario, a, b, d, batch)),
        f"({tokens}) * P / (D1 + (d - 1) * Dl + V)",
        ("models/trees.py: speedup, the tree's expected tokens per step of d draft levels and one verify pass, "
         "against one token per plain step",),
        **_with_depth(sym, d),
        P=Symbol(plain, TIME, f"plain decode step of {t.name} over the batch, at its floor (step)"),
        D1=Symbol(first, TIME, f"first draft level: one {dr.name} pass, one position a request (step, 'draft')"),
        Dl=Symbol(level, TIME, f"each later level: one {dr.name} pass, {b} position{'s' if b > 1 else ''} a request"),
        V=Symbol(verify_, TIME, f"verify pass, b × d + 1 = {tree.nodes + 1} positions a request (verify)"))
    parts = () if b == 1 else (
        _derive_tree_root(a, b),
        _derive_positions(scenario, batch * b, batch, f"time of one later draft level of {dr.name}, {b} positions "
                          f"for each of {_requests(batch)}, at its floor", f"{b} per request", "draft"))
    return replace(out, parts=parts)


def _derive_tree_pays_up_to(scenario: Resolved, a, b, d):
    b_, d_ = int(_num(b)), int(_num(d))
    first = int(np.asarray(_tree_breakeven(scenario, a, b, d)))
    cap = _num(memory_cap(scenario))
    shape = f"a tree of {b_} branches of depth {d_}" if b_ > 1 else f"a chain of {d_} guesses"
    out = search(f"largest batch at which {shape} pays ({scenario.target.name} with {scenario.draft.name} on "
                 f"{scenario.cards} × {scenario.acc.name}, {scenario.context:,} tokens of context, a = {_num(a):g})",
                 COUNT, _num(tree_pays_up_to(scenario, a, b, d)),
                 _breakeven_method(lambda n: _num(tree_speedup(scenario, a, b, d, n)), first, cap, True, shape,
                                  "every pass at its roofline floor"),
                 "models/trees.py: breakeven_batch")
    return replace(out, parts=(_derive_memory_cap(scenario),))


DRAFTERS = {"model": "models/drafts.py: separate, a draft model with weights and a cache of its own",
            "medusa": "Medusa (cai2024): k heads, each a hidden × hidden residual block and a vocab × hidden output "
                      "matrix of its own; models/drafts.py: medusa",
            "eagle": "EAGLE (li2024): one decoder layer of the target's shape behind a 2 hidden × hidden projection, "
                     "sharing the target's embedding and head; models/drafts.py: eagle",
            "mtp": "multi-token prediction (deepseek2024): one module per guess, each a block of the target's shape "
                   "behind a 2 hidden × hidden projection; models/drafts.py: mtp",
            "lookup": "prompt lookup: guesses copied from earlier text on the host; nothing runs on the cards, "
                      "nothing is held (models/drafts.py: lookup)"}


def _derive_drafter_weights(scenario: Resolved, kind: str, k=4):
    way = _drafter(scenario, kind, k)
    result = _num(drafter_weights(scenario, kind, k))
    t, dr, p = scenario.target, scenario.draft, scenario.precision
    quantity = f"weight bytes the {way.name} add{'s' if kind in ('model', 'eagle') else ''} to {t.name}'s"
    sources = (DRAFTERS[kind], f"{(dr if kind == 'model' else t).name}: {(dr if kind == 'model' else t).source}")
    if kind == "lookup":
        return value(quantity, BYTES, result, DRAFTERS[kind])
    w = Symbol(p.weights.bytes, BYTES / COUNT, f"bytes of a block weight in {p.weights.name}")
    h = Symbol(float(ACTIVATION_BYTES), BYTES / COUNT, "bytes of a 16-bit weight (embedding and output matrices)")
    H = Symbol(float(t.hidden), COUNT, f"hidden size of {t.name}")
    if kind == "model":
        return closed_form(quantity, BYTES, result, "Pb * w + Pt * h", sources,
                           Pb=Symbol(float(dr.block_params), COUNT, f"block weights of {dr.name}: its parameters "
                                                                     f"less embedding and head"),
                           w=w, Pt=Symbol(float(dr.table_params), COUNT, f"embedding and head of {dr.name}"), h=h)
    kk = Symbol(float(int(_num(k))), COUNT, "guesses a step (heads or modules)")
    if kind == "medusa":
        return closed_form(quantity, BYTES, result, "k * H * H * w + k * V * H * h", sources, k=kk, H=H, w=w,
                           V=Symbol(float(t.vocab), COUNT, f"vocabulary of {t.name}"), h=h)
    Bl = Symbol(float(drafts.layer_params(t)), COUNT, f"weights of one {t.name} layer: its block weights over its "
                                                      f"{t.layers} layers")
    if kind == "eagle":
        return closed_form(quantity, BYTES, result, "(Bl + 2 * H * H) * w", sources, Bl=Bl, H=H, w=w)
    return closed_form(quantity, BYTES, result, "k * (Bl + 2 * H * H) * w", sources, k=kk, Bl=Bl, H=H, w=w)


def _drafting_pass(scenario: Resolved, way: drafts.Drafter, batch: float) -> Derivation:
    """One drafting pass of `way` over the batch, as the roofline's closed form over the model of
    the shape it has (`Drafter.pass_model`), on the scenario's cards."""
    return _derive_pass(replace(scenario, target=way.pass_model), batch, "target")


def _derive_drafter_time(scenario: Resolved, kind: str, k=4, batch=1):
    way = _drafter(scenario, kind, k)
    batch = _num(batch)
    result = _num(drafter_time(scenario, kind, k, batch))
    quantity = f"time a step spends drafting {int(_num(k))} guesses with the {way.name} for {_requests(batch)}"
    if way.pass_model is None:
        return value(quantity, TIME, result, DRAFTERS[kind])
    one = _drafting_pass(scenario, way, batch)
    sym = {"p": Symbol(float(way.passes), COUNT, "drafting passes a step" + (" (all heads in one)" if way.passes == 1
                                                                            and kind == "medusa" else ""))}
    sym.update(one.symbols)
    return closed_form(quantity + ", at its floor", TIME, result, f"p * ({one.formula})",
                       (DRAFTERS[kind], *one.sources), **sym)


def _derive_drafter_speedup(scenario: Resolved, kind: str, a, k=4, batch=1):
    way = _drafter(scenario, kind, k)
    a, kk, batch = _num(a), float(int(_num(k))), _num(batch)
    acc, t, n, ctx, p = scenario.acc, scenario.target, scenario.cards, scenario.context, scenario.precision
    plain = _num(speculative.plain_step_s(acc, t, n, batch, ctx, p))
    verify_ = _num(speculative.verify_step_s(acc, t, n, batch, kk, ctx, p))
    sym = {"a": Symbol(a, RATIO, "per-token acceptance rate (the same for every drafter here)"),
           "k": Symbol(kk, COUNT, "guesses drafted per step"),
           "P": Symbol(plain, TIME, f"plain decode step of {t.name} over the batch, at its floor (step)")}
    if way.pass_model is None:
        formula = f"{_expected(a)} * P / V"
    else:
        one = _num(step_time(acc, way.pass_model, n, batch, ctx, precision=p).seconds)
        sym["p"] = Symbol(float(way.passes), COUNT, "drafting passes a step")
        sym["S"] = Symbol(one, TIME, f"one drafting pass of the {way.name} (drafter_time over p)")
        formula = f"{_expected(a)} * P / (p * S + V)"
    sym["V"] = Symbol(verify_, TIME, "verify pass, k + 1 positions a request (verify)")
    return closed_form(f"speedup over plain decoding with the {way.name} ({t.name} on {n} × {acc.name}, batch "
                       f"{batch:g}, {ctx:,} tokens of context, every pass at its floor)", RATIO,
                       _num(drafter_speedup(scenario, kind, a, k, batch)), formula,
                       (DRAFTERS[kind], LEVIATHAN, "models/drafts.py: speedup"), **sym)


def _derive_model_name(catalogue: Catalogue, key: str):
    m = _model(catalogue, key)
    return Derivation("value", f"name of the catalogue's model {key}", m.name, None,
                      method=f"models/catalogue.yaml: models.{key}, name", sources=(m.source,))


def _derive_params_of(catalogue: Catalogue, key: str, active: bool = False):
    m = _model(catalogue, key)
    result = params_of(catalogue, key, active)
    if not (active and m.experts):
        return from_catalogue(f"parameters of {m.name}" + (" (dense: a token uses them all)" if active else ""),
                              COUNT, result, f"models.{key}", "params", m.source)
    return closed_form(f"parameters one token of {m.name} uses, embeddings included", COUNT, result,
                       "P - L * (X - x) * 3 * H * F", (m.source,),
                       P=Symbol(float(m.params), COUNT, "all parameters"), L=Symbol(float(m.layers), COUNT, "layers"),
                       X=Symbol(float(m.experts), COUNT, "experts per layer"),
                       x=Symbol(float(m.active_experts), COUNT, "experts each token is routed to"),
                       H=Symbol(float(m.hidden), COUNT, "hidden size"),
                       F=Symbol(float(m.expert_ffn), COUNT, "width of one expert (three H × F matrices)"))


def _derive_experts(catalogue: Catalogue, key: str, which: str = "all"):
    m = _model(catalogue, key)
    result = experts(catalogue, key, which)
    return from_catalogue(f"experts per layer of {m.name}" if which == "all"
                          else f"experts each token of {m.name} is routed to", COUNT, result, f"models.{key}",
                          "experts" if which == "all" else "active_experts", m.source)


def _derive_expert_share(catalogue: Catalogue, key: str, tokens=1):
    m = _model(catalogue, key)
    t = _num(tokens)
    result = _num(expert_share(catalogue, key, tokens))
    quantity = f"share of a layer's experts a pass over {t:g} position{'s' if t != 1 else ''} of {m.name} reads"
    if not m.experts:
        return value(quantity, RATIO, result, f"{m.name} is dense: every pass reads its one MLP; {m.source}")
    return closed_form(quantity, RATIO, result, "1 - (1 - x / X) ** t",
                       (m.source, "uniform routing, each position's experts picked at random (an assumption; "
                                  "models/catalogue.py: LLM.expert_share)"),
                       x=Symbol(float(m.active_experts), COUNT, "experts each position is routed to"),
                       X=Symbol(float(m.experts), COUNT, "experts per layer"),
                       t=Symbol(t, COUNT, "positions in the pass"))


def _derive_pass_bytes(catalogue: Catalogue, key: str, tokens=1):
    m = _model(catalogue, key)
    t = _num(tokens)
    result = _num(pass_bytes(catalogue, key, tokens))
    sym = {"B": Symbol(float(m.block_params), COUNT, f"block weights: all {m.params:,} parameters less the "
                                                       f"embedding{'' if m.tied_embeddings else ' and the head'}")}
    blocks = "B"
    sources = [m.source]
    if m.experts:
        sym.update(Pe=Symbol(float(m.expert_params), COUNT,
                             f"expert weights: {m.layers} layers × {m.experts} experts × 3 matrices of "
                             f"{m.hidden:,} × {m.expert_ffn:,}"),
                   x=Symbol(float(m.active_experts), COUNT, "experts each position is routed to"),
                   X=Symbol(float(m.experts), COUNT, "experts per layer"))
        blocks = "(B - Pe * (1 - x / X) ** t)"
        sources.append("uniform routing: an expert no position picks is not read (an assumption; "
                       "models/catalogue.py: LLM.expert_share)")
    sym.update(V=Symbol(float(m.vocab), COUNT, "vocabulary"), H=Symbol(float(m.hidden), COUNT, "hidden size"),
               w=Symbol(float(BF16_ALL.weights.bytes), BYTES / COUNT, "bytes of a BF16 weight"))
    formula = f"{blocks} * w + V * H * w"
    if not m.tied_embeddings:
        formula += " + H * w * t"
    if m.experts or not m.tied_embeddings:
        sym["t"] = Symbol(t, COUNT, "positions in the pass")
    words = ("the blocks' weights" + (" the positions reach" if m.experts else "") + ", the output head"
             + ("" if m.tied_embeddings else ", and one embedding row a position"))
    return closed_form(f"weight bytes a pass over {t:g} position{'s' if t != 1 else ''} of {m.name} reads in BF16: "
                       f"{words}", BYTES, result, formula, tuple(sources), **sym)


def _derive_verify_cost(scenario: Resolved, catalogue: Catalogue, key: str, k, batch=1):
    m = _model(catalogue, key)
    k, batch = _num(k), _num(batch)
    acc, n, ctx, p = scenario.acc, scenario.cards, scenario.context, scenario.precision
    v = _num(speculative.verify_step_s(acc, m, n, batch, k, ctx, p))
    plain = _num(speculative.plain_step_s(acc, m, n, batch, ctx, p))
    out = closed_form(f"verify pass of {m.name} over one plain step (k = {k:g}, {_requests(batch)}, {n} × {acc.name}, "
                      f"{ctx:,} tokens of context)", RATIO, _num(verify_cost(scenario, catalogue, key, k, batch)),
                      "V / P", ("models/speculative.py: verify_step_s over plain_step_s",),
                      V=Symbol(v, TIME, f"verify pass, k + 1 = {k + 1:g} positions a request, at its floor"),
                      P=Symbol(plain, TIME, "plain decode step, one position a request, at its floor"))
    other = replace(scenario, target=m)
    return replace(out, parts=(
        _derive_positions(other, batch * (k + 1.0), batch, f"time of one verify pass of {m.name}, k + 1 = {k + 1:g} "
                          f"positions for each of {_requests(batch)}, at its floor", f"k + 1 = {k + 1:g} per request"),
        _relabel(_derive_pass(other, batch, "target"), f"time of one plain decode step of {m.name}, one position for "
                                                      f"each of {_requests(batch)}, at its floor")))


@topic.term(depends=(), returns=Returns("count", "expected tokens per tree verify pass"),
            derive=_derive_tree_tokens)
def tree_tokens(a, b, d):
    """Mean tokens a verify pass of a tree of b branches of depth d yields (b = 1: a chain of d)."""
    return trees.Tree(int(b), int(d)).expected_tokens(a)


@topic.term(depends=(), returns=Returns("ratio", "chance a first guess is kept"),
            derive=_derive_tree_root)
def tree_root(a, b):
    """The chance that the target keeps one of the b first guesses, tried in turn, each at its
    acceptance in the sampler's pair at `a` (models.trees.Tree.root): 1 - prod_j (1 - a_j)."""
    return trees.Tree(int(b), 1).root(a)


@topic.term(depends=(), returns=Returns("ratio", "acceptance of the j-th first guess"),
            derive=_derive_sibling_rate)
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


@topic.term(depends=(), returns=Returns("ratio", "acceptance of the draft's j-th choice"),
            derive=_derive_ranked_rate)
def ranked_rate(paper: str, field: str, j):
    """Greedy decoding's acceptance vector from a published list of top-1, top-2, ... accuracies
    (models/published.yaml): how often the target keeps the draft's j-th choice, given that it
    rejected the j - 1 before it (models.trees.ranked_acceptance). j = 1 is the top-1 accuracy."""
    vec = _ranked(paper, field, j)
    return np.vectorize(lambda n: vec[int(n) - 1])(j)


@topic.term(depends=(), returns=Returns("ratio", "chance one of the b best guesses is kept"),
            derive=_derive_ranked_root)
def ranked_root(paper: str, field: str, b):
    """The chance that the target keeps one of the draft's b best distinct first guesses, tried in
    turn at the published vector's rates (models.trees.Tree.root over `ranked_rate`)."""
    vec = _ranked(paper, field, b)
    return np.vectorize(lambda n: float(trees.Tree(int(n), 1).root(vec[0], siblings=vec[:int(n)])))(b)


@topic.term(depends=("scenario",), returns=Returns("ratio", "tree speedup over plain decoding"),
            derive=_derive_tree_speedup)
def tree_speedup(scenario: Resolved, a, b, d, batch=1):
    """The tree's speedup over plain decoding on the scenario, roofline floors."""
    return trees.speedup(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, a,
                         trees.Tree(int(b), int(d)), scenario.context, scenario.precision)


def _tree_breakeven(scenario: Resolved, a, b, d):
    """The batch from which the tree no longer pays, memory aside (-1: not below 65,536)."""
    return trees.breakeven_batch(scenario.acc, scenario.target, scenario.draft, scenario.cards, a,
                                 trees.Tree(int(b), int(d)), scenario.context, precision=scenario.precision)


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch at which the tree pays"),
            derive=_derive_tree_pays_up_to)
def tree_pays_up_to(scenario: Resolved, a, b, d):
    """The largest batch at which the tree still pays and fits in memory, with the draft's weights
    and cache beside the target's (`speculative.pays_up_to` for a chain): the cap where it pays
    all the way there, 0 where it never pays."""
    cap = memory_cap(scenario)
    first = np.asarray(_tree_breakeven(scenario, a, b, d))
    return np.where((first < 0) | (first > cap), cap, np.maximum(first - 1, 0))


def _drafter(scenario: Resolved, kind: str, k) -> drafts.Drafter:
    if not isinstance(kind, str):  # a number where the drafter's name goes: a call the term does not take
        raise TypeError(f"a drafter is named by a string, one of {', '.join(drafts.KINDS)}; got {kind!r}")
    if kind not in drafts.KINDS:
        raise ValueError(f"unknown drafter {kind!r}; one of {', '.join(drafts.KINDS)}")
    return drafts.drafters(scenario.target, scenario.draft, int(k))[kind]


def _each_k(scenario: Resolved, kind: str, k, fn, *args):
    """fn(drafter, k, *args) broadcast over arrays of k (a slider) and of the other arguments:
    a drafter's shape depends on k, so it is built once for each k in the grid."""
    out = np.vectorize(lambda kk, *rest: float(fn(_drafter(scenario, kind, kk), kk, *rest)), otypes=[float])(k, *args)
    return out if out.ndim else float(out)


@topic.term(depends=("scenario",), returns=Returns("bytes", "weight bytes the drafter adds"),
            derive=_derive_drafter_weights)
def drafter_weights(scenario: Resolved, kind: str, k=4):
    """Bytes of weights the drafter adds to the target's (shared ones not counted)."""
    return _each_k(scenario, kind, k, lambda way, kk: way.held_bytes(scenario.precision))


@topic.term(depends=("scenario",), returns=Returns("time", "drafting time per step"),
            derive=_derive_drafter_time)
def drafter_time(scenario: Resolved, kind: str, k=4, batch=1):
    """Seconds a step spends drafting k guesses for `batch` requests."""
    return _each_k(scenario, kind, k, lambda way, kk, b: way.draft_s(scenario.acc, scenario.cards, b, scenario.context,
                                                                     scenario.precision), batch)


@topic.term(depends=("scenario",), returns=Returns("ratio", "drafter speedup over plain decoding"),
            derive=_derive_drafter_speedup)
def drafter_speedup(scenario: Resolved, kind: str, a, k=4, batch=1):
    """Speedup over plain decoding with this drafter, roofline floors."""
    return _each_k(scenario, kind, k, lambda way, kk, aa, b: drafts.speedup(
        scenario.acc, scenario.target, way, scenario.cards, b, aa, kk, scenario.context, scenario.precision), a, batch)


def _model(catalogue: Catalogue, key: str) -> LLM:
    try:
        return catalogue.model(key)
    except KeyError as exc:  # UnknownKey: fail at the page's line, with the valid keys
        raise ValueError(str(exc)) from None


@topic.term(depends=("catalogue",), returns=Returns(TEXT, "model name"),
            derive=_derive_model_name)
def model_name(catalogue: Catalogue, key: str) -> str:
    return _model(catalogue, key).name


@topic.term(depends=("catalogue",), returns=Returns("count", "parameters"),
            derive=_derive_params_of)
def params_of(catalogue: Catalogue, key: str, active: bool = False) -> float:
    """All of a catalogue model's parameters, or with `active` those one token uses (embeddings
    included, as papers count them): params_of("mixtral-8x7b", active=True)."""
    m = _model(catalogue, key)
    return float(m.active_block_params + m.table_params if active else m.params)


@topic.term(depends=("catalogue",), returns=Returns("count", "experts per layer"),
            derive=_derive_experts)
def experts(catalogue: Catalogue, key: str, which: str = "all") -> float:
    """A mixture's experts per layer ("all") or experts each token is routed to ("active")."""
    m = _model(catalogue, key)
    if not m.experts:
        raise ValueError(f"{m.name} is not a mixture of experts")
    return float(m.experts if which == "all" else m.active_experts)


@topic.term(depends=("catalogue",), returns=Returns("ratio", "share of experts a pass reads"),
            derive=_derive_expert_share)
def expert_share(catalogue: Catalogue, key: str, tokens=1):
    """The share of a layer's experts that `tokens` positions read under uniform routing."""
    return _model(catalogue, key).expert_share(tokens)


@topic.term(depends=("catalogue",), returns=Returns("bytes", "weight bytes one pass reads"),
            derive=_derive_pass_bytes)
def pass_bytes(catalogue: Catalogue, key: str, tokens=1):
    """Weight bytes a pass over `tokens` positions of a catalogue model reads, in BF16."""
    return _model(catalogue, key).read_bytes(tokens)


@topic.term(depends=("scenario", "catalogue"), returns=Returns("ratio", "verify pass time over plain step time"),
            derive=_derive_verify_cost)
def verify_cost(scenario: Resolved, catalogue: Catalogue, key: str, k, batch=1):
    """A verify pass of k guesses a request, over one plain step, for a catalogue model on the
    scenario's cards and context."""
    m = _model(catalogue, key)
    return (speculative.verify_step_s(scenario.acc, m, scenario.cards, batch, k, scenario.context, scenario.precision)
            / speculative.plain_step_s(scenario.acc, m, scenario.cards, batch, scenario.context, scenario.precision))
