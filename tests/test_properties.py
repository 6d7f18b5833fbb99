"""Properties the models must have for every input, searched by hypothesis."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models import batching, kvcache, load_catalogue, papers, roofline, speculative

CAT = load_catalogue()
ACCS = sorted(CAT.accelerators)
MODELS = sorted(CAT.models)

acceptance = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
lookahead = st.integers(min_value=1, max_value=16)
cards = st.sampled_from([1, 2, 4, 8, 16])
accelerator = st.sampled_from(ACCS).map(CAT.accelerator)
model = st.sampled_from(MODELS).map(CAT.model)
tokens = st.integers(min_value=1, max_value=1 << 16)


@given(acceptance, lookahead)
def test_expected_tokens_lies_between_one_and_k_plus_one(a, k):
    e = float(speculative.expected_tokens(a, k))
    assert 1.0 - 1e-12 <= e <= k + 1 + 1e-9


@given(acceptance, acceptance, lookahead)
def test_expected_tokens_rises_with_acceptance(a1, a2, k):
    lo, hi = sorted((a1, a2))
    assert speculative.expected_tokens(lo, k) <= speculative.expected_tokens(hi, k) + 1e-9


@given(acceptance, lookahead)
def test_expected_tokens_rises_with_lookahead(a, k):
    assert speculative.expected_tokens(a, k) <= speculative.expected_tokens(a, k + 1) + 1e-9


@given(accelerator, model, model, cards, st.integers(min_value=1, max_value=4096), acceptance, lookahead)
def test_speedup_never_exceeds_k_plus_one(acc, target, draft, n, batch, a, k):
    # A verify pass never takes less than a plain step, and it yields at most k + 1 tokens.
    assert float(speculative.speedup(acc, target, draft, n, batch, a, k)) <= k + 1 + 1e-9


@given(acceptance, lookahead, st.floats(min_value=0.0, max_value=10.0, allow_nan=False))
def test_theorem_3_8_never_exceeds_k_plus_one(a, k, c):
    assert float(papers.walltime_improvement(a, k, c)) <= k + 1 + 1e-9


@given(accelerator, model, cards, tokens, tokens)
def test_step_time_never_falls_as_tokens_per_pass_grow(acc, m, n, t1, t2):
    lo, hi = sorted((t1, t2))
    assert roofline.step_time(acc, m, n, lo).seconds <= roofline.step_time(acc, m, n, hi).seconds


@given(accelerator, model, cards, tokens)
def test_bandwidth_bound_exactly_below_each_gemms_ridge(acc, m, n, t):
    """The block GEMMs are compute-bound exactly when each class of them is past the card's ridge
    (BF16: peak over bandwidth): the dense weights, multiplied by all t positions, and a mixture's
    experts, each multiplied by the t x active / experts positions routed to it while the positions
    reach a share 1 - (1 - active / experts)^t of them, and are read that much."""
    st_ = roofline.step_time(acc, m, n, t)
    margins = [t / acc.ridge]  # each class's arithmetic over its reads
    if m.experts:
        reach = 1 - (1 - m.active_experts / m.experts) ** t
        margins.append(t * m.active_experts / m.experts / (reach * acc.ridge))
    # Float rounding may tip a class that sits exactly on its ridge either way; away from it, never.
    if min(margins) < 1 - 1e-12:
        assert not st_.compute_bound
    elif min(margins) > 1 + 1e-12:
        assert st_.compute_bound


@given(accelerator, model, st.sampled_from([None, *MODELS]), cards,
       st.integers(min_value=1, max_value=1 << 20), st.integers(min_value=1, max_value=1 << 20))
def test_kv_slots_never_rise_with_context(acc, target, draft_key, n, c1, c2):
    draft = CAT.model(draft_key) if draft_key else None
    short, long_ = sorted((c1, c2))
    assert kvcache.slots(acc, target, n, long_, draft) <= kvcache.slots(acc, target, n, short, draft)


@settings(max_examples=40, deadline=None)
@given(accelerator, model, cards, st.integers(min_value=1, max_value=64),
       st.floats(min_value=0.0, max_value=1.5, allow_nan=False), st.integers(min_value=0, max_value=10_000))
def test_continuous_batching_is_never_slower_than_static(acc, m, n, batch, spread, seed):
    lengths = batching.output_lengths(spread, seed=seed)
    static = batching.static(lengths, batch, acc, m, n)
    continuous = batching.continuous(lengths, batch, acc, m, n)
    assert static.tokens == continuous.tokens == int(lengths.sum())  # the same requests, the same work
    assert continuous.tokens_per_s >= static.tokens_per_s * (1 - 1e-12)


def test_continuous_batching_never_needs_more_passes_on_hand_made_requests():
    # One long request among short ones: static holds the whole group for the long one.
    lengths = np.array([100, 1, 1, 1, 1, 1, 1, 1])
    acc, m = CAT.accelerator("h100-sxm"), CAT.model("llama-3-8b")
    static, continuous = batching.static(lengths, 4, acc, m, 1), batching.continuous(lengths, 4, acc, m, 1)
    assert len(continuous.active) < len(static.active)
    assert continuous.tokens_per_s > static.tokens_per_s
