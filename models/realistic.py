"""From the roofline floor to a realistic step: achieved bandwidth and a fixed cost per pass.

`roofline.step_time` is a floor. It reads at the datasheet's bandwidth and pays nothing that is
neither a byte, a FLOP nor an all-reduce. A measured pass is slower, for two reasons that the
measurements below can tell apart:

- kernels reach only a share of the datasheet bandwidth (`Efficiency.bandwidth_share`), so
  every kernel's reads take reads / share;
- every pass pays a fixed cost (`Efficiency.overhead_s`): launching and synchronising its
  kernels, sampling the token, and whatever else is not counted. A small model's pass is mostly
  this cost: it is launch-bound, not bandwidth-bound.

    estimate = the pass priced kernel by kernel as `roofline.pass_time` prices it, each kernel's
               reads at share x the bandwidth, + overhead_s (`StepTime.at`, `roofline.Efficiency`)

The arithmetic stays at its datasheet peak: no measurement here is compute-bound, so none can
say how far below the peak it runs, and past the ridge the estimate is still a floor plus the
fixed cost.

The two terms are fitted on Chen et al.'s two measured passes, a 70B target and a 4B draft, each
at batch one on 16 TPU v4 chips (`published.yaml`): two measurements, two unknowns, solved exactly.
The TPU's own collectives are not modelled there, so the fitted fixed cost holds them; on GPUs the
modelled all-reduces are added on top, which errs towards a slower estimate. The fit is then
checked on measurements it never saw: gpt-fast's batch-one runs on A100 (`held_out`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .catalogue import Catalogue
from .papers import PUBLISHED_PATH, published
from .roofline import Efficiency as Terms, StepTime, step_time


@dataclass(frozen=True)
class Efficiency:
    bandwidth_share: float  # share of the datasheet HBM bandwidth a pass's reads achieve
    overhead_s: float       # fixed cost of one forward pass, seconds
    # What it was fitted on: Chen et al.'s floors and measured times, seconds.
    target_floor_s: float
    draft_floor_s: float
    target_measured_s: float
    draft_measured_s: float

    def estimate(self, st: StepTime):
        """A realistic time for the pass whose floor is `st`, seconds."""
        return st.at(self.terms)

    @property
    def terms(self) -> Terms:
        """The fit as the step model's terms: a bandwidth share and a fixed cost a pass."""
        return Terms(bandwidth=self.bandwidth_share, pass_s=self.overhead_s)


def fit() -> Efficiency:
    """The two terms from Chen et al.'s target and draft passes (cached per file version)."""
    return _fit(PUBLISHED_PATH.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _fit(mtime_ns: int) -> Efficiency:
    d = published()["chen2023"]
    bandwidth = d["chips"] * d["chip_bandwidth_gbps"] * 1e9
    # At batch one both passes read their weights and little else: the floor is that read.
    floor_t = d["target_params_b"] * 1e9 * d["bytes_per_param"] / bandwidth
    floor_d = d["draft_params_b"] * 1e9 * d["bytes_per_param"] / bandwidth
    t, dr = d["target_ms_per_token"] / 1e3, d["draft_ms_per_token"] / 1e3
    # t = floor_t / share + c and dr = floor_d / share + c: subtract to get the share, then c.
    share = (floor_t - floor_d) / (t - dr)
    overhead = t - floor_t / share
    if not (0.0 < share <= 1.0 and overhead >= 0.0):
        raise ValueError(f"the fit on Chen et al.'s passes gives a bandwidth share of {share:.3f} and a "
                         f"fixed cost of {overhead * 1e3:.2f} ms; check published.yaml")
    return Efficiency(share, overhead, floor_t, floor_d, t, dr)


@dataclass(frozen=True)
class HeldOut:
    """One measured batch-one decode the fit never saw, beside the model's floor and estimate."""

    model: str
    accelerator: str
    cards: int
    context: float      # mean tokens in the cache while the run decodes
    measured_s: float   # seconds per token, from the published tokens per second
    floor_s: float
    estimate_s: float

    @property
    def inside(self) -> bool:
        return self.floor_s <= self.measured_s <= self.estimate_s


def held_out(catalogue: Catalogue) -> list[HeldOut]:
    """gpt-fast's runs (`published.yaml`), each priced by the roofline and by the fitted estimate."""
    d, eff = published()["gptfast"], fit()
    acc = catalogue.accelerator(d["accelerator"])
    # The cache grows from the prompt to prompt + new tokens: on average half the new tokens.
    context = d["prompt_tokens"] + d["new_tokens"] / 2.0
    rows = []
    for m in d["measured"]:
        model = catalogue.model(m["model"])
        st = step_time(acc, model, m["cards"], 1, context)
        rows.append(HeldOut(model.name, acc.name, int(m["cards"]), context, 1.0 / m["tokens_per_s"],
                            float(st.seconds), float(eff.estimate(st))))
    return rows
