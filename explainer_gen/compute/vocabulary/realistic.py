"""The estimate of a pass fitted on published measurements (models.estimate), under the page's
scenario: every other time on the site is a floor. These terms are the estimates, and say so in
their names; the fitted terms themselves are the `measured` topic's.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from models import estimate as fitted_estimate
from models.units import COUNT, RATIO, TIME

from ..derivation import Symbol, closed_form
from ..resolved import Resolved
from .registry import Returns, Topic
from .roofline import _derive_steptime
from .speculative import priced_speedup

topic = Topic("realistic")


def _derive_estimate(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """The same pass as `step`'s closed form, each kernel at the fitted shares of its roofline,
    plus the fitted fixed costs (models.roofline.StepTime.at)."""
    r = scenario.in_formats(weights)
    st = r.forward(tokens, context, which=which, on=on)
    m = r.model(which)
    return _derive_steptime(r, st, which, on, "estimate", fitted_estimate.fitted().eff,
                            quantity=f"time of one decode pass of {m.name}, estimated")


@topic.term(depends=("scenario",), returns=Returns("time", "estimated time of one decode pass"),
            derive=_derive_estimate)
def estimate(scenario: Resolved, tokens=1, which: str = "target", context=None, weights=None, on=None):
    """The estimated time of the decode pass `step(tokens, which, context, weights)` floors, on the
    scenario's cards or on `on` of them, seconds."""
    st = scenario.in_formats(weights).forward(tokens, context, which=which, on=on)
    return st.at(fitted_estimate.fitted().eff)


_VERIFY = {"t": "positions in the verify pass (k + 1 per request)", "c": "cached tokens read (each request's once)",
           "a": "cached tokens attended to (each request's by its k + 1 positions)",
           "l": "positions through the output head (all k + 1 of each request)"}


def _derive_speedup_estimate(scenario: Resolved, a, k, batch=1, on=None):
    """E(a, k) tokens a step over its k draft passes and one verify pass, against plain decoding's
    one token a pass, every pass at its estimate (models.speculative.speedup, as `priced_speedup`
    calls it)."""
    eff = fitted_estimate.fitted().eff
    r = scenario
    a_, k_, b = (float(np.asarray(x, dtype=float)) for x in (a, k, batch))
    plain = r.forward(batch)
    draft = r.forward(batch, which="draft", on=on)
    verify = r.forward(np.asarray(batch, dtype=float) * (k_ + 1.0), requests=batch)
    parts = (_derive_steptime(r, plain, "target", None, "estimate", eff,
                              quantity=f"time of a plain decode pass of {r.target.name}, estimated"),
             _derive_steptime(r, draft, "draft", on, "estimate", eff,
                              quantity=f"time of one draft pass of {r.draft.name}, estimated"),
             _derive_steptime(r, verify, "target", None, "estimate", eff, carried=_VERIFY,
                              quantity=f"time of the verify pass of {r.target.name}, estimated"))
    times = [float(np.asarray(p.result)) for p in parts]
    tokens = "(1 - a ** (k + 1)) / (1 - a)" if a_ < 1.0 else "(k + 1)"
    d = closed_form(f"speedup over plain decoding ({r.target.name} with {r.draft.name} on {r.cards} × {r.acc.name}, "
                    f"batch {b:g}, {float(r.context):,.0f} tokens of context, every pass at its estimate)", RATIO,
                    float(np.asarray(speedup_estimate(scenario, a, k, batch, on))), f"{tokens} * P / (k * D + V)",
                    ("Leviathan et al. 2023 (leviathan2023): E(a, k) = (1 - a^(k+1)) / (1 - a) tokens a step, the "
                     "guesses kept up to the first rejection plus the target's own; models/speculative.py: speedup",),
                    a=Symbol(a_, RATIO, "per-token acceptance rate"),
                    k=Symbol(k_, COUNT, "guesses drafted per step"),
                    P=Symbol(times[0], TIME, f"plain decode pass of {r.target.name} over the batch, estimated (below)"),
                    D=Symbol(times[1], TIME, f"one pass of the {r.draft.name} draft over the batch"
                             + ("" if on is None else f" on {float(on):g} card{'s' if float(on) != 1 else ''}")
                             + ", estimated (below)"),
                    V=Symbol(times[2], TIME, "verify pass, k + 1 positions a request, estimated (below)"))
    return replace(d, parts=parts)


@topic.term(depends=("scenario",), returns=Returns("ratio", "speedup with every pass at its estimate"),
            derive=_derive_speedup_estimate)
def speedup_estimate(scenario: Resolved, a, k, batch=1, on=None):
    """The speedup with every pass at its estimate, the draft split over the cards (or on `on`)."""
    return priced_speedup(scenario, a, k, batch, None, None, on, fitted_estimate.fitted().eff)
