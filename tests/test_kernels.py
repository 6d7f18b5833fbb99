"""The roofline priced kernel by kernel (models/roofline.py), against a pass priced here by hand.

A pass runs its kernel classes one after another, each at its own roofline, and nothing overlaps:

- the block GEMMs: the dense block weights, max(their bytes / BW, 2 x weights x positions / peak),
  and in a mixture of experts the experts, max(every expert's bytes x the share the positions
  reach / BW, 2 x the routed experts' weights x positions / peak);
- the output head: max(its bytes / BW, 2 x its weights x positions with logits / 16-bit peak),
  and nothing at all for a pass in which no position makes logits (no head GEMM runs);
- the embedding lookup: one 16-bit row of an untied table a position, read, never multiplied;
- attention: max(cached tokens x KV bytes a token / BW, its FLOPs / 16-bit peak);
- communication, on more than one card: 2 x layers + 1 all-reduces (two a layer and the
  vocabulary-split embedding's), each its latency + 2 (N - 1) / N x positions x hidden x 2 bytes
  over the card's rate to its group, and when any position makes logits one gather of them,
  latency + (N - 1) / N x logits x vocab x 2 bytes at the same rate.

Everything is per card: bytes over N x BW, FLOPs over N x peak. The hand pricing below (`hand`)
takes its numbers from the catalogue's rows (datasheet fields and the models' config counts),
never from the module's own derived quantities, and all in BF16. The old model, one max over the
whole pass, `max(all bytes / BW, all FLOPs / peak) + all-reduces`, hid the cache reads under the
GEMMs' arithmetic past the ridge; `test_the_checks_tell_one_max_from_kernels` shows the checks
here reject it.
"""
from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from models import estimate, prefill, roofline, serving
from models.catalogue import CATALOGUE_PATH, load_catalogue, parse_catalogue
from models.yamlsource import SourceError

pytestmark = pytest.mark.unit

CAT = load_catalogue()
H100, MI300X = CAT.accelerator("h100-sxm"), CAT.accelerator("mi300x")
L70 = CAT.model("llama-3-70b")
BF16 = 2  # bytes a weight, a cached key or value, an activation and a logit


# --- the pass by hand ----------------------------------------------------------------------------

def peer_by_hand(acc, cards) -> float:
    """Bytes/s one card sends to its group, one way: behind a switch its whole `link_gbps`; on a full
    mesh, the links to the group's other cards, each `link_gbps / mesh_links`. A row that names no
    topology is behind a switch, the field's default."""
    if getattr(acc, "topology", "switch") == "switch":
        return acc.link_gbps * 1e9
    return min(cards - 1, acc.mesh_links) * acc.link_gbps / acc.mesh_links * 1e9


def hand(acc, m, cards, tokens, cached, attended, logits, share=1.0) -> SimpleNamespace:
    """One BF16 pass on `cards` cards, kernel by kernel, every read at `share` of the bandwidth.

    `tokens` positions, `cached` tokens of KV cache read (once each), `attended` cached tokens
    attended to over all positions, `logits` positions through the head. Arrays broadcast."""
    tokens, cached, attended, logits = (np.asarray(x, dtype=float) for x in (tokens, cached, attended, logits))
    bw = cards * acc.bandwidth_tbps * 1e12 * share  # bytes/s over the cards
    peak = cards * acc.bf16_tflops * 1e12           # FLOP/s over the cards
    table = m.vocab * m.hidden                      # the head's matrix (and the input embedding's)
    blocks = m.params - (1 if m.tied_embeddings else 2) * table
    if m.experts:  # a layer's experts: three hidden x expert_ffn matrices each
        experts = m.layers * m.experts * 3 * m.hidden * m.expert_ffn
        routed = m.layers * m.active_experts * 3 * m.hidden * m.expert_ffn
        reach = 1.0 - (1.0 - m.active_experts / m.experts) ** tokens
        moe = np.maximum(experts * BF16 * reach / bw, 2.0 * routed * tokens / peak)
    else:
        experts, moe = 0, 0.0
    dense = blocks - experts
    gemm = np.maximum(dense * BF16 / bw, 2.0 * dense * tokens / peak) + moe
    head = np.where(logits > 0, np.maximum(table * BF16 / bw, 2.0 * table * logits / peak), 0.0)
    lookup = (0 if m.tied_embeddings else m.hidden * BF16) * tokens / bw
    kv_token = 2 * m.layers * m.kv_heads * m.head_dim * BF16  # K and V of every layer
    attention = np.maximum(cached * kv_token / bw, 4.0 * m.layers * m.heads * m.head_dim * attended / peak)
    if cards == 1:
        comm = 0.0 * tokens
    else:
        peer, latency = peer_by_hand(acc, cards), acc.allreduce_us * 1e-6
        allreduces = (2 * m.layers + 1) * (latency + 2 * (cards - 1) / cards * tokens * m.hidden * BF16 / peer)
        gather = np.where(logits > 0, latency + (cards - 1) / cards * logits * m.vocab * BF16 / peer, 0.0)
        comm = allreduces + gather
    return SimpleNamespace(gemm=gemm, head=head, lookup=lookup, attention=attention, comm=comm,
                           seconds=gemm + head + lookup + attention + comm,
                           kv=cached * kv_token / (cards * acc.bandwidth_tbps * 1e12))


