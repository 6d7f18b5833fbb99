"""The same site built by Zensical (`make zensical`, explainer_gen/host_zensical.py).

Against the MkDocs build: the same generated files byte for byte, and in every page the same
computed numbers, the same links to figures, data, citations and glossary terms. Only the
theme's own markup may differ. Then what an author meets: a mistake named by file and line, with
no traceback, and the last good site kept; a rebuild after the data changed shows the new
numbers (Zensical alone would serve the page from its cache); two builds are identical; a
failure inside Zensical keeps the last site too. What a reader meets is checked on both hosts'
builds by the browser tests marked `hosts` (test_reader, test_pictures, test_browser*).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from explainer_gen.host_zensical import RELOAD_PATH, RELOAD_SCRIPT, ZENSICAL_ROOT
from helpers import (REPO, SITE_ORIGINS, article, env, free_port, mark_document, mkdocs_build, same_document, site_pages,
                     zensical_build)
from models import load_catalogue


def files(root: Path, under: str) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / under).rglob("*")) if p.is_file()}


# What of a page's article is the theme's, not ours: the skip-link target Zensical adds, the
# search-exclusion marks Zensical's search reads and then strips (render/markup.py), and how either
# host spaces its markup. All else in the article must be the same on both hosts.
THEME = re.compile(r'<a id="__skip" tabindex="-1"></a>| data-search-exclude(?:="")?(?=[ >])')
STATIC = re.compile(r'<svg class="eg-static".*?</svg>', re.S)
LAYOUTS = ("wide", "narrow")  # each figure's static pictures (explainer_gen/compute/layout.py)


def ours(html: str) -> str:
    """A page's article as the build wrote it, the theme's part taken out."""
    return re.sub(r"\s+", " ", THEME.sub("", article(html))).strip()


@pytest.mark.site
def test_zensical_builds_the_files_and_articles_mkdocs_builds(site, zensical_site):
    """The generated files byte for byte, and each page's article (prose, numbers, figures and
    their static pictures, citations, glossary links, Read next) alike but for the theme's part."""
    mine, theirs = files(site, "assets/explainer"), files(zensical_site, "assets/explainer")
    assert sorted(mine) == sorted(theirs)
    assert [p for p in mine if mine[p] != theirs[p]] == []
    # The feed alike but for the origin each build was told (helpers.SITE_ORIGINS).
    assert ((site / "atom.xml").read_text().replace(SITE_ORIGINS["mkdocs"], "ORIGIN/")
            == (zensical_site / "atom.xml").read_text().replace(SITE_ORIGINS["zensical"], "ORIGIN/"))
    pages = [p for p in site_pages(site) if "md-content__inner" in (site / p / "index.html").read_text()]
    assert len(pages) >= 9
    for path in pages:
        html = (site / path / "index.html").read_text()
        # every picture drawn, in both layouts (compute/layout.py)
        assert len(STATIC.findall(html)) == len(LAYOUTS) * html.count('class="eg-figure"'), path
        assert ours((zensical_site / path / "index.html").read_text()) == ours(html), path


def test_the_comparison_sees_a_link_gone_wrong():
    """Negative control: the theme's part taken out, a link one folder too deep (what Zensical
    makes of a page-relative link, which is why the build writes links relative to the Markdown
    file) or one number changed still shows."""
    page = ('<article class="md-content__inner md-typeset"><a id="__skip" tabindex="-1"></a>\n'
            '<p>It takes <span class="eg-num">12.0 ms</span>, a <a href="../../glossary/#batch">batch</a>.</p></article>')
    assert ours(page.replace("\n", "\n\n")) == ours(page)
    assert ours(page.replace("../../", "../../../")) != ours(page)
    assert ours(page.replace("12.0", "12.1")) != ours(page)


# The tiny page's number: the target's weights in billions, as the catalogue has them, and after
# a test raises them by one billion in the project's copy of the catalogue. (An edit the published
# measurements still agree with: every build checks them, models/estimate.py, and ten billion
# more would move one of them out of the estimate's band and fail the build, as it should.)
PARAMS = load_catalogue().model("llama-3-70b").params
BEFORE, AFTER = f"{PARAMS / 1e9:.1f}", f"{(PARAMS + 10**9) / 1e9:.1f}"
RAISE = (f"params: {PARAMS}", f"params: {PARAMS + 10**9}")


