"""Inline numbers are evaluated once per distinct combination of the scenario fields they read
(compute/resolved.Watched), not once per scenario (issue 15). These tests hold that shortcut to the full
evaluation on every explainer page, and show that they would catch a field the watch missed."""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from explainer_gen.compute import numbers, workers
from explainer_gen.compute.pages import build_page
from explainer_gen.compute import resolved
from explainer_gen.sources import controls
from models import load_catalogue

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs/explainers").glob("*.md"))


def _numbers(page: Path) -> dict:
    built = build_page(page.read_text(), str(page), load_catalogue(), lambda req: workers.ELSEWHERE_FIGURE, 10**9)
    return {key: vars(result) for key, result in built.numbers.items()}


@contextlib.contextmanager
def _reads_everything():
    """The reference: every evaluation counts as reading every field, so no two scenarios share."""
    yield set(controls.SCENARIO_FIELDS)


@pytest.fixture(scope="module")
def reference() -> dict:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numbers, "reading", _reads_everything)
        return {page.stem: _numbers(page) for page in PAGES}


@pytest.mark.parametrize("source", PAGES, ids=lambda p: p.stem)
def test_numbers_from_the_fields_they_read_equal_the_full_evaluation(source, reference):
    got = _numbers(source)
    assert got.keys() == reference[source.stem].keys() and got
    assert [k for k in got if got[k] != reference[source.stem][k]] == []


def test_a_field_the_watch_missed_would_be_caught(monkeypatch, reference):
    """Negative control: forget that `context` is read, and the KV page's numbers that depend on
    the context (its switch offers four) come out wrong, so the test above fails."""
    monkeypatch.setitem(resolved.REVEALS, "context", ())
    source = REPO / "docs/explainers/kv-cache.md"
    got = _numbers(source)
    assert [k for k in got if got[k] != reference[source.stem][k]]


def test_watching_a_scenario_changes_none_of_its_answers():
    cat = load_catalogue()
    r = resolved.resolve(resolved.default_scenario(cat), cat)
    w = resolved.Watched.of(r)
    with resolved.reading() as read:
        assert w.forward(1).seconds == r.forward(1).seconds and w.memory_cap() == r.memory_cap()
    # forward reads the card, the target (through model()), the cards, the context and the formats.
    assert {"accelerator", "target", "cards", "context", "weights", "kv"} <= read
    with resolved.reading() as read:
        assert w.ridge_tokens("draft") == r.ridge_tokens("draft")
    assert "target" not in read and {"accelerator", "draft"} <= read