def hand_step(acc, m, cards, tokens, context=0.0, requests=None):
    """`hand` for `requests` sequences (default: one position each, decode) of `context` cached
    tokens, every position through the head: the shape of `roofline.step_time`."""
    tokens = np.asarray(tokens, dtype=float)
    requests = tokens if requests is None else np.asarray(requests, dtype=float)
    out = hand(acc, m, cards, tokens, requests * context, tokens * context, tokens)
    return SimpleNamespace(seconds=out.seconds, kv_s=out.kv)


def one_max_step(acc, m, cards, tokens, context=0.0, requests=None):
    """The old physics, as a broken variant: one max over the whole pass, all its bytes against all
    its FLOPs, so cache reads hide under GEMM arithmetic. It keeps the new communication, so the
    checks below can only tell it apart by the overlap."""
    tokens = np.asarray(tokens, dtype=float)
    requests = tokens if requests is None else np.asarray(requests, dtype=float)
    parts = hand(acc, m, cards, tokens, requests * context, tokens * context, tokens)
    bw, peak = cards * acc.bandwidth_tbps * 1e12, cards * acc.bf16_tflops * 1e12
    blocks = m.params - (1 if m.tied_embeddings else 2) * m.vocab * m.hidden
    reads = (blocks + m.vocab * m.hidden) * BF16 / bw + parts.lookup + parts.kv
    flops = (2.0 * (blocks + m.vocab * m.hidden) * tokens
             + 4.0 * m.layers * m.heads * m.head_dim * tokens * context) / peak
    return SimpleNamespace(seconds=np.maximum(reads, flops) + parts.comm, kv_s=parts.kv)


# --- checks, each taking the step function under test ------------------------------------------

# Llama 3 70B on 4 x H100 SXM, BF16, 512 tokens of context, decode batches 452 and 875. By hand
# (`hand`, with the catalogue's 3.35 TB/s, 989 TFLOP/s, 450 GB/s and 10 us):
# - block GEMMs, 68,452,360,192 weights: 2 x 68.45e9 x B / 3.956e15 = 15.64 and 30.28 ms
#   (compute-bound; the read is 10.22 ms);
# - head, 1,050,673,152 weights: 0.240 and 0.465 ms (compute-bound too);
# - lookup: B x 16,384 B / 13.4e12 = 0.55 and 1.07 us;
# - attention: B x 512 x 327,680 B / 13.4e12 = 5.66 and 10.96 ms (read-bound);
# - 160 layer all-reduces: 160 x (10 us + 1.5 x B x 16,384 B / 450e9) = 5.55 and 9.25 ms;
#   together 27.09 and 50.95 ms;
# - plus the embedding's all-reduce (34.7 and 57.8 us) and the logits gather
#   (10 us + 0.75 x B x 256,512 B / 450e9 = 203.2 and 384.1 us): 27.33 and 51.39 ms.
# The old one max gave max(reads, FLOPs) + 160 all-reduces = 21.59 and 40.29 ms.
DECODE_EXPECTED = {452: 27.33e-3, 875: 51.39e-3}


