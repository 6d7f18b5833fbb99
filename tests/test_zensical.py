"""The same site built by Zensical (`make zensical`, explainer_gen/host_zensical.py).

Against the MkDocs build: the same generated files byte for byte, and in every page the same
computed numbers, the same links to figures, data, citations and glossary terms. Only the
theme's own markup may differ. Then what an author meets: a mistake named by file and line, with
no traceback, and the last good site kept; a rebuild after the data changed shows the new
numbers (Zensical alone would serve the page from its cache); two builds are identical. And what
a reader meets, in Chromium: the checks of test_pictures and test_reader on the Zensical build.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, article, env, numbers_in, serve
from test_pictures import SCHEMES, figures_gone_live
from test_reader import (instant_navigation_renders_each_figure_once, live_views_are_named_images, loads_cleanly,
                         site_pages, works_under_a_subpath)

HOST = [sys.executable, "-m", "explainer_gen.host_zensical", "build"]


def zensical_build(dest: Path, config: Path = REPO / "mkdocs.yml") -> subprocess.CompletedProcess:
    return subprocess.run(HOST + ["-f", str(config), "-d", str(dest)], capture_output=True, text=True, env=env(),
                          cwd=config.parent, timeout=900)


@pytest.fixture(scope="module")
def zensical_site(tmp_path_factory):
    dest = tmp_path_factory.mktemp("zensical") / "site"
    result = zensical_build(dest)
    assert result.returncode == 0, result.stderr
    return dest


def files(root: Path, under: str) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / under).rglob("*")) if p.is_file()}


# The links the build writes into a page: figure data and pictures, CSV, scripts, citations,
# glossary terms, Read next. The theme's own links (its stylesheets, navigation) are left out.
STATIC = re.compile(r'<svg class="eg-static".*?</svg>', re.S)
OURS = re.compile(r'(?:href|src|data-eg-[a-z-]+)="([^"]*(?:assets/explainer/|feed/|glossary/|explainers/)[^"]*)"')


@pytest.mark.site
def test_zensical_builds_the_files_numbers_and_links_mkdocs_builds(site, zensical_site):
    ours, theirs = files(site, "assets/explainer"), files(zensical_site, "assets/explainer")
    assert sorted(ours) == sorted(theirs)
    assert [p for p in ours if ours[p] != theirs[p]] == []
    assert (site / "atom.xml").read_bytes() == (zensical_site / "atom.xml").read_bytes()
    pages = [p for p in site_pages(site) if "md-content__inner" in (site / p / "index.html").read_text()]
    assert len(pages) >= 8
    for path in pages:
        mine = article((site / path / "index.html").read_text())
        other = article((zensical_site / path / "index.html").read_text())
        assert numbers_in(other) == numbers_in(mine), path
        assert sorted(set(OURS.findall(other))) == sorted(set(OURS.findall(mine))), path
        assert other.count('class="eg-figure"') == mine.count('class="eg-figure"'), path
        assert len(STATIC.findall(mine)) == mine.count('class="eg-figure"'), path
        assert STATIC.findall(other) == STATIC.findall(mine), path  # the static pictures, placed and alike
    # Every glossary anchor exists in the Zensical site too.
    for term in re.findall(r'id="([a-z0-9-]+)"', article((site / "glossary/index.html").read_text())):
        assert f'id="{term}"' in (zensical_site / "glossary/index.html").read_text(), term


def test_the_comparison_sees_a_link_gone_wrong():
    """Negative control for the link check: a link one folder too deep (what Zensical makes of a
    page-relative link, which is why the build writes links relative to the Markdown file)."""
    mine = '<a href="../../glossary/#batch">batch</a>'
    assert sorted(set(OURS.findall(mine.replace("../../", "../../../")))) != sorted(set(OURS.findall(mine)))


def tiny_project(root: Path, page: str) -> Path:
    """A one-page project with its own catalogue, which a test may edit."""
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO / "models/catalogue.yaml", root / "catalogue.yaml")
    (root / "mkdocs.yml").write_text(
        "site_name: Tiny\nsite_url: http://127.0.0.1:8000/\ntheme:\n  name: material\n"
        "plugins:\n  - explainer:\n      catalogue: catalogue.yaml\n      workers: 1\n", encoding="utf-8")
    (root / "docs/index.md").write_text(page, encoding="utf-8")
    return root / "mkdocs.yml"


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.site
def test_a_mistake_is_named_by_file_and_line_and_the_last_site_stays(tmp_path):
    config = tiny_project(tmp_path, "# Tiny\n\nThe target holds {{ params('target') / 1e9 | .1f }} billion weights.\n")
    good = zensical_build(tmp_path / "site", config)
    assert good.returncode == 0, good.stderr
    before = tree(tmp_path / "site")
    assert "70.6" in (tmp_path / "site/index.html").read_text()
    (tmp_path / "docs/index.md").write_text("# Tiny\n\nA number {{ no_such_term() }} here.\n", encoding="utf-8")
    bad = zensical_build(tmp_path / "site", config)
    assert bad.returncode == 1
    assert "docs/index.md:3:" in bad.stderr and "no_such_term" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr, bad.stderr
    assert tree(tmp_path / "site") == before


@pytest.mark.site
def test_a_rebuild_shows_changed_data_and_builds_are_reproducible(tmp_path):
    config = tiny_project(tmp_path, "# Tiny\n\nThe target holds {{ params('target') / 1e9 | .1f }} billion weights.\n")
    assert zensical_build(tmp_path / "site", config).returncode == 0
    first = tree(tmp_path / "site")
    assert zensical_build(tmp_path / "site", config).returncode == 0
    assert tree(tmp_path / "site") == first  # the same sources build the same bytes
    catalogue = tmp_path / "catalogue.yaml"
    catalogue.write_text(catalogue.read_text().replace("params: 70553706496", "params: 80553706496"), encoding="utf-8")
    result = zensical_build(tmp_path / "site", config)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site/index.html").read_text()
    assert "80.6" in page and "70.6" not in page


@pytest.fixture(scope="module")
def zensical_url(zensical_site):
    with serve(zensical_site) as url:
        yield url


@pytest.mark.browser
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_readers_see_one_picture_per_figure_then_the_live_view_under_zensical(zensical_site, zensical_url, browser,
                                                                               scheme):
    """test_pictures' first check and test_reader's naming of live views, on the Zensical build."""
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    live: dict[str, int] = {}
    try:
        for name, _ in figures_gone_live(page, zensical_url, site_pages(zensical_site), scheme, False, problems):
            path = name.split("#")[0]
            live[path] = live.get(path, 0) + 1
            if live[path] == page.locator(".eg-figure[data-eg-figure]").count():
                live_views_are_named_images(page)  # once all of the page's figures are live
    finally:
        context.close()
    assert sum(live.values()) >= 19
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_every_zensical_page_loads_cleanly_in_light_and_dark(zensical_site, zensical_url, browser):
    """test_reader's first check on the Zensical build: no console error, no failed request, no
    axe violation (its footer link needed an underline), the scheme applied."""
    loads_cleanly(browser, zensical_url, site_pages(zensical_site))


@pytest.mark.browser
def test_instant_navigation_renders_each_figure_once_under_zensical(zensical_site, zensical_url, browser):
    instant_navigation_renders_each_figure_once(browser, zensical_url, zensical_site)


@pytest.mark.browser
def test_zensical_site_works_under_a_subpath(browser, tmp_path):
    """The links Zensical rewrites (glossary, citations, CSV, the loader) must land under /inference/."""
    works_under_a_subpath(browser, tmp_path, zensical_build)
