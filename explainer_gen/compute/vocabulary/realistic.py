"""The estimate of a pass fitted on published measurements (models.estimate), under the page's
scenario: every other time on the site is a floor. These terms are the estimates, and say so in
their names; the fitted terms themselves are the `measured` topic's.
"""
from __future__ import annotations

from models import estimate as fitted_estimate

from ..resolved import Resolved
from .registry import Returns, Topic
from .speculative import priced_speedup

topic = Topic("realistic")


@topic.term(depends=("scenario",), returns=Returns("time", "estimated time of one decode pass"))
def estimate(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """The estimated time of the decode pass `step(tokens, which, context, weights)` floors, on the
    scenario's cards or on `on` of them, seconds."""
    st = scenario.in_formats(weights).forward(tokens, context, which=which, on=on)
    return st.at(fitted_estimate.fitted().eff)


@topic.term(depends=("scenario",), returns=Returns("ratio", "speedup with every pass at its estimate"))
def speedup_estimate(scenario: Resolved, a, k, batch=1, on=None):
    """The speedup with every pass at its estimate, the draft split over the cards (or on `on`)."""
    return priced_speedup(scenario, a, k, batch, None, None, on, fitted_estimate.fitted().eff)
