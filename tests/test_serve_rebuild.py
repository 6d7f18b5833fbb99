"""A prose save under `mkdocs serve` converts the page saved and no other (plugin._reuse_conversion,
keyed by host.conversion_key and host.conversion_inputs), and every rebuild gives the site a clean
build of the same sources gives: a page's conversion is reused only while its Markdown, the build's
work on it, its links and the Markdown settings are what they were, and one that warned is never
reused.

The builds are `mkdocs serve`'s, in this process (helpers.serve_build), on a scratch copy of the
site that keeps the batching page whole and the other explainers as stubs, with the run's cache.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocs.structure.pages import Page

from explainer_gen import host
from helpers import copy_project, mkdocs_build, serve_build

PAGE = "explainers/batching.md"


def converted(monkeypatch) -> list[str]:
    """The src_uri of every page MkDocs converts from here on (a reused conversion replaces the
    page's own `render`, so it is not seen here)."""
    seen: list[str] = []
    render = Page.render

    def counting(page, config, files):
        seen.append(page.file.src_uri)
        return render(page, config, files)
    monkeypatch.setattr(Page, "render", counting)
    return seen


def pages(site: Path) -> dict[str, str]:
    """Every HTML page and the search index, by path; livereload's script is not in them (the
    builds here are given no serve URL)."""
    found = {*site.rglob("*.html"), site / "search" / "search_index.json"}
    return {p.relative_to(site).as_posix(): p.read_text() for p in sorted(found)}


def same_as_a_clean_build(project: Path, served: Path, tmp_path: Path, name: str) -> list[str]:
    """The pages of the serve build that differ from a clean `mkdocs build` of the same sources."""
    clean = tmp_path / f"clean-{name}"
    result = mkdocs_build(clean, project / "mkdocs.yml", strict=False)
    assert result.returncode == 0, result.stderr
    got, want = pages(served), pages(clean)
    assert got.keys() == want.keys()
    return [path for path in want if got[path] != want[path]]


@pytest.fixture
def project(tmp_path, warm_cache):
    return copy_project(tmp_path / "project", warm_cache, only=(PAGE,))


def test_a_prose_save_converts_the_page_saved_and_the_site_is_a_clean_builds(project, tmp_path, monkeypatch):
    config, site = project / "mkdocs.yml", tmp_path / "served"
    every = sorted(p.relative_to(project / "docs").as_posix() for p in (project / "docs").rglob("*.md"))
    seen = converted(monkeypatch)
    assert serve_build(site, config).returncode == 0
    assert sorted(seen) == every  # the first build converts every page
    page = project / "docs" / PAGE
    text = page.read_text()

    # A sentence added to one page: that page is converted, and no other.
    seen.clear()
    page.write_text(text + "\nA sentence the author just added.\n")
    assert serve_build(site, config).returncode == 0
    assert seen == [PAGE]
    assert same_as_a_clean_build(project, site, tmp_path, "prose") == []

    # A glossary definition changed: the pages that link a term show its card again (the others
    # are converted too: what linking terms reads is one key for the site).
    seen.clear()
    terms = project / "docs" / "glossary" / "terms.yml"
    terms.write_text(terms.read_text().replace("The probability that the target model keeps",
                                               "The chance that the target model keeps", 1))
    assert serve_build(site, config).returncode == 0
    assert PAGE in seen
    assert same_as_a_clean_build(project, site, tmp_path, "glossary") == []

    # A Markdown setting changed (the headings' permalink sign): every page is converted again.
    seen.clear()
    config.write_text(config.read_text().replace("permalink: true", "permalink: \"#\"", 1))
    assert serve_build(site, config).returncode == 0
    assert sorted(seen) == every
    assert same_as_a_clean_build(project, site, tmp_path, "settings") == []

    # Every page's URL changes: every page's links change with them.
    seen.clear()
    config.write_text(config.read_text() + "\nuse_directory_urls: false\n")
    assert serve_build(site, config).returncode == 0
    assert sorted(seen) == every
    assert same_as_a_clean_build(project, site, tmp_path, "urls") == []


def test_a_conversion_that_warned_is_converted_again_and_warns_again(project, tmp_path, monkeypatch):
    config, site = project / "mkdocs.yml", tmp_path / "served"
    config.write_text(config.read_text().replace("strict: true\n", "strict: false\n", 1))  # warn, not stop
    page = project / "docs" / PAGE
    page.write_text(page.read_text() + "\nSee [a page that is not there](no-such-page.md).\n")
    seen = converted(monkeypatch)
    warned = []
    for _ in range(2):
        seen.clear()
        result = serve_build(site, config)
        assert result.returncode == 0, result.stderr
        warned.append(len(re.findall(r"WARNING.*no-such-page\.md", result.stderr)))
        assert PAGE in seen
    assert warned == [1, 1]


def test_negative_control_a_key_blind_to_the_links_serves_stale_pages(project, tmp_path, monkeypatch):
    """Without the files and the Markdown settings in the key, a change of the headings' permalink
    sign leaves every page as it was: the comparison with a clean build catches it."""
    monkeypatch.setattr(host, "conversion_inputs", lambda config, files: "")
    config, site = project / "mkdocs.yml", tmp_path / "served"
    assert serve_build(site, config).returncode == 0
    config.write_text(config.read_text().replace("permalink: true", "permalink: \"#\"", 1))
    assert serve_build(site, config).returncode == 0
    assert same_as_a_clean_build(project, site, tmp_path, "blind") != []
