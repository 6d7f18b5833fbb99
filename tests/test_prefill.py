"""Prefill against decode, per token: models/prefill.py and the prefill-vs-decode figure, set
against values worked out here from the catalogue's datasheet numbers, read straight from the YAML."""
from __future__ import annotations

from dataclasses import replace

import math

import numpy as np
import pytest
import yaml

from explainer_gen.compute.artifacts import FigureRequest, build_figure
from explainer_gen.compute.resolved import default_scenario, resolve
from explainer_gen.compute.figures import REGISTRY
from helpers import REPO
from models import kvcache, prefill, roofline

RAW = yaml.safe_load((REPO / "models" / "catalogue.yaml").read_text())
ACCS = {a["key"]: a for a in RAW["accelerators"]}
MODELS = {m["key"]: m for m in RAW["models"]}
RESERVE = 0.10  # the share of memory the KV-cache page holds back for activations and the runtime
PROMPTS = np.array([1, 2, 7, 64, 100, 153, 154, 295, 296, 1000, 2048, 8192, 32768], dtype=float)
SCENARIOS = [(a, n) for a in ACCS for n in (1, 2, 4, 8)]


class Hand:
    """One accelerator and one model, priced by hand from the YAML: bf16, SI units.

    A pass runs its kernels one after another, each at its own roofline (the longer of its reads
    and its arithmetic), then its communication: the block GEMMs, the output head (for the
    positions that make a token: the prompt's last one in prefill, the one position in decode),
    the looked-up embedding rows (read, never multiplied), and attention (the cache it reads, or
    its arithmetic)."""

    def __init__(self, acc: str, cards: int, model: str = "llama-3-70b"):
        a, m = ACCS[acc], MODELS[model]
        self.cards = cards
        self.flops = a["bf16_tflops"] * 1e12 * cards          # FLOP/s over all cards
        self.bw = a["bandwidth_tbps"] * 1e12 * cards          # bytes/s over all cards
        self.memory = a["memory_gb"] * 1e9 * cards
        self.weights = 2.0 * m["params"]                      # bytes of bf16 weights held
        # What a pass multiplies (and reads whole): all but an untied input embedding, which the
        # pass only looks up, one row of bf16 per token: the blocks and the output head.
        untied = 0 if m["tied_embeddings"] else m["vocab"] * m["hidden"]
        self.step_params = m["params"] - untied
        self.head = m["vocab"] * m["hidden"]
        self.blocks = self.step_params - self.head
        self.row = 2.0 * m["hidden"] if untied else 0.0
        self.kv = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * 2.0  # K and V, bf16, per token
        self.layers, self.width, self.hidden = m["layers"], m["heads"] * m["head_dim"], m["hidden"]
        self.vocab = m["vocab"]
        # One card's one-way rate to the rest of its group: its whole link behind a switch; on a
        # full mesh (MI300X), the N - 1 of its `mesh_links` links that reach the other cards.
        link = a["link_gbps"] * 1e9
        self.peer = link if a.get("topology", "switch") == "switch" else \
            min(cards - 1, a["mesh_links"]) * link / a["mesh_links"]
        self.latency = a["allreduce_us"] * 1e-6
        # Positions per pass at which the weight GEMMs (blocks and head, every position through the
        # head, as in decode) take as long in arithmetic as in reads: 2 S P / F = 2 S / B, so
        # P = F / B, two bytes and two FLOPs per multiplied weight. The looked-up rows are a
        # kernel of their own and do not move it.
        self.ridge = (2.0 * self.step_params / self.bw) / (2.0 * self.step_params / self.flops)

    def comm(self, p, logits=1):
        """Two all-reduces a layer and the embedding's one, of a p x hidden bf16 activation, ring-style;
        then the gather of the `logits` positions' bf16 logits, (N - 1) / N of them; none on one card."""
        n = self.cards
        if n == 1:
            return 0.0
        allreduces = (2 * self.layers + 1) * (self.latency + 2 * (n - 1) / n * p * self.hidden * 2 / self.peer)
        return allreduces + self.latency + (n - 1) / n * logits * self.vocab * 2 / self.peer

    def kernels(self, p, cached, attended, logits):
        """Block GEMMs + head + looked-up rows + attention, each at its own roofline, seconds."""
        gemm = np.maximum(2.0 * self.blocks / self.bw, 2.0 * self.blocks * p / self.flops)
        head = np.maximum(2.0 * self.head / self.bw, 2.0 * self.head * logits / self.flops)
        lookup = self.row * p / self.bw
        attention = np.maximum(self.kv * cached / self.bw, 4.0 * self.layers * self.width * attended / self.flops)
        return gemm + head + lookup + attention

    def prefill_pass(self, p):
        # Causal attention: each of the p positions attends to p / 2 earlier ones on average, 4 FLOPs
        # per head dimension per layer each (scores and the weighted sum); nothing read from a cache.
        # Only the last position goes through the head.
        return self.kernels(p, 0.0, p * p / 2, 1) + self.comm(p)

    def decode_per_token(self, context=0.0):
        """The next token after `context` tokens: one position that reads the whole cache."""
        return self.kernels(1, context, context, 1) + self.comm(1)

    def fits(self, tokens):
        return self.memory * (1 - RESERVE) - self.weights >= self.kv * tokens


