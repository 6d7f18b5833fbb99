"""Editing model code under `mkdocs serve` (issue 12, bug 1).

`mkdocs serve` rebuilds in one process, where Python keeps the modules it imported first. The
old code's results used to be cached under the new code's hash, so serve showed the old
numbers and a later `mkdocs build` on the same cache shipped them. Now the plugin loads the
models and the generator again when their code changes on disk, and keys the cache by the
hashes of the code it loaded.

The test runs a scratch copy of the project (its own `models/` and `explainer_gen/` first on
PYTHONPATH), doubles the weight-read term of the step time in the copy's model while serve
runs, and reads the page's step time: under serve, then from a fresh build on serve's cache, then
from a build without a cache. The copy keeps the speculative-decoding page whole and the other
explainers as stubs (helpers.copy_project's `only`): the edit recomputes every figure and number
of the copy, and the last build is cold, so each is the work of one page, not of the whole site.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from helpers import MKDOCS, copy_code, copy_project, env, free_port

# The speculative page's "the reads take 10.4 ms": the weight read and the cache read of one step.
STEP = re.compile(r'reads take (?:<a class="eg-how"[^>]*>)?<span class="eg-num"[^>]*>([^<]+)</span>')
TERM = "weights_s = gemm_reads + lookup_reads"


def step_ms(html: str) -> float:
    m = STEP.search(html)
    assert m, "no step time on the page"
    return float(m.group(1).split()[0])


@pytest.fixture
def project(tmp_path, warm_cache):
    return copy_code(copy_project(tmp_path / "project", warm_cache, only=("explainers/speculative-decoding.md",)))


def test_an_edit_to_model_code_shows_under_serve_and_is_never_cached_under_the_old_code(project, tmp_path):
    run_env = {**env(), "PYTHONPATH": str(project)}
    model = project / "models" / "roofline.py"
    assert TERM in model.read_text()
    port = free_port()
    proc = subprocess.Popen(MKDOCS + ["serve", "--livereload", "-a", f"127.0.0.1:{port}"], cwd=project, env=run_env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/explainers/speculative-decoding/"

    def served() -> float | None:
        try:
            return step_ms(urllib.request.urlopen(url, timeout=5).read().decode())
        except OSError:
            return None

    try:
        deadline = time.time() + 180
        while (before := served()) is None and time.time() < deadline:
            time.sleep(0.5)
        assert before, "mkdocs serve did not come up"
        model.write_text(model.read_text().replace(TERM, "weights_s = 2 * (gemm_reads + lookup_reads)", 1))
        deadline = time.time() + 180
        after = before
        while after == before and time.time() < deadline:
            time.sleep(0.5)
            after = served() or before
    finally:
        proc.terminate()
        try:
            out = proc.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
    # The reads of the default scenario's single-token step are nearly all weights (0.17 GB of cache
    # against 139 GB): doubling the weight read doubles them, within 0.2%.
    assert after == pytest.approx(2 * before, rel=0.02), (before, after, out[-2000:])
    assert "loaded it again" in out

    def built(name: str) -> float:
        """A fresh `mkdocs build` process, on the project's cache (.cache/explainer) if it is there."""
        dest = tmp_path / name
        result = subprocess.run(MKDOCS + ["build", "-q", "-d", str(dest)], cwd=project, env=run_env,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return step_ms((dest / "explainers/speculative-decoding/index.html").read_text())

    assert (project / ".cache" / "explainer").is_dir()
    on_serves_cache = built("site-cached")
    shutil.rmtree(project / ".cache")
    without_cache = built("site-uncached")
    assert on_serves_cache == without_cache == after
