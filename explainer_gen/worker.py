"""A worker process of a build: `python -m explainer_gen.worker`, started by compute/workers.run.

It reads one job (compute/workers.PageJob) as a JSON line on stdin, computes that share of a page
into the disk cache as the build itself would, and writes one result line on stdout, until stdin
closes. It loads the build as a host does, through `core`, and computes only if the code it loaded
is the code the build loaded (the same fingerprint), so nothing lands in the cache under a key
that names other code.
"""
from __future__ import annotations

import json
import sys


def compute_page(job) -> dict:
    """Compute one share of a page into the cache. Returns what it counted, or why it did nothing."""
    from explainer_gen import core

    if core.CODE is None or core.CODE.fingerprint != job.code_fingerprint:
        return {"skipped": "the code on disk is not the code the build loaded"}
    site = core.SiteBuild(core.Settings(**job.settings), core.CODE)
    try:
        site.compute_page(core.PageSource(job.src_uri, job.path, job.url, job.text), job.share)
    except Exception as exc:  # noqa: BLE001  (the build recomputes the page and reports it properly)
        return {"skipped": f"{type(exc).__name__}: {exc}"}
    return {"figures_computed": site.timing.figures_computed, "seconds": site.timing.seconds,
            "computed": site.timing.computed, "numbers_computed": sorted(site.timing.numbers_computed)}


def main() -> None:
    """Jobs in, results out. Anything else the build prints goes to stderr, so it cannot garble a
    result."""
    from explainer_gen.compute.workers import PageJob

    out = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        out.write(json.dumps(compute_page(PageJob(**json.loads(line)))) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