@pytest.fixture(scope="module")
def kind():
    return REGISTRY["prefill-vs-decode"]


def resolved(cat, acc: str, cards: int):
    return resolve(replace(default_scenario(cat), accelerator=acc, cards=cards), cat)


def test_the_reserve_is_the_one_the_pages_state():
    assert kvcache.RESERVE == RESERVE


@pytest.mark.parametrize("acc, cards", SCENARIOS)
def test_times_per_token_are_the_datasheet_roofline(cat, acc, cards):
    hand, r = Hand(acc, cards), resolved(cat, acc, cards)
    got_pre = prefill.prefill_s_per_token(r.acc, r.target, cards, PROMPTS)
    got_dec = prefill.decode_s_per_token(r.acc, r.target, cards, PROMPTS)
    np.testing.assert_allclose(got_pre, hand.prefill_pass(PROMPTS) / PROMPTS, rtol=1e-12)
    np.testing.assert_allclose(got_dec, hand.decode_per_token(PROMPTS), rtol=1e-12)
    # A one-token prompt costs what a decode step with an empty cache does, but for attention's
    # arithmetic over half a token (the causal mask's average, p / 2 at p = 1): the attention
    # kernel has no cache to read that would hide it.
    half = 4.0 * hand.layers * hand.width * 0.5 / hand.flops
    assert got_pre[0] == pytest.approx(hand.decode_per_token(0) + half, rel=1e-12)
    assert got_pre[0] == pytest.approx(hand.decode_per_token(0), rel=1e-6)
    assert (got_pre[1:] < got_dec[1:]).all()


