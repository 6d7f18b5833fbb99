"""What "acceptance rate" means: the slider's per-token a, the accepted-over-drafted share that
serving engines log, and EAGLE's mean acceptance length tau, converted both ways."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers import article, numbers_in
from models import speculative

PAGE = "explainers/speculative-decoding/index.html"


def test_hand_values_at_the_page_default():
    # a = 0.8, k = 4: E = 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616 tokens a step.
    assert speculative.acceptance_length(0.8, 4) == pytest.approx(3.3616, abs=1e-12)
    # Accepted guesses 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616 of 4 drafted.
    assert speculative.drafted_share(0.8, 4) == pytest.approx(2.3616 / 4, abs=1e-12)
    # Every guess kept, or none.
    assert speculative.drafted_share(1.0, 4) == 1.0 and speculative.drafted_share(0.0, 4) == 0.0
    assert speculative.acceptance_length(1.0, 4) == 5.0 and speculative.acceptance_length(0.0, 4) == 1.0


def round_trips(convert, invert, a: float, k: int) -> bool:
    """A reported number made from a, turned back into a, gives a again."""
    return abs(invert(convert(a, k), k) - a) < 1e-9


def real_inverse(reported):
    return lambda value, k: speculative.per_token_acceptance(reported, value, k)


@settings(max_examples=200, deadline=None)
@given(a=st.floats(0.01, 0.99), k=st.integers(1, 8))
def test_conversions_round_trip(a, k):
    for reported, convert in speculative.REPORTED.items():
        assert round_trips(convert, real_inverse(reported), a, k), reported
    # The engines' share is below a whenever a guess can follow a rejection (k > 1): later guesses
    # count only if all before them held.
    share = speculative.drafted_share(a, k)
    assert share == pytest.approx(a) if k == 1 else share < a


def test_a_broken_inverse_is_caught():
    """Negative control: an inverse that forgets the lookahead (always k = 4) fails the same check."""
    broken = lambda value, k: speculative.per_token_acceptance("drafted_share", value, 4)  # noqa: E731
    assert round_trips(speculative.drafted_share, broken, 0.7, 4)
    assert not round_trips(speculative.drafted_share, broken, 0.7, 2)


def test_values_outside_the_range_have_no_acceptance():
    assert np.isnan(speculative.per_token_acceptance("acceptance_length", 6.0, 4))  # more than k + 1
    assert np.isnan(speculative.per_token_acceptance("drafted_share", -0.1, 4))


def test_the_page_gives_the_conversions(site):
    shown = numbers_in(article((site / PAGE).read_text()))
    a, k = 0.8, 4
    for text in (f"{speculative.drafted_share(a, k):.0%}", f"{speculative.acceptance_length(a, k):.2f}",
                 f"{speculative.per_token_acceptance('drafted_share', 0.6, 4):.2f}",
                 f"{speculative.per_token_acceptance('acceptance_length', 3, 4):.2f}"):
        assert text in shown, (text, shown)
    # Chen's XSum nucleus row: printed 1.92x, its own times 14.1 / 7.52.
    assert f"{14.1 / 7.52:.3f}×" in shown and "1.92×" in shown


def test_the_glossary_defines_both(site):
    html = (site / "glossary/index.html").read_text()
    assert "acceptance length" in html.lower() and "(E - 1) / k" in html
