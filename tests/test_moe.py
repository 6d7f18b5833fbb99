"""Mixture-of-experts targets (Mixtral 8x7B): the count, the experts a pass reaches, what it reads.

Expected values come from Mixtral's published config (mistralai/Mixtral-8x7B-v0.1: 32 layers,
hidden 4096, 32 query heads and 8 KV heads of 128, 8 experts of width 14336 with 2 picked per
token, vocabulary 32000, untied head), counted here matrix by matrix, or from enumerating every
routing; never from the catalogue's own formulas.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from models import kvcache, roofline
from models.catalogue import load_catalogue, parse_catalogue
from models.yamlsource import SourceError

pytestmark = pytest.mark.unit

CAT = load_catalogue()
MIXTRAL = CAT.model("mixtral-8x7b")
LLAMA8 = CAT.model("llama-3-8b")

# Mixtral 8x7B, one matrix at a time.
LAYERS, HIDDEN, KV_WIDTH, FFN, EXPERTS, PICKED, VOCAB = 32, 4096, 8 * 128, 14336, 8, 2, 32000
ATTENTION = HIDDEN * HIDDEN + 2 * HIDDEN * KV_WIDTH + HIDDEN * HIDDEN  # q, k and v, o
ONE_EXPERT = 3 * HIDDEN * FFN  # gate, up and down projections
ROUTER = HIDDEN * EXPERTS
NORMS = 2 * HIDDEN  # before attention and before the MLP
SHARED_PER_LAYER = ATTENTION + ROUTER + NORMS  # what every position multiplies in a layer
FINAL_NORM = HIDDEN
TABLE = VOCAB * HIDDEN  # the input embedding; the untied head has the same shape
TOTAL = LAYERS * (SHARED_PER_LAYER + EXPERTS * ONE_EXPERT) + 2 * TABLE + FINAL_NORM
SHARED = LAYERS * SHARED_PER_LAYER + FINAL_NORM  # block weights outside the experts
ACTIVE_BLOCKS = SHARED + LAYERS * PICKED * ONE_EXPERT
BF16 = 2


def test_mixtral_count_from_its_config():
    assert ATTENTION == 41_943_040 and ONE_EXPERT == 176_160_768
    assert TOTAL == MIXTRAL.params == 46_702_792_704
    assert (MIXTRAL.layers, MIXTRAL.hidden, MIXTRAL.vocab) == (LAYERS, HIDDEN, VOCAB)
    assert (MIXTRAL.experts, MIXTRAL.active_experts, MIXTRAL.expert_ffn) == (EXPERTS, PICKED, FFN)
    assert MIXTRAL.expert_params == LAYERS * EXPERTS * ONE_EXPERT
    assert MIXTRAL.active_block_params == ACTIVE_BLOCKS == 12_617_781_248


def test_mixtral_weights_a_token_uses_are_the_published_12_9_billion():
    # Jiang et al. 2024: "about 12.9 B active per token" counts the embedding too; the catalogue's
    # step_params leaves the looked-up embedding out and keeps the multiplied head.
    assert MIXTRAL.step_params == ACTIVE_BLOCKS + TABLE
    assert MIXTRAL.step_params + TABLE == pytest.approx(12.9e9, abs=0.05e9)
    # The published figure tells the two-of-eight count from a wrong one: with every expert the
    # count is the whole model, with one expert of eight it is far below.
    one_expert = SHARED + LAYERS * ONE_EXPERT + 2 * TABLE
    assert abs(one_expert - 12.9e9) > 1e9 and abs(TOTAL - 12.9e9) > 1e9


def _enumerated_share(n: int, experts: int = EXPERTS, picked: int = PICKED) -> Fraction:
    """The mean share of experts that n positions reach, each picking `picked` distinct experts
    of `experts`, every choice equally likely: averaged over every routing there is."""
    choices = list(itertools.combinations(range(experts), picked))
    total = Fraction(0)
    for routing in itertools.product(choices, repeat=n):
        total += len(set().union(*routing))
    return total / (len(choices) ** n * experts)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_expert_share_is_the_mean_over_every_routing(n):
    exact = _enumerated_share(n)
    assert MIXTRAL.expert_share(n) == pytest.approx(float(exact), abs=1e-12)
    # Negative controls: rules one might write instead, which the enumeration tells apart.
    one_at_a_time = 1 - (1 - Fraction(1, EXPERTS)) ** n
    linear = min(Fraction(n * PICKED, EXPERTS), Fraction(1))
    for wrong in (one_at_a_time, linear) if n > 1 else (one_at_a_time,):
        assert abs(float(wrong) - float(exact)) > 1e-3, (n, wrong, exact)


def test_expert_share_limits_and_dense_models():
    assert MIXTRAL.expert_share(0) == 0.0
    assert MIXTRAL.expert_share(np.inf) == 1.0
    shares = MIXTRAL.expert_share(np.arange(1, 200))
    assert np.all(np.diff(shares[:100]) > 0) and np.all(np.diff(shares) >= 0) and shares[-1] == 1.0
    assert LLAMA8.expert_share(7) == 1.0 and LLAMA8.expert_params == 0
    assert np.all(LLAMA8.expert_share(np.array([1.0, 5.0])) == 1.0)
    assert LLAMA8.active_block_params == LLAMA8.params - 2 * LLAMA8.vocab * LLAMA8.hidden


def _mixtral_pass_bytes(positions: int) -> Fraction:
    """BF16 bytes one pass over `positions` positions (uniform routing) reads, from the shapes:
    the shared block weights, the experts some position reaches (expected count per layer), the
    head, and one embedding row per position."""
    missed = Fraction(EXPERTS - PICKED, EXPERTS) ** positions  # an expert no position picks
    experts_read = LAYERS * EXPERTS * (1 - missed) * ONE_EXPERT
    return BF16 * (SHARED + experts_read + TABLE + positions * HIDDEN)


def _weights_read(acc, model, cards, tokens):
    st = roofline.step_time(acc, model, cards, tokens)
    return np.asarray(st.weights_s) * cards * acc.bandwidth


def test_a_verify_pass_of_mixtral_reads_almost_three_decode_steps():
    verify, plain = _mixtral_pass_bytes(5), _mixtral_pass_bytes(1)
    assert verify == 71_739_949_056  # k = 4: 5 positions reach 6.10 experts of 8 a layer
    assert plain == 25_497_714_688   # 1 position: its 2 experts
    ratio = verify / plain
    assert float(ratio) == pytest.approx(2.813583489, abs=1e-9)
    h100 = CAT.accelerator("h100-sxm")
    for cards in (1, 2, 4, 8):
        assert float(_weights_read(h100, MIXTRAL, cards, 5)) == pytest.approx(float(verify), rel=1e-12)
        assert float(_weights_read(h100, MIXTRAL, cards, 1)) == pytest.approx(float(plain), rel=1e-12)
    assert MIXTRAL.read_bytes(5) == pytest.approx(float(verify), rel=1e-15)
    assert MIXTRAL.read_bytes(5) / MIXTRAL.read_bytes(1) == pytest.approx(float(ratio), rel=1e-12)
    # A dense model reads its weights whatever the positions: only the 4 extra rows differ.
    dense_rows = 4 * LLAMA8.hidden * BF16
    assert LLAMA8.read_bytes(5) - LLAMA8.read_bytes(1) == dense_rows
    assert float(_weights_read(h100, LLAMA8, 4, 5) - _weights_read(h100, LLAMA8, 4, 1)) == pytest.approx(dense_rows,
                                                                                                            rel=1e-3)
    assert LLAMA8.read_bytes(5) / LLAMA8.read_bytes(1) == pytest.approx(1.0, abs=1e-5)


def test_mixtral_pass_reads_grow_towards_every_expert_on_every_card():
    positions = np.arange(1, 129)
    everything = BF16 * (SHARED + LAYERS * EXPERTS * ONE_EXPERT + TABLE)  # all experts and the head
    assert MIXTRAL.multiplied_bytes(np.inf) == everything
    hand = np.array([float(_mixtral_pass_bytes(int(n))) for n in positions])
    for acc in CAT.accelerators.values():
        for cards in (1, 2, 4, 8):
            read = _weights_read(acc, MIXTRAL, cards, positions)
            assert np.allclose(read, hand, rtol=1e-12, atol=0), (acc.key, cards)
            assert np.all(np.diff(read) > 0), (acc.key, cards)
            multiplied = read - positions * HIDDEN * BF16  # less the looked-up rows
            assert np.all(multiplied <= everything * (1 + 1e-12))
            # A quarter of the unread experts is reached by each further position: (3/4)^n of all.
            gap = everything - multiplied
            assert gap[0] == pytest.approx(0.75 * BF16 * LAYERS * EXPERTS * ONE_EXPERT, rel=1e-12)
            assert gap[63] < 1e-6 * everything  # 64 positions: 1.0e-8 of the experts unread


def test_mixtral_arithmetic_uses_only_the_picked_experts():
    assert roofline.flops_per_token(MIXTRAL) == 2 * (ACTIVE_BLOCKS + TABLE)
    assert roofline.flops_per_token(MIXTRAL) < 0.3 * 2 * MIXTRAL.params
    for acc in CAT.accelerators.values():
        for cards in (1, 2, 4, 8):
            for tokens in (1, 5, 64, 4096):
                st = roofline.step_time(acc, MIXTRAL, cards, tokens)  # no context: no attention
                flops = float(st.intensity) * float(st.weights_s) * cards * acc.bandwidth
                assert flops == pytest.approx(tokens * 2 * (ACTIVE_BLOCKS + TABLE), rel=1e-12)
                # BF16: blocks and head at the card's 16-bit peak, split over the cards.
                assert float(st.compute_s) == pytest.approx(tokens * 2 * (ACTIVE_BLOCKS + TABLE) / (cards * acc.flops),
                                                            rel=1e-12)


def test_mixtral_kv_cache_is_grouped_query():
    assert kvcache.bytes_per_token(MIXTRAL) == 2 * 32 * 8 * 128 * 2 == 131_072


# A catalogue of one card and one small model, whose fields a test adds to or changes.
CARD = """accelerators:
  - key: card
    name: A card
    memory_gb: 80
    bandwidth_tbps: 3
    bf16_tflops: 900
    fp8_tflops: null
    source: a datasheet
    link_gbps: 400
    link_source: a datasheet
    allreduce_us: 10
    allreduce_source: an assumption
    allreduce_range_us: [6, 23]
