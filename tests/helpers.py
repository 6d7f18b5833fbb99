"""Shared test helpers: build the site, serve it on 127.0.0.1, read built pages, find Chromium, read
what a live figure draws. Every helper that more than one test module uses is here (or, for the
statistical checks of the samplers, in tests/stats.py): no test module imports another."""
from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import io
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import textwrap
import sys
import threading
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]
DEBIAN_CHROMIUM = "/usr/bin/chromium"
# Debian's Chromium needs these flags to run headless as root; Playwright's own accepts them too.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
# Variables naming a Chromium for the browser tier, ours first; Playwright itself reads none, but
# PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH is the name other Playwright tools use.
CHROMIUM_VARIABLES = ("EXPLAINER_CHROMIUM", "PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH")
INSTALL_CHROMIUM = (
    "The browser tests need Chromium. Install Playwright's own with\n"
    "    .venv/bin/python -m playwright install chromium\n"
    "(on Debian or Ubuntu `apt-get install chromium` also works), or point EXPLAINER_CHROMIUM at a "
    "Chromium or Chrome executable.")


def find_chromium() -> tuple[str | None, str]:
    """The Chromium the browser tier drives, and where that choice came from. In order:
    $EXPLAINER_CHROMIUM (or $PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH); Playwright's own when
    $PLAYWRIGHT_BROWSERS_PATH says where `playwright install` put it; Debian's /usr/bin/chromium;
    else Playwright's own from its default folder. None means Playwright's own: launch without
    executable_path, as after `python -m playwright install chromium`."""
    for name in CHROMIUM_VARIABLES:
        if os.environ.get(name):
            return os.environ[name], f"${name}"
    if os.environ.get("PLAYWRIGHT_BROWSERS_PATH"):
        return None, "Playwright's own Chromium (in $PLAYWRIGHT_BROWSERS_PATH)"
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM, "Debian's Chromium"
    return None, "Playwright's own Chromium"


# Kept for benchmarks/bench.py: a path, or None for Playwright's own Chromium.
CHROMIUM, CHROMIUM_SOURCE = find_chromium()


def launch_chromium(playwright, extra_args: list[str] = (), **options):
    """Launch the Chromium find_chromium() names, with CHROMIUM_ARGS; fails saying how to install
    one when there is none (a missing browser must fail the browser tier, never skip it)."""
    if CHROMIUM and not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"{CHROMIUM_SOURCE} names {CHROMIUM}, which is not an executable file.\n"
                           + INSTALL_CHROMIUM)
    try:
        return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + list(extra_args), **options)
    except Exception as e:
        missing = re.search(r"Executable doesn't exist at (\S+)", str(e))
        if CHROMIUM is None and missing:
            raise RuntimeError(f"No Chromium found: {CHROMIUM_VARIABLES[0]} is not set, "
                               + ("" if "BROWSERS_PATH" in CHROMIUM_SOURCE else f"there is no {DEBIAN_CHROMIUM}, ")
                               + f"and {CHROMIUM_SOURCE} is not installed (no {missing.group(1)}).\n"
                               + INSTALL_CHROMIUM) from None
        raise


