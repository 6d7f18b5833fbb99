"""Pages computed side by side in spawned worker processes, handing their results over through the
disk cache.

The build's one path (`SiteBuild.collect`) stays as it was: this step only fills the cache first,
so that path then reads every figure and number back the way a warm rebuild does, and the site is
byte-for-byte the one a single process builds (tests/test_authoring.py checks it).

- Workers are spawned, never forked: a process that has called vl-convert hangs in a forked child.
- A worker computes only if the code it loaded is the code the build loaded (same fingerprint), so
  nothing lands in the cache under a key that names other code.
- A worker that fails leaves nothing behind: the build then computes that page itself and raises
  the author's error with its file and line, as it would with no workers at all.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class PageJob:
    """What a worker needs to compute one page as the build would."""

    root: str
    docs_dir: str
    catalogue_path: str
    cache_dir: str
    data_budget_kb: int
    code_fingerprint: str
    src_uri: str
    path: str
    url: str
    text: str


def default_workers() -> int:
    """One worker per core the process may use, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def compute_page(job: PageJob) -> dict:
    """In a worker: compute one page into the cache. Returns what it counted, or why it did nothing."""
    from explainer_gen import core

    if core.SOURCES is None or core.code_fingerprint() != job.code_fingerprint:
        return {"skipped": "the code on disk is not the code the build loaded"}
    from pathlib import Path

    site = core.SiteBuild(root=Path(job.root), docs_dir=Path(job.docs_dir), catalogue_path=Path(job.catalogue_path),
                          cache_dir=Path(job.cache_dir), data_budget_kb=job.data_budget_kb,
                          code_fingerprint=job.code_fingerprint)
    try:
        site.compute_page(core.PageSource(job.src_uri, job.path, job.url, job.text))
    except Exception as exc:  # noqa: BLE001  (the build recomputes the page and reports it properly)
        return {"skipped": f"{type(exc).__name__}: {exc}"}
    return {"figures_computed": site.timing.figures_computed, "model_seconds": site.timing.model_seconds}


def run(jobs: list[PageJob], workers: int) -> list[dict]:
    """Compute `jobs` on `workers` spawned processes, the largest pages first; results in job order."""
    order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i].text))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {i: pool.submit(compute_page, jobs[i]) for i in order}
        return [futures[i].result() for i in range(len(jobs))]
