"""Shared test helpers: build the site, serve it on 127.0.0.1, read built pages."""
from __future__ import annotations

import contextlib
import functools
import gzip
import io
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def env() -> dict[str, str]:
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(dest: Path, config: Path = REPO / "mkdocs.yml", strict: bool = True,
                 cwd: Path | None = None) -> subprocess.CompletedProcess:
    cmd = MKDOCS + ["build", "-q", "-f", str(config), "-d", str(dest)] + (["--strict"] if strict else [])
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=cwd or config.parent)


def copy_project(dest: Path) -> Path:
    """A scratch copy of the site sources (docs, mkdocs.yml) that tests may edit."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "docs", dest / "docs")
    shutil.copy(REPO / "mkdocs.yml", dest / "mkdocs.yml")
    return dest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output readable
        pass


class _Gzip(_Quiet):
    """Compresses text responses the way GitHub Pages does, for realistic page weights."""

    TEXT = (".html", ".css", ".js", ".json", ".svg", ".csv", ".xml", "/")

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if "gzip" not in self.headers.get("Accept-Encoding", "") or not path.endswith(self.TEXT) \
                or not os.path.isfile(path):
            return super().send_head()
        body = gzip.compress(Path(path).read_bytes(), mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@contextlib.contextmanager
def serve(directory: Path, prefix: str = "", compress: bool = False):
    """Serve `directory` at http://127.0.0.1:PORT/prefix/ ; yields the base URL."""
    root = Path(directory)
    if prefix:
        # Serve from a parent folder in which the site sits under the prefix.
        parent = root.parent / f"_served_{root.name}"
        target = parent / prefix.strip("/")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(root.resolve(), target_is_directory=True)
        root = parent
    handler = functools.partial(_Gzip if compress else _Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        yield base + (prefix.strip("/") + "/" if prefix else "")
    finally:
        server.shutdown()
        server.server_close()


def article(html: str) -> str:
    """The page's article content, without Material's chrome."""
    m = re.search(r'<article class="md-content__inner md-typeset">(.*?)</article>', html, re.S)
    assert m, "no article in page"
    return m.group(1)


def numbers_in(html: str) -> list[str]:
    return re.findall(r'<span class="eg-num"[^>]*>([^<]*)</span>', html)


def wait_for_figures(page) -> int:
    """Reach for every figure on the page, as a reader's pointer does, and wait until each
    is a live chart (until then each shows its static image)."""
    figures = page.locator(".eg-figure")
    n = figures.count()
    for i in range(n):
        figures.nth(i).hover()
        figures.nth(i).locator(".eg-view svg.marks").wait_for(state="visible")
    if not n:
        page.wait_for_load_state("networkidle")
    return n
