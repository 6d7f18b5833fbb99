"""Number formats and the band from the roofline floor to the estimate fitted on measurements (issue 14, points 1 and 2).

Expected values are written out from the sources (datasheet peaks, configs, the papers' timings),
not read back from the code under test. Where a check could pass by accident, a broken variant is
run through the same check to show that it fails.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from models import estimate, kvcache, roofline, speculative
from models.catalogue import load_catalogue
from models.precision import KV_FORMATS, WEIGHT_FORMATS, Precision
from explainer_gen.compute.numbers import parse_format
from explainer_gen.compute.resolved import default_scenario, resolve
from models.yamlsource import SourceError

cat = load_catalogue()
# Bits a stored value takes, from the formats' definitions: bfloat16, FP8 E4M3, and AWQ's packing of
# 4-bit weights in groups of 128 with a 16-bit scale and a 4-bit zero point per group.
BITS = {"bf16": 16, "fp8": 8, "int4": 4 + 16 / 128 + 4 / 128}
# Dense tensor throughput, TFLOP/s, from the datasheets (figures.md); None: no FP8 units.
FP8_TFLOPS = {"a100-80gb": None, "h100-sxm": 1979, "h200": 1979, "b200": 4500, "mi300x": 2615}
BF16_TFLOPS = {"a100-80gb": 312, "h100-sxm": 989, "h200": 989, "b200": 2250, "mi300x": 1307}


def tables(m) -> int:
    """Embedding (and an untied head): vocab x hidden each, kept in 16 bits."""
    return (1 if m.tied_embeddings else 2) * m.vocab * m.hidden


@pytest.mark.parametrize("weights", sorted(WEIGHT_FORMATS))
@pytest.mark.parametrize("key", sorted(cat.models))
def test_weight_bytes_follow_the_format_for_every_model(key, weights):
    m = cat.model(key)
    p = Precision.of(weights)
    want = (m.params - tables(m)) * BITS[weights] / 8 + tables(m) * 2
    assert m.weight_bytes(p) == pytest.approx(want, rel=1e-12)
    if m.experts:
        return  # a mixture's step reads only the experts its token is routed to: tests/test_moe.py
    # A decode step reads the blocks and the head, and one embedding row when the head is untied.
    head = m.vocab * m.hidden
    row = 0 if m.tied_embeddings else m.hidden * 2
    assert m.read_bytes(1, p) == pytest.approx((m.params - tables(m)) * BITS[weights] / 8 + head * 2 + row, rel=1e-12)


@pytest.mark.parametrize("kv", sorted(KV_FORMATS))
@pytest.mark.parametrize("key", sorted(cat.models))
def test_kv_bytes_follow_the_format_for_every_model(key, kv):
    m = cat.model(key)
    want = 2 * m.layers * m.kv_heads * m.head_dim * BITS[kv] / 8
    assert kvcache.bytes_per_token(m, Precision.of(kv=kv).kv.bytes) == want


def test_int4_cuts_the_70b_weights_to_a_little_over_a_quarter():
    m = cat.model("llama-3-70b")
    ratio = m.weight_bytes(Precision.of("int4")) / m.weight_bytes(Precision.of("bf16"))
    # 4.15625 / 16 = 0.26 for the blocks; the 16-bit tables (2 x 1.05 B parameters) add a little.
    assert 0.26 < ratio < 0.30


@pytest.mark.parametrize("acc_key", sorted(cat.accelerators))
def test_fp8_peak_where_the_card_has_one(acc_key):
    acc = cat.accelerator(acc_key)
    assert acc.peak(WEIGHT_FORMATS["bf16"]) == BF16_TFLOPS[acc_key] * 1e12
    assert acc.peak(WEIGHT_FORMATS["int4"]) == BF16_TFLOPS[acc_key] * 1e12  # weight-only: unpacked to 16 bits
    fp8 = FP8_TFLOPS[acc_key]
    assert acc.peak(WEIGHT_FORMATS["fp8"]) == (fp8 if fp8 else BF16_TFLOPS[acc_key]) * 1e12


@pytest.mark.parametrize("cards", [1, 2, 4, 8])
@pytest.mark.parametrize("acc_key", ["h100-sxm", "mi300x", "a100-80gb"])
def test_an_fp8_cache_doubles_the_slots(acc_key, cards):
    """Halving the bytes per token doubles the requests that fit, up to the floor of a division."""
    acc, m = cat.accelerator(acc_key), cat.model("llama-3-8b")
    for context in (2048, 8192, 32768):
        bf16 = float(kvcache.slots(acc, m, cards, context, precision=Precision.of(kv="bf16")))
        fp8 = float(kvcache.slots(acc, m, cards, context, precision=Precision.of(kv="fp8")))
        assert fp8 in (2 * bf16, 2 * bf16 + 1)


def test_int4_shrinks_the_floor_and_the_idle_arithmetic():
    """The speculative page's claim: INT4 cuts the read, not the arithmetic, so the ridge and the
    batch up to which speculation pays both fall."""
    r = resolve(default_scenario(cat), cat)
    bf16, int4 = r.in_formats("bf16"), r.in_formats("int4")
    assert bf16.forward(1).weights_s / int4.forward(1).weights_s > 3.5
    assert int4.forward(1).compute_s == pytest.approx(bf16.forward(1).compute_s, rel=1e-12)
    assert int4.ridge_tokens() < bf16.ridge_tokens() / 3
    b16 = speculative.breakeven_batch(r.acc, r.target, r.draft, r.cards, 0.8, 4, r.context, precision=bf16.precision)
    b4 = speculative.breakeven_batch(r.acc, r.target, r.draft, r.cards, 0.8, 4, r.context, precision=int4.precision)
    assert 0 < b4 < b16


def test_fp8_keeps_the_weights_ridge_on_a_card_with_fp8_units():
    """Half the bytes and twice the peak: the GEMMs' ridge (the same at every context: the cache is
    attention's read) barely moves (the 16-bit head holds it a little apart); on the A100, FP8
    behaves like weight-only."""
    h100, a100, m = cat.accelerator("h100-sxm"), cat.accelerator("a100-80gb"), cat.model("llama-3-70b")
    bf16, fp8 = Precision.of("bf16"), Precision.of("fp8")
    assert roofline.ridge_tokens(h100, m, fp8) == pytest.approx(roofline.ridge_tokens(h100, m, bf16), rel=0.05)
    assert roofline.ridge_tokens(a100, m, fp8) < 0.6 * roofline.ridge_tokens(a100, m, bf16)


# --- the band ----------------------------------------------------------------------------------

def _gptfast_one_card():
    """gpt-fast's held-out batch-one decodes on one A100 (models/measurements.yaml)."""
    return [m for m in estimate.load().held_out() if m.id.startswith("gptfast-") and m.setup.cards == 1]


