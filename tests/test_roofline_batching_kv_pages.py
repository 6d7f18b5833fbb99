"""The roofline, batching and KV-cache pages as built with --strict: every figure's files, and
every number, set against direct calls to the models."""
from __future__ import annotations

import itertools
from collections import Counter

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import (REPO, anchors, article, assert_figure_data_within_budget, assert_figures_have_svg_table_and_csv,
                     cols_of, figure, numbers_in, page_html)
from models import batching, kvcache, prefill, roofline, speculative
from models.precision import Precision

CONTEXT = 512  # the catalogue's default context, which the roofline and batching pages keep

# Every explainer page; its figures are read from the built page (`anchors`), so a new figure is
# checked here with no list to edit.
EXPLAINERS = sorted(p.stem for p in (REPO / "docs" / "explainers").glob("*.md"))
PAGES = ("roofline", "batching", "kv-cache")  # the pages this file is about
PUBLISHED = yaml.safe_load((REPO / "models" / "published.yaml").read_text())
# The unit table, written out here rather than imported: factor on the SI value, then suffix.
UNITS = {"": (1, ""), "ms": (1e3, "\u00a0ms"), "us": (1e6, "\u00a0µs"), "GB": (1e-9, "\u00a0GB"),
         "B": (1, "\u00a0bytes"), "GB/s": (1e-9, "\u00a0GB/s"), "TB/s": (1e-12, "\u00a0TB/s"), "TFLOP/s": (1e-12, "\u00a0TFLOP/s"),
         "x": (1, "×"), "%": (100, "%")}


def show(value, spec: str, unit: str = "") -> str:
    factor, suffix = UNITS[unit]
    value = float(value) * factor
    if spec.endswith("d"):
        value = int(round(value))
    return format(value, spec) + suffix





# -- every figure: SVG, table, CSV, budget -------------------------------------------------------

def test_the_figures_are_read_from_the_built_pages(site):
    assert {"fig-roofline", "fig-step-time", "fig-prefill-vs-decode"} <= set(anchors(site, "roofline"))
    assert {"fig-batch-schedule", "fig-batch-throughput"} <= set(anchors(site, "batching"))
    assert "fig-kv-slots" in anchors(site, "kv-cache")


@pytest.mark.parametrize("name", EXPLAINERS)
def test_every_figure_has_svg_table_and_csv(site, name):
    assert_figures_have_svg_table_and_csv(site, name)


@pytest.mark.parametrize("name", EXPLAINERS)
def test_default_figure_data_is_within_the_budget(site, name):
    assert_figure_data_within_budget(site, name)


# -- figure data against the models --------------------------------------------------------------

def test_roofline_points_are_the_models(site, scenario):
    acc, target, _ = scenario
    _, payload, _ = figure(site, "roofline", "fig-roofline")
    c = cols_of(payload)
    dec = c["what"] == "decode"
    b = c["batch"][dec].astype(float)
    st = roofline.step_time(acc, target, 4, b, CONTEXT)
    # FLOP per byte read: 2 per multiplied weight and the attention, over the weights and each cache.
    flops = b * (2 * target.step_params + 4 * 80 * 64 * 128 * CONTEXT)
    read = target.read_bytes(b) + b * CONTEXT * 327_680
    assert np.allclose(c["intensity"][dec].astype(float), flops / read, rtol=1e-3)
    # The FLOP/s each card attains over the whole step the prose prices, all-reduces included: the
    # prose's share of peak times the peak, and never above the roof at the pass's intensity.
    tflops = c["tflops"][dec].astype(float)
    assert np.allclose(tflops, flops / 4 / st.seconds / 1e12, rtol=1e-3)
    assert np.allclose(tflops, 989 * st.utilisation, rtol=1e-3)
    assert np.all(tflops < np.minimum(989, 3.35 * flops / read))
    pre = c["what"] == "prefill"
    st = prefill.prefill_step(acc, target, 4, c["prompt"][pre].astype(float))
    assert np.allclose(c["intensity"][pre].astype(float), st.intensity, rtol=1e-3)
    ridge = c["what"] == "ridge"
    assert float(c["intensity"][ridge][0]) == pytest.approx(989e12 / 3.35e12, rel=1e-3)
    # Every slider position is there.
    assert sorted(c["batch"][dec].astype(int)) == list(range(1, 514, 8))
    assert sorted(c["prompt"][c["what"] == "prefill"].astype(int)) == list(range(128, 8193, 128))


