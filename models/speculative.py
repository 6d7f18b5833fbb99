"""Speculative decoding: expected tokens per verify step, step cost, speedup.

A speculative step runs the draft k times (each over the batch) and then one target pass
over B x (k + 1) positions. Plain decoding runs one target pass over B positions per token.
Every request holds `context` tokens of cache in the target and, for the draft, in the draft:
each draft pass reads the draft's cache, and the verify pass reads the target's cache once
for all k + 1 positions of a request (`roofline.step_time`). Both models run tensor-parallel
over the same cards.
"""
from __future__ import annotations

import numpy as np

from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision
from .roofline import step_seconds


def expected_tokens(a, k):
    """E(a, k) = (1 - a^(k+1)) / (1 - a): mean tokens a verify step yields (k + 1 at a = 1)."""
    a = np.asarray(a, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - a ** (k + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, k + 1.0, e)


# What tools report, from the per-token acceptance a that the model uses (each guess kept with
# probability a, independently, the step stopping at the first rejection):
# - serving engines (vLLM) count accepted draft tokens over drafted ones. Counted up to the first
#   rejection, a step accepts E(a, k) - 1 of its k guesses on average: `drafted_share`;
# - EAGLE, and SGLang, report the mean acceptance length tau, the tokens a verify step yields with
#   the target's own one included: E(a, k) itself (`acceptance_length`).
# Both rise with a, so each can be turned back into a (`per_token_acceptance`).

def drafted_share(a, k):
    """Accepted draft tokens over drafted ones, a guess counting only if all before it held."""
    return (expected_tokens(a, k) - 1.0) / np.asarray(k, dtype=float)


def acceptance_length(a, k):
    """The mean acceptance length tau (EAGLE, SGLang): tokens per verify step, the target's included."""
    return expected_tokens(a, k)


REPORTED = {"drafted_share": drafted_share, "acceptance_length": acceptance_length}


def per_token_acceptance(reported: str, value, k, tol: float = 1e-12):
    """The per-token a at which `reported` ("drafted_share" or "acceptance_length") takes `value`
    at lookahead k: bisection, as both rise strictly with a on [0, 1]. NaN outside their range."""
    f = REPORTED[reported]
    value, k = np.broadcast_arrays(np.asarray(value, dtype=float), np.asarray(k, dtype=float))
    lo, hi = np.zeros(value.shape), np.ones(value.shape)
    inside = (f(lo, k) <= value) & (value <= f(hi, k))
    while np.max(hi - lo, initial=0.0) > tol:
        mid = (lo + hi) / 2
        below = f(mid, k) < value
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    out = np.where(inside, (lo + hi) / 2, np.nan)
    return out if out.ndim else float(out)


# Each pass below is priced at its roofline floor, or with `eff` (roofline.Efficiency, as
# models.estimate fits it) at the estimate: `step_seconds`, a step_time's time alone.

def plain_step_s(acc: Accelerator, target: LLM, cards, batch, context=0.0,
                 precision: Precision = BF16_ALL, eff=None):
    return step_seconds(acc, target, cards, batch, context, precision=precision, eff=eff)


def draft_step_s(acc: Accelerator, draft: LLM, cards, batch, context=0.0,
                 precision: Precision = BF16_ALL, eff=None):
    """One draft pass over the batch, on `cards` cards: one guess for every request."""
    return step_seconds(acc, draft, cards, batch, context, precision=precision, eff=eff)


def verify_step_s(acc: Accelerator, target: LLM, cards, batch, k, context=0.0,
                  precision: Precision = BF16_ALL, eff=None):
    """The target's pass over batch x (k + 1) positions, reading each request's cache once."""
    batch = np.asarray(batch, dtype=float)
    k = np.asarray(k, dtype=float)
    return step_seconds(acc, target, cards, batch * (k + 1.0), context, requests=batch, precision=precision, eff=eff)


def speculative_step_s(acc: Accelerator, target: LLM, draft: LLM, cards, batch, k, context=0.0,
                       precision: Precision = BF16_ALL, eff=None, draft_cards=None):
    """k draft passes over the batch, then one verify pass over batch x (k + 1) positions.

    The draft runs split over the target's cards (`draft_cards` None), or on `draft_cards` of them
    (1: whole on one card, paying no all-reduces but reading at one card's bandwidth).
    """
    k = np.asarray(k, dtype=float)
    on = cards if draft_cards is None else draft_cards
    return (k * draft_step_s(acc, draft, on, batch, context, precision, eff)
            + verify_step_s(acc, target, cards, batch, k, context, precision, eff))


def speedup(acc: Accelerator, target: LLM, draft: LLM, cards, batch, a, k, context=0.0,
            precision: Precision = BF16_ALL, eff=None, draft_cards=None):
    """Tokens per second with speculation over tokens per second without, at the same batch."""
    return _speedup(expected_tokens(a, k), acc, target, draft, cards, batch, k, context, precision, eff, draft_cards)


def _speedup(gain, acc, target, draft, cards, batch, k, context, precision, eff, draft_cards=None):
    """`speedup` with its E(a, k) given as `gain`, which a search over batches computes once."""
    plain = plain_step_s(acc, target, cards, batch, context, precision, eff)
    spec = speculative_step_s(acc, target, draft, cards, batch, k, context, precision, eff, draft_cards)
    return gain * plain / spec


def breakeven_batch(acc: Accelerator, target: LLM, draft: LLM, cards, a, k, context=0.0,
                    max_batch: int = 1 << 16, precision: Precision = BF16_ALL, eff=None):
    """Smallest integer batch at which speculation is slower than plain decoding, memory aside
    (compare with `kvcache.slots`, the batch that fits).

    Broadcasts over `a` and `k`; returns 0 where speculation never pays (even at batch 1)
    and -1 where it still pays at `max_batch`.

    Bisection assumes speculation, once slower, stays slower as the batch grows. Each step time
    is the larger of two lines in the batch (reads, arithmetic) plus a line (all-reduces), so the
    speedup is a ratio of piecewise-linear functions with few pieces; a test scans every batch
    for every catalogue scenario and context the site offers and finds a single crossing, at the
    floor and priced by `eff` (the estimate fitted on measurements, `models.estimate`).
    """
    a, k = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(k, dtype=float))
    gain = expected_tokens(a, k)  # the same at every batch the search tries
    return first_slower_batch(
        lambda batch: _speedup(gain, acc, target, draft, cards, batch, k, context, precision, eff) < 1.0, a.shape,
        max_batch)