def playwright_chromium() -> str | None:
    """The executable of Playwright's own Chromium if `playwright install chromium` has put it there."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        path = p.chromium.executable_path
    return path if path and os.path.exists(path) else None


def env() -> dict[str, str]:
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


# The running test's tier, set by conftest.py: a build in the unit tier is a mistake in the sorting.
TIER: str | None = None


def mkdocs_build(dest: Path, config: Path = REPO / "mkdocs.yml", strict: bool = True,
                 cwd: Path | None = None, process: bool = False, site_url: str | None = None
                 ) -> subprocess.CompletedProcess:
    """`mkdocs build -q -f config -d dest [--strict]`, run from `cwd` (the config's folder): its
    exit status, what it printed and where. In this process by default, through MkDocs' own
    `load_config` and `build` as the command line calls them (see _mkdocs_in_process), which
    saves the new interpreter's start-up (about 2 s a build); `process=True` runs the command
    itself, for the tests about what the command does (its exit status, no traceback). `site_url`
    sets the SITE_URL that mkdocs.yml reads (`!ENV`)."""
    assert TIER != "unit", ("a unit-tier test builds a site: conftest.py did not see the build "
                            "(tiers come from what a test calls); mark the test @pytest.mark.site")
    cmd = MKDOCS + ["build", "-q", "-f", str(config), "-d", str(dest)] + (["--strict"] if strict else [])
    environment = {**env(), **({"SITE_URL": site_url} if site_url else {})}
    if process:
        return subprocess.run(cmd, capture_output=True, text=True, env=environment, cwd=cwd or config.parent)
    return _mkdocs_in_process(cmd, config, dest, strict, cwd or config.parent, environment)


def serve_build(dest: Path, config: Path) -> subprocess.CompletedProcess:
    """One of `mkdocs serve`'s builds, in this process: the plugins start up for `serve` and MkDocs
    keeps the explainer plugin (it has `on_startup`) and what it holds from one such build to the
    next, as the command does between saves. Warnings are printed (to the result's stderr), as
    `mkdocs serve` prints them."""
    assert TIER != "unit", "a unit-tier test builds a site: mark it @pytest.mark.site"
    cmd = MKDOCS + ["serve", "-f", str(config)]
    return _mkdocs_in_process(cmd, config, dest, False, config.parent, env(), "serve", logging.WARNING)


class _Log(logging.Formatter):
    """MkDocs' log lines as its command line prints them without a terminal: `LEVEL   -  text`."""

    def format(self, record):
        return f"{record.levelname:<8}-  {super().format(record)}"


def _mkdocs_in_process(cmd: list[str], config: Path, dest: Path, strict: bool, cwd: Path,
                       environment: dict[str, str], command: str = "build",
                       level: int = logging.ERROR) -> subprocess.CompletedProcess:
    """What `mkdocs build -q` (mkdocs/__main__.py: build_command) does, in this process: the
    `mkdocs` logger at ERROR (-q) printing to stderr, the config loaded with the command's
    options, the plugins' start-up, the build, and each way the command ends: an Abort's message
    on stdout (click's echo) and status 1, another ClickException as `Error: ...` on stderr, and
    any other exception as a traceback on stderr with status 1. The working folder, the
    environment and the logger are put back after, so a build leaves nothing to the next (the
    plugin pins SOURCE_DATE_EPOCH in the environment, as it does in its own process)."""
    import click
    from mkdocs import config as mkdocs_config, exceptions
    from mkdocs.commands import build

    logger = logging.getLogger("mkdocs")
    saved = (logger.level, logger.propagate, list(logger.handlers), dict(os.environ), os.getcwd())
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(_Log())
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    code = 0
    try:
        os.chdir(cwd)
        os.environ.update(environment)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cfg = mkdocs_config.load_config(config_file=str(config), site_dir=str(dest),
                                                strict=True if strict else None)
                cfg.plugins.on_startup(command=command, dirty=False)
                try:
                    build.build(cfg, dirty=False)
                finally:
                    cfg.plugins.on_shutdown()
            except exceptions.Abort as e:
                e.show()
                code = e.code
            except click.ClickException as e:
                e.show()
                code = e.exit_code
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.handlers[:] = saved[2]
        os.environ.clear()
        os.environ.update(saved[3])
        os.chdir(saved[4])
    return subprocess.CompletedProcess(cmd, code, out.getvalue(), err.getvalue())


ZENSICAL_HOST = [sys.executable, "-m", "explainer_gen.host_zensical", "build"]


def zensical_build(dest: Path, config: Path = REPO / "mkdocs.yml", zensical: Path | None = None,
                   site_url: str | None = None) -> subprocess.CompletedProcess:
    """The site of `config` built by Zensical (`make zensical`) into `dest`; `zensical` stands in
    for the zensical command; `site_url` as mkdocs_build's."""
    assert TIER != "unit", "a unit-tier test builds a site: mark it @pytest.mark.site"
    command = ZENSICAL_HOST + ["-f", str(config), "-d", str(dest)] + (["--zensical", str(zensical)] if zensical else [])
    environment = {**env(), **({"SITE_URL": site_url} if site_url else {})}
    return subprocess.run(command, capture_output=True, text=True, env=environment, cwd=config.parent, timeout=900)


# Each host's build of a config into a folder, by the name `@pytest.mark.hosts` uses (conftest.py).
HOST_BUILDS = {"mkdocs": mkdocs_build, "zensical": zensical_build}


def with_plugin_options(base: Path, dest: Path, **options) -> Path:
    """`dest`: the MkDocs config `base` with the explainer plugin's options set (values as YAML)."""
    text = base.read_text()
    assert "\n  - explainer\n" in text, f"{base} lists the plugin as `- explainer`"
    dest.write_text(text.replace("\n  - explainer\n", "\n  - explainer:\n" + "".join(
        f"      {k}: {json.dumps(v)}\n" for k, v in options.items())))
    return dest


def scratch_docs(root: Path, pages: dict[str, str]) -> Path:
    """`root/docs` holding `pages` (path -> Markdown) and the site's bibliography and glossary, which
    every build reads: a docs folder for a SiteBuild made by hand, with no MkDocs."""
    from explainer_gen.sources.crossref import BIB_PATH, GLOSSARY_PATH

    docs = root / "docs"
    for support in (BIB_PATH, GLOSSARY_PATH):
        (docs / support).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "docs" / support, docs / support)
    for path, text in pages.items():
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        (docs / path).write_text(text)
    return docs


# The cache the real site's build fills (the plugin's default cache_dir beside mkdocs.yml).
SITE_CACHE = REPO / ".cache" / "explainer"


def copy_project(dest: Path, cache: Path | None = None, only: tuple[str, ...] | None = None) -> Path:
    """A scratch copy of the site sources (docs, mkdocs.yml) that tests may edit. With `cache`
    (the `warm_cache` fixture: the run's own build of the real site has filled it), the copy
    starts with that cache's entries in its own `.cache/explainer`, so its first build reads
    every figure and number it shares with the real site instead of computing them again. The
    entries are hard links where the file system allows: the cache writes each entry whole to a
    new file and renames it into place, so an entry is never changed in place and a link is as
    good as a copy. Without `cache` the copy starts cold, for the tests about a first build.

    With `only` (explainer pages by their path under docs/, e.g. "explainers/roofline.md"), the
    copy keeps those pages whole and makes every other explainer page a stub (stub_explainer):
    a site with the same pages, links and headings whose build computes the named pages' figures
    and numbers alone, for a test that needs a whole build of a site but not of all of this one
    (a cold build of the real site is about a minute of one core's time)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "docs", dest / "docs")
    shutil.copy(REPO / "mkdocs.yml", dest / "mkdocs.yml")
    if only is not None:
        pages = {p.relative_to(dest / "docs").as_posix(): p for p in (dest / "docs" / "explainers").glob("*.md")}
        assert set(only) <= set(pages), f"no such explainer pages: {sorted(set(only) - set(pages))}"
        for name, path in pages.items():
            if name not in only:
                path.write_text(stub_explainer(path.read_text()))
    if cache is not None:
        link_tree(cache, dest / ".cache" / "explainer")
    return dest


def stub_explainer(text: str) -> str:
    """An explainer page's Markdown cut down to what the rest of the site reads of it: its title
    and description (the home page's list, other pages' "Read next"), its headings and its
    figures' anchors (`pages.figure_anchor`), which a link may name. No
    `explainer:` front matter, no `read_next`, no fences, no inline numbers, no citations and no
    glossary terms: nothing to compute and nothing that names another page, so a site of stubs
    still builds with --strict."""
    import yaml

    from explainer_gen.compute.pages import figure_anchor
    from explainer_gen.sources.markdown import FENCE_NAME, scan_fences, split_front_matter

    front, offset = split_front_matter(text)
    meta = yaml.safe_load(front) if front is not None else {}
    lines = text.split("\n")
    fences, inside = scan_fences(lines)
    figures = {f.line - 1: yaml.safe_load(f.body)["figure"] for f in fences if f.lang == FENCE_NAME}
    out, seen = [], {}
    for i, line in enumerate(lines):
        if i in figures:
            kind = figures[i]
            n = seen[kind] = seen.get(kind, 0) + 1
            out.append(f'<span id="{figure_anchor(kind, n)}"></span>')
        elif i >= offset and i not in inside and re.match(r"#{1,6} ", line):
            assert "{{" not in line and "[" not in line, f"a heading a stub cannot keep as it is: {line}"
            out.append(f"{line}\n\nA stand-in for this page: the scratch site computes none of it.")
    kept = {k: meta[k] for k in ("title", "description") if k in meta}
    return "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in kept.items()) + "---\n\n" + "\n\n".join(out) + "\n"


def copy_code(project: Path) -> Path:
    """The models and the generator copied into `project`, to be run from there (first on
    PYTHONPATH) and edited there without touching the repository's."""
    for package in ("models", "explainer_gen"):
        shutil.copytree(REPO / package, project / package, ignore=shutil.ignore_patterns("__pycache__"))
    return project


def link_tree(source: Path, dest: Path) -> Path:
    """`source` copied to `dest` as hard links (copies where links cannot be made)."""
    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    shutil.copytree(source, dest, copy_function=link)
    return dest


@functools.lru_cache(maxsize=256)
def _gzipped(path: str, mtime_ns: int, size: int) -> bytes:
    """A file's gzip body, once per version of the file (the Vega bundle is 1.7 MB)."""
    return gzip.compress(Path(path).read_bytes(), mtime=0)


class _Pages(http.server.SimpleHTTPRequestHandler):
    """Serves a folder the way GitHub Pages serves a site: HTTP/1.1, so a browser keeps its
    connection open and sends a page's requests down it (Pages speaks HTTP/2, which likewise
    needs one connection; Python's HTTP/1.0 default opens one per request, which Lighthouse's
    simulated network charges a round trip or three each), and text gzip-compressed when the
    browser accepts it. A folder's URL without its trailing slash is redirected, as on Pages."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # seconds an idle kept-alive connection stays open
    compress = True
    TEXT = (".html", ".css", ".js", ".json", ".svg", ".csv", ".xml", ".txt")

    def log_message(self, *args):  # keep test output readable
        pass

    def end_headers(self):
        # As GitHub Pages does: every file may be reused for ten minutes without asking again, so
        # a reader's second page takes the theme's and Vega's scripts from the browser's cache.
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            if not self.path.split("?", 1)[0].split("#", 1)[0].endswith("/"):
                return super().send_head()  # the redirect to the folder's URL
            path = os.path.join(path, "index.html")
        if not (self.compress and "gzip" in self.headers.get("Accept-Encoding", "")
                and path.endswith(self.TEXT) and os.path.isfile(path)):
            return super().send_head()
        st = os.stat(path)
        body = _gzipped(path, st.st_mtime_ns, st.st_size)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(int(st.st_mtime)))
        self.end_headers()
        return io.BytesIO(body)


class _Identity(_Pages):
    compress = False


@contextlib.contextmanager
def serve(directory: Path, prefix: str = "", compress: bool = True):
    """Serve `directory` at http://127.0.0.1:PORT/prefix/ as GitHub Pages would (see _Pages:
    HTTP/1.1 keep-alive, gzip; `compress=False` sends every file as is); yields the base URL."""
    root = Path(directory)
    if prefix:
        # Serve from a parent folder in which the site sits under the prefix.
        parent = root.parent / f"_served_{root.name}"
        target = parent / prefix.strip("/")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(root.resolve(), target_is_directory=True)
        root = parent
    handler = functools.partial(_Pages if compress else _Identity, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a thread per connection
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        yield base + (prefix.strip("/") + "/" if prefix else "")
    finally:
        server.shutdown()
        server.server_close()


# The real site as the browser tests load it: each host's build is told its own origin (site_url),
# and the browser reaches that origin on one server of this process (`NamedHosts`). A page's origin
# is then its site's, as it is for a reader, and Material's instant navigation runs: for a site
# whose site_url names another origin, it loads every link as a new page.
NAMED_DOMAIN = "explainer.test"  # a name no resolver answers for (RFC 2606): only the mapping below
SITE_ORIGINS = {"mkdocs": f"http://mkdocs.{NAMED_DOMAIN}/", "zensical": f"http://zensical.{NAMED_DOMAIN}/"}


class NamedHosts:
    """A server (as `serve`'s) at 127.0.0.1 for each origin of SITE_ORIGINS, on a port of its own,
    serving the folder `add` gives it. `chromium_args` map each origin's name to its server, in a
    browser launched with them; `direct` turns a URL under NAMED_DOMAIN into its server's, for a
    reader without that mapping (this process, and Playwright's own fetch in a route)."""

    current: "NamedHosts | None" = None  # this process's, for `direct`

    def __init__(self):
        from urllib.parse import urlsplit

        self.sites: dict[str, str] = {}
        self.servers: dict[str, http.server.ThreadingHTTPServer] = {}
        for origin in SITE_ORIGINS.values():
            name = urlsplit(origin).hostname
            sites = self.sites

            class Named(_Pages):
                def parse_request(self, name=name):
                    ok = super().parse_request()
                    if ok:  # a folder that does not exist until the site is added
                        self.directory = sites.get(name, "/nonexistent")
                    return ok

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Named, directory="/nonexistent"))
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.servers[name] = server
        self.chromium_args = ["--host-resolver-rules=" + ", ".join(
            f"MAP {name}:80 127.0.0.1:{server.server_address[1]}" for name, server in self.servers.items())]
        NamedHosts.current = self

    def add(self, origin: str, directory: Path) -> str:
        """Serve `directory` at `origin` (one of SITE_ORIGINS); returns the origin."""
        from urllib.parse import urlsplit

        self.sites[urlsplit(origin).hostname] = str(directory)
        return origin

    def direct(self, url: str) -> str:
        """`url` at its server's own address: http://127.0.0.1:PORT/... (other URLs as they are)."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        server = self.servers.get(parts.hostname or "")
        return url if server is None else parts._replace(netloc=f"127.0.0.1:{server.server_address[1]}").geturl()

    def fetch(self, url: str) -> bytes:
        """The body at `url`, read as a browser with `chromium_args` would."""
        import urllib.request

        return urllib.request.urlopen(self.direct(url), timeout=10).read()

    def close(self) -> None:
        for server in self.servers.values():
            server.shutdown()
            server.server_close()
        NamedHosts.current = None


def direct(url: str) -> str:
    """`url` at its server's own address (NamedHosts.direct), for a page a test rewrites through a
    route. Chromium counts a document that a route fulfils as public, and a public page may not
    load its files from 127.0.0.1 (Local Network Access); at the server's address it is a loopback
    page, whose files load as they do for a page of the site."""
    hosts = NamedHosts.current
    return hosts.direct(url) if hosts is not None else url


def route_fetch(route):
    """`route.fetch()` for a page of the real site: Playwright fetches from its own process, which
    knows no NAMED_DOMAIN name, so the request goes to the server's own address."""
    hosts = NamedHosts.current
    return route.fetch(url=hosts.direct(route.request.url)) if hosts is not None else route.fetch()