def decode_values_ok(step) -> bool:
    """The two decode steps take what the kernels by hand add up to, to 5 us, and that is the
    27.33 and 51.39 ms worked out above, to 0.01 ms."""
    for batch, expected in DECODE_EXPECTED.items():
        got = float(step(H100, L70, 4, batch, 512).seconds)
        by_hand = float(hand_step(H100, L70, 4, batch, 512).seconds)
        if not (abs(got - by_hand) <= 5e-6 and abs(by_hand - expected) <= 1e-5):
            return False
    return True


BATCHES = np.arange(1, 1025, dtype=float)
CONTEXTS = (0.0, 512.0, 2048.0, 8192.0)


def cache_never_hides(step, acc=H100, m=L70, cards=4) -> bool:
    """For decode passes (one position a request) and for one request's chunk of `batch` positions
    over its cache: the step at a context, less the same pass at context 0, is never shorter than
    the cache read at full bandwidth (`kv_s`), and equals it wherever attention is read-bound (by
    hand: the cache's bytes take longer than attention's FLOPs at the 16-bit peak)."""
    bw, peak = cards * acc.bandwidth_tbps * 1e12, cards * acc.bf16_tflops * 1e12
    kv_token = 2 * m.layers * m.kv_heads * m.head_dim * BF16
    for requests in (BATCHES, np.ones_like(BATCHES)):
        bare = np.asarray(step(acc, m, cards, BATCHES, 0.0, requests).seconds)
        for context in CONTEXTS:
            st = step(acc, m, cards, BATCHES, context, requests)
            extra = np.asarray(st.seconds) - bare
            kv_s = np.asarray(st.kv_s)
            if not np.all(extra >= kv_s * (1 - 1e-9)):
                return False
            reads = requests * context * kv_token / bw
            read_bound = reads >= 4.0 * m.layers * m.heads * m.head_dim * BATCHES * context / peak
            if not np.allclose(extra[read_bound], kv_s[read_bound], rtol=1e-9, atol=1e-15):
                return False
    return True


# --- a. decode on 4 x H100 -------------------------------------------------------------------

def test_decode_on_four_h100_prices_every_kernel_at_its_own_roofline():
    """4 x H100 SXM, Llama 3 70B, BF16, 512 tokens of context: decode at batch 452 takes 27.33 ms
    and at 875 51.39 ms (worked out above `DECODE_EXPECTED`); the old one-max model gave 21.6 and
    40.3 ms. Each kernel class matches its hand price."""
    assert decode_values_ok(roofline.step_time)
    for batch in DECODE_EXPECTED:
        st, by_hand = roofline.step_time(H100, L70, 4, batch, 512), hand(H100, L70, 4, batch, batch * 512.0,
                                                                           batch * 512.0, batch)
        for field, want in (("gemm_s", by_hand.gemm), ("head_s", by_hand.head), ("lookup_s", by_hand.lookup),
                            ("attention_s", by_hand.attention), ("comm_s", by_hand.comm),
                            ("seconds", by_hand.seconds)):
            assert float(getattr(st, field)) == pytest.approx(float(want), rel=1e-12), (batch, field)
        assert bool(st.compute_bound)  # past the ridge of 295: the GEMMs are arithmetic-bound
        # ... and yet the step is longer than all its reads or all its arithmetic as one kernel.
        assert float(st.seconds) > max(float(st.memory_s), float(st.compute_s)) + float(st.comm_s)
    # Without the embedding's all-reduce and the logits gather: 27.09 and 50.95 ms.
    for batch, without in ((452, 27.09e-3), (875, 50.95e-3)):
        one = 10e-6 + 1.5 * batch * 8192 * 2 / 450e9
        gather = 10e-6 + 0.75 * batch * 128256 * 2 / 450e9
        st = roofline.step_time(H100, L70, 4, batch, 512)
        assert float(st.seconds) - one - gather == pytest.approx(without, abs=1e-5)


# --- b. the cache reads never hide ---------------------------------------------------------------