def first_slower_batch(slower, shape, max_batch: int = 1 << 16) -> np.ndarray:
    """Bisection behind `breakeven_batch`, for any way of drafting: `slower(batch)` says, over an
    array of `shape`, where speculation at that batch is slower than plain decoding. Returns the
    smallest such integer batch, 0 where even batch 1 is slower, -1 where `max_batch` still pays."""
    lo = np.ones(shape)                      # largest batch known to pay (or 1)
    hi = np.full(shape, float(max_batch))    # smallest batch known not to pay
    never_pays, still_pays = slower(lo), ~slower(hi)
    for _ in range(int(np.ceil(np.log2(max_batch))) + 1):
        mid = np.floor((lo + hi) / 2)
        s = slower(mid)
        hi = np.where(s, mid, hi)
        lo = np.where(s, lo, mid)
    first = hi.astype(int)
    return np.where(never_pays, 0, np.where(still_pays, -1, first))


def accepted_runs(a: float, k: int, n_tokens: int, uniforms: np.ndarray) -> list[int]:
    """Accepted guesses in each verify step until `n_tokens` tokens exist.

    Guess i is accepted when its uniform draw is below `a`; a step stops at its first
    rejection. Each step yields its accepted guesses plus one token of the target's own
    (the correction, or the bonus token when all k pass). Reading draws in order from one
    shared stream means neighbouring slider positions differ only where they must.
    """
    runs, made, pos = [], 0, 0
    while made < n_tokens:
        accepted = 0
        while accepted < k:
            u = uniforms[pos % len(uniforms)]
            pos += 1
            if u >= a:
                break
            accepted += 1
        runs.append(accepted)
        made += accepted + 1
    return runs
