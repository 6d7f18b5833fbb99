"""The functions an author may call in an inline number, bound to one scenario.

Every function broadcasts over numpy arrays, so one call covers a whole slider grid.
Quantities are in SI units (seconds, bytes, FLOP/s); the format spec converts.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from models import roofline, speculative
from models.catalogue import LLM, Catalogue

from .controls import Resolved
from .figures import tokens


def vocabulary(r: Resolved, catalogue: Catalogue) -> dict[str, Callable]:
    """Name -> function for inline numbers under scenario `r`."""
    acc, cards = r.acc, r.cards

    def model(which: str = "target") -> LLM:
        if which == "target":
            return r.target
        if which == "draft":
            return r.draft
        raise ValueError(f"model must be 'target' or 'draft', got {which!r}")

    def step(tokens=1, which="target"):
        return roofline.step_time(acc, model(which), cards, tokens).seconds

    return {
        "E": speculative.expected_tokens,
        "speedup": lambda a, k, batch=1: speculative.speedup(acc, r.target, r.draft, cards, batch, a, k),
        "breakeven": lambda a, k: speculative.breakeven_batch(acc, r.target, r.draft, cards, a, k),
        "step": step,
        "spec_step": lambda k, batch=1: speculative.speculative_step_s(acc, r.target, r.draft, cards, batch, k),
        "util": lambda tokens=1, which="target": roofline.step_time(acc, model(which), cards, tokens).utilisation,
        "compute_time": lambda tokens=1, which="target": roofline.step_time(acc, model(which), cards, tokens).compute_s,
        "weight_bytes": lambda which="target": model(which).weight_bytes(),
        "kv_bytes": lambda which="target": model(which).kv_bytes_per_token(),
        "params": lambda which="target": model(which).params,
        "ridge": lambda: acc.ridge,
        "ridge_tokens": lambda which="target": roofline.ridge_tokens(acc, model(which)),
        "bandwidth": lambda: acc.bandwidth,
        "flops": lambda: acc.flops,
        "memory": lambda: acc.memory_bytes,
        "cards": lambda: cards,
        **check_vocabulary(),
        "timeline_tokens": lambda: tokens.N_TOKENS,
        "name": lambda which="accelerator": acc.name if which == "accelerator" else model(which).name,
        **sibling_vocabulary(r, catalogue),
        "min": np.minimum,
        "max": np.maximum,
        "round": np.round,  # round(x, 1): to one decimal, so that 162.0 can show as 162 under .4g
    }




SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim")


def sibling_vocabulary(r: Resolved, catalogue: Catalogue) -> dict[str, Callable]:
    """Terms for the roofline, batching and KV-cache pages, under scenario `r`."""
    from models import batching, kvcache, papers

    acc, cards = r.acc, r.cards

    def ridge_of(key: str):
        # Any accelerator in the site's catalogue, not just the scenario's.
        return catalogue.accelerator(key).ridge

    def published(paper: str, field: str):
        # A figure a paper reports, from models/published.yaml, so that no number is typed in prose.
        return float(papers.published()[paper][field])

    def shape(field: str, which: str = "target"):
        if field not in SHAPE_FIELDS:
            raise ValueError(f"shape field must be one of {', '.join(SHAPE_FIELDS)}, got {field!r}")
        return float(getattr(r.target if which == "target" else r.draft, field))

    def min_cards(context, draft=0):
        # The fewest cards on which one request of `context` tokens fits (kvcache.slots >= 1).
        d = r.draft if draft else None
        context = np.asarray(context, dtype=float)
        weights = -kvcache.cache_budget(acc, r.target, 0, d)
        per_card = kvcache.cache_budget(acc, r.target, 1, d) + weights
        need = kvcache.cache_bytes_per_token(r.target, d) * context
        n = np.maximum(np.ceil((weights + need) / per_card), 1.0)
        fits = lambda k: kvcache.slots(acc, r.target, k, context, d) >= 1  # noqa: E731
        n = np.where(fits(n), n, n + 1)  # the estimate, corrected for rounding either way
        return np.where((n > 1) & fits(n - 1), n - 1, n)

    def sim_tps(scheduler: str):
        return lambda batch, spread: batching.tokens_per_s(scheduler, batch, spread, acc, r.target, cards)

    return {
        "ridge_of": ridge_of,
        "intensity": lambda tokens=1: roofline.step_time(acc, r.target, cards, tokens).intensity,
        # Smallest whole batch whose arithmetic outlasts the weight read.
        "compute_bound_batch": lambda: np.floor(roofline.ridge_tokens(acc, r.target)) + 1,
        "tps": lambda batch=1: np.asarray(batch, dtype=float) / roofline.step_time(acc, r.target, cards, batch).seconds,
        "static_tps": sim_tps("static"),
        "continuous_tps": sim_tps("continuous"),
        "requests": lambda: batching.N_REQUESTS,
        "mean_tokens": lambda: batching.MEAN_TOKENS,
        "max_tokens": lambda: batching.MAX_TOKENS,
        "kv_slots": lambda context, n=cards, draft=0: kvcache.slots(acc, r.target, n, context,
                                                                      r.draft if draft else None),
        "kv_budget": lambda n=cards, draft=0: kvcache.cache_budget(acc, r.target, n, r.draft if draft else None),
        "draft_slots": lambda context, n=cards: kvcache.draft_cost(acc, r.target, r.draft, n, context),
        "kv_min_cards": min_cards,
        "kv_reserve": lambda: kvcache.RESERVE,
        "kv_bytes_of": lambda key: kvcache.bytes_per_token(catalogue.model(key)),
        # A catalogue shape field (layers, heads, kv_heads, head_dim, hidden) of the target or draft.
        "shape": shape,
        "published": published,
    }


def check_vocabulary() -> dict[str, Callable]:
    """Terms for the checks on the speculative-decoding page: the simulated sampler's figure and
    the papers the model is set beside. None of them reads the scenario."""
    from models import papers, sampling

    def leviathan(i, field: str):
        # One row of Leviathan et al. Table 1: a, k, speed, ops as published; model_speed, model_ops computed.
        row = papers.leviathan_table1()[int(i)]
        return float({"speed": row.paper_speed, "ops": row.paper_ops}.get(field, getattr(row, field, np.nan)))

    def chen(field: str, i=0):
        # Chen et al.: setting-wide fields (target_s, draft_s, k, c, c_roofline, floor, ceiling,
        # target_params, draft_params) or,
        # for measured row i, speedup, ms, implied_a and roofline_speedup.
        c = papers.chen2023()
        row = c.rows[int(i)]
        per_row = {"speedup": row.paper_speedup, "ms": row.paper_ms / 1e3, "implied_a": row.implied_a,
                   "roofline_speedup": row.roofline_speedup}
        if field in per_row:
            return float(per_row[field])
        if field in ("target_s", "draft_s", "k", "c", "c_roofline", "floor", "ceiling", "target_params",
                     "draft_params"):
            return float(getattr(c, field))
        raise ValueError(f"chen has no field {field!r}")

    def sampler(field: str, drift=0.0):
        # The sampling figures' setting: sample sizes, vocabulary, lookahead, and the acceptance
        # rate sum min(p, q) at a drift of the draft.
        fixed = {"tokens": sampling.FIGURE_TOKENS, "steps": sampling.FIGURE_STEPS, "vocab": sampling.FIGURE_VOCAB,
                 "k": sampling.FIGURE_LOOKAHEAD}
        if field in fixed:
            return float(fixed[field])
        if field == "alpha":
            return np.vectorize(lambda d: sampling.acceptance(sampling.figure_target(), sampling.figure_draft(d)))(drift)
        raise ValueError(f"sampler has no field {field!r}")

    return {
        "walltime": papers.walltime_improvement,
        "ops_increase": papers.ops_increase,
        "leviathan": leviathan,
        "chen": chen,
        "sampler": sampler,
    }


# Functions whose value does not depend on the page's scenario: an inline number that calls
# only these (and names only sliders) is evaluated once, not once per scenario choice.
SCENARIO_FREE = frozenset({"E", "min", "max", "round", "timeline_tokens", "ridge_of", "requests", "mean_tokens",
                           "max_tokens", "kv_reserve", "kv_bytes_of", "published", "walltime",
                           "ops_increase", "leviathan", "chen", "sampler"})