def test_attention_cache_reads_never_hide_under_gemm_arithmetic():
    """Batches 1 to 1,024 at contexts 0, 512, 2,048 and 8,192 (decode, and one request's chunk of
    that many positions), on 4 x H100 with Llama 3 70B and on one MI300X with Llama 3 8B: the
    context adds at least its cache read, exactly that where attention is read-bound. The old model
    hid the read under the GEMMs' arithmetic past its ridge: at batch 875 and 512 tokens it added
    0.30 ms (attention's FLOPs) for a cache whose read takes 10.96 ms."""
    assert cache_never_hides(roofline.step_time)
    assert cache_never_hides(roofline.step_time, MI300X, CAT.model("llama-3-8b"), 1)
    # Not vacuous: decode attention is read-bound (8 query heads share each KV head, so a cached
    # token's 327,680 bytes outlast its 2.6 MFLOP), a long chunk's is arithmetic-bound.
    st = roofline.step_time(H100, L70, 4, 1024.0, 2048.0, requests=1.0)
    bare = roofline.step_time(H100, L70, 4, 1024.0, 0.0, requests=1.0)
    attention = 4.0 * 80 * 64 * 128 * 1024 * 2048 / (4 * 989e12)
    assert float(st.seconds - bare.seconds) == pytest.approx(attention, rel=1e-9)
    assert attention > 10 * float(st.kv_s)


# --- c. the ridge ----------------------------------------------------------------------------------

def test_the_gemm_ridge_is_the_same_at_every_context():
    """BF16 weights take 2 bytes and 2 FLOPs each, so the GEMMs' ridge is the peak over the
    bandwidth: 989 / 3.35 = 295.2 positions on the H100, whatever the context (the old ridge, the
    batch at which a whole decode pass's arithmetic outlasted all its reads, moved with it: 295.23
    at 0 tokens, 451.9 at 512, none at all from about 1,480). Decode batch 295 is bandwidth-bound
    and 296 compute-bound at contexts 0, 512 and 8,192."""
    ridge = roofline.ridge_tokens(H100, L70)
    assert ridge == pytest.approx(989 / 3.35, rel=1e-12)
    assert math.floor(ridge) == 295
    for context in (0.0, 512.0, 8192.0):
        assert not bool(roofline.step_time(H100, L70, 4, 295, context).compute_bound), context
        assert bool(roofline.step_time(H100, L70, 4, 296, context).compute_bound), context
    for acc in CAT.accelerators.values():  # every card, every dense model: its peak over its bandwidth
        for m in CAT.models.values():
            if not m.experts:
                assert roofline.ridge_tokens(acc, m) == pytest.approx(acc.bf16_tflops / acc.bandwidth_tbps,
                                                                      rel=1e-12), (acc.key, m.key)


# --- d. the MI300X's mesh ----------------------------------------------------------------------------

def test_a_mesh_of_mi300x_talks_over_the_links_its_group_uses():
    """The MI300X platform has no switch: a card's 7 links of 448 / 7 = 64 GB/s one way go one to
    each other card, so a group of N uses N - 1 of them. A 2,048-token prefill of Llama 3 70B on
    4 cards: 161 all-reduces of 2,048 x 8,192 x 2 bytes, a ring sending 1.5 x that (50,331,648 B)
    at 192 GB/s, 262.1 us + 10 us each, 43.81 ms; and one gather of the last position's logits,
    10 us + 0.75 x 256,512 B / 192e9 = 11.0 us: 43.83 ms. (The old model: 160 all-reduces at all
    7 links' 448 GB/s, 19.6 ms.)"""
    assert MI300X.peer_bandwidth(2) == pytest.approx(64e9, rel=1e-12)
    assert MI300X.peer_bandwidth(4) == pytest.approx(192e9, rel=1e-12)
    assert MI300X.peer_bandwidth(8) == pytest.approx(448e9, rel=1e-12)
    allreduce = 10e-6 + 2 * 3 / 4 * 2048 * 8192 * 2 / 192e9
    gather = 10e-6 + 3 / 4 * 1 * 128256 * 2 / 192e9
    assert 161 * allreduce == pytest.approx(43.81e-3, abs=1e-5)
    st = prefill.prefill_step(MI300X, L70, 4, 2048)
    assert float(st.comm_s) == pytest.approx(161 * allreduce + gather, rel=1e-12)
    assert float(st.comm_s) == pytest.approx(43.83e-3, abs=1e-5)
    # Switched cards talk at their whole rate to any group.
    for cards in (2, 4, 8):
        assert H100.peer_bandwidth(cards) == pytest.approx(450e9, rel=1e-12)
    # The whole prefill, kernel by kernel: one position through the head, attention over half the
    # prompt on average, nothing cached.
    by_hand = hand(MI300X, L70, 4, 2048.0, 0.0, 2048.0 * 1024.0, 1.0)
    assert float(st.seconds) == pytest.approx(float(by_hand.seconds), rel=1e-12)


