"""Dimensions and the units a number may be shown in.

A dimension is a product of powers of four bases: time (seconds), bytes, FLOP (arithmetic
operations) and count (things counted: tokens, requests, cards, passes). A time over a time is a
ratio, the dimension with every power zero; a count over a time is a rate.

Counts are a dimension of their own so that a counted noun ("3 requests") fits only a count,
but a unit ignores them: "12.0 µs" per token is shown in µs and the prose says "per token",
so a time per count fits every unit of time.

A quantity is a dimension and a scale: its value in SI units is the number times the scale (a
term that returns microseconds has the time dimension at scale 1e-6). Everything here is plain
data; `explainer_gen/compute/numbers.py` carries dimensions through an inline number's
arithmetic and checks its format against them.
"""
from __future__ import annotations

from dataclasses import dataclass

BASES = ("time", "bytes", "FLOP", "count")
_BASE_WORDS = ("seconds", "bytes", "FLOP", "counted things")


@dataclass(frozen=True)
class Dim:
    """Powers of (time, bytes, FLOP, count)."""

    powers: tuple[int, int, int, int] = (0, 0, 0, 0)

    def __mul__(self, other: Dim) -> Dim:
        return Dim(tuple(a + b for a, b in zip(self.powers, other.powers)))

    def __truediv__(self, other: Dim) -> Dim:
        return Dim(tuple(a - b for a, b in zip(self.powers, other.powers)))

    def __pow__(self, n: int) -> Dim:
        return Dim(tuple(a * n for a in self.powers))

    @property
    def uncounted(self) -> Dim:
        """The dimension with its count power dropped: what a unit must match."""
        return Dim(self.powers[:3] + (0,))

    @property
    def name(self) -> str:
        """Its name in NAMED if it has one, else its powers in words ("bytes per second")."""
        for name, dim in NAMED.items():
            if dim == self:
                return name
        up = [f"{w}^{p}" if p > 1 else w for w, p in zip(_BASE_WORDS, self.powers) if p > 0]
        down = [f"{w}^{-p}" if p < -1 else w for w, p in zip(_BASE_WORDS, self.powers) if p < 0]
        return " x ".join(up or ["1"]) + (" per " + " per ".join(down) if down else "")


RATIO = Dim()
TIME, BYTES, FLOP, COUNT = (Dim(tuple(int(i == j) for j in range(4))) for i in range(4))

# The dimensions by the names a term or a slider declares them with.
NAMED: dict[str, Dim] = {
    "ratio": RATIO,
    "count": COUNT,
    "time": TIME,
    "bytes": BYTES,
    "FLOP": FLOP,
    "rate": COUNT / TIME,            # tokens or requests per second
    "bandwidth": BYTES / TIME,       # bytes per second
    "FLOP rate": FLOP / TIME,        # FLOP per second
    "intensity": FLOP / BYTES,       # FLOP per byte
    "time per count": TIME / COUNT,  # seconds per token, per request
    "bytes per count": BYTES / COUNT,
}


@dataclass(frozen=True)
class Unit:
    """A unit an inline number may name after its format: the dimension it fits (counts aside),
    the factor from the SI value to the number shown, and the text shown after it."""

    dim: Dim
    factor: float
    suffix: str


_NB = "\u00a0"
UNITS: dict[str, Unit] = {
    "s": Unit(TIME, 1.0, _NB + "s"), "ms": Unit(TIME, 1e3, _NB + "ms"),
    "us": Unit(TIME, 1e6, _NB + "µs"), "µs": Unit(TIME, 1e6, _NB + "µs"),
    "B": Unit(BYTES, 1.0, _NB + "bytes"), "KB": Unit(BYTES, 1e-3, _NB + "KB"), "MB": Unit(BYTES, 1e-6, _NB + "MB"),
    "GB": Unit(BYTES, 1e-9, _NB + "GB"), "TB": Unit(BYTES, 1e-12, _NB + "TB"),
    "KiB": Unit(BYTES, 1 / 1024, _NB + "KiB"), "GiB": Unit(BYTES, 1 / 2**30, _NB + "GiB"),
    "GB/s": Unit(BYTES / TIME, 1e-9, _NB + "GB/s"), "TB/s": Unit(BYTES / TIME, 1e-12, _NB + "TB/s"),
    "TFLOP/s": Unit(FLOP / TIME, 1e-12, _NB + "TFLOP/s"),
    "x": Unit(RATIO, 1.0, "×"), "%": Unit(RATIO, 100.0, "%"),
}


def units_for(dim: Dim) -> list[str]:
    """The units that fit `dim` (counts aside), in UNITS' order."""
    return [name for name, unit in UNITS.items() if unit.dim == dim.uncounted]


def fits(dim: Dim, unit: str) -> bool:
    """Whether a number of dimension `dim` may be shown in `unit`."""
    return UNITS[unit].dim == dim.uncounted