def tiny_project(root: Path, page: str, settings: str = "") -> Path:
    """A one-page project with its own catalogue, which a test may edit."""
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO / "models/catalogue.yaml", root / "catalogue.yaml")
    (root / "mkdocs.yml").write_text(
        "site_name: Tiny\nsite_url: http://127.0.0.1:8000/\ntheme:\n  name: material\n" + settings +
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
    assert BEFORE in (tmp_path / "site/index.html").read_text()
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
    catalogue.write_text(catalogue.read_text().replace(*RAISE), encoding="utf-8")
    result = zensical_build(tmp_path / "site", config)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site/index.html").read_text()
    assert AFTER in page and BEFORE not in page
    # The build says what it did, as a MkDocs build does: the page's one number, computed again
    # for the catalogue it reads.
    assert ("explainer: 0 figures computed (0 new, 0 code changed, 0 inputs changed), 0 read from the cache; "
            "1 number computed, 0 read from the cache") in result.stderr.splitlines(), result.stderr


# A Zensical that fails while converting, after it has written part of its output, as Zensical
# 0.0.73 does when an extension raises: a traceback, with the explainer's message last.
FAILING_ZENSICAL = """#!{python}
import pathlib, sys
out = pathlib.Path(sys.argv[sys.argv.index("-f") + 1]).parent / "site"
out.mkdir(exist_ok=True)
(out / "index.html").write_text("half a site")
print("Traceback (most recent call last):\\n  File \\"markdown/core.py\\", line 1\\n"
      "models.yamlsource.SourceError: docs/index.md:3: a mistake found while converting", file=sys.stderr)
sys.exit(1)
"""


@pytest.mark.site
def test_a_failure_while_zensical_converts_keeps_the_last_site(tmp_path):
    """Past our own collect step, Zensical itself may fail: its message is passed on without its
    traceback, the build fails, and neither its half-written output nor a staging folder is left."""
    config = tiny_project(tmp_path, "# Tiny\n\nThe target holds {{ params('target') / 1e9 | .1f }} billion weights.\n")
    assert zensical_build(tmp_path / "site", config).returncode == 0
    before = tree(tmp_path / "site")
    failing = tmp_path / "zensical"
    failing.write_text(FAILING_ZENSICAL.format(python=sys.executable), encoding="utf-8")
    failing.chmod(0o755)
    bad = zensical_build(tmp_path / "site", config, zensical=failing)
    assert bad.returncode == 1
    assert bad.stderr.strip() == "docs/index.md:3: a mistake found while converting", bad.stderr
    assert tree(tmp_path / "site") == before
    assert [p.name for p in tmp_path.iterdir() if "staging" in p.name or ".old-" in p.name] == []
    assert not (tmp_path / ZENSICAL_ROOT / "site").exists()


@pytest.mark.site
def test_pages_named_by_file_are_finished_too(tmp_path):
    """With use_directory_urls off, a page is `sub/page.html`, not `sub/page/index.html`: the
    finishing step must still find it and draw its static pictures, as MkDocs' build does."""
    config = tiny_project(tmp_path, "# Tiny\n\nSee [the figure](sub/page.md).\n", "use_directory_urls: false\n")
    (tmp_path / "docs/sub").mkdir()
    (tmp_path / "docs/sub/page.md").write_text(
        "# Sub\n\n```explainer\nfigure: kv-slots\ncaption: Requests against context\n```\n", encoding="utf-8")
    assert zensical_build(tmp_path / "zsite", config).returncode == 0
    assert mkdocs_build(tmp_path / "msite", config).returncode == 0
    theirs = article((tmp_path / "zsite/sub/page.html").read_text())
    mine = article((tmp_path / "msite/sub/page.html").read_text())
    assert len(STATIC.findall(mine)) == len(LAYOUTS)
    assert STATIC.findall(theirs) == STATIC.findall(mine)


def test_serve_rebuilds_after_a_change_and_open_pages_reload(browser, tmp_path):
    """`make zensical-serve`: an author edits the catalogue and the open page shows the new number
    without a touch; a mistake is named by file and line while the last good site stays served."""
    config = tiny_project(tmp_path, "# Tiny\n\nThe target holds {{ params('target') / 1e9 | .1f }} billion weights.\n")
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "explainer_gen.host_zensical", "serve", "-f", str(config),
                                 "-a", f"127.0.0.1:{port}"], cwd=tmp_path, env=env(), stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"

    def until(check, what: str, seconds: float = 240):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if check():
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{what} within {seconds} s; serve said:\n{log.read_text()[-3000:]}")

    def served(path: str = "") -> str:
        return urllib.request.urlopen(url + path, timeout=5).read().decode()

    context = browser.new_context()
    try:
        until(lambda: BEFORE in served(), "the site served")
        assert RELOAD_SCRIPT in served() and RELOAD_SCRIPT not in (tmp_path / "site/index.html").read_text()
        first_build = served(RELOAD_PATH.lstrip("/"))
        page = context.new_page()
        page.goto(url)
        mark_document(page)
        catalogue = tmp_path / "catalogue.yaml"
        catalogue.write_text(catalogue.read_text().replace(*RAISE),
                             encoding="utf-8")
        # The page reloads itself: for a moment between the two documents there is no body yet.
        page.wait_for_function("() => !!document.body && document.body.innerText.includes('" + AFTER + "')",
                               timeout=240_000)
        assert not same_document(page)  # the page reloaded itself
        assert served(RELOAD_PATH.lstrip("/")) != first_build
        (tmp_path / "docs/index.md").write_text("# Tiny\n\nA number {{ no_such_term() }} here.\n", encoding="utf-8")
        until(lambda: "docs/index.md:3:" in log.read_text(), "the mistake named")
        assert AFTER in served() and "Traceback" not in log.read_text()
    finally:
        context.close()
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.hosts()
def test_each_host_serves_its_own_build(host, site, base_url, named_hosts):
    """The `hosts` plumbing (tests/conftest.py) hands each test the build it names: the site
    served is the site on disk, at the origin that build was told, and it carries its own host's
    search index and not the other's."""
    assert named_hosts.fetch(base_url).decode() == (site / "index.html").read_text()
    assert f'<link rel="canonical" href="{base_url}">' in (site / "index.html").read_text()
    index = {"mkdocs": "search/search_index.json", "zensical": "search.json"}
    assert [(site / path).is_file() for name, path in index.items()] == [name == host for name in index]
