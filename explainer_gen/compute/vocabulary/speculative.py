"""Speculative decoding: tokens per verify step, the speedup, and where batching erases it.

`a` is the acceptance rate, `k` the lookahead (draft tokens per verify step).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from models import estimate, kvcache, speculative
from models.units import BYTES, COUNT, RATIO, TIME

from ..derivation import Derivation, Symbol, closed_form, search, value
from ..resolved import Resolved
from ..figures import tokens
from .registry import Returns, Topic
from .roofline import _derive_pass

topic = Topic("speculative")

LEVIATHAN = ("Leviathan et al. 2023 (leviathan2023): the guesses kept up to the first rejection, each at a, "
             "plus the target's own token; models/speculative.py: expected_tokens")


# -- derivations (compute/derivation.py) ----------------------------------------------------------

def _num(x) -> float:
    return float(np.asarray(x))


def _expected(a: float) -> str:
    """E(a, k) written over the symbols a and k: the closed form, or k + 1 where every guess holds."""
    return "(1 - a ** (k + 1)) / (1 - a)" if a < 1.0 else "(k + 1)"


def _ak(a: float, k: float) -> dict[str, Symbol]:
    return {"a": Symbol(a, RATIO, "per-token acceptance rate"), "k": Symbol(k, COUNT, "guesses drafted per step")}


def _derive_E(a, k):
    a, k = _num(a), _num(k)
    return closed_form("expected tokens per verify pass, E(a, k)", COUNT, _num(E(a, k)), _expected(a),
                       (LEVIATHAN,), **_ak(a, k))


def _derive_tau(a, k):
    a, k = _num(a), _num(k)
    return closed_form("mean acceptance length τ, the target's token included: E(a, k)", COUNT, _num(tau(a, k)),
                       _expected(a), (LEVIATHAN, "EAGLE (li2024) and SGLang report τ, tokens per verify pass; "
                                      "models/speculative.py: acceptance_length"), **_ak(a, k))


def _derive_drafted_share(a, k):
    a, k = _num(a), _num(k)
    return closed_form("accepted over drafted tokens, (E(a, k) - 1) / k", RATIO, _num(drafted_share(a, k)),
                       f"({_expected(a)} - 1) / k",
                       (LEVIATHAN, "vLLM's V1 engine: accepted over drafted tokens, counted up to each step's first "
                                   "rejection; models/speculative.py: drafted_share"), **_ak(a, k))


def _derive_inverse(reported: str, given: float, k: float, result: float) -> Derivation:
    """The bisection behind a_from_share and a_from_tau, with the reported figure either side of a."""
    f = speculative.REPORTED[reported]
    what = {"drafted_share": "accepted over drafted tokens (E(a, k) - 1) / k",
            "acceptance_length": "mean acceptance length τ = E(a, k)"}[reported]
    shown = (lambda v: f"{v:.2%}") if reported == "drafted_share" else (lambda v: f"{v:.4f}")
    quantity = f"per-token acceptance rate a that gives {what} = {shown(given)} at k = {k:g}"
    if not np.isfinite(result):
        lo, hi = _num(f(0.0, k)), _num(f(1.0, k))
        return search(quantity, RATIO, result,
                      f"bisection on a in [0, 1]: {what} runs from {shown(lo)} at a = 0 to {shown(hi)} at a = 1, "
                      f"so no a gives {shown(given)}", "models/speculative.py: per_token_acceptance")
    step = 0.001
    lo, hi = max(result - step, 0.0), min(result + step, 1.0)
    return search(quantity, RATIO, result,
                  f"bisection on a in [0, 1] until the bracket is 1e-12 wide ({what} rises with a): "
                  f"{shown(_num(f(lo, k)))} at a = {lo:.4f}, {shown(_num(f(result, k)))} at a = {result:.4f}, "
                  f"{shown(_num(f(hi, k)))} at a = {hi:.4f}",
                  "models/speculative.py: per_token_acceptance")


def _derive_a_from_share(share, k):
    return _derive_inverse("drafted_share", _num(share), _num(k), _num(a_from_share(share, k)))


def _derive_a_from_tau(length, k):
    return _derive_inverse("acceptance_length", _num(length), _num(k), _num(a_from_tau(length, k)))


def _derive_timeline_tokens():
    return value("tokens the timeline figure draws", COUNT, timeline_tokens(),
                 "explainer_gen/compute/figures/tokens.py: N_TOKENS, a setting of the figure")


@dataclass(frozen=True)
class _Carrying(Resolved):
    """The scenario, its passes carrying `requests` sequences however many positions they hold:
    a verify pass (k + 1 positions a request) or a tree's later draft levels, priced by the same
    `roofline.step_time` call as the model's (`requests=`)."""

    requests: float = 1.0

    def forward(self, tokens, context=None, requests=None, which: str = "target", on=None, logits=None):
        return super().forward(tokens, context, self.requests if requests is None else requests, which, on, logits)


