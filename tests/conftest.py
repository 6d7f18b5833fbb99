from __future__ import annotations

import functools
import importlib
import os
import sys
import types
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests run on a loaded 2-core CI machine: no per-example deadline, and the same
# examples on every run, so a failure is reproducible rather than a matter of luck.
settings.register_profile("project", deadline=None, derandomize=True)
settings.load_profile("project")

import helpers  # noqa: E402
from helpers import HOST_BUILDS, SITE_ORIGINS, NamedHosts, launch_chromium  # noqa: E402

# Tiers: every test is in one, sorted here by what it uses, so a new test needs no mark.
#   browser  uses the `browser` or `page` fixture, or starts Playwright itself;
#   site     builds a site: uses the `site` fixture (the real site, built once per run; `base_url`
#            serves it) or makes a scratch build (helpers.mkdocs_build, copy_project, MKDOCS, or MkDocs'
#            own build in process), itself, through a function in tests/ or through a fixture;
#   unit     everything else: models, parsers, checks on strings; no browser and no build.
# `pytest -m unit` (make test-unit) is the fast tier; a mark @pytest.mark.unit/site/browser on a
# test overrides the sorting. A unit-tier test that builds a site anyway fails, naming the fix.
TIERS = ("unit", "site", "browser")
BROWSER_FIXTURES = {"browser", "page"}
SITE_FIXTURES = {"site", "base_url", "warm_cache", "mkdocs_site", "mkdocs_url", "zensical_site", "zensical_url"}
SLOW_UNIT_SECONDS = 2.0
_TESTS = Path(__file__).resolve().parent
_MISSING = object()
_TIER_KEY = pytest.StashKey[dict]()
_durations: dict[str, float] = {}  # seconds per test id, setup to teardown


# What puts a test in a tier when it calls or names it (by identity: all are module-level objects).
_TRIGGERS = {id(helpers.mkdocs_build): "site", id(helpers.zensical_build): "site", id(helpers.copy_project): "site",
             id(helpers.MKDOCS): "site", id(helpers.launch_chromium): "browser"}


def _tier_of_object(obj) -> str | None:
    tier = _TRIGGERS.get(id(obj))
    if tier:
        return tier
    module, name = getattr(obj, "__module__", None) or "", getattr(obj, "__name__", "")
    if module.startswith("mkdocs.commands"):
        return "site"
    if module.startswith("playwright") and name in ("sync_playwright", "async_playwright"):
        return "browser"
    return None


@functools.lru_cache(maxsize=None)
def _file_in_tests(filename: str) -> bool:
    return Path(filename).resolve().parent == _TESTS


def _in_tests(obj) -> bool:
    code = getattr(obj, "__code__", None)
    return code is not None and _file_in_tests(code.co_filename)


@functools.lru_cache(maxsize=None)
def _module(name: str):
    """The module a name imports inside a function: a loaded one, or one in tests/ (a helper
    module such as stats, which no test module has imported yet), imported now as the test would.
    A test module imports no other (tests/test_layout_of_tests.py)."""
    if name not in sys.modules and (_TESTS / f"{name}.py").is_file():
        importlib.import_module(name)
    return sys.modules.get(name, _MISSING)


def _may_trigger(module) -> bool:
    """Whether a module's attributes may be a trigger: the modules in tests/, MkDocs, Playwright."""
    return _file_in_tests(getattr(module, "__file__", None) or "") or module.__name__.startswith(("mkdocs", "playwright"))