def article(html: str) -> str:
    """The page's article content, without Material's chrome."""
    m = re.search(r'<article class="md-content__inner md-typeset">(.*?)</article>', html, re.S)
    assert m, "no article in page"
    return m.group(1)


def numbers_in(html: str) -> list[str]:
    return re.findall(r'<span class="eg-num"[^>]*>([^<]*)</span>', html)


# The theme's bundle, as both hosts name it in a built page.
THEME_BUNDLE = re.compile(r"assets/javascripts/bundle\.[0-9a-f]+\.min\.js")


def wait_for_events(page, check, seconds: float = 2.0) -> None:
    """Wait, at most `seconds`, until `check()` holds, where what it reads is filled by Playwright's
    events (a request seen, a route held, a console message): on a loaded machine those reach this
    process a moment after the page acted, and each short wait lets them in. The caller asserts."""
    for _ in range(max(1, round(seconds / 0.02))):
        if check():
            return
        page.wait_for_timeout(20)


def wake_loader(page) -> None:
    """Act on the page as a reader first does (the pointer moves over it), which makes the loader
    read the page's state (it waits for that, unless the URL carries a state), and wait until it
    has."""
    page.mouse.move(3, 3)
    page.mouse.move(12, 12)
    page.wait_for_function("() => window.explainerGen && window.explainerGen.state()")


