"""The drafters (models.drafts): what each holds in memory and what drafting costs, by hand.

Memory is counted from Llama 3 70B's config (80 layers, hidden 8192, 64 query and 8 KV heads of
128, vocabulary 128256, untied head) and Llama 3.2 1B's; drafting time is a roofline worked out
here from those counts (each kernel's bytes read or FLOPs, two all-reduces per layer and the
embedding's, the logits gather), not taken from the module.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models import drafts, kvcache, roofline, speculative
from models.catalogue import load_catalogue
from models.precision import Precision

pytestmark = pytest.mark.unit

CAT = load_catalogue()
H100 = CAT.accelerator("h100-sxm")
TARGET, DRAFT = CAT.model("llama-3-70b"), CAT.model("llama-3.2-1b")
BF16 = 2

# Llama 3 70B, from its config.
LAYERS, HIDDEN, KV_WIDTH, FFN, VOCAB = 80, 8192, 8 * 128, 28672, 128256
ONE_LAYER = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV_WIDTH + 3 * HIDDEN * FFN + 2 * HIDDEN  # q o, k v, MLP, norms
BLOCKS = LAYERS * ONE_LAYER + HIDDEN  # and the final norm
MEAN_LAYER = BLOCKS // LAYERS  # "a block of the target's shape": the blocks' weights over the layers
PROJECTION = 2 * HIDDEN * HIDDEN  # EAGLE's and MTP's input: the features and the token's embedding
HEAD = VOCAB * HIDDEN
MEDUSA_HEAD = HIDDEN * HIDDEN + VOCAB * HIDDEN  # W1 (residual block) and W2 (its own output matrix)
LAYER_CACHE = 2 * 8 * 128 * BF16  # K and V of one layer, one token
# Llama 3.2 1B: tied, so its whole count is read and multiplied; 16 layers of hidden 2048, 32
# query heads and 8 KV heads of 64.
DRAFT_PARAMS, DRAFT_LAYERS, DRAFT_HIDDEN, DRAFT_CACHE = 1_235_814_400, 16, 2048, 2 * 16 * 8 * 64 * BF16


def test_the_target_config_is_the_catalogue_row():
    assert BLOCKS == TARGET.params - 2 * VOCAB * HIDDEN == 68_452_360_192
    assert (TARGET.layers, TARGET.hidden, TARGET.vocab, TARGET.tied_embeddings) == (LAYERS, HIDDEN, VOCAB, False)
    assert DRAFT.params == DRAFT_PARAMS and DRAFT.tied_embeddings
    # The mean layer carries a share of the final norm: 102 weights over the 855,654,400 a layer has.
    assert MEAN_LAYER - ONE_LAYER == 102


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_what_each_drafter_holds(k):
    ways = drafts.drafters(TARGET, DRAFT, k)
    assert set(ways) == set(drafts.KINDS)
    expected = {  # bytes of weights, bytes of cache a token
        "model": (DRAFT_PARAMS * BF16, DRAFT_CACHE),
        "medusa": (k * MEDUSA_HEAD * BF16, 0),
        "eagle": ((MEAN_LAYER + PROJECTION) * BF16, LAYER_CACHE),
        "mtp": (k * (MEAN_LAYER + PROJECTION) * BF16, k * LAYER_CACHE),
        "lookup": (0, 0),
    }
    for kind, (weights, cache) in expected.items():
        way = ways[kind]
        assert way.held_bytes() == weights, kind
        assert way.cache_bytes_per_token() == cache, kind
    assert ways["lookup"].draft_s(H100, 4, 1, 512) == 0.0
    assert np.all(ways["lookup"].draft_s(H100, 4, np.arange(1, 1025), 512) == 0.0)


def test_a_separate_draft_costs_the_slots_kvcache_says():
    """Two homes of one fact: drafts.slots with the separate drafter, kvcache.slots with the draft."""
    contexts = np.array([1, 100, 512, 2048, 8192, 32768, 131072], dtype=float)
    for precision in (Precision.of("bf16", "bf16"), Precision.of("fp8", "fp8"), Precision.of("int4", "bf16")):
        way = drafts.separate(DRAFT, 4)
        assert way.held_bytes(precision) == DRAFT.weight_bytes(precision)
        for acc in CAT.accelerators.values():
            for cards in (1, 2, 4, 8):
                mine = drafts.slots(acc, TARGET, way, cards, contexts, precision=precision)
                theirs = kvcache.slots(acc, TARGET, cards, contexts, DRAFT, precision=precision)
                assert np.array_equal(mine, theirs), (precision, acc.key, cards, mine, theirs)


def _roofline_s(acc, cards, blocks, head, row, positions, cache_bytes, attention_flops, layers,
                hidden=HIDDEN, vocab=VOCAB):
    """A pass by hand, on `cards` cards in BF16, its kernels one after another, each the longer of
    its reads and its arithmetic: the `blocks` weights' GEMMs, the `head` (its own `vocab` rows of
    hidden, every position through it), `row` bytes of embedding looked up a position, and
    attention (the cache read, or its FLOPs). Then the communication: two all-reduces a layer and
    the embedding's one, of `positions` x `hidden` 16-bit activations (a ring sends 2 (N - 1) / N),
    and the gather of the positions' 16-bit logits ((N - 1) / N of them), each collective 10 us
    on top. H100s sit behind NVSwitch: every card sends at its whole link rate."""
    assert acc.topology == "switch"
    bw, flops = cards * acc.bandwidth_tbps * 1e12, cards * acc.bf16_tflops * 1e12
    gemm = np.maximum(blocks * BF16 / bw, 2 * blocks * positions / flops)
    heads = np.maximum(head * BF16 / bw, 2 * head * positions / flops)
    lookup = row * positions / bw
    attention = np.maximum(cache_bytes / bw, attention_flops / flops)
    if cards == 1:
        return gemm + heads + lookup + attention
    link, latency = acc.link_gbps * 1e9, acc.allreduce_us * 1e-6
    allreduces = (2 * layers + 1) * (latency + 2 * (cards - 1) / cards * positions * hidden * BF16 / link)
    gather = latency + (cards - 1) / cards * positions * vocab * BF16 / link
    return gemm + heads + lookup + attention + allreduces + gather


def _hand_draft_s(kind, acc, cards, batch, context, k):
    """Seconds a step drafts for `batch` requests of `context` tokens, from the counts above."""
    if kind == "lookup":
        return np.zeros_like(batch)
    if kind == "medusa":  # one pass through k heads: k residual blocks, k output matrices, no attention, no cache
        return _roofline_s(acc, cards, k * HIDDEN * HIDDEN, k * VOCAB * HIDDEN, 0, batch, 0.0, 0.0, 1,
                           vocab=k * VOCAB)
    if kind == "model":  # k passes of the 1B model, its tied table the head, read whole, nothing looked up
        draft_head = VOCAB * DRAFT_HIDDEN
        attention = 4 * DRAFT_LAYERS * 32 * 64 * context * batch
        return k * _roofline_s(acc, cards, DRAFT_PARAMS - draft_head, draft_head, 0, batch,
                               batch * context * DRAFT_CACHE, attention, DRAFT_LAYERS, DRAFT_HIDDEN)
    # EAGLE and MTP: k passes of one block, each through the target's head and one embedding row.
    block = MEAN_LAYER + PROJECTION
    attention = 4 * 1 * 64 * 128 * context * batch
    return k * _roofline_s(acc, cards, block, HEAD, HIDDEN * BF16, batch, batch * context * LAYER_CACHE,
                           attention, 1)


SETTINGS = [(0.8, 4, 512, 4), (0.6, 2, 4096, 8), (0.9, 7, 128, 2), (0.5, 1, 1024, 1)]


@pytest.mark.parametrize("a,k,context,cards", SETTINGS)
def test_every_drafter_speedup_from_hand_drafting_times(a, k, context, cards):
    batch = np.arange(1, 1025, dtype=float)
    plain = speculative.plain_step_s(H100, TARGET, cards, batch, context)
    verify = speculative.verify_step_s(H100, TARGET, cards, batch, k, context)
    gain = speculative.expected_tokens(a, k)
    for kind, way in drafts.drafters(TARGET, DRAFT, k).items():
        draft = _hand_draft_s(kind, H100, cards, batch, context, k)
        assert np.allclose(way.draft_s(H100, cards, batch, context), draft, rtol=1e-12, atol=0), kind
        want = gain * plain / (draft + verify)
        got = drafts.speedup(H100, TARGET, way, cards, batch, a, k, context)
        assert np.allclose(got, want, rtol=1e-12, atol=0), kind


@pytest.mark.parametrize("a,k,context,cards", SETTINGS)
def test_a_separate_drafter_is_speculative_speedup(a, k, context, cards):
    batch = np.array([1, 2, 3, 17, 64, 255, 256, 1000, 1024], dtype=float)
    for acc in CAT.accelerators.values():
        got = drafts.speedup(acc, TARGET, drafts.separate(DRAFT, k), cards, batch, a, k, context)
        want = speculative.speedup(acc, TARGET, DRAFT, cards, batch, a, k, context)
        assert np.allclose(got, want, rtol=1e-12, atol=0), acc.key


def _medusa_batch_one_s(acc, cards, k):
    """Medusa at batch 1 reads its k heads once (memory-bound), priced as an LLM of one layer: it
    pays that layer's 2 all-reduces and the embedding's one (of one 8,192-wide 16-bit row), and
    gathers k vocabularies of 16-bit logits, each collective 10 us on top (450 GB/s: NVSwitch)."""
    reads = k * (8192**2 + 128256 * 8192) * 2 / (cards * acc.bandwidth)
    link = acc.link_gbps * 1e9
    one = acc.allreduce_latency + 2 * (cards - 1) / cards * 8192 * 2 / link
    gather = acc.allreduce_latency + (cards - 1) / cards * k * 128256 * 2 / link
    return reads + 3 * one + gather


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_medusa_drafts_in_one_pass_and_eagle_mtp_in_k(k):
    for cards in (2, 4, 8):
        medusa = drafts.medusa(TARGET, k)
        assert float(medusa.draft_s(H100, cards, 1, 512)) == pytest.approx(_medusa_batch_one_s(H100, cards, k), rel=1e-12)
        eagle, mtp = drafts.eagle(TARGET, k), drafts.mtp(TARGET, k)
        batch = np.array([1, 8, 64, 512, 1024], dtype=float)
        assert np.array_equal(eagle.draft_s(H100, cards, batch, 512), mtp.draft_s(H100, cards, batch, 512))
        one = drafts.eagle(TARGET, 1).draft_s(H100, cards, batch, 512)
        assert np.allclose(eagle.draft_s(H100, cards, batch, 512), k * one, rtol=1e-12, atol=0)


def test_a_medusa_of_k_passes_would_be_caught():
    """Negative control: the hand time above tells one pass through the heads from k passes."""
    k, cards = 4, 4
    wrong = dataclasses.replace(drafts.medusa(TARGET, k), passes=k)
    hand = _medusa_batch_one_s(H100, cards, k)
    assert float(wrong.draft_s(H100, cards, 1, 512)) != pytest.approx(hand, rel=1e-6)
    batch = np.arange(1, 1025, dtype=float)
    assert not np.allclose(wrong.draft_s(H100, cards, batch, 512), _hand_draft_s("medusa", H100, cards, batch, 512, k),
                           rtol=1e-6, atol=0)
    right = drafts.medusa(TARGET, k)
    assert not np.allclose(drafts.speedup(H100, TARGET, wrong, cards, batch, 0.8, k, 512),
                           drafts.speedup(H100, TARGET, right, cards, batch, 0.8, k, 512), rtol=1e-6, atol=0)


def test_default_scenario_orders_the_drafters():
    """h100-sxm, 4 cards, 70B target, 1B draft, context 512, a = 0.8, k = 4, as the page starts."""
    a, k, context, cards = 0.8, 4, 512, 4
    batch = np.arange(1, 1025, dtype=float)
    ways = drafts.drafters(TARGET, DRAFT, k)
    speed = {kind: drafts.speedup(H100, TARGET, way, cards, batch, a, k, context) for kind, way in ways.items()}
    for kind in ways:
        if kind != "lookup":
            assert np.all(speed["lookup"] > speed[kind]), kind  # drafting costs it nothing
    breakeven = {}
    for kind, way in ways.items():
        first = speculative.first_slower_batch(
            lambda b, way=way: drafts.speedup(H100, TARGET, way, cards, b, a, k, context) < 1.0, (), 1024)
        breakeven[kind] = int(first)
        assert 1 < breakeven[kind] <= 1024, (kind, breakeven[kind])  # pays at batch 1, not at 1024
        # The bisection's answer is the first batch of the scan that is slower.
        assert breakeven[kind] == 1 + int(np.argmax(speed[kind] < 1.0)), kind
    assert all(breakeven["lookup"] > b for kind, b in breakeven.items() if kind != "lookup"), breakeven


# Mixtral 8x7B (config: 32 layers, hidden 4096, 8 KV heads of 128, 8 experts of width 14336 of
# which a token's router picks 2, vocabulary 32000, untied head), for a drafter on a mixture.
MX_HIDDEN, MX_EXPERT = 4096, 3 * 4096 * 14336
MX_SHARED_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096  # attention, router, norms
MX_BLOCKS = 32 * (MX_SHARED_LAYER + 8 * MX_EXPERT) + MX_HIDDEN  # and the final norm
MX_HEAD = 32000 * MX_HIDDEN


@pytest.mark.parametrize("maker", [drafts.eagle, drafts.mtp], ids=["eagle", "mtp"])
def test_a_block_of_a_mixtures_shape_multiplies_the_picked_experts(maker):
    """An EAGLE layer or MTP module "of the target's shape" on Mixtral: it holds a mean layer, all
    8 experts of it, but a token is routed to 2 of them, as in every layer of the target."""
    mixtral = CAT.model("mixtral-8x7b")
    assert mixtral.params - 2 * MX_HEAD == MX_BLOCKS
    mean_layer = MX_BLOCKS // 32
    way = maker(mixtral, 1)
    assert way.held_bytes() == (mean_layer + 2 * MX_HIDDEN * MX_HIDDEN) * BF16
    routed = mean_layer - 6 * MX_EXPERT + 2 * MX_HIDDEN * MX_HIDDEN  # the 6 experts not picked left out
    # One position at batch 1: it multiplies the routed block and the head, and reads those, one
    # embedding row and (no context) no cache.
    st = roofline.step_time(H100, way.pass_model, 1, 1)
    flops = float(st.intensity) * float(st.weights_s) * H100.bandwidth
    assert flops == pytest.approx(2 * (routed + MX_HEAD), rel=1e-12)
    assert float(st.weights_s) * H100.bandwidth == pytest.approx((routed + MX_HEAD + MX_HIDDEN) * BF16, rel=1e-12)
