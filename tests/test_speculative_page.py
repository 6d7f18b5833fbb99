"""The speculative-decoding page: its prose numbers are the models' numbers, and nothing is frozen."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from helpers import REPO, article, copy_project, mkdocs_build, numbers_in
from models import estimate, kvcache, load_catalogue, roofline, speculative
from models.precision import Precision

PAGE = "explainers/speculative-decoding/index.html"
SOURCE = REPO / "docs/explainers/speculative-decoding.md"


CONTEXT = 512  # the page's default context


def scenario(acc="h100-sxm", cards=4, target="llama-3-70b", draft="llama-3.2-1b"):
    cat = load_catalogue()
    return cat.accelerator(acc), cards, cat.model(target), cat.model(draft)


def expected_texts(acc, cards, target, draft, a=0.8, k=4, ctx=CONTEXT) -> dict[str, str]:
    """What the page must say, computed here straight from the models."""
    plain = roofline.step_time(acc, target, cards, 1, ctx)
    breakeven = int(speculative.breakeven_batch(acc, target, draft, cards, a, k, ctx))
    estimated = int(speculative.breakeven_batch(acc, target, draft, cards, a, k, ctx, eff=estimate.fitted().eff))
    cap = int(kvcache.slots(acc, target, cards, ctx, draft))
    return {
        "weights": f"{target.params * 2 / 1e9:.0f}\u00a0GB",
        # Read, not held: all but the untied input embedding's table, and the token's row of it.
        "weights read": f"{((target.params - target.vocab * target.hidden) * 2 + target.hidden * 2) / 1e9:.0f}\u00a0GB",
        "plain step": f"{float(plain.seconds) * 1e3:.1f}\u00a0ms",
        "tensor-core use": f"{float(plain.utilisation):.2%}",
        "E(a,k)": f"{float(speculative.expected_tokens(a, k)):.1f}",
        "cache read": f"{ctx * kvcache.bytes_per_token(target) / 1e9:.2f}\u00a0GB",
        "all-reduces": f"{float(plain.comm_s) * 1e3:.1f}\u00a0ms",
        "verify pass": f"{float(speculative.verify_step_s(acc, target, cards, 1, k, ctx)) * 1e3:.1f}\u00a0ms",
        "draft step": f"{float(roofline.step_time(acc, draft, cards, 1, ctx).seconds) * 1e3:.2f}\u00a0ms",
        "k=4 at a=0.5": f"{float(speculative.speedup(acc, target, draft, cards, 1, 0.5, 4, ctx)):.2f}×",
        "k=8 at a=0.5": f"{float(speculative.speedup(acc, target, draft, cards, 1, 0.5, 8, ctx)):.2f}×",
        # The largest batch at which it pays: one short of the breakeven, or the memory cap.
        "pays up to": f"{cap if breakeven < 0 or breakeven > cap else breakeven - 1:,d}",
        # The same under the estimate fitted on published measurements: the breakeven as a range.
        "pays up to, estimate": f"{cap if estimated < 0 or estimated > cap else max(estimated - 1, 1):,d}",
        "memory cap": f"{cap:,d}\u00a0requests",
        "draft weights": f"{draft.params * 2 / 1e9:.1f}\u00a0GB",
    }


def test_prose_carries_the_models_numbers(site):
    shown = numbers_in(article((site / PAGE).read_text()))
    for what, text in expected_texts(*scenario()).items():
        assert text in shown, (what, text, shown)


def test_headline_claims_hold_in_the_default_scenario():
    acc, cards, target, draft = scenario()
    assert 130e9 < target.params * 2 < 150e9  # "about 140 GB"
    assert float(roofline.step_time(acc, target, cards, 1).utilisation) < 0.01
    assert round(float(speculative.expected_tokens(0.8, 4)), 1) == 3.4
    assert speculative.speedup(acc, target, draft, cards, 1, 0.5, 8) < speculative.speedup(acc, target, draft, cards, 1, 0.5, 4)
    # At 512 tokens of context the seed's claim holds: speculation stops paying in the hundreds,
    # below the memory cap. From 2k tokens on it pays at every batch that fits (MagicDec).
    assert 100 <= speculative.breakeven_batch(acc, target, draft, cards, 0.8, 4, CONTEXT) < 1000
    assert speculative.breakeven_batch(acc, target, draft, cards, 0.8, 4, CONTEXT) < kvcache.slots(
        acc, target, cards, CONTEXT, draft)
    for ctx in (2048, 8192, 32768):
        b = speculative.breakeven_batch(acc, target, draft, cards, 0.8, 4, ctx)
        assert b < 0 or b > kvcache.slots(acc, target, cards, ctx, draft)


def test_page_has_the_required_parts(site):
    html = (site / PAGE).read_text()
    assert "<h1" in html and "Verifying five tokens costs the same as making one" in html
    assert 'id="fig-token-timeline"' in html and 'id="fig-speedup-vs-batch"' in html
    assert "<math" in html  # E(a, k) rendered as MathML at build time
    assert "What this model leaves out" in html
    assert 'data-eg-switch="accelerator"' in html and 'data-eg-switch="cards"' in html
    assert 'data-eg-switch="draft"' in html


def test_every_scenario_and_slider_position_is_precomputed(site):
    html = (site / PAGE).read_text()
    page_json = re.search(r'data-eg-page="([^"]+)"', html).group(1)
    state = json.loads(((site / PAGE).parent / page_json).read_text())
    cat = load_catalogue()
    acc, cards, target, draft = scenario()
    # Every combination of the switch whose two models and one request's cache fit, and no other.
    runs = [(a, n, d, c, w) for a in ("h100-sxm", "mi300x") for n in (1, 4, 8)
            for d in ("llama-3.2-1b", "llama-3-8b") for c in (512, 32768) for w in ("bf16", "fp8", "int4")
            if kvcache.fits(cat.accelerator(a), target, n, c, cat.model(d), precision=Precision.of(w))]
    assert len(state["scenarios"]) == len(runs) < 2 * 3 * 2 * 2 * 3
    # The largest paying batch depends on a, k and the scenario: check one position away from the default.
    n = next(v for v in state["numbers"].values() if set(v["deps"]) == {"scenario", "a", "k"}
             and len(v["texts"]) == len(runs) * 19 * 8 and v["texts"][0].replace(",", "").isdigit())
    i_sc = [s["key"] for s in state["scenarios"]].index("mi300x.8.llama-3-70b.llama-3-8b.512.int4.bf16")
    i_a, i_k = round((0.6 - 0.05) / 0.05), 2 - 1
    d, int4 = cat.model("llama-3-8b"), Precision.of("int4")
    want = speculative.breakeven_batch(cat.accelerator("mi300x"), target, d, 8, 0.6, 2, 512, precision=int4)
    cap = kvcache.slots(cat.accelerator("mi300x"), target, 8, 512, d, precision=int4)
    assert 0 < want <= cap
    assert n["texts"][(i_sc * 19 + i_a) * 8 + i_k] == f"{int(want) - 1:,d}"


def test_changing_the_scenario_changes_numbers_and_figures(tmp_path, site, warm_cache):
    project = copy_project(tmp_path / "project", warm_cache)
    page = project / "docs/explainers/speculative-decoding.md"
    page.write_text(page.read_text().replace("explainer:\n", "explainer:\n  scenario: {accelerator: mi300x}\n", 1)
                    .replace("accelerator: [h100-sxm, mi300x]", "accelerator: [mi300x, h100-sxm]"))
    result = mkdocs_build(tmp_path / "out", project / "mkdocs.yml")
    assert result.returncode == 0, result.stderr
    built = (tmp_path / "out" / PAGE).read_text()
    shown = numbers_in(article(built))
    for what, text in expected_texts(*scenario("mi300x")).items():
        assert text in shown, (what, text)
    assert expected_texts(*scenario())["plain step"] not in shown
    # The figures' default data follow the scenario too.
    before = (site / PAGE).read_text()
    for anchor in ("fig-token-timeline", "fig-speedup-vs-batch"):  # the figures that read the hardware
        find = lambda html: re.search(rf'id="{anchor}"[^>]*data-eg-figure="([^"]+)"', html).group(1)  # noqa: E731
        old, new = find(before), find(built)
        old_data = json.loads(((site / PAGE).parent / old).read_text())["data"]
        new_data = json.loads(((tmp_path / "out" / PAGE).parent / new).read_text())["data"]
        assert old_data != new_data


def test_token_timeline_matches_the_model(site):
    html = (site / PAGE).read_text()
    fig = re.search(r'id="fig-token-timeline"[^>]*data-eg-figure="([^"]+)"', html).group(1)
    data = json.loads(((site / PAGE).parent / fig).read_text())["data"]
    acc, cards, target, draft = scenario()
    for i in range(0, len(data["a"]), 17):
        k, runs = data["k"][i], data["acc"][i]
        assert sum(runs) + len(runs) >= 48 > sum(runs[:-1]) + len(runs) - 1  # stops at the 48th token
        assert all(0 <= n <= k for n in runs)
        step = float(roofline.step_time(acc, draft, cards, 1, CONTEXT).seconds) * k + float(
            roofline.step_time(acc, target, cards, k + 1, CONTEXT, requests=1).seconds)
        assert data["spec_total_ms"][i] == pytest.approx(len(runs) * step * 1e3, rel=1e-3)
    # At every lookahead, high acceptance needs far fewer verify steps than low acceptance.
    steps = np.array(data["steps"]).reshape(19, 8)
    assert (steps[-1] < steps[0]).all()


def test_context_table_says_where_speculation_stops_or_that_it_never_does_within_memory(site):
    """The context table's last column: the first batch at which speculation (a = 0.8, k = 4) is
    slower, among the batches that fit, or "none that fits" where it pays at every one of them.
    Under kernels that do not overlap, a verify pass's extra positions cost GEMM time that does not
    grow with the context while the cache read it shares does, so from 2,048 tokens on it pays at
    every batch that fits (the issue's 1.30x at batch 195); at 512 it stops short of memory."""
    acc, cards, target, draft = scenario()
    html = (site / PAGE).read_text()
    table = re.search(r"First batch at which speculation is slower.*?</table>", html, re.S).group(0)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]
    rows = [cells[i:i + 3] for i in range(0, len(cells), 3)]
    assert [r[0] for r in rows] == ["512", "2,048", "8,192", "32,768"]
    for ctx, (_, fits, first) in zip((512, 2048, 8192, 32768), rows):
        cap = int(kvcache.slots(acc, target, cards, ctx, draft))
        assert fits == f"{cap:,d}"
        # Every batch that fits, scanned here rather than bisected: the first slower one, if any.
        batches = np.arange(1, cap + 1)
        slower = batches[speculative.speedup(acc, target, draft, cards, batches, 0.8, 4, ctx) < 1.0]
        assert first == (f"{int(slower[0]):,d}" if len(slower) else "none that fits"), ctx
    assert rows[0][2] != "none that fits" and all(r[2] == "none that fits" for r in rows[1:])
    # The point at 2,048 tokens and the largest batch that fits there: 1.30x before the
    # logits gather was counted (the verify pass gathers 195 x 5 rows of 128,256 logits), 1.29x with it.
    cap = int(kvcache.slots(acc, target, cards, 2048, draft))
    assert cap == 195
    assert float(speculative.speedup(acc, target, draft, cards, cap, 0.8, 4, 2048)) == pytest.approx(1.29, abs=0.005)