def test_step_time_points_are_the_models(site, scenario):
    acc, target, _ = scenario
    _, payload, _ = figure(site, "roofline", "fig-step-time")
    c = cols_of(payload)
    m = c["what"] == "decode"
    expected = roofline.step_time(acc, target, 4, c["batch"][m].astype(float), CONTEXT).seconds * 1e3
    assert np.allclose(c["ms"][m].astype(float), expected, rtol=1e-3)
    m = c["what"] == "prefill"
    expected = prefill.prefill_step(acc, target, 4, c["prompt"][m].astype(float)).seconds * 1e3
    assert np.allclose(c["ms"][m].astype(float), expected, rtol=1e-3)
    # The two curves the points ride: each pass at every tokens-per-pass it is drawn at, decode
    # only as far as the requests' caches fit.
    for what, model in (("prefill-line", lambda t: prefill.prefill_step(acc, target, 4, t)),
                        ("decode-line", lambda t: roofline.step_time(acc, target, 4, t, CONTEXT))):
        m = c["what"] == what
        t = c["tokens"][m].astype(float)
        assert len(t) > 30 and np.allclose(c["ms"][m].astype(float), model(t).seconds * 1e3, rtol=1e-3)
    decode_line = c["tokens"][c["what"] == "decode-line"].astype(float)
    assert decode_line.max() <= kvcache.slots(acc, target, 4, CONTEXT) < 2 * decode_line.max()


def test_schedule_totals_are_the_simulation(site, scenario):
    acc, target, _ = scenario
    _, payload, _ = figure(site, "batching", "fig-batch-schedule")
    c = cols_of(payload)
    totals = np.flatnonzero(c["what"] == "total")
    seen = set()
    for i in totals:
        b, s, sched = int(c["batch"][i]), float(c["spread"][i]), str(c["sched"][i])
        key = "static" if sched.startswith("Static") else "continuous"
        run = batching.simulate(key, b, s, acc, target, 4, CONTEXT)
        assert float(c["tps"][i]) == pytest.approx(run.tokens_per_s, rel=1e-3)
        assert float(c["t1"][i]) == pytest.approx(run.seconds, rel=1e-3)
        seen.add((b, round(s, 1), key))
    assert len(seen) == 8 * 11 * 2  # every batch x spread position, both schedulers
    # Each position draws one bar per request per scheduler.
    busy = c["what"] == "busy"
    at = busy & (c["batch"].astype(float) == 8) & (np.abs(c["spread"].astype(float) - 0.6) < 1e-9)
    assert at.sum() == 2 * batching.N_REQUESTS


def test_throughput_curve_is_the_model(site, scenario):
    acc, target, _ = scenario
    _, payload, _ = figure(site, "batching", "fig-batch-throughput")
    c = cols_of(payload)
    m = c["what"] == "curve"
    b = c["batch"][m].astype(float)
    st = roofline.step_time(acc, target, 4, b, CONTEXT).seconds
    assert np.allclose(c["tps"][m].astype(float), b / st, rtol=1e-3)
    assert np.allclose(c["tpot_ms"][m].astype(float), st * 1e3, rtol=1e-3)
    # The curve ends at the memory cap, which is marked.
    cap = kvcache.slots(acc, target, 4, CONTEXT)
    assert b.max() == cap and float(c["batch"][c["what"] == "cap"][0]) == cap


def test_kv_points_are_the_model(site, scenario):
    acc, target, draft = scenario
    _, payload, _ = figure(site, "kv-cache", "fig-kv-slots")
    c = cols_of(payload)
    for variant, d in (("target alone", None), ("target + draft", draft)):
        for what in ("point", "line"):
            m = (c["what"] == what) & (c["variant"] == variant)
            expected = kvcache.slots(acc, target, 4, c["context"][m].astype(float), d)
            assert np.array_equal(c["slots"][m].astype(float), expected)
    # The point sits at the page's context, 8,192 tokens.
    assert set(c["context"][c["what"] == "point"].astype(int)) == {8192}