def _relabel(d: Derivation, quantity: str, **words: str) -> Derivation:
    """`d` under another name, some of its symbols' words changed."""
    symbols = {k: (replace(s, words=words[k]) if k in words else s) for k, s in d.symbols.items()}
    return replace(d, quantity=quantity, symbols=symbols)


def _derive_positions(scenario: Resolved, tokens: float, requests: float, quantity: str, per: str,
                      which: str = "target", context=None, weights=None, on=None) -> Derivation:
    """A pass of `tokens` positions over `requests` sequences, each reading its cache once, as the
    roofline's closed form (vocabulary.roofline._derive_pass) over the same kernel pieces."""
    r = scenario.in_formats(weights)
    carrying = _Carrying(*(getattr(r, f) for f in Resolved.__dataclass_fields__), requests=float(requests))
    d = _derive_pass(carrying, tokens, which, context, on=on)
    return _relabel(d, quantity, t=f"positions in the pass ({per})", c="cached tokens read (each request's cache once)")


def _requests(n: float) -> str:
    return f"{n:,.0f} request" + ("" if n == 1 else "s")


def _derive_verify_pass(scenario: Resolved, k: float, batch: float, context=None, weights=None) -> Derivation:
    return _derive_positions(scenario, batch * (k + 1.0), batch,
                             f"time of one verify pass of {scenario.target.name}, k + 1 = {k + 1:g} positions for "
                             f"each of {_requests(batch)}, at its floor",
                             f"k + 1 = {k + 1:g} per request", "target", context, weights)


def _derive_verify(scenario: Resolved, k, batch=1):
    return _derive_verify_pass(scenario, _num(k), _num(batch))


def _derive_speedup(scenario: Resolved, a, k, batch=1, context=None, weights=None, on=None):
    a, k, batch = _num(a), _num(k), _num(batch)
    r = scenario.in_formats(weights)
    ctx = r.context_or(context)
    cards = r.cards if on is None else on
    plain = _num(speculative.plain_step_s(r.acc, r.target, r.cards, batch, ctx, r.precision))
    draft = _num(speculative.draft_step_s(r.acc, r.draft, cards, batch, ctx, r.precision))
    verify_ = _num(speculative.verify_step_s(r.acc, r.target, r.cards, batch, k, ctx, r.precision))
    on_cards = f" on {on} card{'s' if on != 1 else ''}" if on is not None else ""
    return closed_form(f"speedup over plain decoding ({r.target.name} with {r.draft.name} on {r.cards} × "
                       f"{r.acc.name}, batch {batch:g}, {_num(ctx):,.0f} tokens of context, every pass at its floor)",
                       RATIO, _num(speedup(scenario, a, k, batch, context, weights, on)),
                       f"{_expected(a)} * P / (k * D + V)",
                       (LEVIATHAN, "models/speculative.py: speedup, E(a, k) tokens per speculative step of k draft "
                                   "passes and one verify pass, against one token per plain step"),
                       **_ak(a, k),
                       P=Symbol(plain, TIME, f"plain decode step of {r.target.name} over the batch, at its floor "
                                             f"(step)"),
                       D=Symbol(draft, TIME, f"one pass of the {r.draft.name} draft over the batch{on_cards} "
                                             f"(step, 'draft')"),
                       V=Symbol(verify_, TIME, "verify pass, k + 1 positions a request (verify)"))


