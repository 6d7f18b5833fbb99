"""A scenario resolved against the catalogue: the accelerator, the models and the formats it names,
and what the models say about it (its passes, its memory, whether it can run at all).

The scenario itself, as an author writes it and a reader switches it, is read and checked in
sources/controls.py; everything here calls the models.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, replace
from typing import Any

from models import kvcache, prefill, roofline
from models.catalogue import LLM, Accelerator, Catalogue, UnknownKey
from models.precision import Precision
from models.yamlsource import SourceError, SourceMap

from ..sources.controls import FIELD, SCENARIO_FIELDS, Scenario, read_default_scenario


def resolve(scenario: Scenario, catalogue: Catalogue) -> "Resolved":
    """What `scenario` names, looked up in `catalogue`."""
    return Resolved(scenario, catalogue.accelerator(scenario.accelerator), scenario.cards,
                    catalogue.model(scenario.target), catalogue.model(scenario.draft), scenario.context,
                    Precision.of(scenario.weights, scenario.kv))


def default_scenario(catalogue: Catalogue) -> Scenario:
    """The scenario every page starts from (sources/controls.read_default_scenario), which must run:
    an error at the catalogue's `defaults: scenario:` when it cannot."""
    scenario = read_default_scenario(catalogue)
    why = unfit_reason(resolve(scenario, catalogue), with_draft=True)
    if why:
        raw = catalogue.defaults.get("scenario")
        line = raw.line if isinstance(raw, SourceMap) else 1
        raise SourceError(catalogue.path, line, f"the default scenario cannot run: {why}")
    return scenario


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


class SharedByReads:
    """What scenarios share where they agree on every field a computation read: each answer is
    kept by the set of fields read inside `reading()` (one or a few per computation), then by
    those fields' values in the scenario it was computed under (a scenario's `fields`, as a
    scenario.Scenario). The models are pure functions of what they read, so any later scenario
    with the same values gets the same answer (numbers.compute_number's texts,
    derivation.explain_over's cards)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, ...], dict[tuple, Any]] = {}

    def find(self, fields: Any) -> Any:
        """The answer kept for a scenario agreeing with `fields` on what it read, or None."""
        return next((by_value[key] for read, by_value in self._kept.items()
                     if (key := tuple(getattr(fields, f) for f in read)) in by_value), None)

    def keep(self, fields: Any, read: set[str], answer: Any) -> None:
        """Keep `answer`, computed under `fields` reading the fields `read`."""
        names = tuple(sorted(read))
        self._kept.setdefault(names, {})[tuple(getattr(fields, f) for f in names)] = answer


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
