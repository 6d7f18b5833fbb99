"""The build's time by phase (compute/timing.py), which the benchmark prints: each second is
counted once, in the innermost phase running, and a worker's seconds add to the build's."""
from __future__ import annotations

import pytest

from explainer_gen.compute import timing as timing_module
from explainer_gen.compute.timing import PHASES, Timing


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(timing_module.time, "perf_counter", c)
    return c


def test_a_phase_inside_another_pauses_it(clock):
    t = Timing()
    with t.phase("describe"):
        clock.now += 2.0
        with t.in_models():
            clock.now += 3.0
        clock.now += 1.0
        with t.phase("models"):
            clock.now += 0.5
    clock.now += 10.0  # outside every phase: counted nowhere
    assert t.seconds == {"describe": 3.0, "models": 3.5}
    assert t.model_seconds == 3.5
    assert sum(t.seconds.values()) == 6.5  # the 6.5 s spent inside phases, once each


def test_a_failing_phase_is_still_counted_and_unwinds(clock):
    t = Timing()
    with pytest.raises(ValueError):
        with t.phase("numbers"):
            with t.in_models():
                clock.now += 1.0
                raise ValueError
    with t.phase("picture"):
        clock.now += 2.0
    assert t.seconds == {"numbers": 0.0, "models": 1.0, "picture": 2.0}


def test_a_workers_seconds_add_to_the_builds(clock):
    t = Timing()
    with t.phase("chart"):
        clock.now += 1.0
    t.add({"chart": 2.0, "models": 4.0})
    assert t.seconds == {"chart": 3.0, "models": 4.0}


def test_only_named_phases_are_timed():
    with pytest.raises(AssertionError):
        with Timing().phase("modles"):
            pass
    assert "models" in PHASES and all(isinstance(v, str) and v for v in PHASES.values())