def _derive_memory_cap(scenario: Resolved, context=None, weights=None):
    r = scenario.in_formats(weights)
    acc, t, dr, p = r.acc, r.target, r.draft, r.precision
    ctx = _num(r.context_or(context))
    result = _num(memory_cap(scenario, context, weights))
    kv = p.kv.bytes

    def per_token(m):
        return (f"KV cache per token, {m.name}: 2 × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × "
                f"{kv:g} bytes ({p.kv.name})")
    sources = (acc.source, "models/kvcache.py: RESERVE, a tenth of HBM kept from the cache for activations and "
                           "the runtime (an assumed, common setting)",
               f"{t.name}: {t.source}", f"{dr.name}: {dr.source}")
    quantity = f"largest batch that fits in memory, {t.name} with its {dr.name} draft at {ctx:,.0f} tokens each"
    if ctx <= 0:
        return value(quantity, COUNT, result, *sources)
    return closed_form(
        quantity, COUNT, result, "max((n * M * (1 - s) - (Wt + Wd)) // ((Kt + Kd) * C), 0)", sources,
        n=Symbol(float(r.cards), COUNT, "cards"), M=Symbol(acc.memory_bytes, BYTES, f"HBM of one {acc.name}"),
        s=Symbol(kvcache.RESERVE, RATIO, "share held back (assumed)"),
        Wt=Symbol(t.weight_bytes(p), BYTES, f"weights of {t.name} in memory ({p.weights.name} blocks, 16-bit "
                                            f"embedding and head)"),
        Wd=Symbol(dr.weight_bytes(p), BYTES, f"weights of {dr.name} in memory"),
        Kt=Symbol(kvcache.bytes_per_token(t, kv), BYTES / COUNT, per_token(t)),
        Kd=Symbol(kvcache.bytes_per_token(dr, kv), BYTES / COUNT, per_token(dr)),
        C=Symbol(ctx, COUNT, "tokens of context each request holds"))


MAX_BATCH = 1 << 16  # the bisection's end (speculative.breakeven_batch)


def _x(s: float) -> str:
    """A speedup near 1, to as many decimals as tell it from 1."""
    for places in (4, 5, 6, 7):
        text = f"{s:.{places}f}"
        if float(text) != 1.0:
            break
    return text + "×"


def _breakeven_method(speed, first: int, cap: float, last_paying: bool, what: str, priced: str) -> str:
    """A breakeven search told with the speedups either side of its answer, computed by `speed(batch)`
    (the model's speedup at a batch): the bisection's `first` slower batch (0: slower at batch one,
    -1: still paying at its end), the memory `cap`; the answer is the last batch at which it pays
    (`last_paying`) or the first at which it is slower."""
    head = (f"bisection over batches 1 to {MAX_BATCH:,} for the first at which {what} is slower than plain "
            f"decoding (speedup below 1), {priced}, among the {cap:,.0f} requests that fit in memory")
    if first == 0:
        return head + f": slower already at batch 1, speedup {_x(speed(1))}"
    if 0 < first <= cap:
        return head + (f": speedup {_x(speed(first - 1))} at batch {first - 1:,}, {_x(speed(first))} at batch {first:,}"
                       if first > 1 else f": speedup {_x(speed(1))} at batch 1")
    at_cap = (f"speedup {_x(speed(cap))} at batch {cap:,.0f}, the most that fits" if cap >= 1
              else "no request fits")
    beyond = (f"the first slower batch, {first:,}, does not fit (speedup {_x(speed(first - 1))} at {first - 1:,}, "
              f"{_x(speed(first))} at {first:,})" if first > 0
              else f"it still pays at batch {MAX_BATCH:,}, the search's end")
    answer = "so the answer is the memory cap" if last_paying else "so no batch that fits is slower (∞)"
    return head + f": it pays all the way to the cap, {at_cap}; {beyond}; {answer}"


def _priced(priced: str) -> tuple[str, tuple[str, ...]]:
    if priced == "estimate":
        return ("every pass priced at the estimate fitted on published measurements",
                ("models/estimate.py: the estimate, fitted on the training measurements of models/measurements.yaml",))
    return "every pass at its roofline floor", ()


def _setting(r: Resolved, ctx) -> str:
    return f"{r.target.name} with {r.draft.name} on {r.cards} × {r.acc.name}, {_num(ctx):,.0f} tokens of context"


