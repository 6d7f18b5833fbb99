"""The serving page as built: its capacities are steady ones under both objectives, each below its
scheduler's bound, and its gap numbers are the simulation's, set against direct calls to the model."""
from __future__ import annotations

import re

import yaml

from helpers import REPO, article, numbers_in
from models import serving
from models.catalogue import load_catalogue
from models.precision import Precision

CAT = load_catalogue()
H100, L70 = CAT.accelerator("h100-sxm"), CAT.model("llama-3-70b")
BF16 = Precision.of("bf16", "bf16")
PUBLISHED = yaml.safe_load((REPO / "models" / "published.yaml").read_text())


def _steady(scheduler, metric="tpot", chunk=512, prefix=0.0) -> float:
    return serving.steady_capacity(scheduler, serving.CAPACITY_RATES, chunk, prefix, H100, L70, 4, BF16, metric=metric)


def _summary(scheduler, rate, chunk=512):
    return serving.summary(scheduler, float(rate), chunk, 0.0, H100, L70, 4, BF16)


def test_the_page_prints_steady_capacities_under_both_objectives_and_the_bounds(site):
    shown = numbers_in(article((site / "explainers/serving/index.html").read_text()))
    expected = []
    for scheduler in serving.SCHEDULERS:
        for metric in serving.OBJECTIVES:
            cap = _steady(scheduler, metric)
            assert cap <= serving.sustainable_rate(scheduler, 512, 0.0, H100, L70, 4, BF16)
            expected.append(f"{cap:.1f}")
        expected.append(f"{serving.sustainable_rate(scheduler, 512, 0.0, H100, L70, 4, BF16):.1f}")
    expected.append(f"{_steady('chunked', 'tbt') / _steady('prefill-first', 'tbt'):.1f}×")
    # The time between tokens with prefill first at the lightest rate, against the time per output
    # token there: the p99 gap holds a whole prefill, the p99 mean gap does not.
    light = _summary("prefill-first", 4)
    expected += [f"{light.tbt_p99 * 1e3:.0f}\u00a0ms", f"{light.tpot_p99 * 1e3:.1f}\u00a0ms"]
    assert light.tbt_p99 > 2 * light.tpot_p99
    expected += [f"{_summary('chunked', 4).tbt_p99 * 1e3:.0f}\u00a0ms", f"{_summary('chunked', 16).tbt_p99 * 1e3:.0f}\u00a0ms"]
    expected += [f"{PUBLISHED['mlperf']['tpot_p99_ms']:.0f}\u00a0ms", f"{PUBLISHED['mlperf']['tpot_p99_interactive_ms']:.0f}\u00a0ms",
                 f"{PUBLISHED['agrawal2024']['capacity_gain_low']:.1f}×",
                 f"{PUBLISHED['agrawal2024']['capacity_gain_high']:.1f}×"]
    missing = [e for e in expected if e not in shown]
    assert not missing, (missing, shown)


def test_the_goodput_figure_says_where_its_short_runs_capacity_is_cut_to_the_bound(site):
    html = (site / "explainers/serving/index.html").read_text()
    block = re.search(r'<figure class="eg-figure" id="fig-serve-goodput".*?</figure>', html, re.S).group(0)
    assert "Capacity in these runs" in block
    # At the default dials no short-run capacity passes the bound, so none is cut.
    assert "the most it can sustain" not in re.search(r"<table>.*?</table>", block, re.S).group(0)
