"""From the roofline floor to a realistic estimate (models.realistic): the fitted terms, the
estimate of a pass under the page's scenario, and the measurements the fit is checked against.

Every other time on the site is a floor. These terms are the estimates, and say so in their names.
"""
from __future__ import annotations

from models import realistic
from models.catalogue import Catalogue

from ...sources.controls import Resolved
from .registry import Topic
from .speculative import priced_speedup

topic = Topic("realistic")


@topic.term(depends=())
def bandwidth_share() -> float:
    """The share of datasheet bandwidth a pass's reads achieve, fitted on Chen et al.'s passes."""
    return realistic.fit().bandwidth_share


@topic.term(depends=())
def overhead() -> float:
    """The fixed cost of one forward pass, seconds, from the same fit."""
    return realistic.fit().overhead_s


@topic.term(depends=())
def fit_floor(which: str = "target") -> float:
    """The roofline floor of Chen et al.'s target (or draft) pass on their TPUs, seconds."""
    e = realistic.fit()
    return e.target_floor_s if which == "target" else e.draft_floor_s


@topic.term(depends=("scenario",))
def estimate(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """The realistic time of the decode pass `step(tokens, which, context, weights)` floors, on the
    scenario's cards or on `on` of them, seconds."""
    return realistic.fit().estimate(scenario.in_formats(weights).forward(tokens, context, which=which, on=on))


@topic.term(depends=("scenario",))
def speedup_estimate(scenario: Resolved, a, k, batch=1, on=None):
    """The speedup with every pass at its estimate, the draft split over the cards (or on `on`)."""
    return priced_speedup(scenario, a, k, batch, None, None, on, realistic.fit())


def _run(catalogue: Catalogue, row) -> realistic.HeldOut:
    rows = realistic.held_out(catalogue)
    if not (isinstance(row, (int, float)) and 0 <= row < len(rows) and row == int(row)):
        raise ValueError(f"gpt-fast has rows 0 to {len(rows) - 1}, got {row!r}")
    return rows[int(row)]


class gptfast:
    """gpt-fast's measured batch-one decodes on A100 (models/published.yaml), which the fit never saw."""

    @topic.term(depends=("catalogue",))
    def model(catalogue: Catalogue, row) -> str:
        return _run(catalogue, row).model

    @topic.term(depends=("catalogue",))
    def cards(catalogue: Catalogue, row) -> float:
        return float(_run(catalogue, row).cards)

    @topic.term(depends=("catalogue",))
    def measured(catalogue: Catalogue, row) -> float:
        """Seconds per token, from the published tokens per second."""
        return _run(catalogue, row).measured_s

    @topic.term(depends=("catalogue",))
    def floor(catalogue: Catalogue, row) -> float:
        return _run(catalogue, row).floor_s

    @topic.term(depends=("catalogue",))
    def estimate(catalogue: Catalogue, row) -> float:
        return _run(catalogue, row).estimate_s