"""
# 2 layers, hidden 64, vocabulary 100, untied: tables of 2 x 100 x 64 = 12,800, blocks of 76,800,
# just what 2 layers of 4 experts of 3 x 64 x 50 hold.
SMALL = {"key": "small", "name": "Small", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4, "head_dim": 16,
         "params": 89_600, "vocab": 100, "tied_embeddings": "false", "source": "made up"}


def _catalogue(**fields) -> str:
    model = {**SMALL, **fields}
    lines = [f"    {name}: {value}" for name, value in model.items() if value is not None]
    return CARD + "models:\n  - " + "\n".join(lines)[4:] + "\n"


def _line(text: str, key: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if line.strip().startswith(f"{key}:")
                or line.strip().startswith(f"- {key}:"))


def test_a_dense_model_needs_none_of_the_expert_fields():
    model = parse_catalogue(_catalogue(), "cat.yaml").model("small")
    assert (model.experts, model.active_experts, model.expert_ffn) == (None, None, None)
    assert model.expert_params == 0 and model.active_block_params == 89_600 - 12_800
    assert model.read_bytes(3) == BF16 * (89_600 - 100 * 64) + 3 * 64 * BF16


def test_a_mixture_just_inside_its_blocks_parses():
    model = parse_catalogue(_catalogue(experts=4, active_experts=1, expert_ffn=49), "cat.yaml").model("small")
    assert model.expert_params == 2 * 4 * 3 * 64 * 49
    # Of each layer's 4 experts a token multiplies 1: 3 of 4 left out.
    assert model.active_block_params == 76_800 - 2 * 3 * 3 * 64 * 49


EXPERT_MISTAKES = {
    "experts alone": ({"experts": 4}, "experts", "missing active_experts, expert_ffn"),
    "no width": ({"experts": 4, "active_experts": 2}, "experts", "missing expert_ffn"),
    "width alone": ({"expert_ffn": 40}, "expert_ffn", "missing experts, active_experts"),
    "more picked than there are": ({"experts": 4, "active_experts": 5, "expert_ffn": 40}, "active_experts",
                                   "active_experts 5 is more than the 4 experts"),
    "experts fill the blocks": ({"experts": 4, "active_experts": 2, "expert_ffn": 50}, "expert_ffn",
                                "would be 76800 parameters, all of the 76800 outside the embeddings"),
    "experts overflow the blocks": ({"experts": 4, "active_experts": 2, "expert_ffn": 500}, "expert_ffn",
                                    "would be 768000 parameters"),
    # Counts of whole things, as `layers` and `heads` must be (small enough to fit the blocks, so
    # nothing else would stop them).
    "half an expert": ({"experts": 7.5, "active_experts": 2, "expert_ffn": 10}, "experts",
                       "experts must be an integer, got 7.5"),
    "half a picked expert": ({"experts": 4, "active_experts": 1.5, "expert_ffn": 10}, "active_experts",
                             "active_experts must be an integer, got 1.5"),
    "a fractional width": ({"experts": 4, "active_experts": 2, "expert_ffn": 10.5}, "expert_ffn",
                           "expert_ffn must be an integer, got 10.5"),
}


@pytest.mark.parametrize("name", EXPERT_MISTAKES)
def test_expert_field_mistakes_name_file_and_line(name):
    fields, key, needle = EXPERT_MISTAKES[name]
    text = _catalogue(**fields)
    with pytest.raises(SourceError) as err:
        parse_catalogue(text, "cat.yaml")
    assert err.value.path == "cat.yaml"
    assert err.value.line == _line(text, key), (text, err.value)
    assert needle in err.value.message
    assert str(err.value).startswith(f"cat.yaml:{_line(text, key)}: ")
