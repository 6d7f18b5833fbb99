"""Typed reader controls: sliders and the scenario, validated from author YAML."""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import numpy as np

from models import kvcache, prefill, roofline
from models.catalogue import LLM, Accelerator, Catalogue, UnknownKey
from models.precision import KV_FORMATS, WEIGHT_FORMATS, Precision
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


def _number(raw: SourceMap, key: str, path: str) -> float:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SourceError(path, raw.line_of(key), f"slider {key} must be a number, got {value!r}")
    return float(value)


def parse_slider(name: str, raw: Any, path: str, line: int, base: Slider | None) -> Slider:
    """Read one slider; any field left out comes from `base` (page or figure defaults)."""
    if not isinstance(raw, SourceMap):
        raise SourceError(path, line, f"slider {name!r} must be a mapping of {', '.join(SLIDER_FIELDS)}")
    for key in raw:
        if key not in SLIDER_FIELDS:
            raise SourceError(path, raw.line_of(key), f"unknown slider field {key!r}; {closest(key, SLIDER_FIELDS)}")
    fields: dict[str, Any] = {} if base is None else {f: getattr(base, f) for f in SLIDER_FIELDS}
    for key in raw:
        fields[key] = raw[key] if key == "label" else _number(raw, key, path)
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
    `defaults: scenario:` (see default_scenario)."""

    accelerator: str
    cards: int
    target: str
    draft: str
    context: int
    weights: str
    kv: str

    def resolve(self, catalogue: Catalogue) -> "Resolved":
        return Resolved(self, catalogue.accelerator(self.accelerator), self.cards,
                        catalogue.model(self.target), catalogue.model(self.draft), self.context,
                        Precision.of(self.weights, self.kv))

    @property
    def key(self) -> str:
        return ".".join(str(getattr(self, f)) for f in SCENARIO_FIELDS)

    def names(self, catalogue: Catalogue) -> list[str]:
        """The readers' names of its fields, in table order (a CSV row's first cells)."""
        return [f.name_of(getattr(self, f.name), catalogue) if f.table else getattr(self, f.name)
                for f in SCENARIO_TABLE]


@dataclass(frozen=True)
class Resolved:
    scenario: Scenario
    acc: Accelerator
    cards: int
    target: LLM
    draft: LLM
    context: int
    precision: Precision

    def in_formats(self, weights: str | None = None, kv: str | None = None) -> "Resolved":
        """The same scenario with its weights (or its cache) in another format: what a page's table
        of formats compares. None keeps the scenario's own."""
        if weights is None and kv is None:
            return self
        changes = {"weights": weights or self.scenario.weights, "kv": kv or self.scenario.kv}
        for field, value in changes.items():
            if value not in FIELD[field].rows(None):
                raise ValueError(str(UnknownKey(FIELD[field].table[:-1], value, list(FIELD[field].rows(None)))))
        return replace(self, scenario=replace(self.scenario, **changes), precision=Precision.of(**changes))

    def model(self, which: str = "target") -> LLM:
        """The target or the draft."""
        if which not in ("target", "draft"):
            raise ValueError(f"model must be 'target' or 'draft', got {which!r}")
        return self.target if which == "target" else self.draft

    def forward(self, tokens, context=None, requests=None, which: str = "target", on=None,
                logits=None) -> roofline.StepTime:
        """A pass of the target (or draft) over `tokens` positions on the scenario's cards (or on
        `on` of them), in its formats: by default a decode pass of `tokens` requests at the
        scenario's context, every position through the output head (or `logits` of them)."""
        return roofline.step_time(self.acc, self.model(which), self.cards if on is None else on, tokens,
                                  self.context_or(context), requests, self.precision, logits)

    def prefill(self, prompt) -> roofline.StepTime:
        """The pass that prefills a `prompt`-token prompt of the target (models.prefill)."""
        return prefill.prefill_step(self.acc, self.target, self.cards, prompt, self.precision)

    def ridge_tokens(self, which: str = "target"):
        """Positions a pass needs for its weight GEMMs to turn compute-bound (any context)."""
        return roofline.ridge_tokens(self.acc, self.model(which), self.precision)

    @property
    def peak(self) -> float:
        """One card's FLOP/s for the blocks' products, in the weights' format."""
        return self.acc.peak(self.precision.weights)

    @property
    def ridge(self) -> float:
        """FLOP per byte above which those products are compute-bound on this card."""
        return self.peak / self.acc.bandwidth

    def context_or(self, context=None):
        """`context` where a caller names one, else the scenario's own."""
        return self.context if context is None else context

    def memory_cap(self, with_draft: bool = False, context=None) -> float:
        """The most requests that fit at once, each holding the scenario's context (or `context`)
        in its cache, with the draft's weights and cache too when `with_draft`."""
        return float(kvcache.slots(self.acc, self.target, self.cards, self.context_or(context),
                                   self.draft if with_draft else None, precision=self.precision))