# --- e. the serving simulation's prices --------------------------------------------------------------

def test_pass_cost_is_pass_time_and_the_hand_price_everywhere():
    """For every card and model of the catalogue, Mixtral's experts included, on 1, 2, 4 and 8 cards:
    300 random passes (positions, cache read, cache attended, logits, some 0) priced by
    serving.PassCost on floats, by roofline.pass_time on arrays, and by hand agree. A stretch of
    decode steps in closed form is the sum of its steps, and `stretch` stops at the fewest steps
    that reach the time asked. (The old pass_time took one max over the pass, 3.43 ms against the
    hand's 3.70 ms for the first pass here; the old PassCost, linear in the positions, priced
    Mixtral's expert reads as if every position reached new experts: a 4,096-position pass on one
    H100 at 27.6 s against pass_time's 0.105 s.)"""
    rng = np.random.default_rng(11)
    n = 300
    tokens = rng.integers(1, 4097, n).astype(float)
    cached = rng.integers(0, 400_001, n).astype(float)
    attended = cached * rng.uniform(0.5, 3.0, n)
    logits = np.floor(tokens * rng.uniform(0.0, 1.0, n))
    logits[::7] = 0.0  # a pass of prompt pieces only, no position making a token
    for acc in CAT.accelerators.values():
        for m in CAT.models.values():
            for cards in (1, 2, 4, 8):
                where = (acc.key, m.key, cards)
                cost = serving.PassCost.of(acc, m, cards)
                mine = np.array([cost.seconds(*x) for x in zip(tokens, cached, attended, logits)])
                theirs = roofline.pass_time(acc, m, cards, tokens, cached, attended, logits=logits).seconds
                np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=0, err_msg=str(where))
                by_hand = hand(acc, m, cards, tokens, cached, attended, logits).seconds
                np.testing.assert_allclose(theirs, by_hand, rtol=1e-9, atol=0, err_msg=str(where))
                for requests, start, steps in ((1, 700, 1), (37, 20_000, 90), (300, 150_000, 400)):
                    s = np.arange(steps)
                    each = roofline.pass_time(acc, m, cards, requests, start + requests * s, start + requests * s,
                                              logits=requests).seconds
                    assert cost.decode_steps(requests, start, steps) == pytest.approx(each.sum(), rel=1e-9), where
                    running = np.cumsum(each)
                    for fraction in (0.0, 0.3, 0.999):
                        goal = fraction * running[-1]
                        k, spent = cost.stretch(requests, start, steps, goal)
                        fewest = int(np.searchsorted(running, goal * (1 - 1e-12))) + 1
                        assert k == max(fewest, 1), (where, requests, fraction)
                        assert spent == pytest.approx(running[k - 1], rel=1e-9)


# --- f. the estimate --------------------------------------------------------------------------------