@pytest.mark.parametrize("acc", ACCS)
def test_at_the_ridge_a_whole_prefill_takes_one_decode_step(cat, acc):
    hand, r = Hand(acc, 4), resolved(cat, acc, 4)
    ridge = hand.ridge
    # In BF16 the GEMMs' ridge is the datasheets' FLOP/s ÷ bytes/s itself: the looked-up rows are
    # read by a kernel of their own and no longer move it.
    assert ridge == pytest.approx(ACCS[acc]["bf16_tflops"] / ACCS[acc]["bandwidth_tbps"], rel=1e-12)
    assert ridge == pytest.approx(roofline.ridge_tokens(r.acc, r.target), rel=1e-12)
    whole = ridge * prefill.prefill_s_per_token(r.acc, r.target, 4, ridge)
    # At the ridge the prefill's block GEMMs take as long in reads as in arithmetic, so the whole
    # prefill takes one decode step's weight read; attention's arithmetic, the looked-up rows and
    # the all-reduces of `ridge` positions come on top.
    assert whole == pytest.approx(hand.prefill_pass(ridge), rel=1e-12)
    assert 2 * hand.blocks / hand.bw == pytest.approx(2 * hand.blocks * ridge / hand.flops, rel=1e-9)
    extra = (4.0 * hand.layers * hand.width * ridge * ridge / 2 / hand.flops + hand.row * (ridge - 1) / hand.bw
             + hand.comm(ridge) - hand.comm(1))
    assert whole == pytest.approx(hand.decode_per_token(0) + extra, rel=1e-9)
    # A decode pass of `ridge` positions, every one through the head: its weight GEMMs take the
    # weights' read and as long in arithmetic.
    st = roofline.step_time(r.acc, r.target, 4, ridge)
    assert float(st.gemm_s + st.head_s) == pytest.approx(2 * hand.step_params / hand.bw, rel=1e-9)
    assert float(st.gemm_s + st.head_s) == pytest.approx(2 * hand.step_params * ridge / hand.flops, rel=1e-9)
    ratio = prefill.decode_s_per_token(r.acc, r.target, 4) / prefill.prefill_s_per_token(r.acc, r.target, 4, PROMPTS)
    np.testing.assert_allclose(ratio, hand.decode_per_token() / (hand.prefill_pass(PROMPTS) / PROMPTS), rtol=1e-12)
    # Past the ridge, prefill costs the arithmetic: 2 FLOPs per block weight per token plus causal
    # attention; the head, multiplied for the last position only, costs its read, shared among
    # the tokens, as do the looked-up rows (one a token) and the all-reduces.
    past = PROMPTS[PROMPTS > ridge]
    np.testing.assert_allclose(prefill.prefill_s_per_token(r.acc, r.target, 4, past),
                               (2 * hand.blocks + 2 * hand.layers * hand.width * past) / hand.flops
                               + (2 * hand.head / past + hand.row) / hand.bw + hand.comm(past) / past, rtol=1e-12)


def test_causal_attention_flops(cat):
    m = cat.model("llama-3-70b")
    p = 4096.0
    # Per layer: Q K^T and the weighted sum of V are each 2 P^2 d without the mask; causal halves both.
    by_hand = 80 * (2 * p * p * 8192 + 2 * p * p * 8192) / 2
    assert prefill.attention_flops(m, p) == pytest.approx(by_hand, rel=1e-12)
    # Against the arithmetic counted: 2 FLOPs per block weight for every position, and per head
    # weight for the last position only (it alone makes a token); the input embedding left out.
    head = 1_050_673_152
    blocks = 70553706496 - 2 * head
    assert prefill.attention_share(m, p) == pytest.approx(by_hand / (2 * blocks * p + 2 * head), rel=1e-12)


@pytest.mark.parametrize("acc, cards", SCENARIOS)
def test_memory_fit_rule(cat, acc, cards):
    hand, r = Hand(acc, cards), resolved(cat, acc, cards)
    assert (prefill.fits(r.acc, r.target, cards, PROMPTS) == hand.fits(PROMPTS)).all()
    longest = prefill.longest_fit(r.acc, r.target, cards, 32768)
    budget = hand.memory * (1 - RESERVE) - hand.weights
    assert longest == (0 if budget < hand.kv else min(32768, math.floor(budget / hand.kv)))


