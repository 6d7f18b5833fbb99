"""Typed reader controls: sliders and the scenario, validated from author YAML (what a scenario
resolves to in the models is compute/resolved.py)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import numpy as np

from models.catalogue import Catalogue, UnknownKey
from models.precision import KV_FORMATS, WEIGHT_FORMATS
from models.units import NAMED
from models.yamlsource import SourceError, SourceMap, closest, line_of

MAX_SLIDER_POSITIONS = 200
# Vega signal and dataset names that a slider (a Vega param) may not shadow.
RESERVED_PARAMS = frozenset({"width", "height", "padding", "autosize", "background", "datum",
                             "event", "item", "parent", "cursor", "table"})


@dataclass(frozen=True)
class Slider:
    """A Vega-Lite `bind: range` param whose every position is precomputed."""

    name: str
    label: str
    min: float
    max: float
    step: float
    default: float
    # What it sets, by a name of models.units.NAMED ("count", "ratio", "rate", ...): an inline
    # number that names the slider takes its dimension from it. "" until declared; a number that
    # names a slider without one fails at its line.
    dimension: str = ""

    @property
    def decimals(self) -> int:
        return _decimals(float(self.step))

    @property
    def count(self) -> int:
        return int(round((self.max - self.min) / self.step)) + 1

    def values(self) -> np.ndarray:
        """Every position, rounded so that browser and table agree on each value (read-only: one
        array per slider, which a build asks for tens of thousands of times)."""
        return _positions(float(self.min), float(self.step), self.count, self.decimals)

    def index_of(self, value: float) -> int:
        return int(round((value - self.min) / self.step))


def slider_grid(axes: "list[Slider]") -> list[np.ndarray]:
    """Each slider's positions shaped to broadcast over the grid of `axes`, in C order: the i-th
    varies along axis i and is of length one along the others."""
    return [s.values().reshape([-1 if j == i else 1 for j in range(len(axes))]) for i, s in enumerate(axes)]


@functools.lru_cache(maxsize=4096)
def _decimals(step: float) -> int:
    exponent = Decimal(repr(step)).normalize().as_tuple().exponent
    return max(0, -int(exponent))


@functools.lru_cache(maxsize=4096)
def _positions(lo: float, step: float, count: int, decimals: int) -> np.ndarray:
    values = np.round(lo + step * np.arange(count), decimals)
    values.flags.writeable = False
    return values


SLIDER_FIELDS = ("label", "min", "max", "step", "default")
OPTIONAL_SLIDER_FIELDS = ("dimension",)


def _number(raw: SourceMap, key: str, path: str) -> float:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SourceError(path, raw.line_of(key), f"slider {key} must be a number, got {value!r}")
    return float(value)


def parse_slider(name: str, raw: Any, path: str, line: int, base: Slider | None) -> Slider:
    """Read one slider; any field left out comes from `base` (page or figure defaults)."""
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, f"slider {name!r} must be a mapping of {', '.join(SLIDER_FIELDS)}")
    known = SLIDER_FIELDS + OPTIONAL_SLIDER_FIELDS
    for key in raw:
        if key not in known:
            raise SourceError(path, raw.line_of(key), f"unknown slider field {key!r}; {closest(key, known)}")
    fields: dict[str, Any] = {} if base is None else {f: getattr(base, f) for f in known}
    for key in raw:
        fields[key] = raw[key] if key in ("label", "dimension") else _number(raw, key, path)
    if fields.get("dimension", "") and fields["dimension"] not in NAMED:
        raise SourceError(path, raw.line_of("dimension"), f"slider {name!r}: unknown dimension "
                          f"{fields['dimension']!r}; {closest(str(fields['dimension']), list(NAMED))}")
    missing = [f for f in SLIDER_FIELDS if f not in fields]
    if missing:
        raise SourceError(path, raw.line, f"slider {name!r} misses {', '.join(missing)}")
    slider = Slider(name=name, **fields)
    where = lambda key: raw.line_of(key) if key in raw else raw.line  # noqa: E731
    if not isinstance(slider.label, str) or not slider.label.strip():
        raise SourceError(path, where("label"), f"slider {name!r} needs a non-empty label")
    if slider.min > slider.max:
        raise SourceError(path, where("min"), f"slider {name!r}: min {slider.min:g} is above max {slider.max:g}")
    if slider.step <= 0:
        raise SourceError(path, where("step"), f"slider {name!r}: step must be positive, got {slider.step:g}")
    span = (slider.max - slider.min) / slider.step
    if span + 1 > MAX_SLIDER_POSITIONS:
        raise SourceError(path, where("step"), f"slider {name!r} has {int(span) + 1} positions; "
                          f"at most {MAX_SLIDER_POSITIONS} can be precomputed")
    if abs(span - round(span)) > 1e-6:
        raise SourceError(path, where("step"), f"slider {name!r}: step {slider.step:g} does not divide "
                          f"{slider.min:g}..{slider.max:g} evenly")
    if not slider.min - 1e-9 <= slider.default <= slider.max + 1e-9:
        raise SourceError(path, where("default"), f"slider {name!r}: default {slider.default:g} is outside "
                          f"{slider.min:g}..{slider.max:g}")
    off = (slider.default - slider.min) / slider.step
    if abs(off - round(off)) > 1e-6:
        raise SourceError(path, where("default"), f"slider {name!r}: default {slider.default:g} is not on the "
                          f"grid {slider.min:g}, {slider.min + slider.step:g}, ...")
    return slider


def parse_sliders(raw: Any, path: str, line: int, base: dict[str, Slider],
                  allowed: tuple[str, ...] | None = None) -> dict[str, Slider]:
    """Merge author sliders over `base`. `allowed` limits names (a figure's own params)."""
    if raw is None:
        return dict(base)
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, "sliders must be a mapping of slider name to its settings")
    out = dict(base)
    for name, spec in raw.items():
        if allowed is not None and name not in allowed:
            raise SourceError(path, raw.line_of(name), f"unknown slider {name!r}; {closest(name, allowed)}")
        if not isinstance(name, str) or not name.isidentifier() or name in RESERVED_PARAMS:
            raise SourceError(path, raw.line_of(name), f"slider name {name!r} must be an identifier and not one "
                              f"of Vega's own names ({', '.join(sorted(RESERVED_PARAMS))})")
        out[name] = parse_slider(name, spec, path, raw.line_of(name), base.get(name))
    return out


