"""What a rebuild reads back instead of working out again (issue 15): a page with nothing to
compute is read once, not twice, and a new process reads the parsed bibliography from the disk
cache. Read back, it must be what parsing gives; an entry that cannot be read back is parsed
again, never trusted, and a file with a mistake is never stored."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from explainer_gen import core
from explainer_gen.site import collect as site_module
from explainer_gen.cache import DiskCache
from explainer_gen.sources import bibliography
from explainer_gen.sources.crossref import BIB_PATH
from explainer_gen.site import Memory, PageSource, SiteBuild
from helpers import REPO, hand_build, scratch_docs

PAGE = """---
title: Step
explainer:
  switch:
    accelerator: [h100-sxm, mi300x]
---

# One step

A decode step of {{ name('target') }} on {{ name('accelerator') }} takes {{ step(1) | .1f ms }} [@leviathan2023].

```explainer
figure: speedup-vs-batch
```
"""


def new_build(tmp_path, docs, workers: int = 1) -> SiteBuild:
    """A build as a new process makes it (its own memory), over the project's disk cache."""
    return hand_build(tmp_path, docs, Memory(), cache_dir=tmp_path / "cache", workers=workers)


def test_a_page_with_nothing_to_compute_is_read_once(tmp_path, monkeypatch):
    """With workers on, the lookup pass before them reads the page; when every figure and number
    is cached, the page it read is the page, and the build does not read it a second time."""
    docs = scratch_docs(tmp_path, {"step.md": PAGE})
    first = new_build(tmp_path, docs)
    first.collect([PageSource("step.md", "docs/step.md", "step/", PAGE)])
    edited = PAGE + "\nOne more sentence.\n"
    reads = []
    original = site_module.build_page
    monkeypatch.setattr(site_module, "build_page", lambda *a, **k: reads.append(a[1]) or original(*a, **k))
    again = new_build(tmp_path, docs, workers=2)
    again.collect([PageSource("step.md", "docs/step.md", "step/", edited)])
    assert reads == ["docs/step.md"]
    assert again.timing.figures_computed == 0
    a, b = first.model.pages["step.md"], again.model.pages["step.md"]
    assert [n.texts for n in b.numbers.values()] == [n.texts for n in a.numbers.values()]
    assert len({t for n in b.numbers.values() for t in n.texts}) > 2  # the switch moves the numbers
    assert [f.artifacts.svg for f in b.figures] == [f.artifacts.svg for f in a.figures]


def test_the_parsed_bibliography_is_read_back_and_follows_edits(tmp_path, monkeypatch):
    bib = tmp_path / "refs.bib"
    shutil.copy(REPO / "docs" / BIB_PATH, bib)
    cache = DiskCache(tmp_path / "cache")
    parsed = bibliography.load_bibliography(bib, "docs/refs.bib", cache)
    assert len(parsed) > 10
    calls = []
    parse = bibliography.parse_bibliography
    monkeypatch.setattr(bibliography, "parse_bibliography", lambda *a: calls.append(a) or parse(*a))
    again = bibliography.load_bibliography(bib, "docs/refs.bib", cache)
    assert calls == []  # read back
    assert list(again) == list(parsed)  # every field, suffixes included
    assert any(p.suffix for p in again)  # the case the suffixes exist for is in the file
    # An edit is parsed afresh; a mistake is never stored, and is raised at its line every time.
    bib.write_text(bib.read_text().replace("\n  annote ", "\n  annotation ", 1))
    for _ in range(2):
        with pytest.raises(core.SourceError, match="needs a 'annote' field"):
            bibliography.load_bibliography(bib, "docs/refs.bib", cache)
    assert len(calls) == 2


@pytest.mark.parametrize("entry", ["", "not json", "[{}]", '[{"key": "x"}]', "{}"])
def test_a_bibliography_entry_that_cannot_be_read_back_is_parsed_again(tmp_path, entry):
    bib = tmp_path / "refs.bib"
    shutil.copy(REPO / "docs" / BIB_PATH, bib)
    cache = DiskCache(tmp_path / "cache")
    parsed = bibliography.load_bibliography(bib, "docs/refs.bib", cache)
    stored = list((tmp_path / "cache" / "bibliography").iterdir())
    assert len(stored) == 1
    stored[0].write_text(entry)
    assert list(bibliography.load_bibliography(bib, "docs/refs.bib", cache)) == list(parsed)


DAY = 86400.0


def test_the_cache_records_what_it_reads_finds_and_writes(tmp_path):
    cache = DiskCache(tmp_path)
    cache.put("figures", "written", "1")
    (tmp_path / "numbers").mkdir()
    for key in ("read", "found", "untouched"):
        (tmp_path / "numbers" / key).write_text("2")
    assert cache.get("numbers", "read") == "2" and cache.path("numbers", "found") is not None
    assert cache.get("numbers", "missing") is None and cache.path("numbers", "absent") is None
    assert cache.used == {("figures", "written"), ("numbers", "read"), ("numbers", "found")}