def test_the_estimate_slows_every_kernels_reads_by_the_bandwidth_share():
    """`StepTime.at` with a bandwidth share and a fixed cost alone: the pass kernel by kernel with
    every read (weights, rows, cache) at that share of the bandwidth, arithmetic and communication
    unchanged, plus the fixed cost, as the hand count gives it; and the fitted estimate of
    models/estimate.py, with every term, is never below the floor."""
    share, overhead = 0.7, 1.5e-3
    eff = roofline.Efficiency(bandwidth=share, pass_s=overhead)
    fitted = estimate.fitted().eff
    batches = np.array([1.0, 16.0, 200.0, 452.0, 875.0, 2048.0])
    for acc, m, cards in ((H100, L70, 4), (CAT.accelerator("a100-80gb"), CAT.model("llama-3-8b"), 1),
                          (MI300X, CAT.model("mixtral-8x7b"), 2)):
        for context in (0.0, 512.0, 8192.0):
            st = roofline.step_time(acc, m, cards, batches, context)
            want = hand(acc, m, cards, batches, batches * context, batches * context, batches, share).seconds + overhead
            got = np.asarray(st.at(eff))
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=f"{acc.key} {m.key} {context}")
            assert np.all(got >= np.asarray(st.seconds))
            assert np.all(np.asarray(st.at(fitted)) >= np.asarray(st.seconds) + fitted.fixed(m.layers))


# --- g. the catalogue's topology -------------------------------------------------------------------------

def _line_of(text: str, pattern: str, after: str) -> int:
    """1-based line of the first line matching `pattern` after the line containing `after`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if re.search(pattern, lines[i])) + 1


def test_the_catalogue_rejects_an_unknown_topology_and_a_mesh_without_links():
    """A topology other than switch or mesh, a mesh without mesh_links and mesh_links behind a switch
    are each a SourceError at the line to fix. (The old catalogue had no topology field: it
    rejected the field itself, at the first accelerator's line.)"""
    text = CATALOGUE_PATH.read_text(encoding="utf-8")
    path = "catalogue.yaml"
    assert "    topology: mesh\n    mesh_links: 7\n" in text

    torus = text.replace("    topology: mesh\n", "    topology: torus\n")
    with pytest.raises(SourceError) as err:
        parse_catalogue(torus, path)
    line = _line_of(torus, r"^\s+topology: torus$", "key: mi300x")
    assert err.value.line == line and str(err.value).startswith(f"{path}:{line}:")
    assert "torus" in err.value.message and "switch" in err.value.message

    no_links = text.replace("    mesh_links: 7\n", "")
    with pytest.raises(SourceError) as err:
        parse_catalogue(no_links, path)
    line = _line_of(no_links, r"^\s+topology: mesh$", "key: mi300x")
    assert err.value.line == line and str(err.value).startswith(f"{path}:{line}:")
    assert "mesh_links" in err.value.message

    # mesh_links on a switched card: the error is at the mesh_links line.
    extra = text.replace("    topology: switch\n", "    topology: switch\n    mesh_links: 4\n", 1)
    with pytest.raises(SourceError) as err:
        parse_catalogue(extra, path)
    assert err.value.line == _line_of(extra, r"^\s+mesh_links: 4$", "key: a100-80gb")

    # The unmodified text parses, and its MI300X row is the mesh the tests above price.
    parsed = parse_catalogue(text, path).accelerator("mi300x")
    assert (parsed.topology, parsed.mesh_links, parsed.link_gbps) == ("mesh", 7, 448)


# --- h. negative control -----------------------------------------------------------------------------------

def test_the_checks_tell_one_max_from_kernels():
    """The checks of tests a and b pass on the hand kernel-by-kernel step and fail on the hand one-max
    step (old physics with the new communication): at batch 452 it gives 21.82 ms, not 27.33, and at
    batch 875 the 512 tokens of context add 0.30 ms (attention's FLOPs) for a cache whose read takes
    10.96 ms."""
    assert decode_values_ok(hand_step)
    assert cache_never_hides(hand_step)
    assert not decode_values_ok(one_max_step)
    assert not cache_never_hides(one_max_step)
    assert float(one_max_step(H100, L70, 4, 452, 512).seconds) == pytest.approx(21.82e-3, abs=1e-5)
    extra = float(one_max_step(H100, L70, 4, 875, 512).seconds - one_max_step(H100, L70, 4, 875, 0).seconds)
    assert extra == pytest.approx(4.0 * 80 * 64 * 128 * 875 * 512 / (4 * 989e12), rel=1e-9)  # 0.297 ms
    assert extra == pytest.approx(0.30e-3, abs=0.005e-3)
    assert float(hand_step(H100, L70, 4, 875, 512).kv_s) == pytest.approx(10.96e-3, abs=0.01e-3)