def _derive_breakeven(scenario: Resolved, a, k, context, weights, priced: str, last_paying: bool) -> Derivation:
    """`stops_paying_at` (the first slower batch) or, `last_paying`, `pays_up_to` (the last batch
    that pays), as a search. Over arrays of a and k as the terms take them: the searches' answers
    and the speedups either side of them are computed over the whole grid at once, and the
    derivation's words, method and result are arrays of them (Term.derives_arrays)."""
    r = scenario.in_formats(weights)
    a, k = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(k, dtype=float))
    first = np.asarray(_first_slower(scenario, a, k, context, weights, priced)).astype(int)
    cap = _num(memory_cap(scenario, context, weights))
    how, sources = _priced(priced)
    eff = estimate.fitted().eff if priced == "estimate" else None

    def speed(batch) -> np.ndarray:
        return np.broadcast_to(priced_speedup(scenario, a, k, np.maximum(batch, 1), context, weights, None, eff), a.shape)
    at_one, before, at_first, at_cap = speed(1), speed(first - 1), speed(first), speed(max(cap, 1))
    result = (pays_up_to(scenario, a, k, context, weights, priced) if last_paying
              else stops_paying_at(scenario, a, k, context, weights))
    setting = _setting(r, r.context_or(context))
    asked = "largest batch at which speculation pays" if last_paying else \
        "first batch at which speculation is slower than plain decoding"
    quantity, method = np.empty(a.shape, dtype=object), np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        speeds = {1: at_one[i], first[i] - 1: before[i], first[i]: at_first[i], cap: at_cap[i]}
        quantity[i] = f"{asked} ({setting}, a = {a[i]:g}, k = {k[i]:g})"
        method[i] = _breakeven_method(speeds.__getitem__, int(first[i]), cap, last_paying, "speculation", how)
    if not a.ndim:
        quantity, method, result = quantity[()], method[()], _num(result)
    d = search(quantity, COUNT, 0.0, method, "models/speculative.py: breakeven_batch", *sources)
    return replace(d, result=np.asarray(result, dtype=float) if a.ndim else result,
                   parts=(_derive_memory_cap(scenario, context, weights),))


def _derive_stops_paying_at(scenario: Resolved, a, k, context=None, weights=None):
    return _derive_breakeven(scenario, a, k, context, weights, "floor", last_paying=False)


def _derive_pays_up_to(scenario: Resolved, a, k, context=None, weights=None, priced="floor"):
    return _derive_breakeven(scenario, a, k, context, weights, priced, last_paying=True)


@topic.term(depends=(), returns=Returns("count", "expected tokens per verify pass"),
            derive=_derive_E)
def E(a, k):
    """Expected tokens per verify step, E(a, k) = (1 - a^(k+1)) / (1 - a)."""
    return speculative.expected_tokens(a, k)


@lru_cache(maxsize=4096)
def _breakeven(acc, target, draft, cards: int, context: float, precision, a: bytes, k: bytes, shape: tuple,
               eff=None) -> np.ndarray:
    """The bisection, once per setting: a page asks for the same one under many scenarios that
    differ only in fields it does not read (the table's rows name their context outright)."""
    a, k = (np.frombuffer(x, dtype=float).reshape(shape) for x in (a, k))
    out = np.asarray(speculative.breakeven_batch(acc, target, draft, cards, a, k, context,
                                                 precision=precision, eff=eff))
    out.setflags(write=False)
    return out


PRICED = ("floor", "estimate")


def _first_slower(scenario: Resolved, a, k, context, weights=None, priced: str = "floor"):
    """The bisection's answer, each pass priced at its floor or at the estimate fitted on published
    measurements (models.estimate)."""
    if priced not in PRICED:
        raise ValueError(f"priced is 'floor' or 'estimate', not {priced!r}")
    scenario = scenario.in_formats(weights)
    a, k = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(k, dtype=float))
    eff = estimate.fitted().eff if priced == "estimate" else None
    return _breakeven(scenario.acc, scenario.target, scenario.draft, scenario.cards,
                      float(scenario.context_or(context)), scenario.precision, a.tobytes(), k.tobytes(), a.shape, eff)


@topic.term(depends=("scenario",), returns=Returns("ratio", "speedup over plain decoding"),
            derive=_derive_speedup)
