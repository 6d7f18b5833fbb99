"""What the serving page may call a capacity (models.serving): runs long enough to be steady, and
never more than the scheduler can sustain at all.

- The sustainable rate: a pass over p positions takes at least its price with no cache to read and
  no logits, and fuller passes cost less a position, so a request's positions over the fastest
  rate a full pass computes them bounds the rate any run can keep up with. Checked by hand, and
  against long runs: past it the queue grows for as long as the traffic lasts.
- Steady: doubling the run's length moves the p99s at the capacity it gives by less than a
  tolerance derived from how much they move between draws of the traffic; past the bound, the same
  doubling moves them far more (the negative control).
- Every capacity the page prints, at every dial position and in both scenarios its switch offers,
  is at most its scheduler's bound.
"""
from __future__ import annotations

import math

import dataclasses

import numpy as np
import pytest

from explainer_gen.compute.figures import serving as serving_figures
from explainer_gen.compute.resolved import default_scenario, resolve
from explainer_gen.compute.sliders import CHUNK, PREFIX
from models import serving
from models.catalogue import load_catalogue
from models.precision import Precision

pytestmark = pytest.mark.unit

CAT = load_catalogue()
H100, H200 = CAT.accelerator("h100-sxm"), CAT.accelerator("h200")
L70 = CAT.model("llama-3-70b")
BF16 = Precision.of("bf16", "bf16")


def _resolved(acc):
    """The catalogue's default scenario (4 cards, Llama 3 70B, BF16) on `acc`, as the page's switch sets it."""
    return resolve(dataclasses.replace(default_scenario(CAT), accelerator=acc.key), CAT)


def _positions(prefix: float) -> tuple[float, float]:
    """Prompt positions computed and decode positions, per request, over the page's stream, by hand."""
    stream = serving.traffic()
    cached = np.array([0] + [math.floor(prefix * p) for p in stream.prompt[1:]])
    return float((stream.prompt - cached).mean()), float((stream.output - 1).mean())


def _least_pass(acc, p: int) -> float:
    """A pass over p positions on 4 cards with no cache and no logits, by hand (BF16, Llama 3 70B):
    its block weights read or multiplied, whichever is longer (no position makes logits, so no
    head GEMM runs), its embedding rows, and 161 all-reduces of p x 8,192 16-bit values at the
    card's rate to the others behind its switch."""
    blocks = L70.params - 2 * L70.vocab * L70.hidden  # everything but the embedding and the head
    gemm = max(blocks * 2 / (4 * acc.bandwidth), 2 * blocks * p / (4 * acc.flops))
    lookup = p * L70.hidden * 2 / (4 * acc.bandwidth)
    comm = 161 * (acc.allreduce_us * 1e-6 + 2 * 3 / 4 * p * L70.hidden * 2 / (acc.link_gbps * 1e9))
    return gemm + lookup + comm


def _bound_by_hand(acc, scheduler: str, chunk: int, prefix: float) -> float:
    prompt, decode = _positions(prefix)
    if scheduler == "chunked":
        return 1 / ((prompt + decode) * _least_pass(acc, chunk) / chunk)
    return 1 / (prompt * _least_pass(acc, serving.PREFILL_TOKENS) / serving.PREFILL_TOKENS
                + decode * _least_pass(acc, serving.MAX_RUNNING) / serving.MAX_RUNNING)


@pytest.mark.parametrize("prefix", [0.0, 0.3, 0.6])
def test_the_sustainable_rate_by_hand(prefix):
    for scheduler in serving.SCHEDULERS:
        assert serving.sustainable_rate(scheduler, 512, prefix, H100, L70, 4, BF16) == pytest.approx(
            _bound_by_hand(H100, scheduler, 512, prefix), rel=1e-9)


@pytest.mark.parametrize("scheduler", serving.SCHEDULERS)
def test_past_the_sustainable_rate_the_queue_grows_for_as_long_as_the_traffic_lasts(scheduler):
    """At 5% over the bound, a long run's last requests wait several times longer for their first
    token than its early ones, and tens of seconds: the queue never clears. At 80% of the bound it
    does not grow that way."""
    bound = serving.sustainable_rate(scheduler, 512, 0.0, H100, L70, 4, BF16)

    def early_and_late(rate):
        run = serving.simulate(scheduler, rate, 512, 0.0, H100, L70, 4, BF16, n=5000)
        ttft = run.ttft
        return float(np.median(ttft[500:1000])), float(np.median(ttft[-500:]))

    early, late = early_and_late(1.05 * bound)
    assert late > 5 * early and late > 20.0
    early, late = early_and_late(0.8 * bound)
    assert late < 3 * early + 1.0