def inside_band(eff, runs) -> bool:
    """Every measured step lies between its floor and the estimate `eff` gives."""
    return all(m.price() <= m.value <= m.price(eff) for m in runs)


def test_the_floor_and_the_estimate_bracket_the_held_out_decodes():
    runs = _gptfast_one_card()
    assert len(runs) == 2 and all(m.quantity == "decode" and m.args["batch"] == 1 for m in runs)
    # Measured seconds per token are the published tokens per second, inverted.
    assert sorted(m.value for m in runs) == sorted([1 / 104.9, 1 / 93.89])
    assert inside_band(estimate.fitted().eff, runs)
    # Negative control: with no efficiency terms the estimate is the floor, the band is empty and
    # the measurements lie above it; with the reads alone slowed, still above it.
    assert not inside_band(roofline.FLOOR, runs)
    assert not inside_band(roofline.Efficiency(bandwidth=estimate.fitted().eff.bandwidth), runs)


@pytest.mark.parametrize("weights", sorted(WEIGHT_FORMATS))
@pytest.mark.parametrize("tokens", [1, 8, 64, 512, 4096])
def test_the_estimate_sits_above_the_floor(tokens, weights):
    r = resolve(default_scenario(cat), cat).in_formats(weights)
    eff = estimate.fitted().eff
    for st in (r.forward(tokens), r.prefill(tokens), r.forward(tokens, which="draft")):
        floor, est = float(st.seconds), float(st.at(eff))
        assert est >= floor + eff.fixed(st.pieces.layers) - 1e-15


def test_the_draft_on_one_card_pays_no_all_reduces():
    r = resolve(default_scenario(cat), cat)
    one = r.forward(1, which="draft", on=1)
    assert float(one.comm_s) == 0.0
    assert float(one.weights_s) == pytest.approx(r.draft.read_bytes(1) / r.acc.bandwidth, rel=1e-12)
    split = speculative.speculative_step_s(r.acc, r.target, r.draft, r.cards, 1, 4, r.context)
    whole = speculative.speculative_step_s(r.acc, r.target, r.draft, r.cards, 1, 4, r.context, draft_cards=1)
    verify = speculative.verify_step_s(r.acc, r.target, r.cards, 1, 4, r.context)
    assert whole == pytest.approx(4 * float(one.seconds) + verify, rel=1e-12)
    assert split == pytest.approx(4 * float(r.forward(1, which="draft").seconds) + verify, rel=1e-12)


def test_the_estimated_speedup_is_below_the_floors():
    """The fixed cost lands on every draft pass as well as the verify pass, so it costs speculation
    more than plain decoding."""
    r = resolve(default_scenario(cat), cat)
    eff = estimate.fitted().eff
    for a in (0.6, 0.8, 0.9):
        floor = speculative.speedup(r.acc, r.target, r.draft, r.cards, 1, a, 4, r.context)
        est = speculative.speedup(r.acc, r.target, r.draft, r.cards, 1, a, 4, r.context, eff=eff)
        assert 1 < est < floor


# --- authoring: a word for a value without bound ---------------------------------------------------

def test_a_format_may_name_the_words_for_infinity():
    f = parse_format(',d or "never"', "page.md", 3)
    assert f(1234.4) == "1,234" and f(math.inf) == "never"
    assert parse_format(",d", "page.md", 3).unbounded == ""
    with pytest.raises(SourceError, match="words after 'or'"):
        parse_format(',d or ""', "page.md", 3)


def test_an_unknown_format_in_a_term_fails_with_the_choices():
    r = resolve(default_scenario(cat), cat)
    with pytest.raises(ValueError, match="int4"):
        r.in_formats("int3")
    assert np.isfinite(r.in_formats("int4").forward(1).seconds)
