"""Assumed constants, the ranges declared for them, and the check that a page's words hold across them.

A page's choice of words, `{{ "split wins" if ... else "whole wins" }}`, is a claim. Where what it
compares rests on a constant that no datasheet gives, the claim must hold wherever the constant
may lie, or say where it stops holding. Each assumption here names such a constant, where its
range is declared, and how to set it anywhere in that range:

- `allreduce`: the fixed latency of a small all-reduce, declared per card in the catalogue
  (`allreduce_us` and `allreduce_range_us`, from the libraries' measurements);
- `estimate`: the fitted estimate's times, which the measurements put within a band of the truth
  (`estimate.Fitted.band`, for latencies and, turned into times, for throughputs: `band_edges`);
  a point of the band scales every estimated time
  (`estimate.across_band`), so a claim resting on an estimate's absolute size is moved by it,
  and one resting on a ratio of two estimates is not.

`numbers.compute_number` evaluates every choice of words at `POINTS` of each range, the ends and
three between, so that a choice that flips and flips back between the ends is seen. A choice whose
words change fails the build at its line, unless the Markdown marks it as resting on that
assumption (`{{ "a" if ... else "b" | assumes allreduce }}`); the page then shows, after the
words, where across the range they change (`flip_note`), found by bisection. A choice that
calls a simulation (a term declared `simulated`) is not rerun across ranges, which would rerun the
simulation at every point: it must be marked `| at defaults`, and the page says in words that its
choices were checked at the assumed values only.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, ContextManager

from models import estimate
from models.catalogue import Catalogue, with_allreduce_at

# Where in each range a choice is evaluated: the ends and three points between.
POINTS = (0.0, 0.25, 0.5, 0.75, 1.0)
# Bisection steps between two points whose words differ: the change is placed within 1/2^6 of
# that quarter of the range, 1/256 of the range (0.07 µs of the all-reduce's 6 to 23), finer than
# the one decimal it is shown with.
BISECTIONS = 6


@dataclass(frozen=True)
class Assumption:
    key: str              # as the Markdown marks it: `| assumes allreduce`
    what: str             # the constant in words, for the page and for errors
    declared: str         # where its range is declared
    unit: str             # how a value is shown: "µs" or "×" (a factor on the estimate)
    # The constant `t` of the way across its range (0 its low end, 1 its high end): the catalogue
    # that holds it there, and the context the models are run in.
    vary: Callable[[Catalogue, float], Catalogue]
    within: Callable[[float], ContextManager]
    # (catalogue, accelerator key or None, t) -> the constant's value there, in `unit`.
    value: Callable[[Catalogue, str | None, float], float]
    # (catalogue, accelerator key or None) -> where in the range the value the models use lies.
    assumed: Callable[[Catalogue, str | None], float]

    def show(self, v: float) -> str:
        return f"{v:.2f}×" if self.unit == "×" else f"{v:.1f}\u00a0{self.unit}"

    def range_text(self, catalogue: Catalogue, accelerator: str | None) -> str:
        low, high = self.value(catalogue, accelerator, 0.0), self.value(catalogue, accelerator, 1.0)
        if self.unit == "×":
            return f"{low:.2f} to {high:.2f} times"
        return f"{low:g} to {high:g}\u00a0{self.unit}"


def _card(catalogue: Catalogue, accelerator: str | None):
    """The scenario's card, or (for a number that reads no scenario) the catalogue's first."""
    return catalogue.accelerator(accelerator) if accelerator else next(iter(catalogue.accelerators.values()))


def _allreduce_value(catalogue: Catalogue, accelerator: str | None, t: float) -> float:
    return _card(catalogue, accelerator).allreduce_at(t)


def _allreduce_assumed(catalogue: Catalogue, accelerator: str | None) -> float:
    card = _card(catalogue, accelerator)
    low, high = card.allreduce_range_us
    return (card.allreduce_us - low) / (high - low) if high > low else 0.0


def band_edges() -> tuple[float, float]:
    """The factors on the estimate's times that its bands allow: the latency band as it stands,
    and the throughput band turned into times (a throughput 1.06 times the estimate is a time 1/1.06
    of it), whichever reaches further; never excluding the estimate itself."""
    fitted = estimate.fitted()
    (lat_low, lat_high), (tp_low, tp_high) = fitted.band["latency"], fitted.band["throughput"]
    return min(lat_low, 1.0 / tp_high, 1.0), max(lat_high, 1.0 / tp_low, 1.0)


def _band(t: float) -> float:
    low, high = band_edges()
    return low + t * (high - low)


def _band_assumed() -> float:
    low, high = band_edges()
    return (1.0 - low) / (high - low) if high > low else 0.0


ASSUMPTIONS: dict[str, Assumption] = {a.key: a for a in (
    Assumption("allreduce", "the all-reduce latency", "models/catalogue.yaml, each card's allreduce_range_us", "µs",
               with_allreduce_at, lambda t: contextlib.nullcontext(), _allreduce_value, _allreduce_assumed),
    Assumption("estimate", "the factor on the estimate's times",
               "the estimate's bands, for latencies and for throughputs (models/estimate.py)", "×",
               lambda catalogue, t: catalogue, lambda t: estimate.across_band(_band(t)),
               lambda catalogue, accelerator, t: _band(t), lambda catalogue, accelerator: _band_assumed()),
)}


def flip_note(a: Assumption, catalogue: Catalogue, accelerator: str | None, changes: list[float]) -> str:
    """What the page shows after words that change across `a`'s range: where they change. With one
    change, on which side of it the words hold (the side of the value the models use); with more,
    every place they change."""
    span = a.range_text(catalogue, accelerator)
    if len(changes) == 1:
        side = "below" if a.assumed(catalogue, accelerator) < changes[0] else "above"
        return (f" [an assumption: this holds while {a.what} is {side} "
                f"{a.show(a.value(catalogue, accelerator, changes[0]))}, within the {span} assumed]")
    at = " and ".join(a.show(a.value(catalogue, accelerator, t)) for t in changes)
    return f" [an assumption: within the {span} assumed for {a.what}, these words change at {at}]"