def wait_for_figures(page) -> int:
    """Reach for every figure on the page, as a reader's pointer does, and wait until each
    is a live chart that has drawn (until then each shows its static image): the loader lists
    it as live, which it does once Vega's first run, and so its first drawing, is done, and the
    view's drawing surface (a canvas, or an SVG) is displayed with an area."""
    figures = page.locator(".eg-figure")
    n = figures.count()
    for i in range(n):
        figures.nth(i).hover()
        page.wait_for_function("""f => {
            const live = window.explainerGen && window.explainerGen.figures().some(x => x.el === f);
            const marks = f.querySelector('.eg-view .marks');
            if (!live || !marks) return false;
            const box = marks.getBoundingClientRect();
            return box.width > 0 && box.height > 0 && getComputedStyle(marks).visibility === 'visible'
                && (marks.tagName !== 'CANVAS' || (marks.width > 0 && marks.height > 0));
        }""", arg=figures.nth(i).element_handle())
    if not n:
        page.wait_for_load_state("networkidle")
    return n


if __name__ == "__main__":
    # `python tests/helpers.py` (the Makefile's `chromium` target): which Chromium the browser tier
    # will drive. Exit 0: found; 1: none configured and none installed; 2: a variable names a
    # Chromium that is not there.
    if CHROMIUM:
        found, problem = (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None,
                          f"{CHROMIUM_SOURCE} names {CHROMIUM}, which is not an executable file.")
    else:
        found, problem = playwright_chromium(), f"No Chromium found: {CHROMIUM_SOURCE} is not installed."
    if found:
        print(f"Browser tests: {CHROMIUM_SOURCE}, {found}")
        sys.exit(0)
    print(problem + "\n" + INSTALL_CHROMIUM, file=sys.stderr)
    sys.exit(1 if CHROMIUM_SOURCE == "Playwright's own Chromium" else 2)


