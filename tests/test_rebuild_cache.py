"""What a rebuild in a new process reads back from the disk cache instead of computing (issue 15):
each unchanged page, pickled, and the parsed bibliography. Read back, they must give the build
that computing them gives; an entry that cannot be read back is computed again, never trusted."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from explainer_gen import core
from explainer_gen.sources import bibliography
from explainer_gen.sources.crossref import BIB_PATH
from explainer_gen import site as site_module
from explainer_gen.site import Memory, PageSource, SiteBuild
from helpers import REPO, scratch_docs

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


def project(tmp_path: Path) -> Path:
    return scratch_docs(tmp_path, {"step.md": PAGE})


def build(tmp_path: Path, docs: Path, page: str = PAGE):
    """A new build, as a new process makes it (its own memory), over the shared disk cache. Returns
    the build, its files, and the pages it computed (src_uri of each `compute_page` call)."""
    site = SiteBuild(root=tmp_path, docs_dir=docs, catalogue_path=REPO / "models" / "catalogue.yaml",
                     cache_dir=tmp_path / "cache", data_budget_kb=100, code_fingerprint=core.code_fingerprint(),
                     memory=Memory())
    computed = []
    compute = site.compute_page

    def counting(p, share=None):
        computed.append(p.src_uri)
        return compute(p, share)
    site.compute_page = counting
    files = site.collect([PageSource("step.md", "docs/step.md", "step/", page)])
    return site, files, computed


def contents(files: dict) -> dict:
    return {path: (c.read_bytes() if isinstance(c, Path) else c) for path, c in files.items()}


def test_an_unchanged_page_is_read_back_and_builds_the_same(tmp_path):
    docs = project(tmp_path)
    first, files, computed = build(tmp_path, docs)
    assert computed == ["step.md"]
    second, again, computed = build(tmp_path, docs)
    assert computed == []  # read back from the cache, not computed
    assert contents(again) == contents(files)
    a, b = first.pages["step.md"], second.pages["step.md"]
    assert [n.texts for n in b.numbers.values()] == [n.texts for n in a.numbers.values()]
    assert len({t for n in b.numbers.values() for t in n.texts}) > 2  # the switch moves the numbers
    assert [f.artifacts.svg for f in b.figures] == [f.artifacts.svg for f in a.figures]
    # The pickle holds the light part of each figure, as a rebuild reads figures back.
    assert not any(f.artifacts.heavy for f in b.figures) and all(f.artifacts.heavy for f in a.figures)


@pytest.mark.parametrize("entry", [b"", b"not a pickle", b"\x80\x05K\x01."])  # empty, garbage, a pickled 1
def test_a_page_entry_that_cannot_be_read_back_is_computed_again(tmp_path, entry):
    docs = project(tmp_path)
    _, files, _ = build(tmp_path, docs)
    pages = list((tmp_path / "cache" / "pages").iterdir())
    assert len(pages) == 1
    pages[0].write_bytes(entry)
    _, again, computed = build(tmp_path, docs)
    assert computed == ["step.md"]
    assert contents(again) == contents(files)


def test_a_prose_edit_reads_the_page_once(tmp_path):
    """With workers on, the page with nothing to compute is read by the lookup pass, which keeps
    it; the build does not read it a second time."""
    docs = project(tmp_path)
    build(tmp_path, docs)
    edited = PAGE + "\nOne more sentence.\n"
    site = SiteBuild(root=tmp_path, docs_dir=docs, catalogue_path=REPO / "models" / "catalogue.yaml",
                     cache_dir=tmp_path / "cache", data_budget_kb=100, code_fingerprint=core.code_fingerprint(),
                     memory=Memory(), workers=2)
    reads = []
    original = site_module.build_page

    def counting(*args, **kwargs):
        reads.append(args[1])
        return original(*args, **kwargs)
    site_module.build_page = counting
    try:
        site.collect([PageSource("step.md", "docs/step.md", "step/", edited)])
    finally:
        site_module.build_page = original
    assert reads == ["docs/step.md"]
    assert site.timing.figures_computed == 0 and site.timing.workers == 0


def test_the_parsed_bibliography_is_read_back_and_follows_edits(tmp_path, monkeypatch):
    from explainer_gen.compute.cache import DiskCache

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
