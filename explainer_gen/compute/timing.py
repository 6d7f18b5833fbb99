"""Where a build's computing time goes, by phase, so the benchmark can say what a cold build costs."""
from __future__ import annotations

import time
from contextlib import contextmanager

# The phases a build times, in the order the benchmark prints them. Each second is counted once:
# a phase entered inside another (the models, inside a figure's description) pauses the outer one.
PHASES = {
    "models": "the models (numpy), for figures and inline numbers",
    "numbers": "inline numbers: evaluating and formatting them, outside the models",
    "describe": "figure descriptions at every slider position (their facts, scalar model calls included)",
    "picture": "static pictures: vl-convert drawing the SVG, then its colours made the page's",
    "narrow": "the phone's layout: each figure laid out at a phone's width (layout.narrow), drawn and compiled",
    "chart": "Vega-Lite specs from altair (the first one imports altair)",
    "vega": "specs compiled to Vega for the page's loader (vl-convert)",
    "data": "data rounded for the page, its gzip size, the CSV and the table",
    "files": "the figures' site files: JSON written and stored in the cache",
}


# Why a figure was computed: no earlier build placed it; the code it runs changed; or its request,
# the catalogue or a data file its code reads changed (compute/codegraph.py, site/store.Store._reason).
REASONS = ("new", "code changed", "inputs changed")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


class Timing:
    """One build's count of figures run through the models (cache misses) and its seconds by phase
    (`PHASES`). The build owns one (site.SiteBuild.timing) and hands it down; workers send theirs
    back to be added."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.figures_computed = 0
        self.worker_pages = self.workers = 0  # pages computed by worker processes, and how many ran
        self._open: list[list] = []  # [phase, since] of the phases entered and not yet left
        # What the build says it did (`summary`): each figure fence it placed, (file, line) -> its
        # cache key, and each number's key; the figures computed, key -> [file, line, reason], and
        # the numbers computed, here or in a worker (whose results are merged in with `merge`).
        self.placed: dict[tuple[str, int], str] = {}
        self.numbers_used: set[str] = set()
        self.computed: dict[str, list] = {}
        self.numbers_computed: set[str] = set()

    def merge(self, worker: dict) -> None:
        """A worker's report (workers.compute_page): its seconds, and what it computed."""
        self.figures_computed += worker.get("figures_computed", 0)
        self.add(worker.get("seconds", {}))
        self.computed.update(worker.get("computed", {}))
        self.numbers_computed.update(worker.get("numbers_computed", ()))

    def _computed_here(self) -> list[tuple[tuple[str, int], str]]:
        """(place, reason) of each figure computed: once, at the place it was computed for (another
        fence with the same request read it from the cache)."""
        return [(place, self.computed[key][2]) for place, key in sorted(self.placed.items())
                if key in self.computed and tuple(self.computed[key][:2]) == place]

    def summary(self) -> str:
        """One line (a host puts "explainer: " before it): the figures computed, by reason, and those
        read from the cache; the same for numbers."""
        reasons = [reason for _, reason in self._computed_here()]
        numbers = len(self.numbers_used & self.numbers_computed)
        by = ", ".join(f"{reasons.count(r)} {r}" for r in REASONS)
        return (f"{_count(len(reasons), 'figure')} computed ({by}), {len(self.placed) - len(reasons)} read from "
                f"the cache; {_count(numbers, 'number')} computed, {len(self.numbers_used) - numbers} read from the cache")

    def computed_figures(self) -> list[str]:
        """One line per figure computed: where it is, and why."""
        return [f"computed the figure at {path}:{line} ({reason})" for (path, line), reason in self._computed_here()]

    @contextmanager
    def phase(self, name: str):
        assert name in PHASES, name
        now = time.perf_counter()
        if self._open:  # the enclosing phase pauses while this one runs
            outer = self._open[-1]
            self._charge(outer[0], now - outer[1])
        self._open.append([name, now])
        try:
            yield
        finally:
            now = time.perf_counter()
            _, since = self._open.pop()
            self._charge(name, now - since)
            if self._open:
                self._open[-1][1] = now

    def in_models(self):
        return self.phase("models")

    @property
    def model_seconds(self) -> float:
        return self.seconds.get("models", 0.0)

    def add(self, seconds: dict[str, float]) -> None:
        """Another process's seconds by phase (a worker's)."""
        for name, value in seconds.items():
            self._charge(name, value)

    def _charge(self, name: str, value: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + value