def page_html(site: Path, name: str) -> str:
    return (site / "explainers" / name / "index.html").read_text()


def figure(site: Path, name: str, anchor: str) -> tuple[str, dict, Path]:
    """An explainer page's HTML, the JSON of one of its figures (by anchor), and that JSON's path."""
    html = page_html(site, name)
    m = re.search(rf'<figure class="eg-figure" id="{anchor}"[^>]*data-eg-figure="([^"]+)"', html)
    assert m, f"{anchor} missing from {name}"
    path = (site / "explainers" / name / m.group(1)).resolve()
    return html, json.loads(path.read_text()), path


def cols_of(payload: dict) -> dict[str, np.ndarray]:
    """A figure JSON's default-scenario columns as arrays."""
    return {k: np.array(v) for k, v in payload["data"].items()}



# -- the built site's pages and figures ----------------------------------------------------------

def site_pages(site: Path) -> list[str]:
    """Every HTML page of the site, as a path relative to its root ('' is the home page)."""
    out = []
    for p in sorted(site.rglob("index.html")):
        rel = p.parent.relative_to(site)
        if rel.parts and rel.parts[0] in ("assets", "search"):
            continue
        out.append("" if rel == Path(".") else rel.as_posix() + "/")
    return out


def figure_pages(site: Path) -> list[str]:
    return [p for p in site_pages(site) if 'class="eg-figure"' in (site / p / "index.html").read_text()]


def anchors(site, name: str) -> list[str]:
    """The figures of a built explainer page, by anchor, in page order."""
    return re.findall(r'<figure class="eg-figure" id="([^"]+)"', page_html(site, name))


def figures_of(site, path: str) -> list[tuple[str, list[str]]]:
    """(anchor, slider labels) of each figure of the built page, in page order."""
    import html

    page = (site / path / "index.html").read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r'<figure class="eg-figure" id="([^"]+)"', page):
        block = page[m.start():page.index("</figure>", m.start())]
        controls = block[block.index('class="eg-controls"'):] if 'class="eg-controls"' in block else ""
        labels = [html.unescape(t) for t in re.findall(r"<label for=\"[^\"]+\">([^<]+)</label>", controls)]
        assert len(labels) == controls.count('type="range"'), f"{m.group(1)}: a slider whose label was not read"
        out.append((m.group(1), labels))
    return out


def _default_budget() -> int:
    from explainer_gen.config import ExplainerConfig

    return dict(ExplainerConfig._schema)["data_budget_kb"].default * 1000


# Bytes of gzipped default-scenario data, all of a page's figures together: the plugin's own default.
FIGURE_DATA_BUDGET = _default_budget()


