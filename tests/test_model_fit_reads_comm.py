"""Memory fit, KV-cache reads, breakeven and tensor-parallel communication in the numpy models.

The checks are small helpers returning True/False so that `test_checks_catch_broken_variants`
can run the very same helper on a deliberately broken implementation and see it fail.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import batching, estimate, kvcache, roofline, speculative
from models.catalogue import load_catalogue

cat = load_catalogue()
ACCS, MODELS = sorted(cat.accelerators), sorted(cat.models)
CONTEXTS = [512, 2048, 8192, 32768]
PROPS = settings(max_examples=150, deadline=None)


def kv_hand(m) -> int:
    """K and V x layers x KV heads x head dim x 2 bytes (BF16), written out independently."""
    return 2 * m.layers * m.kv_heads * m.head_dim * 2


def budget(acc, cards) -> float:
    return cards * acc.memory_gb * 1e9 * (1 - kvcache.RESERVE)


# --- check helpers: each takes the implementation under test as its first argument -----------

def kv_reads_ok(step, acc, model, cards, tokens, context, requests) -> bool:
    got = step(acc, model, cards, tokens, context, requests=requests).kv_s
    want = requests * context * kv_hand(model) / (cards * acc.bandwidth_tbps * 1e12)
    return bool(np.isclose(got, want, rtol=1e-12, atol=0))


def verify_reads_cache_once(step, acc, model, cards, batch, context, ks=(1, 2, 4, 8)) -> bool:
    """A verify pass over batch x (k + 1) positions of `batch` requests reads each cache once."""
    kv = [float(step(acc, model, cards, batch * (k + 1), context, requests=batch).kv_s) for k in ks]
    return all(kv_reads_ok(step, acc, model, cards, batch * (k + 1), context, batch) for k in ks) \
        and np.allclose(kv, kv[0], rtol=1e-12, atol=0)


def fits_within_budget(fits, acc, target, cards, context, draft) -> bool:
    """fits => weights + draft weights + one request's cache (both models') <= usable memory."""
    if not fits(acc, target, cards, context, draft):
        return True
    need = 2 * target.params + context * kv_hand(target)
    if draft is not None:
        need += 2 * draft.params + context * kv_hand(draft)
    return need <= budget(acc, cards) * (1 + 1e-12)


def comm_ok(comm, acc, model, tokens=1) -> bool:
    """Zero on one card; over 2, 4, 8 cards positive, and moving with the card count as the
    topology says. Behind a switch every card sends at its whole link rate, and a ring sends
    2 (N - 1) / N of each message: strictly growing. On a full mesh a group of N cards uses N - 1
    links, so the same 2 (N - 1) / N goes at N - 1 links' rate, 2 / N of a link's time: strictly
    falling (the fixed costs stay)."""
    c = [float(comm(acc, model, n, tokens)) for n in (1, 2, 4, 8)]
    more = c[1:]
    moves = zip(more, more[1:]) if acc.topology == "switch" else zip(more[1:], more)
    return c[0] == 0.0 and all(x > 0.0 for x in more) and all(x < y for x, y in moves)


def single_tail(slower) -> bool:
    """The True entries (speculation slower) form one contiguous run reaching the end, or none."""
    idx = np.flatnonzero(slower)
    return len(idx) == 0 or (idx[-1] == len(slower) - 1 and len(idx) == len(slower) - idx[0])


# --- 1. KV bytes per token ---------------------------------------------------------------------

def test_kv_bytes_per_token_closed_form():
    # 70B: 2 (K, V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680
    assert kvcache.bytes_per_token(cat.model("llama-3-70b")) == 327_680
    # 1B: 2 x 16 layers x 8 KV heads x 64 head dim x 2 bytes = 32,768
    assert kvcache.bytes_per_token(cat.model("llama-3.2-1b")) == 32_768
    for key in MODELS:
        m = cat.model(key)
        assert kvcache.bytes_per_token(m) == kv_hand(m), key


# --- 2. memory fit -----------------------------------------------------------------------------

@st.composite
def fit_case(draw):
    acc = cat.accelerator(draw(st.sampled_from(ACCS)))
    target = cat.model(draw(st.sampled_from(MODELS)))
    draft = draw(st.one_of(st.none(), st.sampled_from(MODELS).map(cat.model)))
    sizes = kvcache.tensor_parallel_sizes(target, *([draft] if draft else []))
    return acc, target, draft, sizes, draw(st.sampled_from(sizes)), draw(st.integers(1, 131072))


@PROPS
@given(fit_case())
def test_memory_fit_properties(case):
    acc, target, draft, sizes, cards, context = case
    slots = [float(kvcache.slots(acc, target, n, context, draft)) for n in sizes]
    for n, s in zip(sizes, slots):
        assert (s >= 1) == bool(kvcache.fits(acc, target, n, context, draft))
    assert slots == sorted(slots), "more cards lowered the slots"
    assert fits_within_budget(kvcache.fits, acc, target, cards, context, draft)
    need = 2 * target.params + context * kv_hand(target) + (2 * draft.params + context * kv_hand(draft) if draft else 0)
    if need <= budget(acc, cards) * (1 - 1e-9):  # and the converse, away from the boundary
        assert kvcache.fits(acc, target, cards, context, draft)
    mc = kvcache.min_cards(acc, target, context, draft)
    if mc == 0:
        assert not any(kvcache.fits(acc, target, n, context, draft) for n in sizes)
    else:
        assert mc in sizes and kvcache.fits(acc, target, mc, context, draft)
        smaller = [n for n in sizes if n < mc]
        assert not smaller or not kvcache.fits(acc, target, smaller[-1], context, draft)


# --- 3. KV reads -------------------------------------------------------------------------------

@PROPS
@given(st.sampled_from(ACCS), st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8]),
       st.integers(0, 131072), st.integers(1, 512), st.integers(1, 8))
def test_kv_reads(acc_key, model_key, cards, context, batch, k):
    acc, model = cat.accelerator(acc_key), cat.model(model_key)
    assert kv_reads_ok(roofline.step_time, acc, model, cards, batch * (k + 1), context, batch)
    assert verify_reads_cache_once(roofline.step_time, acc, model, cards, batch, context)
    # speculative's verify pass is exactly that pass (requests = batch), not batch x (k + 1) reads
    assert speculative.verify_step_s(acc, model, cards, batch, k, context) == \
        roofline.step_time(acc, model, cards, batch * (k + 1), context, requests=batch).seconds


# --- 4. breakeven ------------------------------------------------------------------------------

def test_breakeven_never_falls_with_context():
    s = cat.defaults["scenario"]
    acc, t, d = cat.accelerator(s["accelerator"]), cat.model(s["target"]), cat.model(s["draft"])
    assert (s["accelerator"], s["cards"], s["target"], s["draft"]) == ("h100-sxm", 4, "llama-3-70b", "llama-3.2-1b")
    a, k = np.meshgrid([0.6, 0.7, 0.8, 0.9], [1, 2, 4, 8], indexing="ij")
    rows = [speculative.breakeven_batch(acc, t, d, 4, a, k, c).astype(float) for c in CONTEXTS]
    rows = [np.where(r == -1, np.inf, r) for r in rows]
    for lo, hi in zip(rows, rows[1:]):
        assert (hi >= lo).all(), (lo, hi)
    # At 512 every cell pays at batch 1, and has a real crossing exactly where speculation loses in
    # the limit of large batches (`speedup_limit_by_hand`): there, the GEMMs of the verify pass's
    # k + 1 positions cost k + 1 times a plain step's, but attention reads each request's cache once
    # for all of them, and no GEMM arithmetic hides that read. At a = 0.9 and k = 1 or 2 the saved
    # reads outweigh the extra positions at any batch (the limit is 1.04 and 1.02), so no crossing.
    limit = speedup_limit_by_hand(a, k, 512)
    assert (rows[0] > 0).all()
    assert (np.isfinite(rows[0]) == (limit < 1.0)).all(), (rows[0], limit)
    assert np.isfinite(rows[0][a <= 0.8]).all()  # every acceptance up to 0.8 crosses at any k


def speedup_limit_by_hand(a, k, context, cards=4):
    """The speedup as the batch grows without bound, for the default scenario (Llama 3 70B and
    Llama 3.2 1B on H100 SXM, BF16): the per-request slopes of plain, verify and draft steps, each
    kernel class at its own roofline, from the catalogue's rows. Fixed costs (weights read once,
    all-reduce latencies) vanish in the limit; per position the GEMMs run at the 16-bit peak (past
    the ridge), the untied table is looked up, and the all-reduces (two a layer and the embedding's)
    and the logits gather move their bytes; per request attention reads the cache once, or does its
    arithmetic for every position, whichever is longer."""
    acc = cat.accelerator("h100-sxm")
    assert acc.topology == "switch"
    bw, flops, peer = cards * acc.bandwidth_tbps * 1e12, cards * acc.bf16_tflops * 1e12, acc.link_gbps * 1e9

    def slopes(m):
        table = (1 if m.tied_embeddings else 2) * m.vocab * m.hidden
        multiplied = (m.params - table) + m.vocab * m.hidden  # blocks and the output head
        position = (2 * multiplied / flops + (0 if m.tied_embeddings else 2 * m.hidden / bw)
                    + (2 * m.layers + 1) * 2 * (cards - 1) / cards * m.hidden * 2 / peer
                    + (cards - 1) / cards * m.vocab * 2 / peer)
        return position, context * kv_hand(m) / bw, 4 * m.layers * m.heads * m.head_dim * context / flops

    target, draft = slopes(cat.model("llama-3-70b")), slopes(cat.model("llama-3.2-1b"))
    e = (1 - a ** (k + 1)) / (1 - a)
    plain = target[0] + np.maximum(target[1], target[2])
    verify = (k + 1) * target[0] + np.maximum(target[1], (k + 1) * target[2])
    drafting = k * (draft[0] + np.maximum(draft[1], draft[2]))
    return e * plain / (drafting + verify)


@pytest.mark.parametrize("priced", ["floor", "estimate"])
def test_breakeven_single_crossing_brute_force(priced):
    """The bisection's assumption, checked by scanning every batch: at the floor, and with every
    pass priced by the estimate fitted on published measurements (models/estimate.py), whose
    fixed costs and joined reads and arithmetic make the speedup a different curve."""
    eff = estimate.fitted().eff if priced == "estimate" else None
    batches, crossings = np.arange(1, 4097), 0
    pairs = [("llama-3-70b", "llama-3.2-1b"), ("llama-3-70b", "llama-3-8b"), ("llama-3-8b", "llama-3.2-1b")]
    for acc_key in ACCS:
        for cards in (1, 2, 4, 8):
            for tk, dk in pairs:
                for c in CONTEXTS:
                    acc, t, d = cat.accelerator(acc_key), cat.model(tk), cat.model(dk)
                    slower = speculative.speedup(acc, t, d, cards, batches, 0.8, 4, c, eff=eff) < 1.0
                    where = (acc_key, cards, tk, dk, c)
                    assert single_tail(slower), where
                    idx = np.flatnonzero(slower)
                    want = -1 if len(idx) == 0 else int(batches[idx[0]])
                    want = 0 if want == 1 else want  # slower already at batch 1: "never pays"
                    crossings += 1 < want
                    got = speculative.breakeven_batch(acc, t, d, cards, 0.8, 4, c, max_batch=4096, eff=eff)
                    assert int(got) == want, where
    assert crossings > 10  # the scan is not vacuous


# --- 5. communication --------------------------------------------------------------------------

def test_comm_one_card_growth_and_hand_value():
    for acc_key in ACCS:
        for model_key in MODELS:
            acc, m = cat.accelerator(acc_key), cat.model(model_key)
            assert comm_ok(roofline.comm_s, acc, m), (acc_key, model_key)
            assert roofline.step_time(acc, m, 1, 64).comm_s == 0.0
    acc, m = cat.accelerator("h100-sxm"), cat.model("llama-3-70b")
    # 70B on 4 x H100, 1 token: message = 1 x 8192 hidden x 2 bytes = 16,384 B; a ring sends
    # 2 x 3/4 of it = 24,576 B at 450e9 B/s = 5.4613e-8 s; plus 10 us latency = 1.0054613e-5 s
    # per all-reduce; x (2 per layer x 80 layers + the embedding's 1) = 161 all-reduces
    # -> 1.61879275e-3 s. Then the gather of the token's logits to one card: 3/4 of 128,256 x 2 B
    # = 192,384 B at 450e9 B/s = 4.2752e-7 s, plus 10 us -> 1.042752e-5 s. In all 1.62922027e-3 s.
    per = 10e-6 + 24_576 / 450e9
    gather = 10e-6 + 192_384 / 450e9
    assert np.isclose(roofline.step_time(acc, m, 4, 1).comm_s, 161 * per + gather, rtol=1e-12, atol=0)
    assert np.isclose(161 * per, 1.61879275e-3, rtol=1e-8, atol=0)
    assert np.isclose(161 * per + gather, 1.62922027e-3, rtol=1e-8, atol=0)
    # The 4 x MI300X mesh: 3 of a card's 7 links reach the other 3 cards, 3 x 448 / 7 = 192 GB/s.
    mi = cat.accelerator("mi300x")
    assert np.isclose(roofline.step_time(mi, m, 4, 1).comm_s,
                      161 * (10e-6 + 24_576 / 192e9) + 10e-6 + 192_384 / 192e9, rtol=1e-12, atol=0)
    # The step: its kernels one after another and the communication; never shorter than all its
    # reads or all its arithmetic as one kernel, and at one position every kernel is read-bound.
    for tokens, context in ((1, 0), (1, 4096), (64, 512), (512, 0), (2048, 8192)):
        st_ = roofline.step_time(acc, m, 4, tokens, context)
        kernels = st_.gemm_s + st_.head_s + st_.lookup_s + st_.attention_s + st_.comm_s
        assert np.isclose(st_.seconds, kernels, rtol=1e-12, atol=0)
        assert st_.seconds >= (max(st_.memory_s, st_.compute_s) + st_.comm_s) * (1 - 1e-12)
    st_ = roofline.step_time(acc, m, 4, 1)
    assert np.isclose(st_.seconds, st_.memory_s + st_.comm_s, rtol=1e-12, atol=0)


# --- 6. negative controls: the same helpers reject broken implementations ----------------------

def test_checks_catch_broken_variants():
    h100, t70, d1 = cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")

    def step_ignoring_context(acc, model, cards, tokens, context=0, requests=None):
        return roofline.step_time(acc, model, cards, tokens, 0, requests)

    def step_reading_per_position(acc, model, cards, tokens, context=0, requests=None):
        return roofline.step_time(acc, model, cards, tokens, context)  # cache read k + 1 times

    def fits_forgetting_draft(acc, target, cards, context, draft=None):
        return kvcache.fits(acc, target, cards, context)

    def comm_charging_one_card(acc, model, cards, tokens):
        one = acc.allreduce_latency + 2.0 * (cards - 1) / cards * tokens * model.hidden * 2 / (acc.link_gbps * 1e9)
        return (2 * model.layers + 1) * one

    def comm_ignoring_the_mesh(acc, model, cards, tokens):  # every card at all 7 links' rate
        one = acc.allreduce_latency + 2.0 * (cards - 1) / cards * tokens * model.hidden * 2 / (acc.link_gbps * 1e9)
        return np.where(cards > 1, (2 * model.layers + 1) * one, 0.0)

    # the real implementations pass on the exact cases the broken ones fail
    assert kv_reads_ok(roofline.step_time, h100, t70, 4, 8, 4096, 8)
    assert not kv_reads_ok(step_ignoring_context, h100, t70, 4, 8, 4096, 8)
    assert verify_reads_cache_once(roofline.step_time, h100, t70, 4, 8, 4096)
    assert not verify_reads_cache_once(step_reading_per_position, h100, t70, 4, 8, 4096)
    # 2 x H100: 144 GB usable, 141.1 GB of 70B weights; the 1B draft's 2.5 GB leaves no room
    # for 4096 tokens of both caches, though without the draft 4096 tokens fit
    assert fits_within_budget(kvcache.fits, h100, t70, 2, 4096, d1)
    assert not fits_within_budget(fits_forgetting_draft, h100, t70, 2, 4096, d1)
    assert comm_ok(roofline.comm_s, h100, t70)
    assert not comm_ok(comm_charging_one_card, h100, t70)
    mi300x = cat.accelerator("mi300x")
    assert comm_ok(roofline.comm_s, mi300x, t70)
    assert not comm_ok(comm_ignoring_the_mesh, mi300x, t70)
    assert single_tail(np.array([False, False, True, True]))
    assert not single_tail(np.array([False, True, False, True]))
    assert not single_tail(np.array([False, True, True, False]))


# --- 7. batching -------------------------------------------------------------------------------

def test_batching_context_lowers_throughput():
    acc, m = cat.accelerator("h100-sxm"), cat.model("llama-3-70b")
    for scheduler in ("static", "continuous"):
        short = batching.simulate(scheduler, 16, 0.5, acc, m, 4, 0)
        long = batching.simulate(scheduler, 16, 0.5, acc, m, 4, 4096)
        assert long.tokens == short.tokens
        assert long.tokens_per_s < short.tokens_per_s, scheduler


def test_batching_charges_prompt_plus_tokens_made():
    acc, m, ctx, n = cat.accelerator("h100-sxm"), cat.model("llama-3-8b"), 1000, 3
    bw, bpt = acc.bandwidth_tbps * 1e12, kv_hand(m)
    weights_s = (2 * (m.params - m.vocab * m.hidden) + m.hidden * 2) / bw  # untied: one embedding row
    # one request alone (batch 1, two requests of 3 tokens each, spread 0): 6 memory-bound steps
    run = batching.simulate("static", 1, 0.0, acc, m, 1, ctx, n=2, mean=n)
    assert run.active.tolist() == [1] * 6
    made = [0, 1, 2, 0, 1, 2]  # the second request starts from its prompt again
    want = [weights_s + (ctx + j) * bpt / bw for j in made]
    assert np.allclose(run.step_s, want, rtol=1e-12)
    kv_bytes = (run.step_s[:n] - weights_s).sum() * bw  # one request's cache reads over its steps
    assert np.isclose(kv_bytes, sum(ctx + j for j in range(n)) * bpt, rtol=1e-9)
    # both at once (batch 2): each step reads 2 x (prompt + step) tokens of cache
    run2 = batching.continuous(np.array([n, n]), 2, acc, m, 1, ctx)
    for s, got in enumerate(run2.step_s):
        st_ = roofline.step_time(acc, m, 1, 2, ctx + s)
        assert np.isclose(st_.kv_s, 2 * (ctx + s) * bpt / bw, rtol=1e-12)
        assert np.isclose(got, st_.seconds, rtol=1e-12) and not st_.compute_bound
