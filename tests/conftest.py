from __future__ import annotations

import pytest
from hypothesis import settings

# Property tests run on a loaded 2-core CI machine: no per-example deadline, and the same
# examples on every run, so a failure is reproducible rather than a matter of luck.
settings.register_profile("project", deadline=None, derandomize=True)
settings.load_profile("project")

from helpers import CHROMIUM, CHROMIUM_ARGS, mkdocs_build, serve


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The real mkdocs.yml, built once with --strict into a temporary folder."""
    dest = tmp_path_factory.mktemp("site")
    result = mkdocs_build(dest)
    assert result.returncode == 0, result.stderr
    return dest


@pytest.fixture(scope="session")
def base_url(site):
    with serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageWatch:
    """Console errors, page errors, failed requests and hosts contacted by one page."""

    def __init__(self, page, allowed_host: str):
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.foreign: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("requestfailed", lambda r: self.failed.append(r.url))
        page.on("request", lambda r: (r.url.split("/")[2] != allowed_host and not r.url.startswith("data:"))
                and self.foreign.append(r.url))

    def assert_clean(self):
        assert self.errors == [], self.errors
        assert self.failed == [], self.failed
        assert self.foreign == [], self.foreign


@pytest.fixture
def page(browser, base_url):
    context = browser.new_context()
    pg = context.new_page()
    pg.watch = PageWatch(pg, base_url.split("/")[2])
    yield pg
    context.close()


@pytest.fixture(scope="session")
def cat():
    """The shipped catalogue."""
    from models import load_catalogue
    return load_catalogue()


@pytest.fixture(scope="session")
def scenario(cat):
    """The site's default scenario: 70B target and 1B draft on H100s."""
    return cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