@pytest.mark.parametrize("acc, cards", SCENARIOS)
def test_the_figure_draws_only_what_fits_and_draws_the_model(cat, kind, acc, cards):
    hand, r = Hand(acc, cards), resolved(cat, acc, cards)
    grid = {"prompt": kind.sliders["prompt"].values()}
    cols = kind.compute(r, grid)
    assert hand.fits(cols["tokens"]).all()
    for what in ("prefill", "prefill-at"):
        rows = cols["what"] == what
        t = cols["tokens"][rows]
        np.testing.assert_allclose(cols["ms"][rows], hand.prefill_pass(t) / t * 1e3, rtol=1e-12)
    for what in ("decode", "decode-at"):
        rows = cols["what"] == what
        np.testing.assert_allclose(cols["ms"][rows], hand.decode_per_token(cols["tokens"][rows]) * 1e3, rtol=1e-12)
    gap = cols["what"] == "gap"
    t = cols["tokens"][gap]
    np.testing.assert_allclose(cols["ratio"][gap], hand.decode_per_token(t) / (hand.prefill_pass(t) / t), rtol=1e-12)
    # The slider's points: one per prompt length that fits, none for the others.
    fitting = grid["prompt"][hand.fits(grid["prompt"])]
    assert cols["prompt"][cols["what"] == "prefill-at"].tolist() == fitting.tolist()
    # The lines run from one token to the longest prompt that fits (at most 32k), through the ridge.
    line = cols["tokens"][cols["what"] == "prefill"]
    budget = hand.memory * (1 - RESERVE) - hand.weights
    if budget < hand.kv:
        assert len(cols["what"]) == 0
    else:
        assert line.min() == 1 and line.max() == min(32768, math.floor(budget / hand.kv))
        assert (cols["what"] == "ridge").sum() == int(hand.fits(hand.ridge))


def test_a_scenario_whose_cache_runs_out_shortens_the_lines(cat, kind):
    """Two A100s hold Llama 3 70B with room for some 8.8k tokens of cache: the lines stop there."""
    hand = Hand("a100-80gb", 2)
    limit = math.floor((hand.memory * 0.9 - hand.weights) / hand.kv)
    assert 8192 < limit < 32768
    cols = kind.compute(resolved(cat, "a100-80gb", 2), {"prompt": kind.sliders["prompt"].values()})
    assert cols["tokens"].max() == limit
    assert cols["prompt"].max() == 8192  # the slider's whole range fits


def test_the_static_description_and_table_give_the_hand_numbers(cat, kind):
    sliders = dict(kind.sliders)
    art = build_figure(FigureRequest("prefill-vs-decode", sliders, (default_scenario(cat),), "caption"), cat)
    hand = Hand("h100-sxm", 4)
    p = sliders["prompt"].default
    decode_ms = hand.decode_per_token(1) * 1e3
    at_ridge_us = hand.prefill_pass(hand.ridge) / hand.ridge * 1e6
    assert f"Decode takes {decode_ms:.1f} ms per generated token after a one-token prompt" in art.alt
    assert f"ridge at {hand.ridge:,.0f} tokens, where it takes {at_ridge_us:.1f} µs per prompt token" in art.alt
    per_us = hand.prefill_pass(p) / p * 1e6
    ratio = hand.decode_per_token(p) / (hand.prefill_pass(p) / p)
    assert f"At a prompt of {p:,.0f} tokens prefill takes {per_us:.1f} µs per token, {ratio:,.0f}× less than decode." \
        in art.alt
    rows = {row[0]: row[1:] for row in art.table.rows}
    assert rows[f"{p:,.0f} (the prompt slider)"][1:4] == [f"{hand.decode_per_token(p) * 1e3:.1f} ms",
                                                          f"{ratio:,.0f}×", "compute"]
    # Causal attention over the counted arithmetic: every position through the blocks, the last
    # one through the head (80 layers x P^2 x 8,192 against 2 x blocks x P + 2 x head).
    counted = 2 * hand.blocks * 32768 + 2 * hand.head
    assert rows["32,768"][4] == f"{2 * 80 * 32768 ** 2 * 8192 / counted:.1%}"


def test_a_scenario_where_nothing_fits_says_so(cat, kind):
    art = build_figure(FigureRequest("prefill-vs-decode", dict(kind.sliders),
                                     (replace(default_scenario(cat), accelerator="a100-80gb", cards=1),), "caption"), cat)
    assert "do not fit in memory, so nothing is drawn" in art.alt
    assert all(cell == "does not fit in memory" for row in art.table.rows for cell in row[1:])