@dataclass(frozen=True)
class ScenarioField:
    """One field of the scenario: what it is called in front matter, in the switch and in CSV
    files, which catalogue table its values come from, and how a value is named to readers."""

    name: str    # the front-matter key and the Scenario attribute
    label: str   # the switch's label
    csv: str     # the CSV column
    table: str | None  # where values are keys: "accelerators" or "models" (the catalogue's), or
                       # "weight formats" or "kv formats" (models.precision); None: a count
    unit: str = ""     # a count's noun, singular ("card", "token")
    most: int = 0      # the largest count allowed

    def rows(self, catalogue: Catalogue) -> dict[str, Any]:
        """The rows a value names, by key; each has a `name` for readers."""
        if self.table in FORMAT_TABLES:
            return FORMAT_TABLES[self.table]
        return getattr(catalogue, self.table)

    def check(self, value: Any, catalogue: Catalogue, path: str, line: int) -> Any:
        if self.table is None:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= self.most:
                raise SourceError(path, line, f"{self.name} must be a whole number from 1 to {self.most:,}, "
                                  f"got {value!r}")
            return value
        if not isinstance(value, str):
            raise SourceError(path, line, f"{self.name} must be a catalogue key (a string), got {value!r}")
        rows = self.rows(catalogue)
        if value not in rows:
            raise SourceError(path, line, str(UnknownKey(self.table[:-1], value, list(rows))))
        return value

    def name_of(self, value: Any, catalogue: Catalogue) -> str:
        """What readers see for a value: the catalogue row's name, or "4 cards", "2,048 tokens"."""
        if self.table is None:
            return f"{value:,} {self.unit}{'s' if value != 1 else ''}"
        return self.rows(catalogue)[value].name


# The number formats a scenario may choose (models.precision): weights, and the KV cache.
FORMAT_TABLES = {"weight formats": WEIGHT_FORMATS, "kv formats": KV_FORMATS}