def speedup(scenario: Resolved, a, k, batch=1, context=None, weights=None, on=None):
    """The speedup with every pass at its roofline floor, the draft split over the cards (or on `on`)."""
    return priced_speedup(scenario, a, k, batch, context, weights, on, eff=None)


def priced_speedup(scenario: Resolved, a, k, batch, context, weights, on, eff):
    """The one call behind `speedup` (floors) and `speedup_estimate` (eff, models.estimate)."""
    scenario = scenario.in_formats(weights)
    return speculative.speedup(scenario.acc, scenario.target, scenario.draft, scenario.cards, batch, a, k,
                               scenario.context_or(context), scenario.precision, eff, on)


@topic.term(depends=("scenario",), returns=Returns("time", "time of one verify pass"),
            derive=_derive_verify)
def verify(scenario: Resolved, k, batch=1):
    """Seconds for the verify pass alone: k + 1 positions a request, one read of each cache."""
    if isinstance(k, str) or isinstance(batch, str):  # a name where a number goes: a call the term does not take
        raise TypeError(f"verify takes the lookahead k and the batch, numbers; got k={k!r}, batch={batch!r}")
    return speculative.verify_step_s(scenario.acc, scenario.target, scenario.cards, batch, k, scenario.context,
                                     scenario.precision)


@topic.term(depends=(), returns=Returns("ratio", "accepted share of drafted tokens"),
            derive=_derive_drafted_share)
def drafted_share(a, k):
    """Accepted over drafted tokens, counted up to each step's first rejection (vLLM's rate)."""
    return speculative.drafted_share(a, k)


@topic.term(depends=(), returns=Returns("count", "mean acceptance length"),
            derive=_derive_tau)
def tau(a, k):
    """The mean acceptance length EAGLE and SGLang report: E(a, k), the target's token included."""
    return speculative.acceptance_length(a, k)


@topic.term(depends=(), returns=Returns("ratio", "per-token acceptance rate"), derive=_derive_a_from_share)
def a_from_share(share, k):
    """The per-token acceptance that gives an accepted-over-drafted `share` at lookahead k."""
    return speculative.per_token_acceptance("drafted_share", share, k)


@topic.term(depends=(), returns=Returns("ratio", "per-token acceptance rate"), derive=_derive_a_from_tau)
def a_from_tau(length, k):
    """The per-token acceptance that gives a mean acceptance length `length` at lookahead k."""
    return speculative.per_token_acceptance("acceptance_length", length, k)


@topic.term(depends=(), returns=Returns("count", "tokens in the timeline figure"),
            derive=_derive_timeline_tokens)
def timeline_tokens() -> int:
    """Tokens the token-timeline figure draws."""
    return tokens.N_TOKENS


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch that fits in memory"),
            derive=_derive_memory_cap)
def memory_cap(scenario: Resolved, context=None, weights=None):
    """Requests that fit at once with the draft loaded beside the target, each holding `context`
    tokens (the scenario's by default) in both caches: the largest batch that can run."""
    return scenario.in_formats(weights).memory_cap(with_draft=True, context=context)


@topic.term(depends=("scenario",), returns=Returns("count", "first batch at which speculation is slower"),
            derive=_derive_stops_paying_at, derives_arrays=True)
def stops_paying_at(scenario: Resolved, a, k, context=None, weights=None):
    """The first batch at which speculation is slower than plain decoding among those that fit in
    memory: 1 where even batch one is slower, inf where it pays at every batch that fits."""
    cap = memory_cap(scenario, context, weights)
    first = _first_slower(scenario, a, k, context, weights)
    return np.where((first < 0) | (first > cap), np.inf, np.maximum(first, 1)).astype(float)


@topic.term(depends=("scenario",), returns=Returns("count", "largest batch at which speculation pays"),
            derive=_derive_pays_up_to, derives_arrays=True)
def pays_up_to(scenario: Resolved, a, k, context=None, weights=None, priced="floor"):
    """The largest batch at which speculation still pays and the batch fits in memory: the
    memory cap where speculation pays all the way to it, 0 where it never pays. Every pass at its
    floor, or with `priced="estimate"` at the estimate fitted on published measurements."""
    cap = memory_cap(scenario, context, weights)
    first = _first_slower(scenario, a, k, context, weights, priced)
    return np.where((first < 0) | (first > cap), cap, np.maximum(first - 1, 0))
