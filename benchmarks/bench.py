"""Speed and size of the generator and the site it builds. Prints ratios; asserts nothing.

    python benchmarks/bench.py            # everything
    python benchmarks/bench.py --no-browser

Targets (from the issues): model share of a cold build < 5%; cold build <= 2.0x a plain
Material build of the same pages; cached rebuild after a prose edit <= 1.15x; figure data
<= 100 KB gzip per page; slider input to repaint median < 16 ms.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

import logging  # noqa: E402

from mkdocs.commands.build import build  # noqa: E402
from mkdocs.config import load_config  # noqa: E402

from explainer_gen import timing  # noqa: E402

logging.getLogger("mkdocs").setLevel(logging.ERROR)


def timed_build(config_file: Path, site_dir: Path, cache_dir: Path | None, enabled: bool = True) -> float:
    cfg = load_config(str(config_file), site_dir=str(site_dir))
    plugin = cfg.plugins["explainer"]
    plugin.config.enabled = enabled
    plugin.config.cache_dir = str(cache_dir) if cache_dir else ""
    start = time.perf_counter()
    build(cfg)
    return time.perf_counter() - start


def gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), mtime=0))


def page_weights(site: Path) -> list[dict]:
    rows = []
    css = sum(gz(p) for p in site.rglob("*.css"))
    for html_path in sorted(site.rglob("index.html")):
        html = html_path.read_text()
        figs = re.findall(r'data-eg-figure="([^"]+)"', html)
        data = sum(gz((html_path.parent / f).resolve()) for f in figs)
        variants = 0
        for f in figs:
            payload = json.loads((html_path.parent / f).resolve().read_text())
            variants += sum(gz((html_path.parent / f).resolve().parent / v) for v in payload["variants"].values())
        page_json = re.search(r'data-eg-page="([^"]+)"', html)
        numbers = gz((html_path.parent / page_json.group(1)).resolve()) if page_json else 0
        rows.append({"page": str(html_path.relative_to(site).parent) or "/", "html_gz": gz(html_path),
                     "figure_data_gz": data + numbers, "other_scenarios_gz": variants, "css_gz_all": css})
    return rows


def slider_latency(site: Path, moves: int = 50) -> dict:
    from playwright.sync_api import sync_playwright

    from helpers import CHROMIUM, CHROMIUM_ARGS, serve, wait_for_figures

    script = """async (moves) => {
      const input = document.querySelector('.eg-figure.eg-live input[type=range]');
      const times = [];
      for (let i = 0; i < moves; i++) {
        const t0 = performance.now();
        input.value = (i % 2) ? input.min : input.max;
        input.dispatchEvent(new Event('input', {bubbles: true}));
        await new Promise(r => requestAnimationFrame(() => r()));
        times.push(performance.now() - t0);
        await new Promise(r => setTimeout(r, 20));
      }
      return times;
    }"""
    out = {}
    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        for html_path in sorted(site.rglob("index.html")):
            rel = str(html_path.relative_to(site).parent)
            if 'data-eg-figure="' not in html_path.read_text():
                continue
            page.goto(base + ("" if rel == "." else rel + "/"))
            wait_for_figures(page)  # every figure live first, so no embedding lands in the timings
            page.wait_for_timeout(300)
            times = sorted(page.evaluate(script, moves))
            out[rel] = {"median_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))]}
        browser.close()
    return out


def lighthouse(site: Path, page: str = "explainers/speculative-decoding/") -> dict | None:
    """Lighthouse 12.2.3 (npx) on Debian's Chromium against a gzip-serving local copy."""
    import shutil as sh
    import subprocess

    from helpers import CHROMIUM, CHROMIUM_ARGS, serve

    if not sh.which("npx"):
        return None
    out = site.parent / "lighthouse.json"
    with serve(site, compress=True) as base:
        cmd = ["npx", "-y", "lighthouse@12.2.3", base + page, "--only-categories=performance,accessibility",
               "--output=json", f"--output-path={out}", "--quiet", f"--chrome-flags={' '.join(CHROMIUM_ARGS)}"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "CHROME_PATH": CHROMIUM})
    if run.returncode != 0 or not out.exists():
        print(f"lighthouse could not run: {run.stderr.strip()[-300:]}")
        return None
    report = json.loads(out.read_text())
    scores = {k: round(v["score"] * 100) for k, v in report["categories"].items()}
    metrics = {k: report["audits"][k]["displayValue"] for k in
               ("first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift")}
    return {"scores": scores, "metrics": metrics}