# The scenario's fields, in the order of Scenario's attributes, its key and its CSV columns:
# the one table that parsing, the switch, labels and CSV headers read.
SCENARIO_TABLE = (
    ScenarioField("accelerator", "Accelerator", "accelerator", "accelerators"),
    ScenarioField("cards", "Cards", "cards", None, "card", 1024),
    ScenarioField("target", "Target model", "target model", "models"),
    ScenarioField("draft", "Draft model", "draft model", "models"),
    ScenarioField("context", "Context", "context (tokens)", None, "token", 1 << 20),
    ScenarioField("weights", "Weights", "weight format", "weight formats"),
    ScenarioField("kv", "KV cache", "KV cache format", "kv formats"),
)
SCENARIO_FIELDS = tuple(f.name for f in SCENARIO_TABLE)
FIELD = {f.name: f for f in SCENARIO_TABLE}


@dataclass(frozen=True)
class Scenario:
    """Where the models run: hardware, card count, the two models (by catalogue key), the
    context every request holds in its KV cache, in tokens, and the number formats of the
    weights and of that cache (models.precision). The site's default is the catalogue's
    `defaults: scenario:` (see read_default_scenario)."""

    accelerator: str
    cards: int
    target: str
    draft: str
    context: int
    weights: str
    kv: str

    @property
    def key(self) -> str:
        return ".".join(str(getattr(self, f)) for f in SCENARIO_FIELDS)

    def names(self, catalogue: Catalogue) -> list[str]:
        """The readers' names of its fields, in table order (a CSV row's first cells)."""
        return [f.name_of(getattr(self, f.name), catalogue) if f.table else getattr(self, f.name)
                for f in SCENARIO_TABLE]


def check_scenario_value(field: str, value: Any, catalogue: Catalogue, path: str, line: int) -> Any:
    return FIELD[field].check(value, catalogue, path, line)


def read_default_scenario(catalogue: Catalogue) -> Scenario:
    """The scenario every page starts from, as the catalogue sets it for the site; whether it can
    run is checked where scenarios meet the models (compute/resolved.default_scenario)."""
    raw, path = catalogue.defaults.get("scenario"), catalogue.path
    line = catalogue.defaults.line_of("scenario") if isinstance(catalogue.defaults, SourceMap) else 1
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, "the catalogue needs `defaults: scenario:` with "
                          f"{', '.join(SCENARIO_FIELDS)}: the scenario pages start from")
    missing = [f for f in SCENARIO_FIELDS if f not in raw]
    if missing:
        raise SourceError(path, raw.line, f"defaults: scenario misses {', '.join(missing)}")
    for key in raw:
        if key not in FIELD:
            raise SourceError(path, raw.line_of(key), f"unknown scenario key {key!r}; {closest(key, SCENARIO_FIELDS)}")
    return Scenario(**{f: check_scenario_value(f, raw[f], catalogue, path, raw.line_of(f)) for f in SCENARIO_FIELDS})


def parse_scenario(raw: Any, path: str, line: int, base: Scenario, catalogue: Catalogue) -> Scenario:
    if raw is None:
        return base
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, f"scenario must be a mapping of {', '.join(SCENARIO_FIELDS)}")
    changes = {}
    for key, value in raw.items():
        if key not in SCENARIO_FIELDS:
            raise SourceError(path, raw.line_of(key), f"unknown scenario key {key!r}; {closest(key, SCENARIO_FIELDS)}")
        changes[key] = check_scenario_value(key, value, catalogue, path, raw.line_of(key))
    return replace(base, **changes)


def expect_mapping(raw: Any, path: str, line: int, what: str, allowed: tuple[str, ...]) -> SourceMap:
    """A mapping with only `allowed` keys, or an error at the first stray key."""
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, f"{what} must be a YAML mapping with keys: {', '.join(allowed)}")
    for key in raw:
        if key not in allowed:
            raise SourceError(path, raw.line_of(key), f"unknown key {key!r} in {what}; {closest(key, allowed)}")
    return raw


__all__ = ["Slider", "slider_grid", "Scenario", "ScenarioField", "SCENARIO_TABLE", "SCENARIO_FIELDS", "read_default_scenario", "parse_slider", "parse_sliders", "parse_scenario",
           "expect_mapping", "line_of", "MAX_SLIDER_POSITIONS"]
