"""Pages' figures and numbers computed side by side in worker processes, handing their
results over through the disk cache.

The build's one path (`site/collect.py`) stays as it was: this step only fills the cache first,
so that path then reads every figure and number back the way a warm rebuild does, and the site is
byte-for-byte the one a single process builds (tests/test_authoring.py checks it).

- Workers are new interpreters, never forks: a process that has called vl-convert hangs in a forked
  child.
- A worker computes only if the code it loaded is the code the build loaded (same fingerprint), so
  nothing lands in the cache under a key that names other code.
- A worker that fails leaves nothing behind: the build then computes that page itself and raises
  the author's error with its file and line, as it would with no workers at all.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace

from .numbers import NumberResult


@dataclass(frozen=True)
class PageJob:
    """What a worker needs to compute one page as the build would."""

    settings: dict          # the build's settings (site.Settings.to_json)
    code_fingerprint: str
    src_uri: str
    path: str
    url: str
    text: str
    # Which share of the page's work: NUMBERS (its inline numbers), or one figure by its place on
    # the page (0, 1, ...). site/collect.Collector._uncached_shares finds those no cache holds.
    share: int


NUMBERS = -1
# Fewer jobs than this are computed in the build's own process: a worker costs about a second to
# start (its imports and vl-convert's engine), as much as three small figures.
MIN_JOBS = 4
# How a worker starts: the worker's module (explainer_gen/worker.py, which loads the whole build as a
# host does) run by the build's own Python.
COMMAND = [sys.executable, "-m", "explainer_gen.worker"]
# A job that takes longer than this (the largest take a few seconds) ends its worker, and the build
# computes the job itself.
JOB_SECONDS = 600.0
# What a worker's page holds in place of the figures and numbers another worker computes.
ELSEWHERE_FIGURE = SimpleNamespace(sizes={"": 0}, default="")
ELSEWHERE_NUMBER = NumberResult("", [], [], "")


def default_workers() -> int:
    """One worker per core the process may use, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def run(jobs: list[PageJob], workers: int) -> list[dict]:
    """Compute `jobs` on `workers` new processes (`python -m explainer_gen.worker`), each
    taking the next job as it finishes one: the pages' numbers first (deriving each number at every
    state, they are the longest jobs, and one left for last would run alone), each kind the largest
    pages' first; results in job order.

    New interpreters rather than multiprocessing's spawn, which runs the host's main script again in
    every child: a build started from an unguarded script would start workers without end. A worker
    that dies, or spends more than JOB_SECONDS on a job, leaves its jobs `skipped`, and the build
    computes them itself."""
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].share != NUMBERS, -len(jobs[i].text), jobs[i].share))
    pending: queue.Queue[int] = queue.Queue()
    for i in order:
        pending.put(i)
    results: list[dict] = [{"skipped": "no worker took it"} for _ in jobs]
    package_parent = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_parent] + [p for p in sys.path if p])}

    def serve() -> None:
        proc = subprocess.Popen(COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
        try:
            while True:
                try:
                    i = pending.get_nowait()
                except queue.Empty:
                    return
                proc.stdin.write(json.dumps(asdict(jobs[i])) + "\n")
                proc.stdin.flush()
                watchdog = threading.Timer(JOB_SECONDS, proc.kill)  # a hung job ends its worker
                watchdog.start()
                try:
                    line = proc.stdout.readline()
                finally:
                    watchdog.cancel()
                if not line:
                    results[i] = {"skipped": "the worker process ended"}
                    return
                results[i] = json.loads(line)
        except (OSError, ValueError):
            return
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            proc.wait()

    threads = [threading.Thread(target=serve) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