def _codes(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from _codes(const)


_reached: dict = {}  # code object -> the tiers it reaches


def _reached_tiers(func, seen: set) -> set[str]:
    """The tiers of what `func` calls, following functions defined in tests/ (and the methods of
    classes defined there) and imports made inside functions. Every name a function loads as a
    global, imports or reads as an attribute is in its co_names: each is looked up as a global, as
    a module, and as an attribute of the modules found. Erring towards a heavier tier is harmless."""
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return set()
    if code in _reached:
        return set(_reached[code])
    seen.add(code)
    names = {n for c in _codes(code) for n in c.co_names}
    found = set()
    if any(n.startswith("mkdocs.commands") for n in names):  # MkDocs' own build, imported in a test
        found.add("site")
    if names & {"sync_playwright", "async_playwright"} and any(n.startswith("playwright") for n in names):
        found.add("browser")
    reached = [obj for obj in (func.__globals__.get(n, _MISSING) for n in names) if obj is not _MISSING]
    reached += [m for m in map(_module, names) if m is not _MISSING]
    for module in [obj for obj in reached if isinstance(obj, types.ModuleType) and _may_trigger(obj)]:
        reached += [getattr(module, n) for n in names if hasattr(module, n)]
    for obj in reached:
        tier = _tier_of_object(obj)
        if tier:
            found.add(tier)
        elif isinstance(obj, type) and _file_in_tests(getattr(sys.modules.get(obj.__module__), "__file__", None) or ""):
            for member in vars(obj).values():
                found |= _reached_tiers(getattr(member, "__func__", member), seen)
        elif _in_tests(obj):
            found |= _reached_tiers(obj, seen)
    _reached[code] = frozenset(found)
    return found


def tier_of(item) -> str:
    marked = [m.name for m in item.iter_markers() if m.name in TIERS]
    if marked:
        return marked[0]
    names = set(item.fixturenames)
    if names & BROWSER_FIXTURES:
        return "browser"
    found = _reached_tiers(getattr(item, "function", None), set())
    for name in names:
        for fixturedef in getattr(item, "_fixtureinfo").name2fixturedefs.get(name, ()):
            if _in_tests(fixturedef.func):
                found |= _reached_tiers(fixturedef.func, set())
    if "browser" in found:
        return "browser"
    if names & SITE_FIXTURES or "site" in found:
        return "site"
    return "unit"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by mark
def pytest_collection_modifyitems(config, items):
    tiers = config.stash.setdefault(_TIER_KEY, {})
    for item in items:
        tier = tier_of(item)
        tiers[item.nodeid] = tier
        if not item.get_closest_marker(tier):
            item.add_marker(tier)


def pytest_report_collectionfinish(config, items):
    tiers = config.stash.get(_TIER_KEY, {})
    counts = {t: sum(tiers.get(i.nodeid) == t for i in items) for t in TIERS}
    return "tiers: " + ", ".join(f"{t} {n}" for t, n in counts.items())


def pytest_runtest_setup(item):
    helpers.TIER = item.config.stash.get(_TIER_KEY, {}).get(item.nodeid)
    # The tier travels with the test's reports, so the process that prints the summary knows it:
    # under pytest-xdist that is the controller, which collects no tests itself.
    if not any(name == "tier" for name, _ in item.user_properties):
        item.user_properties.append(("tier", helpers.TIER))


def pytest_runtest_teardown(item):
    helpers.TIER = None


_tiers_seen: dict[str, str] = {}  # test id -> tier, from the reports


def pytest_runtest_logreport(report):
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == "tier" and value:
            _tiers_seen[report.nodeid] = value


def pytest_terminal_summary(terminalreporter, config):
    tiers = {**_tiers_seen, **config.stash.get(_TIER_KEY, {})}
    ran = {t: [d for n, d in _durations.items() if tiers.get(n) == t] for t in TIERS}
    if any(ran.values()):  # setup to teardown; the real site's build counts for the first test that needs it
        workers = getattr(config.option, "numprocesses", None)  # pytest-xdist's -n
        terminalreporter.write_line("time per tier: " + ", ".join(
            f"{t} {len(ds)} tests {sum(ds):.0f} s" for t, ds in ran.items() if ds)
            + (" (each test's own time, added up over the processes that ran side by side)" if workers else ""))
    slow = sorted(((d, n) for n, d in _durations.items() if tiers.get(n) == "unit" and d > SLOW_UNIT_SECONDS),
                  reverse=True)
    if slow:
        terminalreporter.write_sep("-", f"unit-tier tests slower than {SLOW_UNIT_SECONDS:g} s")
        for d, n in slow:
            terminalreporter.write_line(f"{d:6.2f}s {n}")


# The real site, as each host builds it from the same mkdocs.yml and docs/: MkDocs with the
# plugin (`make build`) and Zensical through explainer_gen.host_zensical (`make zensical`).
# Tests take `site` and `base_url`; those of a module or test marked `@pytest.mark.hosts` run once
# per host (ids `[mkdocs]`, `[zensical]`), and the rest see the MkDocs build. Each host's site is
# built once per run, whichever tests share it.
HOSTS = tuple(HOST_BUILDS)


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("hosts")
    if marker and "host" in metafunc.fixturenames:
        unknown = set(marker.args) - set(HOSTS)
        assert not unknown, f"@pytest.mark.hosts names unknown hosts {sorted(unknown)}; known: {HOSTS}"
        metafunc.parametrize("host", list(marker.args or HOSTS), indirect=True, scope="module")


def run_folder(tmp_path_factory) -> Path:
    """A folder of this run that every process of it shares: under pytest-xdist, the folder that
    holds each worker's own temporary folder; otherwise this process's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _built(tmp_path_factory, host: str) -> Path:
    """The real mkdocs.yml, built by `host` (MkDocs with --strict) once per run: the first process
    of the run to need it builds it, behind a file lock, and the others wait and read the same
    folder. A failed build marks nothing done, so each process that needs it fails on it."""
    from filelock import FileLock

    root = run_folder(tmp_path_factory) / f"built-{host}"
    root.mkdir(exist_ok=True)
    dest, done = root / "site", root / "done"
    with FileLock(str(root) + ".lock"):
        if not done.exists():
            result = HOST_BUILDS[host](dest, site_url=SITE_ORIGINS[host])
            assert result.returncode == 0, result.stderr
            done.touch()
    return dest


@pytest.fixture(scope="session")
def mkdocs_site(tmp_path_factory):
    return _built(tmp_path_factory, "mkdocs")


@pytest.fixture(scope="session")
def zensical_site(tmp_path_factory, mkdocs_site):
    # After MkDocs' build, whose cache Zensical's build then reads (both compute the same figures).
    return _built(tmp_path_factory, "zensical")


@pytest.fixture(scope="session")
def warm_cache(mkdocs_site) -> Path:
    """The cache the run's build of the real site filled: `copy_project(dest, warm_cache)` gives a
    scratch copy of the project whose first build reads what it shares with the real site."""
    assert helpers.SITE_CACHE.is_dir(), f"the real site's build left no cache at {helpers.SITE_CACHE}"
    return helpers.SITE_CACHE


@pytest.fixture(scope="session")
def named_hosts():
    """This process's server of the real site's builds, each at its own origin (helpers.NamedHosts)."""
    hosts = NamedHosts()
    yield hosts
    hosts.close()


@pytest.fixture(scope="session")
def mkdocs_url(mkdocs_site, named_hosts):
    return named_hosts.add(SITE_ORIGINS["mkdocs"], mkdocs_site)


@pytest.fixture(scope="session")
def zensical_url(zensical_site, named_hosts):
    return named_hosts.add(SITE_ORIGINS["zensical"], zensical_site)


@pytest.fixture(scope="module")
def host(request) -> str:
    """The host whose build `site` and `base_url` are: MkDocs unless the test is marked `hosts`."""
    return getattr(request, "param", "mkdocs")


@pytest.fixture(scope="module")
def site(host, request) -> Path:
    return request.getfixturevalue(f"{host}_site")


@pytest.fixture(scope="module")
def base_url(host, request) -> str:
    return request.getfixturevalue(f"{host}_url")


@pytest.fixture(scope="session")
def browser(named_hosts):
    """Chromium, reaching the real site's builds at their own origins (helpers.NamedHosts)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        try:
            b, missing = launch_chromium(p, named_hosts.chromium_args), None
        except RuntimeError as e:
            b, missing = None, str(e)
        if missing:  # no browser fails the browser tier, saying how to install one; never a skip
            pytest.fail(missing, pytrace=False)
        yield b
        b.close()


class PageWatch:
    """Console errors, page errors, failed requests and hosts contacted by one page."""

    def __init__(self, page, allowed_host: str):
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.foreign: list[str] = []
        self._pending: set = set()  # requests in flight
        self._left: set = set()     # requests in flight when the page was left (see leave)
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("requestfailed", self._failed)
        page.on("requestfinished", lambda r: self._pending.discard(r))
        page.on("request", self._request)
        self.allowed_host = allowed_host
        self._page = page

    def _request(self, r):
        if r.is_navigation_request() and r.frame == self._page.main_frame:
            # The page is being left for another address: what it still has in flight (a search
            # worker fetched late, say) belongs to it, and the navigation cancels it, which is no
            # failure. `leave` does the same when a test says it leaves; this sees every navigation,
            # including one that starts a request after `leave` and before the next address.
            self._left |= self._pending
            self._pending = set()
        self._pending.add(r)
        if r.url.split("/")[2] != self.allowed_host and not r.url.startswith("data:"):
            self.foreign.append(r.url)

    def _failed(self, r):
        self._pending.discard(r)
        if r in self._left or self._cancelled_by_leaving(r):
            return
        self.failed.append(f"{r.url} ({r.failure}, {r.resource_type})")

    def _cancelled_by_leaving(self, r) -> bool:
        """A request that a page already left had made, cancelled by the navigation away: Chromium
        can report a worker's script request after the navigation that cancels it, so it is in no
        set when the page is left. Its referrer names the page that made it."""
        referrer = (r.headers.get("referer") or "").split("#")[0]
        return ("ERR_ABORTED" in (r.failure or "") and bool(referrer)
                and referrer != (self._page.url or "").split("#")[0])

    def leave(self):
        """The page is about to go to another address: the requests still in flight belong to the
        page it leaves, and the navigation cancels them, which is no failure of either page. The
        record starts afresh for the next page."""
        self._left, self._pending = set(self._pending), set()
        self.errors.clear(), self.failed.clear(), self.foreign.clear()

    def problems(self) -> list[str]:
        """What went wrong on the page so far: errors logged, requests failed, other hosts asked."""
        return [f"{what}: {found}" for what, found in (("errors", self.errors), ("failed requests", self.failed),
                                                         ("other hosts", self.foreign)) if found]

    def assert_clean(self):
        assert self.problems() == []


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


@pytest.fixture
def figure_registry():
    """The figure kinds' REGISTRY, as it was before the test whatever the test registered."""
    from explainer_gen.compute.figures import REGISTRY
    saved = dict(REGISTRY)
    yield REGISTRY
    REGISTRY.clear()
    REGISTRY.update(saved)