def _p99s(scheduler, rate, metric, n, seed=serving.SEED):
    s = serving.summary(scheduler, rate, 512, 0.0, H100, L70, 4, BF16, seed, n)
    return np.array([s.ttft_p99, getattr(s, f"{metric}_p99")])


def _tolerance(scheduler, rate, metric) -> np.ndarray:
    """How far a doubling may move the two p99s: three standard deviations of the difference of
    two independent estimates, one from n requests (spread s between the draws of ERROR_SEEDS) and
    one from 2n (spread about s / sqrt 2), so 3 s sqrt(1 + 1/2). The doubled run shares its first
    n requests with the other, which only makes the real difference smaller."""
    draws = np.array([_p99s(scheduler, rate, metric, serving.LONG_REQUESTS, seed) for seed in serving.ERROR_SEEDS])
    return 3 * draws.std(axis=0, ddof=1) * math.sqrt(1.5)


@pytest.mark.parametrize("scheduler, metric", [("prefill-first", "tpot"), ("chunked", "tpot"), ("prefill-first", "tbt")])
def test_runs_of_long_requests_are_steady_at_the_capacity_they_give(scheduler, metric):
    cap = serving.steady_capacity(scheduler, serving.CAPACITY_RATES, 512, 0.0, H100, L70, 4, BF16, metric=metric)
    once = _p99s(scheduler, cap, metric, serving.LONG_REQUESTS)
    twice = _p99s(scheduler, cap, metric, 2 * serving.LONG_REQUESTS)
    assert np.all(np.abs(twice - once) < _tolerance(scheduler, cap, metric)), (cap, once, twice)


def test_a_run_past_the_bound_is_not_steady():
    """Negative control: at 10% over chunked prefill's bound, doubling the run moves its first-token
    p99 far outside the tolerance the steady test allows at the capacity (the queue keeps growing
    with the run), so that test can fail."""
    cap = serving.steady_capacity("chunked", serving.CAPACITY_RATES, 512, 0.0, H100, L70, 4, BF16)
    rate = 1.1 * serving.sustainable_rate("chunked", 512, 0.0, H100, L70, 4, BF16)
    once = _p99s("chunked", rate, "tpot", serving.LONG_REQUESTS)
    twice = _p99s("chunked", rate, "tpot", 2 * serving.LONG_REQUESTS)
    assert abs(twice[0] - once[0]) > 10 * _tolerance("chunked", cap, "tpot")[0]


@pytest.mark.parametrize("acc", [H100, H200], ids=["h100-sxm", "h200"])
def test_no_capacity_the_page_shows_exceeds_its_schedulers_bound(acc):
    """Every dial position of the goodput figure (chunk x prefix, both schedulers) and the settings
    the prose prints, in both scenarios the page's switch offers, under both objectives, against the
    bound worked out by hand here. Where a short run would show more, the figure says it was cut."""
    settings = [("prefill-first", 0, float(p)) for p in PREFIX.values()]
    settings += [("chunked", int(c), float(p)) for c in CHUNK.values() for p in PREFIX.values()]
    cut = 0
    for scheduler, chunk, prefix in settings:
        bound = _bound_by_hand(acc, scheduler, chunk or CHUNK.default, prefix)
        shown, capped = serving_figures._capacity(_resolved(acc), scheduler, chunk, prefix)
        assert 0 < shown <= bound * (1 + 1e-9), (scheduler, chunk, prefix)
        assert capped == (shown == pytest.approx(bound, rel=1e-9)), (scheduler, chunk, prefix)
        cut += capped
    prose = [("prefill-first", 512, 0.0), ("chunked", 512, 0.0), ("chunked", 2048, 0.0),
             ("prefill-first", 512, 0.3), ("chunked", 512, 0.3)]
    for scheduler, chunk, prefix in prose:
        bound = _bound_by_hand(acc, scheduler, chunk, prefix)
        for metric in serving.OBJECTIVES:
            cap = serving.steady_capacity(scheduler, serving.CAPACITY_RATES, chunk, prefix, acc, L70, 4, BF16,
                                          metric=metric)
            assert 0 < cap <= bound * (1 + 1e-9), (scheduler, chunk, prefix, metric)
            short, _ = serving.short_capacity(scheduler, chunk, prefix, acc, L70, 4, BF16, metric,
                                              serving_figures.RATE.values())
            assert 0 <= short <= bound * (1 + 1e-9), (scheduler, chunk, prefix, metric)  # 0: below the lowest rate drawn
    # Short runs do pass the bound somewhere on the dials: the cut is exercised, not only written.
    assert cut >= 1