def assert_figures_have_svg_table_and_csv(site: Path, name: str) -> None:
    """Every figure of the built explainer page `name` has its static SVG (labelled), a data table
    with at least two rows and a CSV download with a row per point of its default data
    (tests/test_roofline_batching_kv_pages.py runs it on every page, test_figure_kinds.py on the
    worked example's)."""
    import csv

    for anchor in anchors(site, name):
        html, payload, _ = figure(site, name, anchor)
        block = re.search(rf'<figure class="eg-figure" id="{anchor}".*?</figure>', html, re.S).group(0)
        base = site / "explainers" / name
        assert re.search(r'<svg class="eg-static"[^>]* role="img" aria-labelledby="([^"]+)"', block), anchor
        table = re.search(r"<table>.*?</table>", block, re.S).group(0)
        assert len(re.findall(r'<th scope="row">', table)) >= 2, anchor
        csv_href = re.search(r'<a href="([^"]+\.csv)" download', block).group(1)
        rows = list(csv.DictReader(io.StringIO((base / csv_href).read_text())))
        assert len(rows) == len(next(iter(payload["data"].values()))), anchor


def assert_figure_data_within_budget(site: Path, name: str) -> None:
    """The default-scenario data of all the figures of the built explainer page `name`, gzipped,
    is under FIGURE_DATA_BUDGET (run as assert_figures_have_svg_table_and_csv is)."""
    total = 0
    for anchor in anchors(site, name):
        _, payload, _ = figure(site, name, anchor)
        text = json.dumps(payload["data"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        total += len(gzip.compress(text.encode(), mtime=0))
    assert total < FIGURE_DATA_BUDGET


# -- figure descriptions -------------------------------------------------------------------------

def page_figures(path: Path, cat) -> list:
    """(request, artefacts) for every figure on the page, computed without a cache."""
    from explainer_gen.compute.artifacts import build_figure
    from explainer_gen.compute.pages import build_page

    made = []

    def figure(req):
        made.append((req, build_figure(req, cat)))
        return made[-1][1]
    build_page(path.read_text(), str(path), cat, figure, 10**9, lambda identity, make: make())
    return made


def assert_descriptions_agree(path: Path, cat) -> None:
    """Every figure of the page at `path` describes every grid point as its kind's facts there:
    `describe_positions` finds each field's sliders by moving one slider at a time; here every
    combination of slider positions is evaluated directly, so a field that changes only when two
    sliders move together would be caught (tests/test_descriptions.py runs it on every explainer
    page, tests/test_figure_kinds.py on the worked example's page too)."""
    import itertools

    from explainer_gen.compute.artifacts import template_fields, text_at
    from explainer_gen.compute.figures import REGISTRY
    from explainer_gen.compute.resolved import resolve

    for req, art in page_figures(path, cat):
        kind = REGISTRY[req.kind]
        fields = template_fields(kind.description)
        axes = list(req.sliders.values())
        for scenario in req.scenarios[:2]:
            r = resolve(scenario, cat)
            cols = kind.compute(r, {s.name: s.values() for s in axes})
            compact = art.describe["values"][scenario.key]
            for combo in itertools.product(*(s.values() for s in axes)):
                position = {s.name: float(v) for s, v in zip(axes, combo)}
                at = np.ones(len(next(iter(cols.values()))), dtype=bool)
                for s in axes:
                    at &= abs(cols[s.name] - position[s.name]) < s.step / 2
                want = kind.facts(cols, at, r, position)
                got = {f: text_at(compact[f], position, req.sliders) for f in fields}
                assert got == {f: str(want[f]) for f in fields}, (req.kind, scenario.key, position)


# -- a scratch site of one page, for the build's error messages ----------------------------------

SCRATCH_CONFIG = """\
site_name: error test
theme: {name: material, font: false}
plugins: [explainer]
markdown_extensions: [pymdownx.superfences]
"""


def build_scratch_page(tmp_path: Path, markdown: str, strict: bool = False, config: str = SCRATCH_CONFIG):
    """MkDocs' build of a scratch site in `tmp_path`: `config` as its mkdocs.yml, a home page and
    docs/page.md holding `markdown` (dedented)."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text(config)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "page.md").write_text(textwrap.dedent(markdown))
    return mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=strict)


def assert_build_fails(result, line: int, *needles: str):
    """The build failed, naming docs/page.md and `line`, saying each of `needles`, with no traceback."""
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"docs/page.md:{line}:" in out, out
    for needle in needles:
        assert needle in out, out
    assert "Traceback" not in out, out


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- what a live figure draws, read in the browser -----------------------------------------------

# What a live figure draws, read from Vega's scenegraph, which its renderer (a canvas, or SVG)
# paints item by item: for every item of every mark, its geometry, path, text and paint. Empty
# when the figure is not live.
# The body of a function of a figure's id that starts from its live view (`fig`), or returns ''.
LIVE_FIGURE = """
  const el = document.getElementById(id);
  const fig = window.explainerGen && window.explainerGen.figures().find(f => f.el === el);
  if (!fig) return '';"""
DRAWING = "id => {" + LIVE_FIGURE + """
  const out = [];
  const walk = mark => {
    out.push(mark.marktype + ':' + (mark.role || ''));
    for (const it of mark.items || []) {
      out.push([it.x, it.y, it.x2, it.y2, it.width, it.height, it.size, it.angle, it.opacity,
                typeof it.path === 'string' ? it.path : '', it.text, it.fill, it.stroke].join(','));
      for (const m of it.items || []) walk(m);
    }
  };
  walk(fig.result.view.scenegraph().root);
  return out.join('|');
}"""

# Resolves once the figure's view has finished any run, and so drawn what its scenegraph holds.
SETTLED = """async id => {
  const el = document.getElementById(id);
  await window.explainerGen.figures().find(f => f.el === el).result.view.runAsync();
}"""

# The text a live view draws, read from Vega's scenegraph, which its renderer (a canvas, or SVG)
# paints item by item: each text item's role, text, fill and font, and its box on the page in CSS
# pixels (item bounds are in their group's frame, offset by the groups above, the view's origin
# and its padding).
LIVE_TEXTS = """f => {
  const fig = window.explainerGen && window.explainerGen.figures().find(x => x.el === f);
  const marks = f.querySelector('.eg-view .marks');
  if (!fig || !marks) return [];
  const view = fig.result.view, r = marks.getBoundingClientRect();
  const natural = marks.tagName === 'CANVAS' ? marks.width / (marks.getContext('2d').pixelRatio || 1)
                                              : +marks.getAttribute('width');
  const k = r.width / natural, pad = view.padding(), out = [];
  const ox = view.origin()[0] + pad.left, oy = view.origin()[1] + pad.top;
  const walk = (mark, dx, dy) => {
    for (const it of mark.items || []) {
      if (mark.marktype === 'text' && String(it.text ?? '').trim() && it.bounds && (it.opacity ?? 1) > 0) {
        const b = it.bounds;
        out.push({role: mark.role, text: String(it.text), fill: it.fill, font: it.font || '',
                  size: k * (it.fontSize ?? 11),  // Vega's default size, as drawn
                  left: r.left + k * (ox + dx + b.x1), top: r.top + k * (oy + dy + b.y1),
                  right: r.left + k * (ox + dx + b.x2), bottom: r.top + k * (oy + dy + b.y2)});
      }
      for (const child of it.items || []) walk(child, dx + (it.x || 0), dy + (it.y || 0));
    }
  };
  walk(view.scenegraph().root, 0, 0);
  return out;
}"""

# Resolves once the page has drawn two more frames: whatever changed before it has been laid out
# and painted, and what observes a frame (the layout shifts' observer) has reported on it.
PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"

BACKGROUND = "() => getComputedStyle(document.body).backgroundColor.match(/\\d+/g).slice(0, 3).map(Number)"


def screenshot_rgb(page, clip: dict) -> np.ndarray:
    """A region of the page (CSS pixels) as displayed: an RGB array at the screen's resolution."""
    from PIL import Image

    png = page.screenshot(clip=clip, animations="disabled")
    # The PNG's samples as stored, with no colour management (Chromium writes sRGB, which the
    # page's colours are in): what the screen displays, pixel for pixel.
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB")).astype(np.int16)


# A live figure's view scrolled to the middle of the window at once (the theme scrolls smoothly,
# which would move the labels under a screenshot), and what reading its labels' colour takes: the
# text it draws (LIVE_TEXTS), the screen's pixel ratio and the page's background.
LABELS_IN_VIEW = ("f => { f.querySelector('.eg-view .marks').scrollIntoView({block: 'center', behavior: 'instant'});"
                  " return {texts: (" + LIVE_TEXTS + ")(f), scale: devicePixelRatio, bg: (" + BACKGROUND + ")()}; }")


def live_label_colour(page, fig, role: str = "axis-label", in_view: dict | None = None) -> tuple[set[str], str | None]:
    """A live figure's labels of `role`: the fills Vega paints them with (its scenegraph), and the
    colour displayed, read from a screenshot: the commonest colour among the labels' strongly
    inked pixels (at least half as far from the page background as the farthest). Anti-aliasing
    mixes a glyph's colour with the background behind it, so the pixels a glyph covers fully,
    the commonest of the inked ones, show the colour itself. Read on a screen of devicePixelRatio
    2, where full pixels are most of a label's ink (at 1 a thin label may have none).

    `in_view` is what LABELS_IN_VIEW returned for the figure, if the caller has already read it
    (in the same evaluate as its own checks); otherwise it is read here."""
    in_view = in_view or fig.evaluate(LABELS_IN_VIEW)
    labels = [t for t in in_view["texts"] if t["role"] == role]
    if not labels:
        return set(), None
    x0, y0 = max(0, int(min(t["left"] for t in labels)) - 1), max(0, int(min(t["top"] for t in labels)) - 1)
    x1, y1 = int(max(t["right"] for t in labels)) + 2, int(max(t["bottom"] for t in labels)) + 2
    scale = in_view["scale"]
    img = screenshot_rgb(page, {"x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0})
    bg = np.array(in_view["bg"], np.int16)
    ink = np.concatenate([img[int((t["top"] - y0) * scale):int(np.ceil((t["bottom"] - y0) * scale)),
                              int((t["left"] - x0) * scale):int(np.ceil((t["right"] - x0) * scale))].reshape(-1, 3)
                          for t in labels])
    fills = {t["fill"].lower() for t in labels}
    strength = np.abs(ink - bg).max(axis=1)
    if not len(ink) or not strength.max():
        return fills, None
    strong = ink[strength >= strength.max() / 2]
    packed = strong[:, 0].astype(np.int32) << 16 | strong[:, 1].astype(np.int32) << 8 | strong[:, 2]
    values, counts = np.unique(packed, return_counts=True)
    return fills, "#%06x" % int(values[counts.argmax()])


# The page's tab stops after the focused element, in the order Tab visits them when no element has
# a positive tabindex (document order); for each, its index among the elements `selector` matches,
# or -1. `tab_to_each` presses Tab as many times as it takes to reach the next of those elements
# without asking the page after each press.
TAB_STOPS = """selector => {
  const from = document.activeElement || document.body, targets = [...document.querySelectorAll(selector)];
  const focusable = 'a[href], area[href], button, input, select, textarea, summary, iframe, [tabindex], [contenteditable="true"]';
  const stops = [...document.querySelectorAll(focusable)].filter(e => e.tabIndex >= 0 && !e.disabled
      && !e.closest('[inert]') && e.checkVisibility({visibilityProperty: true})
      && (from.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING));
  return {positive: stops.some(e => e.tabIndex > 0), stops: stops.map(e => targets.indexOf(e))};
}"""

FOCUSED = "selector => [...document.querySelectorAll(selector)].indexOf(document.activeElement)"


def tab_to_each(page, selector: str, max_presses: int):
    """Press Tab through the page from the element that has focus, as a keyboard reader does,
    and yield each time focus lands on an element `selector` matches: its index among them. The
    caller checks the element while it has focus, and stops the walk when it has what it needs.

    Tab is pressed as often as the page's tab stops (TAB_STOPS) say it takes to reach the next such
    element, and focus is then read and must be on it. Where it is not (a stop the list missed,
    or a page the caller's keys changed), the walk goes on one press at a time, reading focus after
    each, up to `max_presses` in all: either way, every element yielded was reached by Tab."""
    plan = page.evaluate(TAB_STOPS, selector)
    planned = [] if plan["positive"] else [(i + 1, t) for i, t in enumerate(plan["stops"]) if t >= 0]
    presses = 0
    for at, target in planned:
        if at > max_presses:
            break
        for _ in range(at - presses):
            page.keyboard.press("Tab")
        presses = at
        focused = page.evaluate(FOCUSED, selector)
        if focused >= 0:
            yield focused
        if focused != target:
            break
    while presses < max_presses:
        page.keyboard.press("Tab")
        presses += 1
        focused = page.evaluate(FOCUSED, selector)
        if focused >= 0:
            yield focused


def mark_document(page) -> None:
    """Mark the page's document: a link the theme's instant loader follows keeps the mark
    (`same_document`), a link loaded as a new page (every link, when the site's origin is not
    the page's: see NamedHosts) drops it."""
    page.evaluate("() => { window.__explainerWalk = 'one document'; }")


def same_document(page) -> bool:
    """Whether the document `mark_document` marked is still the one shown."""
    return page.evaluate("() => window.__explainerWalk") == "one document"


def hand_build(root: Path, docs: Path, memory=None, **settings):
    """A SiteBuild made by hand, as a host makes one (host.py), of the docs folder `docs` under the
    project folder `root`, with the shipped catalogue and `settings` (site.Settings' fields)."""
    from explainer_gen import core

    return core.SiteBuild(core.Settings(root=root, docs_dir=docs, catalogue_path=REPO / "models" / "catalogue.yaml",
                                        **settings), core.CODE, memory)


def markdown_with(*extensions):
    """Python-Markdown with `extensions` (an ExplainerExtension among them), and superfences with
    the explainer's fences and attr_list, as a host configures them (host.register)."""
    import markdown

    from explainer_gen import core

    return markdown.Markdown(extensions=[*extensions, "pymdownx.superfences", "attr_list"],
                             extension_configs={"pymdownx.superfences": {"custom_fences": [dict(f) for f in core.host.FENCES]}})


# A number's card shows once its card file has come (the first time; how.js): the card beside `a`,
# or null after a few seconds.
CARD_OF = """async a => {
  for (let i = 0, end = Date.now() + 5000; Date.now() < end; i++) {
    const c = document.getElementById('eg-how-card');
    if (c && c.previousElementSibling === a) return c;
    // A file already fetched fills the card within the loader's promises: wait for those first.
    await new Promise(ok => i < 20 ? queueMicrotask(ok) : setTimeout(ok, 0));
  }
  return null;
}"""