# -- every inline number, in order ---------------------------------------------------------------

def assert_shown(shown: list[str], expected: list[str]) -> None:
    """Each expected text is on the page, as many times as expected. The model decides the texts;
    the prose may add numbers or reorder them without breaking this."""
    missing = Counter(expected) - Counter(shown)
    assert not missing, f"not on the page: {dict(missing)}; the page shows {shown}"


def test_roofline_numbers(site, cat, scenario):
    acc, target, draft = scenario
    st = lambda t, c=CONTEXT: roofline.step_time(acc, target, 4, t, c)  # noqa: E731
    pre = lambda p: prefill.prefill_step(acc, target, 4, p)  # noqa: E731
    prompt, batch = 2048, 1
    ridge = roofline.ridge_tokens(acc, target)
    decode_batch = int(np.floor(ridge)) + 1
    # The attention kernel at that batch: every request's 512-token cache at 327,680 bytes a token.
    attention = decode_batch * CONTEXT * 327_680 / (4 * 3.35e12)
    expected = [
        show(4, "d"), show(prompt, ",d"), show(pre(prompt).seconds, ".1f", "ms"), show(st(1).seconds, ".1f", "ms"),
        f"{CONTEXT}\u00a0tokens", f"{round(float(pre(prompt).seconds / st(1).seconds), 1):.4g}\u00a0decode steps",
        "One phase is waiting on arithmetic, the other on memory.",
        show(st(1).intensity, ".2f"), show(pre(prompt).intensity, ",.0f"),
        show(acc.flops, ",.0f", "TFLOP/s"), show(acc.bandwidth, ".2f", "TB/s"), show(acc.ridge, ".0f"),
        *[show(cat.accelerator(k).ridge, ".0f") for k in ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x")],
        show(cat.accelerator("h100-sxm").ridge / cat.accelerator("a100-80gb").ridge, ".1f", "x"),
        show(target.read_bytes(), ".0f", "GB"), show(st(1).compute_s, ".0f", "us"),
        show(st(1).weights_s, ".1f", "ms"), show(st(1).kv_s, ".0f", "us"), show(st(1).comm_s, ".1f", "ms"),
        show(st(1).utilisation, ".2f", "%"), show(st(1).seconds, ".1f", "ms"),
        "the batch slider starts at", show(batch, "d"), "where the step takes", show(st(batch).seconds, ".1f", "ms"),
        show(st(batch).utilisation, ".1f", "%"), ", as above; move the slider and watch the decode point climb the slope.",
        f"{ridge:,.0f}\u00a0tokens", show(decode_batch, "d"), show(attention, ".1f", "ms"),
        "sits at", show(pre(prompt).utilisation, ".0f", "%"), show(ridge, ",.0f"),
        show(pre(prompt).seconds / prompt, ".1f", "us"), show(prompt * st(1).seconds / pre(prompt).seconds, ",.0f", "x"),
        # Past the ridge a prefill position pays the blocks' products, not the head's.
        show(2 * target.active_block_params / (4 * 989e12), ".1f", "us"),
        "This prompt is past the ridge, so that is the gap drawn above.",
        show(speculative.verify_step_s(acc, target, 4, 1, 4, CONTEXT), ".2f", "ms"), show(st(1).seconds, ".2f", "ms"),
        # Held against read: the untied input embedding is looked up, not read whole.
        "Llama 3 70B", show(target.weight_bytes(), ".1f", "GB"), show(target.read_bytes(), ".1f", "GB"),
        # Two all-reduces a layer and the embedding's, their one-way rate behind NVSwitch, the assumed latency.
        show(161, "d"), show(acc.peer_bandwidth(4), ".0f", "GB/s"), "all the links of a card, which reach every other card through a switch",
        show(acc.allreduce_latency, ".0f", "us"), show(st(1).comm_s / st(1).seconds, ".0%"),
        # The range the catalogue declares for that latency, in µs at both ends (the high end was
        # once shown a million times over: 23000000 µs).
        *[show(end * 1e-6, ".0f", "us") for end in acc.allreduce_range_us],
    ]
    assert_shown(numbers_in(article(page_html(site, "roofline"))), expected)
    # The issue's own check: under one percent of the tensor cores at batch one.
    assert float(st(1).utilisation) < 0.01
    # The GEMMs' ridge is the datasheet's, 989 / 3.35, at every context: the cache does not move it.
    assert int(ridge) == 295 and decode_batch == 296


def test_batching_numbers(site, scenario):
    acc, target, draft = scenario
    st = lambda t: roofline.step_time(acc, target, 4, t, CONTEXT).seconds  # noqa: E731
    tps = lambda sched, b, s: batching.simulate(sched, b, s, acc, target, 4, CONTEXT).tokens_per_s  # noqa: E731
    b, s = 8, 0.6
    cap = float(kvcache.slots(acc, target, 4, CONTEXT))  # the most requests of the page's context that fit
    # The last batch at which speculation (a = 0.8, k = 4) still pays, short of the memory cap.
    first = speculative.breakeven_batch(acc, target, draft, 4, 0.8, 4, CONTEXT)
    with_draft = kvcache.slots(acc, target, 4, CONTEXT, draft)
    assert 1 < first <= with_draft
    paid = first - 1
    # One request or a hundred: close, and no longer printed as the same.
    assert 1 < st(100) / st(1) < 1.3
    expected = [
        show(st(1), ".1f", "ms"), show(batching.N_REQUESTS, "d"), show(batching.MEAN_TOKENS, "d"),
        show(batching.MAX_TOKENS, "d"), show(b, "d"),
        show(tps("static", b, s), ",.0f"), show(tps("continuous", b, s), ",.0f"), ", or",
        show(tps("continuous", b, s) / tps("static", b, s), ".1f", "x"),
        show(tps("static", b, 0.0), ",.0f"), show(tps("continuous", b, 0.0), ",.0f"),
        show(PUBLISHED["yu2022"]["throughput_gain"], ".1f", "x"),
        show(st(100), ".1f", "ms"),
        show(1 / st(1), ",.0f"), show(256, "d"), "still under the ridge", show(256 / st(256), ",.0f"),
        show(st(256), ".1f", "ms"), f"{CONTEXT}\u00a0tokens", show(np.floor(roofline.ridge_tokens(acc, target)) + 1, "d"),
        show(st(cap), ".1f", "ms"), show(cap, ",d"), show(cap / st(cap), ",.0f"),
        show(0.8, ".1f"), show(4, "d"), show(paid, ",d"),
        ", and from the next it is slower: the batch has used up the slack that the guesses were living on.",
    ]
    assert_shown(numbers_in(article(page_html(site, "batching"))), expected)
    # Equal lengths make the two schedulers tie; varied lengths favour continuous batching.
    assert tps("static", b, 0.0) == pytest.approx(tps("continuous", b, 0.0))
    assert tps("continuous", b, s) > 1.5 * tps("static", b, s)


def test_kv_numbers(site, cat, scenario):
    acc, target, draft = scenario
    n, ctx = 4, 8192  # the page's scenario: the catalogue's, at 8,192 tokens of context
    slots = lambda cards, d=None: kvcache.slots(acc, target, cards, ctx, d)  # noqa: E731
    budget = kvcache.cache_budget(acc, target, n)
    per_token = kvcache.bytes_per_token(target)
    cost = kvcache.draft_cost(acc, target, draft, n, ctx)
    kw = PUBLISHED["kwon2023"]
    count = lambda v, noun, spec=",d": f"{show(v, spec)}\u00a0{noun if show(v, spec) == '1' else noun + 's'}"  # noqa: E731
    gemm_bound = int(np.floor(roofline.ridge_tokens(acc, target))) + 1  # the same at every context
    shown = min(gemm_bound, slots(n))
    # At that batch, attention reads every request's 8,192-token cache in its own kernel.
    step = roofline.step_time(acc, target, n, shown, ctx)
    attention = shown * ctx * per_token / (n * acc.bandwidth)
    assert float(step.attention_s) == pytest.approx(attention, rel=1e-9)
    expected = [
        count(n, "card", "d"), show(ctx, ",d"), target.name, count(slots(n), "request"),
        show(gemm_bound, "d"), show(shown, ",d"), show(attention / float(step.seconds), ".0%"),
        "So memory, not arithmetic, caps the batch.",
        target.name, show(target.layers, ".0f"), show(target.kv_heads, ".0f"), show(target.head_dim, ".0f"), "2\u00a0bytes",
        show(per_token, ",.0f", "B"), show(ctx, ",d"), show(per_token * ctx, ".2f", "GB"),
        count(n, "card", "d"), show(n * acc.memory_bytes, ",.0f", "GB"), show(kvcache.RESERVE, ".0%"),
        show(target.weight_bytes(), ",.0f", "GB"), show(budget, ",.0f", "GB"),
        count(budget // per_token, "token", ",.0f"), count(slots(n), "slot"),
        count(slots(2), "request"), show(slots(8), ",d"), ": four times the cards buy",
        f"{round(float(slots(8) / slots(2)), 1):.4g}", "times the requests.",
        show(draft.weight_bytes(), ".1f", "GB"), show(kvcache.bytes_per_token(draft), ",.0f", "B"),
        "takes", count(cost, "slot"), show(slots(n), ",d"), show(cost / slots(n), ".0%"), ".",
        show(target.heads, ".0f"), show(target.kv_heads, ".0f"), show(target.heads / target.kv_heads, ".0f", "x"),
        count(n, "card", "d"), count(budget // (per_token * target.heads / target.kv_heads * ctx), "request"),
        show(slots(n), ",d"),
        show(kw["kv_used_low"], ".1%"), show(kw["kv_used_high"], ".1%"),
        show(1 / kw["kv_used_high"], ".1f", "x"), show(1 / kw["kv_used_low"], ".1f", "x"),
        show(kw["throughput_gain_low"], ".0f"), show(kw["throughput_gain_high"], ".0f", "x"),
    ]
    assert_shown(numbers_in(article(page_html(site, "kv-cache"))), expected)
    # The figures: 327,680 bytes per token for Llama 3 70B (the page's default target); a draft costs slots.
    assert "327,680\u00a0bytes" in expected and cost > 0


def page_state(site: Path, name: str) -> dict:
    html = page_html(site, name)
    href = re.search(r'data-eg-page="([^"]+)"', html).group(1)
    return json.loads((site / "explainers" / name / href).resolve().read_text())


def test_batching_numbers_at_every_slider_position(site, scenario):
    """The prose's throughputs are precomputed for every batch and spread; check them all."""
    acc, target, _ = scenario
    state = page_state(site, "batching")
    grid = [(b, s) for b in range(4, 33, 4) for s in np.round(np.arange(0, 1.0001, 0.1), 1)]
    for sched in ("static", "continuous"):
        texts = [show(batching.simulate(sched, b, float(s), acc, target, 4, CONTEXT).tokens_per_s, ",.0f")
                 for b, s in grid]
        assert any(n["deps"] == ["batch", "spread"] and n["texts"] == texts for n in state["numbers"].values()), sched


def test_kv_slots_follow_the_switch_and_only_what_runs_is_offered(site, cat):
    """The headline slot count under every scenario the switch offers, and no scenario that
    cannot hold one request of its context (or does not split over its cards) among them."""
    state = page_state(site, "kv-cache")
    switch = front_matter("kv-cache")["explainer"]["switch"]
    runs = []
    for a, n, t, c, kv, w in itertools.product(*(switch[f] for f in ("accelerator", "cards", "target", "context",
                                                                  "kv", "weights"))):
        acc, target = cat.accelerator(a), cat.model(t)
        if kvcache.tensor_parallel(target, n) and kvcache.fits(acc, target, n, c, precision=Precision.of(w, kv)):
            runs.append((a, n, t, c, kv, w))
    chosen = [(s["choices"]["accelerator"], int(s["choices"]["cards"]), s["choices"]["target"],
               int(s["choices"]["context"]), s["choices"]["kv"], s["choices"]["weights"]) for s in state["scenarios"]]
    assert sorted(chosen) == sorted(runs)
    # 811 GB of weights on 576 GB of cache budget in BF16; in INT4 (211 GB) they fit.
    assert ("h100-sxm", 8, "llama-3.1-405b", 2048, "bf16", "bf16") not in chosen
    assert ("h100-sxm", 8, "llama-3.1-405b", 2048, "bf16", "int4") in chosen
    texts = []
    for a, n, t, c, kv, w in chosen:
        shown = show(kvcache.slots(cat.accelerator(a), cat.model(t), n, c, precision=Precision.of(w, kv)), ",d")
        texts.append(f"{shown}\u00a0{'request' if shown == '1' else 'requests'}")
    assert any(n["deps"] == ["scenario"] and n["texts"] == texts for n in state["numbers"].values())
    # Every scenario the switch leaves out is greyed out from some scenario that runs, with its reason.
    blocked = {(f, v) for s in state["scenarios"] for f, vs in s["blocked"].items() for v in vs}
    assert ("target", "llama-3.1-405b") in blocked
    assert all(s["note"].startswith("Greyed out") for s in state["scenarios"] if s["blocked"])


# -- the pages agree with each other -------------------------------------------------------------

def front_matter(name: str) -> dict:
    text = (REPO / "docs" / "explainers" / f"{name}.md").read_text()
    return yaml.safe_load(text.split("---\n", 2)[1])


def page_scenario(name: str) -> dict:
    """The scenario a page starts from: the catalogue's default, with what the page overrides."""
    default = yaml.safe_load((REPO / "models" / "catalogue.yaml").read_text())["defaults"]["scenario"]
    return {**default, **(front_matter(name)["explainer"].get("scenario") or {})}


def test_roofline_decode_step_is_the_speculative_plain_step(site, cat):
    """One scenario, one number: the decode step on the roofline page is the plain step that the
    speculative-decoding page prices speculation against."""
    roof, spec = page_scenario("roofline"), page_scenario("speculative-decoding")
    assert {k: roof[k] for k in ("accelerator", "cards", "target")} == {k: spec[k] for k in ("accelerator", "cards", "target")}
    acc, target, cards = cat.accelerator(roof["accelerator"]), cat.model(roof["target"]), roof["cards"]
    decode = float(roofline.step_time(acc, target, cards, 1).seconds)
    plain = float(speculative.plain_step_s(acc, target, cards, 1))
    assert decode == plain
    shown = show(decode, ".1f", "ms")
    assert shown in numbers_in(article(page_html(site, "roofline")))
    assert shown in numbers_in(article(page_html(site, "speculative-decoding")))


def test_pages_link_each_other(site):
    spec = page_html(site, "speculative-decoding")
    for name in PAGES:
        body = article(page_html(site, name))
        assert 'href="../speculative-decoding/"' in body, name
        assert f'href="../{name}/"' in spec, name
    assert 'href="../roofline/"' in article(page_html(site, "batching"))


def test_one_quantity_with_the_same_inputs_prints_the_same_on_every_page(site, scenario):
    """The default scenario's cache capacity in tokens, and the batch from which its weight GEMMs
    are compute-bound, each computed here by hand and found, the same, on every page that prints
    it. (The cache capacity was once rounded on one page and floored on another: 448,281 against
    448,280.)"""
    acc, target, _ = scenario
    # 4 x 80 GB, less the reserve, less the weights, over 327,680 bytes a token; whole tokens only.
    budget = 4 * 80e9 * (1 - kvcache.RESERVE) - target.weight_bytes()
    tokens = f"{int(budget // 327_680):,d}\u00a0tokens"
    for name in ("kv-cache", "serving"):
        assert tokens in numbers_in(article(page_html(site, name))), name
    # 989 TFLOP/s over 3.35 TB/s: 295.2 tokens a pass, so 296 is the first compute-bound batch.
    first = f"{int(989 / 3.35) + 1:,d}"
    assert first == "296"
    for name in ("roofline", "batching", "kv-cache", "speculative-decoding"):
        assert first in numbers_in(article(page_html(site, name))), name
    assert "295\u00a0tokens" in numbers_in(article(page_html(site, "roofline")))


# -- how the numbers are computed (issue 37) ------------------------------------------------------

# A derivation written out: its formula, its symbols, its values put in, its method and sources.
WRITTEN = re.compile(r'<p class="eg-how-formula">= [^<]*</p><ul class="eg-how-symbols">.*?</ul>'
                     r'<p class="eg-how-formula">[^<]*</p>(?:<p>[^<]*</p>)?(?:<p class="eg-how-sources">[^<]*</p>)?')


def how_problems(html: str) -> list[str]:
    """What is wrong with a built page's links from its numbers to their derivations: each link
    must reach an entry of the section "How the numbers are computed", each entry be reached,
    its head show the number as the prose shows it, and the section come after the prose and
    before References and Read next."""
    body = article(html)
    problems = []
    headings = re.findall(r'<h2 id="([^"]+)"', body)
    if "how-the-numbers-are-computed" not in headings:
        return ["no section 'How the numbers are computed'"]
    at = headings.index("how-the-numbers-are-computed")
    if [h for h in headings[at + 1:] if h not in ("references", "read-next")]:
        problems.append(f"the section is not last but for References and Read next: {headings[at:]}")
    links = re.findall(r'<a class="eg-how" href="#(how-n\d+)"><span class="eg-num"[^>]*>([^<]*)</span></a>', body)
    section = body[body.index('id="how-the-numbers-are-computed"'):]
    entries = dict(re.findall(r'<li id="(how-n\d+)"><p>[^<]*<strong>([^<]*)</strong>', section))
    if not links:
        problems.append("no number links to its derivation")
    for target, shown in links:
        if target not in entries:
            problems.append(f"{shown!r} links to #{target}, which is no entry")
        elif entries[target] != shown:
            problems.append(f"{shown!r} links to an entry headed {entries[target]!r}")
    unlinked = set(entries) - {t for t, _ in links}
    if unlinked:
        problems.append(f"entries no number links to: {sorted(unlinked)}")
    # A derivation is written out once (its formula, symbols, values and sources); where it comes again,
    # a link leads to where it was written, and that place is there.
    written = WRITTEN.findall(section)
    repeated = {w for w in written if written.count(w) > 1}
    if repeated:
        problems.append(f"{len(repeated)} derivations written out more than once")
    ids = set(re.findall(r'<li id="(how-[np]\d+)"', section))
    for target in re.findall(r'<p class="eg-how-same">Made as in <a href="#([^"]+)"', section):
        if target not in ids:
            problems.append(f"a derivation links to #{target}, where none is written")
    return problems


@pytest.mark.parametrize("name", EXPLAINERS)
def test_every_computed_number_links_to_how_it_is_computed(site, name):
    html = page_html(site, name)
    assert how_problems(html) == []
    # Negative controls: a link to an entry that is not there, an entry headed with another
    # number, and a heading after the section, are each caught.
    first = re.search(r'href="#(how-n\d+)"', html).group(1)
    assert any("which is no entry" in p for p in how_problems(html.replace(f'<li id="{first}">', '<li id="gone">', 1)))
    entry = re.search(rf'<li id="{first}"><p>[^<]*<strong>([^<]*)</strong>', html)
    altered = html[:entry.start(1)] + "wrong" + html[entry.end(1):]
    assert any("links to an entry headed 'wrong'" in p for p in how_problems(altered))
    later = html.replace('<ol class="eg-how-list"', '<h2 id="more-prose">More</h2><ol class="eg-how-list"', 1)
    assert any("is not last" in p for p in how_problems(later))
    # ... and so are a derivation written out twice, and a link to where none is written.
    block = WRITTEN.search(html)
    assert block, "no derivation written out, so the check of repeats below has nothing to check"
    start = re.search(r'<ol class="eg-how-list"[^>]*>', html).group(0)
    twice = html.replace(start, f'{start}<li id="how-n9999">{block.group(0)}</li>', 1)
    assert any("written out more than once" in p for p in how_problems(twice))
    same = re.search(r'<p class="eg-how-same">Made as in <a href="#([^"]+)"', html)
    assert same, "no derivation comes twice, so the check of its link below has nothing to check"
    assert any("where none is written" in p
               for p in how_problems(html.replace(same.group(0), same.group(0).replace(same.group(1), "how-p0"))))