def fresh_build(config: Path, site_dir: Path, cache_dir: Path | None, enabled: bool = True) -> tuple[float, float]:
    """One build in a new Python process (as `mkdocs build` runs): its time and its model time.

    Imports are done before the clock starts, so the figure is the build, not Python's start-up.
    """
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--one-build", str(config), str(site_dir),
                          str(cache_dir or ""), "1" if enabled else "0"],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["seconds"], result["model_seconds"]


def one_build(config: str, site_dir: str, cache_dir: str, enabled: str) -> None:
    import explainer_gen.plugin  # noqa: F401  (imports outside the timing)

    timing.reset()
    seconds = timed_build(Path(config), Path(site_dir), Path(cache_dir) if cache_dir else None, enabled == "1")
    print(json.dumps({"seconds": seconds, "model_seconds": timing.model_seconds}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--one-build", nargs=4)
    args = ap.parse_args()
    if args.one_build:
        one_build(*args.one_build)
        return
    work = Path(tempfile.mkdtemp(prefix="eg-bench-"))
    try:
        shutil.copytree(REPO / "docs", work / "docs")
        shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
        config = work / "mkdocs.yml"

        fresh_build(config, work / "warm", work / "warm-cache")  # OS caches, bytecode
        cold, model_s = min(fresh_build(config, work / f"cold{i}", work / f"cold-cache-{i}") for i in range(3))
        plain = min(fresh_build(config, work / "plain", None, enabled=False)[0] for _ in range(3))
        cache = work / "cold-cache-0"
        page = work / "docs/explainers/speculative-decoding.md"
        text = page.read_text()

        def edit() -> None:
            page.write_text(text + f"\n\nAn edited sentence {time.perf_counter_ns()}.\n")

        def fresh_after_edit() -> float:
            edit()
            return fresh_build(config, work / "cached", cache)[0]

        cached_cli = min(fresh_after_edit() for _ in range(3))
        # `mkdocs serve` rebuilds in one long-lived process: measure that too.
        timed_build(config, work / "served", cache)
        plain_serve = min(timed_build(config, work / "plain-served", None, enabled=False) for _ in range(3))

        def served_after_edit() -> float:
            edit()
            return timed_build(config, work / "served", cache)
        cached_serve = min(served_after_edit() for _ in range(3))
        page.write_text(text)

        print(f"cold build (plugin, empty cache)     {cold:7.3f} s")
        print(f"  time in models                     {model_s:7.3f} s   share {model_s / cold:6.1%}   (target < 5%)")
        print(f"plain build (plugin disabled)        {plain:7.3f} s")
        print(f"cold / plain                         {cold / plain:7.2f} x   (target <= 2.0)")
        print("rebuild after a prose edit, warm cache:")
        print(f"  new process (mkdocs build)         {cached_cli:7.3f} s   {cached_cli / plain:5.2f} x plain   (target <= 1.15)")
        print(f"  same process (mkdocs serve)        {cached_serve:7.3f} s   {cached_serve / plain_serve:5.2f} x plain "
              f"({plain_serve:.3f} s)")
        try:
            sys.path.insert(0, str(REPO / "benchmarks"))
            import sampling_cost
            print(f"sampling figure cost               {json.dumps(sampling_cost.measure())}")
        except ImportError:
            pass
        print()
        print(f"{'page':40} {'HTML gz':>9} {'fig data gz':>12} {'other scen. gz':>15} {'CSS gz':>8}")
        for row in page_weights(work / "cold0"):
            flag = "  OVER 100 KB" if row["figure_data_gz"] > 100_000 else ""
            print(f"{row['page']:40} {row['html_gz']:9,d} {row['figure_data_gz']:12,d} "
                  f"{row['other_scenarios_gz']:15,d} {row['css_gz_all']:8,d}{flag}")
        bundle = next((work / "cold0/assets/explainer").glob("vega-*.js"))
        print(f"\nvega bundle {gz(bundle):,d} bytes gzip, one URL for every figure page: {bundle.name}")
        if not args.no_browser:
            print("\nslider input -> next animation frame, 50 moves (target median < 16 ms)")
            for rel, t in slider_latency(work / "cold0").items():
                print(f"  {rel:38} median {t['median_ms']:6.2f} ms   p95 {t['p95_ms']:6.2f} ms")
            lh = lighthouse(work / "cold0")
            if lh:
                print(f"\nlighthouse, speculative-decoding page (targets: performance >= 95, accessibility 100): "
                      f"{lh['scores']}  {lh['metrics']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
