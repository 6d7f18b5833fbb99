"""The numeric models against published figures and the properties they must have."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from models import kvcache, roofline, speculative

PUBLISHED = yaml.safe_load((Path(speculative.__file__).with_name("published.yaml")).read_text())



@pytest.mark.parametrize("row", PUBLISHED["leviathan2023_table1"], ids=lambda r: f"a{r['a']}-k{r['k']}")
def test_expected_tokens_reproduces_leviathan_table1_speed(row):
    # With c = 0 the paper's walltime improvement is exactly E(a, k); the table prints 2 decimals.
    assert speculative.expected_tokens(row["a"], row["k"]) == pytest.approx(row["speed"], abs=0.005)


def test_expected_tokens_limits():
    assert speculative.expected_tokens(1.0, 4) == 5.0
    assert speculative.expected_tokens(0.0, 4) == 1.0
    a = np.linspace(0.01, 0.99, 50)
    # Direct sum of the geometric series: 1 + a + ... + a^k.
    assert np.allclose(speculative.expected_tokens(a, 3), 1 + a + a**2 + a**3)


def test_plain_step_of_70b_on_four_h100_is_bandwidth_bound(cat, scenario):
    acc, target, _ = scenario
    st = roofline.step_time(acc, target, 4, 1)
    assert not st.compute_bound
    # Bytes read / (4 x bandwidth): every bf16 weight but the input embedding, whose size the
    # reference gives (128,256 x 8,192), and the one row the token looks up.
    expected = ((target.params - 1_050_673_152) * 2 + 8192 * 2) / (4 * 3.35e12)
    assert float(st.memory_s) == pytest.approx(expected)
    assert 10.0e-3 < float(st.memory_s) < 11.0e-3  # "about 10.4 ms"
    # Every kernel is read-bound at one position, so the kernels add up to the reads. Plus 2
    # all-reduces in each of 80 layers and the vocabulary-split embedding's one: 10 us each, and
    # 1.5 x 16 KB over 450 GB/s one way; and the gather of the token's logits, 10 us and 3/4 of
    # 128,256 x 2 bytes over 450 GB/s.
    comm = 161 * (10e-6 + 2 * 3 / 4 * 8192 * 2 / 450e9) + (10e-6 + 3 / 4 * 128256 * 2 / 450e9)
    assert float(st.comm_s) == pytest.approx(comm, rel=1e-12)
    assert float(st.seconds) == pytest.approx(expected + comm)
    assert float(st.utilisation) < 0.01


def test_step_time_turns_compute_bound_at_the_ridge(cat, scenario):
    acc, target, _ = scenario
    ridge = roofline.ridge_tokens(acc, target)
    assert not roofline.step_time(acc, target, 4, np.floor(ridge)).compute_bound
    assert roofline.step_time(acc, target, 4, np.ceil(ridge) + 1).compute_bound


def test_k8_below_k4_at_half_acceptance_batch_one(scenario):
    acc, target, draft = scenario
    s4, s8 = speculative.speedup(acc, target, draft, 4, 1, 0.5, np.array([4, 8]))
    assert s8 < s4


def test_speedup_falls_below_one_in_the_hundreds(scenario):
    acc, target, draft = scenario
    for k in (1, 2, 4, 8):
        b = int(speculative.breakeven_batch(acc, target, draft, 4, 0.8, k))
        assert speculative.speedup(acc, target, draft, 4, b, 0.8, k) < 1 <= speculative.speedup(acc, target, draft, 4, b - 1, 0.8, k)
    assert 100 <= int(speculative.breakeven_batch(acc, target, draft, 4, 0.8, 4)) < 1000


def test_vectorised_over_a_whole_grid(scenario):
    acc, target, draft = scenario
    a = np.linspace(0.05, 0.95, 19)[:, None, None]
    k = np.array([1, 2, 4, 8])[None, :, None]
    b = np.array([1, 16, 256, 1024])[None, None, :]
    grid = speculative.speedup(acc, target, draft, 4, b, a, k)
    assert grid.shape == (19, 4, 4)
    one = speculative.speedup(acc, target, draft, 4, 16, float(a[7, 0, 0]), 2)
    assert grid[7, 1, 1] == pytest.approx(one)


def test_catalogue_has_the_required_rows(cat):
    assert {"a100-80gb", "h100-sxm", "h200", "b200", "mi300x"} <= set(cat.accelerators)
    assert {"llama-3.2-1b", "llama-3-8b", "llama-3-70b", "llama-3.1-405b"} <= set(cat.models)
    # KV bytes per token from the shapes; the reference gives 327,680 for 70B in bf16.
    assert kvcache.bytes_per_token(cat.model("llama-3-70b")) == 2 * 80 * 8 * 128 * 2


def test_models_import_no_mkdocs_or_altair():
    import subprocess
    import sys
    code = ("import sys, models, models.roofline, models.speculative, models.catalogue;"
            "bad=[m for m in sys.modules if m.split('.')[0] in ('mkdocs','altair','vl_convert','explainer_gen')];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_step_reads_what_it_multiplies_and_the_rows_it_looks_up(cat):
    """Held against read, for every model of the catalogue: an untied input embedding is looked up
    (one row per token), not read whole; a tied one is the output head, read whole."""
    for m in cat.models.values():
        if m.experts:
            continue  # a mixture reads the experts its tokens reach: tests/test_moe.py
        table = m.vocab * m.hidden
        for tokens in (1, 5, 64):
            if m.tied_embeddings:
                assert m.read_bytes(tokens) == m.weight_bytes() == 2 * m.params
                assert roofline.flops_per_token(m) == 2 * m.params
            else:
                assert m.read_bytes(tokens) == 2 * (m.params - table) + 2 * m.hidden * tokens
                assert roofline.flops_per_token(m) == 2 * (m.params - table)
    # The reference's figures: 70B holds 141.1 GB and reads about 139 GB; the 1B ties its head.
    big, small = cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
    assert big.weight_bytes() / 1e9 == pytest.approx(141.1, abs=0.05)
    assert big.read_bytes() / 1e9 == pytest.approx(139.0, abs=0.05)
    assert small.tied_embeddings and not big.tied_embeddings


def test_the_ridge_is_where_reading_and_arithmetic_take_as_long(cat):
    """At the ridge the block GEMMs' arithmetic takes as long as their reads. By hand from a
    context-0 pass (no attention): its arithmetic less the output head's (2 FLOPs a head weight a
    position at the 16-bit peak) against its reads less the head's matrix (2 bytes a weight) and
    the looked-up embedding rows, read but never multiplied (a 16-bit row of hidden values a
    position of an untied table). A mixture's experts turn last: a position multiplies 2 of 8 of
    them, so their ridge lies 8 / 2 times the dense weights' (both 16-bit, 2 bytes and 2 FLOPs a
    weight), and at it the dense GEMMs are long past theirs."""
    for acc in cat.accelerators.values():
        bw, flops = acc.bandwidth_tbps * 1e12, acc.bf16_tflops * 1e12
        for m in cat.models.values():
            t = roofline.ridge_tokens(acc, m)
            st = roofline.step_time(acc, m, 1, t)
            head = m.vocab * m.hidden
            if not m.experts:
                assert t == pytest.approx(flops / bw, rel=1e-12)
                rows = (0 if m.tied_embeddings else 2 * m.hidden * t) / bw
                blocks_arithmetic = float(st.compute_s) - 2 * head * t / flops
                blocks_reads = float(st.memory_s) - rows - 2 * head / bw
                assert blocks_arithmetic == pytest.approx(blocks_reads, rel=1e-9)
                # The 16-bit GEMMs, head included, share one ridge, so each kernel is as long in
                # reads as in arithmetic there.
                assert float(st.gemm_s + st.head_s) == pytest.approx(float(st.compute_s), rel=1e-9)
            else:
                assert t == pytest.approx(flops / bw * m.experts / m.active_experts, rel=1e-12)
                # The experts' reads (every expert, all but reached) equal their arithmetic.
                experts = m.layers * m.experts * 3 * m.hidden * m.expert_ffn
                routed = experts * m.active_experts / m.experts
                reach = 1 - (1 - m.active_experts / m.experts) ** t
                assert 2 * routed * t / flops == pytest.approx(2 * experts * reach / bw, rel=1e-6)
                assert bool(roofline.step_time(acc, m, 1, np.ceil(t) + 1).compute_bound)
                assert not bool(roofline.step_time(acc, m, 1, np.floor(t) - 1).compute_bound)