def test_a_sweep_drops_what_no_build_has_used_for_the_days_kept(tmp_path):
    """An entry's modification time says when a build last used it; the entries this build used
    are stamped now and kept, whatever their age."""
    cache = DiskCache(tmp_path)
    now = 1_800_000_000.0
    ages = {("figures", "stale"): 8, ("figures", "recent"): 6, ("figures", "used"): 30, ("numbers", "stale"): 7.5,
            ("figures", ".tmp-torn"): 9}
    for (namespace, key), days in ages.items():
        (tmp_path / namespace).mkdir(exist_ok=True)
        (tmp_path / namespace / key).write_text(key)
        os.utime(tmp_path / namespace / key, (now - days * DAY, now - days * DAY))
    removed, freed = cache.sweep({("figures", "used"), ("figures", "gone")}, 7 * DAY, now)
    left = {(p.parent.name, p.name) for p in tmp_path.glob("*/*")}
    assert left == {("figures", "recent"), ("figures", "used")}
    assert (removed, freed) == (3, len("stale") * 2 + len(".tmp-torn"))
    assert os.stat(tmp_path / "figures" / "used").st_mtime == now
    # Keeping no days drops everything not used; a cache that is off or empty has nothing to drop.
    assert cache.sweep(set(), 0, now + 1) == (2, len("recent") + len("used"))
    assert not list(tmp_path.glob("*/*"))
    assert DiskCache(None).sweep(set(), 0) == (0, 0) and DiskCache(tmp_path / "none").sweep(set(), 0) == (0, 0)


def test_a_sweep_leaves_a_write_in_progress(tmp_path):
    """A temporary file younger than an hour may be another build's entry being written: it stays
    even when no day is kept, and goes once it is older."""
    cache = DiskCache(tmp_path)
    cache.put("figures", "done", "1")
    (tmp_path / "figures" / ".tmp-writing").write_text("half")
    now = os.stat(tmp_path / "figures" / "done").st_mtime + 60
    assert cache.sweep(set(), 0, now) == (1, 1)
    assert [p.name for p in (tmp_path / "figures").iterdir()] == [".tmp-writing"]
    assert cache.sweep(set(), 0, now + 3600) == (1, 4)


def test_a_build_that_read_from_memory_drops_nothing(tmp_path):
    """In one long-lived process (`mkdocs serve`), a rebuild reads figures and numbers from memory,
    which the disk cache never sees: its sweep would take them for unused and drop what the site
    is built from, so it drops nothing."""
    docs = scratch_docs(tmp_path, {"step.md": PAGE})
    memory = Memory()

    def build(text: str) -> SiteBuild:
        site = hand_build(tmp_path, docs, memory, cache_dir=tmp_path / "cache")
        site.collect([PageSource("step.md", "docs/step.md", "step/", text)])
        return site

    assert build(PAGE).tidy_cache(0) == ""  # a first build uses everything it stored
    entries = set((tmp_path / "cache").glob("*/*"))
    again = build(PAGE + "\nOne more sentence.\n")
    served = {(p.parent.name, p.name) for p in entries} - again.store.cache.used  # from memory, unseen by the disk
    assert {namespace for namespace, _ in served} >= {"figure-meta", "numbers", "page-json"}
    assert again.tidy_cache(0) == "" and set((tmp_path / "cache").glob("*/*")) >= entries


def test_a_prose_edit_stores_no_new_page_state(tmp_path):
    """The page's state (its switch and numbers at every position, a megabyte on a large page) is
    keyed by what decides it, so saving a prose edit, as `mkdocs serve` does on every save, does
    not store it again; a change to a number does."""
    docs = scratch_docs(tmp_path, {"step.md": PAGE})
    new_build(tmp_path, docs).collect([PageSource("step.md", "docs/step.md", "step/", PAGE)])
    states = set((tmp_path / "cache" / "page-json").iterdir())
    edited = PAGE + "\nOne more sentence.\n"
    new_build(tmp_path, docs).collect([PageSource("step.md", "docs/step.md", "step/", edited)])
    assert set((tmp_path / "cache" / "page-json").iterdir()) == states and len(states) == 1
    renumbered = PAGE.replace("step(1) | .1f ms", "step(2) | .1f ms")
    new_build(tmp_path, docs).collect([PageSource("step.md", "docs/step.md", "step/", renumbered)])
    assert len(set((tmp_path / "cache" / "page-json").iterdir())) == 2