# The scenario fields that reading each attribute of a Resolved reveals (its `scenario`, all).
REVEALS: dict[str, tuple[str, ...]] = {
    "scenario": SCENARIO_FIELDS, "acc": ("accelerator",), "cards": ("cards",), "target": ("target",),
    "draft": ("draft",), "context": ("context",), "precision": ("weights", "kv")}
_reads: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("scenario_reads", default=None)


class Watched(Resolved):
    """A Resolved that notes, inside `reading()`, which scenario fields a computation reads through
    its attributes, methods and properties (its own methods read through `self`, so they are
    watched too). The models are pure functions of what they are given, so two scenarios that
    agree on those fields give that computation the same result: an inline number is then
    evaluated once per distinct combination of the fields it reads (numbers.compute_number),
    not once per scenario."""

    def __getattribute__(self, name: str):
        fields = REVEALS.get(name)
        if fields is not None:
            reads = _reads.get()
            if reads is not None:
                reads.update(fields)
        return super().__getattribute__(name)

    @classmethod
    def of(cls, r: Resolved) -> "Watched":
        return cls(*(object.__getattribute__(r, f) for f in Resolved.__dataclass_fields__))


@contextlib.contextmanager
def reading():
    """The set of scenario fields read by Watched scenarios while the block runs."""
    reads: set[str] = set()
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


def unfit_reason(r: Resolved, with_draft: bool) -> str | None:
    """Why the scenario cannot run, in a reader's words, or None when it can.

    It runs when its models split into whole heads over its cards (tensor parallelism) and their
    weights, plus one request's cache at its context, fit in the cards' memory less the reserve
    (models.kvcache.fits). The draft counts when the page runs it (`with_draft`).
    """
    models = [r.target] + ([r.draft] if with_draft else [])
    for m in models:
        if not kvcache.tensor_parallel(m, r.cards):
            return (f"{m.name} does not split over {r.cards} cards: its {m.heads} heads and {m.kv_heads} "
                    f"KV heads must divide evenly")
    draft = r.draft if with_draft else None
    if kvcache.fits(r.acc, r.target, r.cards, r.context, draft, precision=r.precision):
        return None
    who = f"{r.target.name} and its {r.draft.name} draft" if draft else r.target.name
    fmt = f" in {r.precision.weights.name}" if r.precision.weights.key != "bf16" else ""
    need = int(kvcache.min_cards(r.acc, r.target, r.context, draft, precision=r.precision))
    if need:
        return f"{who}{fmt} need{'' if draft else 's'} {need} × {r.acc.name} at {r.context:,} tokens of context"
    most = kvcache.tensor_parallel_sizes(*models)[-1]
    return f"{who}{fmt} do{'' if draft else 'es'} not fit on {most} × {r.acc.name}, the most {'they split' if draft else 'it splits'} over"


def check_scenario_value(field: str, value: Any, catalogue: Catalogue, path: str, line: int) -> Any:
    return FIELD[field].check(value, catalogue, path, line)


def default_scenario(catalogue: Catalogue) -> Scenario:
    """The scenario every page starts from, set once for the site in the catalogue."""
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
    scenario = Scenario(**{f: check_scenario_value(f, raw[f], catalogue, path, raw.line_of(f)) for f in SCENARIO_FIELDS})
    why = unfit_reason(scenario.resolve(catalogue), with_draft=True)
    if why:
        raise SourceError(path, raw.line, f"the default scenario cannot run: {why}")
    return scenario


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


__all__ = ["Slider", "Scenario", "ScenarioField", "SCENARIO_TABLE", "SCENARIO_FIELDS", "default_scenario", "Resolved", "parse_slider", "parse_sliders", "parse_scenario",
           "expect_mapping", "line_of", "MAX_SLIDER_POSITIONS"]
