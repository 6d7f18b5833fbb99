"""Speed and size of the generator and the site it builds. Prints values next to their
targets ("ok"/"MISS"); asserts nothing.

    python benchmarks/bench.py            # everything (several minutes: 12 Lighthouse runs)
    python benchmarks/bench.py --no-browser [--no-scale]
    python benchmarks/bench.py --keep-lighthouse DIR   # also keep every Lighthouse JSON report
    python benchmarks/bench.py --lighthouse SITE       # only Lighthouse, on a built site
    python benchmarks/bench.py --number-cards SITE     # only the numbers' card files, of a built site

Targets (from the issues):
  build    (issue 15, as whole `mkdocs build` processes, Python's start-up included, on this
           machine's cores) a cold build (empty project cache; the machine's Vega bundle cache
           may be warm, and the output says whether it was) <= 3x a plain Material build of the
           same pages; a rebuild after a prose edit with the cache warm <= 1.15x a plain build, in
           a new process and in one `mkdocs serve` process; model share of a one-process cold
           build < 5%; figure data <= 100 KB gzip per page.
  scale    synthetic sites of 10, 30 and 100 figures (the explainers' figures again and again,
           each explainer's together on a page with its controls, each caption made its own so
           no figure is shared through the cache; no prose numbers): time and peak RSS (all the
           build's processes together) of a cold build at each size; the marginal cost per
           figure <= 150 ms, time growing linearly or better, peak RSS < 1 GB.
  pages    (issues 16, 17) what one page adds to a cold build of the whole site, as whole
           processes with the default workers: the median, over 3 pairs of builds, of the
           build with the page less the build without it (the page, its nav entry and the
           Read next entries pointing at it removed) <= 3 s; its default-state data <= 100 KB
           gzip (the page table above).
  readers  (issue 11, "Speed for readers")
           (issue 39) slider input to redrawn marks, every slider on every page with figures:
           median < 16 ms and p95 < 25 ms over 60 moves; p95 < 100 ms over 20 moves with the
           CPU slowed 4x;
           Lighthouse 12.2.3 on every explainer page (docs/explainers/*), its default mobile
           emulation with simulated throttling, median of 3 runs: performance >= 95,
           accessibility 100, best practices 100, cumulative layout shift 0.
  number cards (issue 37) the card files of each page's numbers, fetched as a card first opens:
           how many, their bytes and gzip bytes, the largest (no target).
  cards    (issue 38) what the share cards add: the seconds a one-process cold build spends
           composing and drawing them, and their bytes in the site (no target).
           `python benchmarks/bench.py --cards` prints only this, from one cold build.
  phone    (issue 38) what the phone's layout adds: the seconds a one-process cold build spends
           laying each figure out for a phone, drawing and compiling it, and the bytes gzip its
           pictures add to each figure page's HTML and its specs to the figure payloads (which
           stay within the 100 KB of figure data above). `--phone` prints only this.

Serving: both browser measurements load the built site from 127.0.0.1 the way GitHub Pages
serves it (tests/helpers.py `serve`, which the browser tests use too): HTTP/1.1 with keep-alive
from a threaded server, so a page's requests share one connection as they share Pages' one
HTTP/2 connection, and text gzip-compressed. Lighthouse's simulation charges every new
connection its round trips: served over HTTP/1.0, which closes the connection after each
response, the same pages measured up to 0.5 s later first paints.

Slider timing: in headless Chromium, for every slider of every figure in turn, with its figure in
the middle of the window (as a reader sees the figure whose slider they move), each move sets the
slider's value and dispatches its `input` event at the start of an animation frame (where Chromium
delivers a dragged slider's input). The clock stops once every live view the loader ran for that
input (its own figure's, and those of other figures near the screen that the param drives) has
finished its Vega run and the browser has rendered (style, layout, paint) the frame that shows the
new marks. Whether the figure's marks changed is read from its view's scenegraph (what Vega
draws, whichever renderer draws it), between moves. The same slider is then moved again with
Chromium's CPU slowed four times (a phone's CPU against this machine's).
`python benchmarks/bench.py --sliders SITE` times the sliders of an already built site alone.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
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

from helpers import copy_code, link_tree, with_plugin_options  # noqa: E402

logging.getLogger("mkdocs").setLevel(logging.ERROR)


def timed_build(config_file: Path, site_dir: Path, cache_dir: Path | None, enabled: bool = True,
                timings: list | None = None, serve: bool = False) -> float:
    """Seconds for one build in this process; the build's site.Timing is appended to `timings`.
    With `serve`, the build is one of `mkdocs serve`'s: the plugins start up as that command
    (so the build writes in place, with no staging folder and no sweep of the cache), and MkDocs
    keeps the plugin from one build to the next, as it does (the plugin has `on_startup`)."""
    cfg = load_config(str(config_file), site_dir=str(site_dir))
    if serve:
        cfg.plugins.on_startup(command="serve", dirty=False)
    plugin = cfg.plugins["explainer"]
    plugin.config.enabled = enabled
    plugin.config.cache_dir = str(cache_dir) if cache_dir else ""
    start = time.perf_counter()
    build(cfg)
    seconds = time.perf_counter() - start
    if timings is not None and plugin.site is not None:
        timings.append(plugin.site.timing)
    return seconds


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
            variants += sum(gz((html_path.parent / f).resolve().parent / v) for v in set(payload["variants"].values()))
        page_json = re.search(r'data-eg-page="([^"]+)"', html)
        numbers = gz((html_path.parent / page_json.group(1)).resolve()) if page_json else 0
        rows.append({"page": str(html_path.relative_to(site).parent) or "/", "html_gz": gz(html_path),
                     "figure_data_gz": data + numbers, "other_scenarios_gz": variants, "css_gz_all": css})
    return rows


def number_card_weights(site: Path) -> list[dict]:
    """Per page, its numbers' card files (issue 37): how many, their bytes as written and gzip, the
    largest gzip. A card file is fetched when its number's card first opens, never with the page."""
    rows = []
    for html_path in sorted(site.rglob("index.html")):
        found = re.search(r'data-eg-page="([^"]+)"', html_path.read_text())
        if not found:
            continue
        state = (html_path.parent / found.group(1)).resolve()
        files = [(state.parent / rel).resolve() for rel in json.loads(state.read_text()).get("cards", {}).values()]
        if files:
            sizes = [gz(f) for f in files]
            rows.append({"page": str(html_path.relative_to(site).parent) or "/", "files": len(files),
                         "bytes": sum(f.stat().st_size for f in files), "gz": sum(sizes), "largest_gz": max(sizes)})
    return rows


def print_number_cards(site: Path) -> None:
    print("\nnumbers' card files (issue 37; fetched as a number's card first opens, not with the page; no target)")
    print(f"  {'page':34} {'files':>6} {'bytes':>12} {'gzip':>10} {'largest gzip':>13}")
    for r in number_card_weights(site):
        print(f"  {r['page']:34} {r['files']:6d} {r['bytes']:12,d} {r['gz']:10,d} {r['largest_gz']:13,d}")


SLIDER_MOVES = """async ([index, moves]) => {
  // The page's `index`-th slider of a figure, with its figure in the middle of the window, as a
  // reader sees the figure whose slider they move.
  const input = document.querySelectorAll('.eg-figure input[type=range][data-eg-param]')[index];
  const own = input.closest('.eg-figure');
  const name = input.getAttribute('data-eg-param');
  const live = window.explainerGen.figures();
  const mine = live.find(f => f.el === own);
  if (!mine) return null;
  own.scrollIntoView({block: 'center'});
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  await frame(); await frame(); await new Promise(r => setTimeout(r, 200));
  // Moves alternate between an end (max, then min, ...) and an intermediate position (walking
  // through the range), so every move sets a value other than the one before it.
  const min = +input.min, max = +input.max, step = +input.step || 1;
  const last = Math.round((max - min) / step);
  const decimals = (String(step).split('.')[1] || '').length;
  const at = (i) => (min + i * step).toFixed(decimals);
  const inner = [];
  for (const f of [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]) {
    const i = Math.min(last - 1, Math.max(1, Math.round(f * last)));
    if (last > 1 && inner.indexOf(i) < 0) inner.push(i);
  }
  const positions = [];
  for (let m = 0; m < moves; m++) {
    if (m % 2 === 0) positions.push((m / 2) % 2 === 0 ? last : 0);
    else positions.push(inner.length ? inner[((m - 1) / 2) % inner.length] : (positions[m - 1] ? 0 : last));
  }
  if (+input.value === +at(positions[0])) positions.unshift(0);
  // The loader answers an input with view.signal(name, value).runAsync() on the views it brings
  // up to date at once: catch every run any live view starts while the input is handled (their
  // promises settle once Vega has redrawn the view).
  let pending = null;
  const views = live.map(f => f.result.view);
  const hadOwn = views.map(v => Object.prototype.hasOwnProperty.call(v, 'runAsync'));
  const originals = views.map(v => v.runAsync);
  views.forEach((v, k) => {
    v.runAsync = function () { const p = originals[k].apply(this, arguments); if (pending) pending.push(p); return p; };
  });
  // What the slider's own figure draws, whatever its renderer: a hash of every item of Vega's
  // scenegraph, its geometry, text and paint. Read between moves, outside the timings, and
  // allocating next to nothing, so that no garbage it leaves is collected inside a timing.
  const drawing = (view) => {
    let h = 0;
    const add = (v) => {
      if (typeof v === 'number') h = (Math.imul(h, 31) + Math.round(v * 1000)) | 0;
      else if (typeof v === 'string') for (let i = 0; i < v.length; i++) h = (Math.imul(h, 31) + v.charCodeAt(i)) | 0;
      else h = (Math.imul(h, 31) + (v === undefined ? 1 : 2)) | 0;
    };
    const walk = (mark) => {
      add(mark.marktype); add(mark.role);
      for (const it of mark.items || []) {
        add(it.x); add(it.y); add(it.x2); add(it.y2); add(it.width); add(it.height); add(it.size);
        add(it.angle); add(it.opacity); add(typeof it.path === 'string' ? it.path : undefined);
        add(it.text == null ? undefined : String(it.text)); add(it.fill); add(it.stroke);
        for (const m of it.items || []) walk(m);
      }
    };
    walk(view.scenegraph().root);
    return h;
  };
  let drawn = drawing(mine.result.view);
  // A task posted during a frame's animation callbacks runs once that frame's rendering
  // (style, layout, paint) is done.
  const afterRendering = () => new Promise(r => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => r(performance.now());
    ch.port2.postMessage(0);
  });
  const rows = [];
  let unchanged = 0, ownMissed = 0;
  try {
    for (const i of positions) {
      await new Promise(r => setTimeout(r, 20));
      await frame();                 // what follows runs in this frame's animation callbacks
      pending = [];
      const t0 = performance.now();
      input.value = at(i);
      input.dispatchEvent(new Event('input', {bubbles: true}));
      const tHandler = performance.now();
      const runs = pending;
      pending = null;
      let rendered = false;
      const thisFrame = afterRendering().then(t => { rendered = true; return t; });
      await Promise.all(runs);       // every view the loader ran has redrawn
      const tRuns = performance.now();
      // The first frame rendered after the runs: this one if they finished inside it.
      const t1 = rendered ? await frame().then(afterRendering) : await thisFrame;
      rows.push([t1 - t0, tHandler - t0, tRuns - tHandler, t1 - tRuns, runs.length]);
      const now = drawing(mine.result.view);
      if (now === drawn) unchanged++;
      drawn = now;
    }
  } finally {
    views.forEach((v, k) => { if (hadOwn[k]) v.runAsync = originals[k]; else delete v.runAsync; });
  }
  const shared = live.filter(f => f.params.indexOf(name) >= 0).length;
  return {param: name, figure: own.id, shared, rows, unchanged_moves: unchanged};
}"""


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def slider_latency(site: Path, moves: int = 60, throttled_moves: int = 20, rate: float = 4.0) -> dict:
    """Slider input to redrawn marks for every slider of every figure on every page with figures
    (see the module docstring): page -> one row per slider, with the same slider's moves again
    with Chromium's CPU slowed `rate` times (DevTools' Emulation.setCPUThrottlingRate)."""
    from playwright.sync_api import sync_playwright

    from helpers import CHROMIUM, CHROMIUM_ARGS, serve, wait_for_figures

    def timed(page, index: int, n: int) -> dict | None:
        got = page.evaluate(SLIDER_MOVES, [index, n])
        if not got:
            return None
        total, handler, vega, paint, views = (list(col) for col in zip(*got.pop("rows")))
        return {**got, "moves": len(total), "median_ms": statistics.median(total), "p95_ms": p95(total),
                "handler_ms": statistics.median(handler), "vega_ms": statistics.median(vega),
                "paint_ms": statistics.median(paint), "views": statistics.median(views)}

    out = {}
    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        cdp = page.context.new_cdp_session(page)
        for html_path in sorted(site.rglob("index.html")):
            rel = str(html_path.relative_to(site).parent)
            if 'data-eg-figure="' not in html_path.read_text():
                continue
            page.goto(base + ("" if rel == "." else rel + "/"))
            wait_for_figures(page)  # every figure live first, so no embedding lands in the timings
            page.wait_for_timeout(300)
            count = page.locator(".eg-figure input[type=range][data-eg-param]").count()
            rows = []
            for index in range(count):
                row = timed(page, index, moves)
                if row is None:
                    continue
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
                try:
                    slow = timed(page, index, throttled_moves)
                finally:
                    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
                rows.append({**row, "throttled_p95_ms": slow["p95_ms"], "throttled_median_ms": slow["median_ms"]})
            out[rel] = rows
        browser.close()
    return out


LIGHTHOUSE = "lighthouse@12.2.3"
LH_CATEGORIES = ("performance", "accessibility", "best-practices")


def lighthouse_run(base: str, page: str, out: Path) -> dict | str:
    """One Lighthouse run (npx, Debian's Chromium, default mobile settings): its JSON report,
    or why it could not run."""
    import subprocess

    from helpers import CHROMIUM, CHROMIUM_ARGS, playwright_chromium

    out.unlink(missing_ok=True)
    cmd = ["npx", "-y", LIGHTHOUSE, base + page, f"--only-categories={','.join(LH_CATEGORIES)}",
           "--output=json", f"--output-path={out}", "--quiet", f"--chrome-flags={' '.join(CHROMIUM_ARGS)}"]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "CHROME_PATH": CHROMIUM or playwright_chromium()})
    except subprocess.TimeoutExpired:
        return "timed out after 600 s"
    if run.returncode != 0 or not out.exists():
        return (run.stderr.strip() or run.stdout.strip())[-300:]
    report = json.loads(out.read_text())
    if report.get("runtimeError"):
        return str(report["runtimeError"])
    return report


def held_first_paint(report: dict) -> dict | None:
    """Whether headless Chromium held back the page's first paint in this run: the trace shows the
    first contentful paint after the load event, although nothing on these pages blocks rendering
    once their stylesheets are in (they are requested first and arrive long before the load event).
    Chromium's compositor (viz) can stop sending a page frames for up to a second while it loads
    (ThrottleUnresponsiveClient: GoogleChrome/lighthouse#17148); Lantern then counts every request
    and task before that late paint into its simulated paint metrics, and the score of such a run
    falls by several points. It follows how busy the machine is: with one of this machine's two
    cores kept busy by a spin loop, 5 of 6 runs of the speculative decoding page were held and their
    median score was 79.5, against 1 of 6 and 98.5 on the quiet machine. Returns the observed
    times (ms) of such a run, else None."""
    m = (report["audits"].get("metrics", {}).get("details", {}).get("items") or [{}])[0]
    fcp, load = m.get("observedFirstContentfulPaint"), m.get("observedLoad")
    if fcp is None or load is None or fcp <= load:
        return None
    return {"fcp": fcp, "load": load}


def lighthouse_summary(reports: list[dict]) -> dict:
    """One page's Lighthouse reports: median category scores, CLS and total blocking time, and
    every audit that scored below 1 in some run (those with a weight cost points)."""
    def median_score(cat: str) -> float:
        got = [r["categories"][cat]["score"] * 100 for r in reports
               if r["categories"].get(cat, {}).get("score") is not None]
        return statistics.median(got) if got else float("nan")

    below: dict = {}
    for r in reports:
        for cat in LH_CATEGORIES:
            for ref in r["categories"][cat]["auditRefs"]:
                audit = r["audits"][ref["id"]]
                if audit.get("score") is None or audit["score"] >= 1:
                    continue
                row = below.setdefault((cat, ref["id"]), {
                    "category": cat, "id": ref["id"], "title": audit["title"], "weight": ref.get("weight", 0),
                    "runs": 0, "scores": [], "values": []})
                row["runs"] += 1
                row["scores"].append(audit["score"])
                row["values"].append(audit.get("displayValue", ""))
    held = [held_first_paint(r) for r in reports]
    return {"runs": len(reports),
            "held": held,
            # The performance scores of the runs whose first paint was not held back.
            "unheld_scores": [r["categories"]["performance"]["score"] * 100 for r, h in zip(reports, held)
                              if not h and r["categories"]["performance"].get("score") is not None],
            "scores": {c: median_score(c) for c in LH_CATEGORIES},
            "run_scores": {c: [round(r["categories"][c]["score"] * 100) for r in reports
                               if r["categories"].get(c, {}).get("score") is not None] for c in LH_CATEGORIES},
            "cls": statistics.median(r["audits"]["cumulative-layout-shift"]["numericValue"] for r in reports),
            "tbt_ms": statistics.median(r["audits"]["total-blocking-time"]["numericValue"] for r in reports),
            "below": sorted(below.values(), key=lambda a: (-a["weight"], a["category"], a["id"]))}


def lighthouse_pages(site: Path, runs: int = 3, keep: Path | None = None) -> dict:
    """Lighthouse on every explainer page, `runs` runs each, against a local copy served as
    GitHub Pages serves it (see the module docstring); each page summarised by lighthouse_summary."""
    import shutil as sh

    from helpers import serve

    if not sh.which("npx"):
        return {"error": "npx not found"}
    pages = sorted(str(p.relative_to(site).parent) + "/" for p in (site / "explainers").rglob("index.html")
                   if p.parent != site / "explainers")
    results: dict = {"pages": {}, "warnings": set(), "benchmark_index": []}
    with serve(site) as base, tempfile.TemporaryDirectory(prefix="eg-lighthouse-") as tmp:
        reports_dir = Path(tmp)  # never beside the site: it may be a checkout's own `site/`
        for page in pages:
            reports, errors = [], []
            for i in range(runs):
                out = reports_dir / f"lighthouse-{page.strip('/').replace('/', '-')}-{i + 1}.json"
                got = lighthouse_run(base, page, out)
                if isinstance(got, str):
                    errors.append(got)
                    continue
                reports.append(got)
                if keep:
                    keep.mkdir(parents=True, exist_ok=True)
                    sh.copy(out, keep / out.name)
            if not reports:
                results["pages"][page] = {"error": errors[-1] if errors else "no report"}
                continue
            results["pages"][page] = {**lighthouse_summary(reports), "errors": errors,
                                      "benchmark_index": [r["environment"].get("benchmarkIndex") for r in reports]}
            results["settings"] = reports[0]["configSettings"]
            results["version"] = reports[0]["lighthouseVersion"]
            results["warnings"].update(w for r in reports for w in r.get("runWarnings", []))
            results["benchmark_index"] += [r["environment"].get("benchmarkIndex") for r in reports]
    return results


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def print_slider(pages: dict, moves: int = 60, throttled_moves: int = 20, rate: float = 4.0) -> None:
    print(f"\nslider input -> marks redrawn and painted, every slider of every figure, its figure in the middle "
          f"of the window, {moves} moves each alternating slider ends and intermediate positions; then "
          f"{throttled_moves} moves with the CPU slowed {rate:g}x\n(targets: median < 16 ms and p95 < 25 ms; "
          f"slowed, p95 < 100 ms)")
    if hasattr(os, "getloadavg"):
        print(f"  headless Chromium on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
              f"when the timing starts")
    for rel, rows in pages.items():
        if not rows:
            print(f"  {rel + '/':36} no slider in a live figure")
            continue
        print(f"  {rel + '/'}")
        for t in rows:
            print(f"    {t['figure'] + ' ' + t['param']:34} median {t['median_ms']:5.1f} ms {verdict(t['median_ms'] < 16):4}  "
                  f"p95 {t['p95_ms']:5.1f} ms {verdict(t['p95_ms'] < 25):4}  slowed p95 {t['throttled_p95_ms']:6.1f} ms "
                  f"{verdict(t['throttled_p95_ms'] < 100):4}  views run {t['views']:g} of {t['shared']}"
                  f"  (handler + dataflow {t['handler_ms']:.1f}, render {t['vega_ms']:.1f}, to paint {t['paint_ms']:.1f})")
            if t["unchanged_moves"]:
                print(f"    {'':34} NOTE {t['unchanged_moves']} moves left the figure's drawing unchanged")
    every = [t for rows in pages.values() for t in rows]
    if every:
        ok = all(t["median_ms"] < 16 and t["p95_ms"] < 25 and t["throttled_p95_ms"] < 100 for t in every)
        print(f"  every slider: worst median {max(t['median_ms'] for t in every):.1f} ms, worst p95 "
              f"{max(t['p95_ms'] for t in every):.1f} ms, worst slowed p95 {max(t['throttled_p95_ms'] for t in every):.1f} ms"
              f"   {verdict(ok)}")


def print_lighthouse(lh: dict, runs: int) -> None:
    if "error" in lh:
        print(f"\nlighthouse could not run: {lh['error']}")
        return
    st = lh.get("settings", {})
    throttling = st.get("throttling", {})
    print(f"\nlighthouse {lh.get('version', '?')} on every explainer page, {runs} runs per page, medians. Lighthouse's "
          f"default settings, as the issue measured:\n  {st.get('formFactor', '?')} emulation, "
          f"{st.get('throttlingMethod', '?')} throttling (RTT {throttling.get('rttMs', '?')} ms, "
          f"{throttling.get('throughputKbps', '?')} Kbps, CPU x{throttling.get('cpuSlowdownMultiplier', '?')}); "
          f"pages served from 127.0.0.1 over HTTP/1.1 keep-alive, gzip")
    bench = [b for b in lh["benchmark_index"] if b]
    if bench:
        print(f"  this machine's Lighthouse benchmark index: median {statistics.median(bench):.0f}")
    for w in sorted(lh["warnings"]):
        print(f"  lighthouse warning: {' '.join(w.split())}")
    targets = {"performance": (lambda v: v >= 95, ">= 95"), "accessibility": (lambda v: v >= 100, "100"),
               "best-practices": (lambda v: v >= 100, "100")}

    def below_text(a: dict, runs_done: int) -> str:
        values = " / ".join(v for v in a["values"] if v)
        return f"below 1 in {a['runs']}/{runs_done} runs" + (f": {values}" if values else "")

    for page, r in lh["pages"].items():
        print(f"  {page}")
        if "error" in r:
            print(f"    lighthouse could not run: {r['error']}")
            continue
        for cat in LH_CATEGORIES:
            value = r["scores"][cat]
            ok, target = targets[cat]
            each = ", ".join(str(v) for v in r["run_scores"][cat])
            # A score holds only for the machine it ran on: the performance line says how fast that was.
            index = [b for b in r.get("benchmark_index", []) if b] if cat == "performance" else []
            machine = f"; benchmark index {', '.join(f'{b:.0f}' for b in index)}" if index else ""
            print(f"    {cat:16} {value:7.0f}   target {target:6} {verdict(ok(value)):4}   (runs: {each}{machine})")
            held = [(i, h) for i, h in enumerate(r["held"]) if h]
            if cat == "performance" and held:
                # Judged on every run, as the issue measured; this says how far the held runs pull it.
                others = r["unheld_scores"]
                which = ", ".join(str(i + 1) for i, _ in held)
                paints = ", ".join(f"{h['fcp']:.0f}" for _, h in held)
                loads = ", ".join(f"{h['load']:.0f}" for _, h in held)
                rest = f"; median of the other runs {statistics.median(others):.0f}" if others else ""
                print(f"    {'':16} first paint held back by headless Chromium in run {which} of {r['runs']} "
                      f"(observed first paint {paints} ms, after the load event at {loads} ms; "
                      f"lighthouse#17148){rest}")
        print(f"    {'CLS':16} {r['cls']:7.4g}   target {'0':6} {verdict(r['cls'] == 0):4}")
        print(f"    {'total blocking':16} {r['tbt_ms']:7.0f} ms (no target)")
        if r["runs"] < runs:
            print(f"    only {r['runs']} of {runs} runs completed: {r['errors'][-1]}")
        for a in (a for a in r["below"] if a["weight"]):
            print(f"    costs points: [{a['category']}] {a['title']} ({a['id']}, weight {a['weight']}, scores "
                  f"{', '.join(f'{x:.2f}' for x in a['scores'])}; {below_text(a, r['runs'])})")
        for a in (a for a in r["below"] if not a["weight"]):
            print(f"    no weight:    [{a['category']}] {a['title']} ({a['id']}; {below_text(a, r['runs'])})")


def fresh_build(config: Path, site_dir: Path, cache_dir: Path | None, enabled: bool = True) -> tuple[float, dict]:
    """One build in a new Python process (as `mkdocs build` runs): its time and its seconds by phase
    (compute.timing.PHASES).

    Imports are done before the clock starts, so the figure is the build, not Python's start-up.
    """
    import subprocess

    out = subprocess.run([sys.executable, __file__, "--one-build", str(config), str(site_dir),
                          str(cache_dir or ""), "1" if enabled else "0"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"build of {site_dir} failed:\n{out.stderr.strip()[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["seconds"], result["phases"]


def _group_rss(pgid: int) -> int:
    """Resident bytes of every process in the process group `pgid` (the build and its workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int((stat.parent / "statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def process_build(config: Path, site_dir: Path) -> tuple[float, int]:
    """`python -m mkdocs build` as a whole process, as an author or CI runs it: wall seconds, and
    the peak resident memory of the build and its worker processes together (sampled every 20 ms)."""
    import subprocess

    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "-d", str(site_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _group_rss(proc.pid))
        time.sleep(0.02)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"build of {site_dir} failed:\n{proc.stderr.read().decode()[-2000:]}")
    return seconds, peak


def explainer_figures() -> list[tuple[str, dict, set, str]]:
    """Every figure of the explainers, in nav order: (its page, the page's explainer settings, the
    sliders its kind has, the fence's body)."""
    import yaml

    from explainer_gen.compute.figures import REGISTRY
    from explainer_gen.sources.markdown import FENCE_NAME, scan_fences, split_front_matter

    pages = [line.strip()[2:] for line in (REPO / "mkdocs.yml").read_text().splitlines()
             if line.strip().startswith("- explainers/") and line.strip().endswith(".md")]
    out = []
    for page in pages:
        text = (REPO / "docs" / page).read_text()
        front, _ = split_front_matter(text)
        settings = (yaml.safe_load(front) or {}).get("explainer") or {}
        fences, _ = scan_fences(text.split("\n"))
        for fence in (f for f in fences if f.lang == FENCE_NAME):
            kind = REGISTRY[yaml.safe_load(fence.body)["figure"]]
            out.append((page, settings, set(kind.sliders), fence.body))
    return out


def synthetic_site(root: Path, figures: int) -> Path:
    """A site under `root` (its config returned) of exactly `figures` figures: the explainers'
    figures in nav order, again and again, those of one explainer together on a page of their own
    with that explainer's switch and sliders (the last page may hold fewer). Each caption carries
    the figure's number (a caption is part of a figure's cache key, so no figure is shared through
    the cache). No prose, so no inline numbers: from one size to the next, the build does more
    figures and nothing else. The home page, the feed and the glossary are the site's own."""
    import yaml

    made = explainer_figures()
    groups: list[list[tuple[int, tuple]]] = []
    for n in range(figures):
        figure = made[n % len(made)]
        if not groups or groups[-1][-1][1][0] != figure[0] or n % len(made) == 0:
            groups.append([])
        groups[-1].append((n + 1, figure))
    docs = root / "docs"
    shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns("explainers"))
    (docs / "explainers").mkdir()
    for i, group in enumerate(groups, 1):
        page, settings = group[0][1][0], group[0][1][1]
        # The page's switch, and those of its sliders that its figures have (a page slider that
        # nothing on a page shows is an author's mistake).
        shown = set().union(*(f[2] for _, f in group))
        own = {**settings, "sliders": {n: v for n, v in (settings.get("sliders") or {}).items() if n in shown}}
        own = {k: v for k, v in own.items() if v}
        fences = "".join("```explainer\n" + re.sub(r"^caption: (.*)$", rf"caption: \1 (figure {n})", f[3], flags=re.M)
                         + "\n```\n\n" for n, f in group)
        front = yaml.safe_dump({"explainer": own} if own else {}, sort_keys=False)
        (docs / "explainers" / f"page-{i:03d}.md").write_text(f"---\n{front}---\n\n# Figures from {page}\n\n{fences}")
    config = re.sub(r"(  - Explainers:\n)(      - explainers/.*\n)+", r"\1      - explainers\n",
                    (REPO / "mkdocs.yml").read_text())
    (root / "mkdocs.yml").write_text(config)
    assert sum(p.read_text().count("```explainer") for p in docs.rglob("*.md")) == figures
    return root / "mkdocs.yml"


SCALE = (10, 30, 100)


def scale_rows(work: Path, sizes: tuple[int, ...] = SCALE) -> list[dict]:
    """Cold and plain builds, as whole processes, of the synthetic site at each size (one run each)."""
    rows = []
    for figures in sizes:
        root = work / f"scale-{figures}"
        config = synthetic_site(root, figures)
        cold_cfg = with_plugin_options(config, root / "mkdocs-cold.yml", cache_dir=".cache-cold")
        plain_cfg = with_plugin_options(config, root / "mkdocs-plain.yml", enabled=False)
        plain, _ = process_build(plain_cfg, root / "site-plain")
        cold, rss = process_build(cold_cfg, root / "site-cold")
        pages = sum(1 for _ in (root / "docs").rglob("*.md"))
        rows.append({"figures": figures, "pages": pages, "cold": cold, "plain": plain, "rss": rss})
        shutil.rmtree(root, ignore_errors=True)
    return rows


def print_scale(rows: list[dict]) -> None:
    print(f"\nat scale: synthetic sites of {', '.join(str(r['figures']) for r in rows)} figures (the explainers' "
          "figures, an explainer's to a page, no prose), cold builds as whole processes\n(targets: <= 150 ms per added figure, "
          "linear or better, peak RSS < 1 GB at 100 figures)")
    for r in rows:
        print(f"  {r['figures']:4d} figures on {r['pages']:3d} pages   cold {r['cold']:7.2f} s   plain {r['plain']:6.2f} s   "
              f"cold/plain {r['cold'] / r['plain']:5.2f} x   peak RSS {r['rss'] / 2**20:6.0f} MB "
              f"{verdict(r['rss'] < 2**30)}")
    first, mid, last = rows[0], rows[len(rows) // 2], rows[-1]
    per = (last["cold"] - first["cold"]) / (last["figures"] - first["figures"])
    print(f"  marginal cost per figure ({first['figures']} -> {last['figures']}): {per * 1000:6.0f} ms   "
          f"target <= 150 ms {verdict(per <= 0.150)}")
    lo = (mid["cold"] - first["cold"]) / (mid["figures"] - first["figures"])
    hi = (last["cold"] - mid["cold"]) / (last["figures"] - mid["figures"])
    # Linear or better: the later figures cost no more each than the earlier ones, within 10%
    # (one run per size on a shared machine).
    print(f"  per figure {first['figures']}->{mid['figures']}: {lo * 1000:.0f} ms, {mid['figures']}->{last['figures']}: "
          f"{hi * 1000:.0f} ms   linear or better (later <= 1.1 x earlier) {verdict(hi <= 1.1 * lo)}")


def without_page(root: Path, page: str) -> Path:
    """A copy of the site at `root` without explainer `page` (a stem such as "serving"): its file,
    its nav entry and the Read next entries of other pages that point at it. Returns its config."""
    docs = root / "docs"
    shutil.copytree(REPO / "docs", docs)
    (docs / "explainers" / f"{page}.md").unlink()
    for other in (docs / "explainers").glob("*.md"):
        other.write_text(re.sub(rf"  - page: explainers/{re.escape(page)}\.md\n    why: .*\n", "", other.read_text()))
    config = root / "mkdocs.yml"
    config.write_text((REPO / "mkdocs.yml").read_text().replace(f"      - explainers/{page}.md\n", ""))
    return config


def page_cost(work: Path, page: str, pairs: int = 3) -> float:
    """Median extra seconds of a cold whole-process build with explainer `page` over one without it."""
    with_root, without_root = work / f"with-{page}", work / f"without-{page}"
    shutil.copytree(REPO / "docs", with_root / "docs")
    shutil.copy(REPO / "mkdocs.yml", with_root / "mkdocs.yml")
    configs = {"with": with_root / "mkdocs.yml", "without": without_page(without_root, page)}
    extra = []
    for i in range(pairs):  # interleaved, so a slow spell of the machine hits both sides
        times = {k: process_build(with_plugin_options(c, c.parent / f"mkdocs-cold{i}.yml", cache_dir=f".cache-{i}"),
                                  c.parent / f"site{i}")[0] for k, c in configs.items()}
        extra.append(times["with"] - times["without"])
    return statistics.median(extra)


def print_phases(phases: dict[str, float], cold: float, plain: float) -> None:
    """Where a one-process cold build's time goes, phase by phase (each second counted once)."""
    from explainer_gen.compute.timing import PHASES

    print("  where that cold build's time goes:")
    for name, what in PHASES.items():
        value = phases.get(name, 0.0)
        print(f"    {name:9} {value:7.3f} s {value / cold:6.1%}   {what}")
    cards = phases.get("cards", 0.0)
    print(f"    {'cards':9} {cards:7.3f} s {cards / cold:6.1%}   share cards: composed, drawn to PNG (vl-convert) and stored "
          "smaller")
    rest = cold - sum(phases.values())
    print(f"    {'the rest':9} {rest:7.3f} s {rest / cold:6.1%}   pages read and checked, the cache, Markdown, the "
          f"theme (a plain build takes {plain:.3f} s of it)")


def print_cards(site: Path, seconds: float, cold: float) -> None:
    """What the share cards add (issue 38): the seconds a cold build spends making them, and their
    bytes against the whole site's."""
    cards = sorted((site / "assets/explainer/card").glob("*.png"))
    size = sum(p.stat().st_size for p in cards)
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    print(f"share cards: {len(cards)} PNGs, {size:,d} bytes ({size / total:.1%} of the site's {total:,d}; largest "
          f"{max((p.stat().st_size for p in cards), default=0):,d}); composing them took {seconds:.2f} s of a "
          f"one-process cold build ({seconds / cold:.1%} of {cold:.2f} s)")


NARROW_FRAME = re.compile(r'(<div class="eg-picture eg-narrow"[^>]*>).*?</svg>(</div>)', re.S)


def print_narrow(site: Path, seconds: float, cold: float) -> None:
    """What the phone's layout adds (issue 38): the seconds a cold build spends laying figures out
    for a phone, drawing and compiling them, and the bytes gzip its pictures add to each figure
    page's HTML and its compiled specs to the page's figure payloads."""
    html_added = html_total = payload_added = payload_total = 0
    rows = []
    for html_path in sorted(site.rglob("index.html")):
        html = html_path.read_text()
        figs = re.findall(r'data-eg-figure="([^"]+)"', html)
        if not figs:
            continue
        whole = len(gzip.compress(html.encode(), mtime=0))
        without = len(gzip.compress(NARROW_FRAME.sub(r"\1\2", html).encode(), mtime=0))
        added = 0
        for f in figs:
            payload = json.loads((html_path.parent / f).resolve().read_text())
            with_narrow = len(gzip.compress(json.dumps(payload).encode(), mtime=0))
            payload.pop("narrow")
            added += with_narrow - len(gzip.compress(json.dumps(payload).encode(), mtime=0))
            payload_total += with_narrow
        html_added += whole - without
        html_total += whole
        payload_added += added
        rows.append((str(html_path.relative_to(site).parent), whole - without, whole, added))
    print(f"phone layout: {seconds:.2f} s of a one-process cold build ({seconds / cold:.1%} of {cold:.2f} s); "
          f"its pictures add {html_added:,d} bytes gzip to the figure pages' HTML ({html_added / html_total:.1%} "
          f"of {html_total:,d}), its specs {payload_added:,d} to their figure payloads ({payload_added / payload_total:.1%} "
          f"of {payload_total:,d}, fetched when a figure goes live)")
    for page, added, whole, spec in rows:
        print(f"  {page:34} HTML +{added:7,d} of {whole:8,d} bytes gzip   payloads +{spec:6,d}")


def one_cold_build(cards: bool, phone: bool) -> None:
    """`--cards`, `--phone`: one cold build in one process (workers off) of a copy of the site, and
    what its share cards cost (print_cards), what its phone layout costs (print_narrow), or both."""
    work = Path(tempfile.mkdtemp(prefix="eg-bench-cards-"))
    try:
        shutil.copytree(REPO / "docs", work / "docs")
        shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
        serial = with_plugin_options(work / "mkdocs.yml", work / "mkdocs-serial.yml", workers=1)
        cold, phases = fresh_build(serial, work / "site", work / "cache")
        if cards:
            print_cards(work / "site", phases.get("cards", 0.0), cold)
        if phone:
            print_narrow(work / "site", phases.get("narrow", 0.0), cold)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def process_startup() -> tuple[float, float]:
    """What a new process spends before it can draw a figure, as (importing the generator with its
    models, vl-convert's first call, which starts its JavaScript engine): the build's own process
    pays the first, and every worker both."""
    import subprocess

    code = ("import json, time; t = time.perf_counter(); import explainer_gen.core; import vl_convert as v; "
            "u = time.perf_counter(); v.vegalite_to_svg({'data': {'values': [{'a': 1}]}, 'mark': 'point', "
            "'encoding': {'x': {'field': 'a', 'type': 'quantitative'}}}); w = time.perf_counter(); print(json.dumps([u - t, w - u]))")
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}).stdout) for _ in range(3)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def print_cold_floor(phases: dict[str, float], plain: float, workers: int, cores: int) -> float:
    """The least a cold build could take if it did nothing but a plain build, start its processes
    (the generator imported in each, vl-convert started in each worker) and draw the static
    pictures, with all of it shared perfectly over the cores. No tuning of the models, the
    descriptions, the data or the files goes below it."""
    imports, engine = process_startup()
    # Both layouts' pictures and specs (the phone's: "narrow"); the one-process build started vl-convert once.
    drawing = phases.get("picture", 0.0) + phases.get("vega", 0.0) + phases.get("narrow", 0.0) - engine
    floor = max((plain + (workers + 1) * imports + workers * engine + drawing) / cores, plain + imports)
    print(f"cold-build floor: a plain build, the generator imported in {workers + 1} processes ({imports:.2f} s each), "
          f"vl-convert started in {workers} workers ({engine:.2f} s each), every picture drawn and spec compiled "
          f"({drawing:.2f} s), "
          f"shared perfectly over {cores} cores: {floor:.3f} s = {floor / plain:.2f} x plain")
    return floor


def serve_save(config: str, site_dir: str, cache_dir: str, module: str, saves: int = 5) -> None:
    """In one long-lived process, as under `mkdocs serve` (run with the code copied beside `module`
    first on PYTHONPATH): a build that fills the caches, then each of `saves` saves of `module`
    followed by a rebuild, which loads the code again (core.fresh) and recomputes what reads it.
    Prints the median rebuild and a plain rebuild in the same process, and the last summary line."""
    import explainer_gen.plugin  # noqa: F401  (imports outside the timing)

    timings: list = []
    timed_build(Path(config), Path(site_dir), Path(cache_dir), serve=True)
    plain = statistics.median(timed_build(Path(config), Path(site_dir + "-plain"), None, enabled=False, serve=True)
                              for _ in range(saves))
    source = Path(module)
    text = source.read_text()
    seconds = []
    for i in range(saves):
        source.write_text(text + f"\n# save {i}: {time.perf_counter_ns()}\n")
        seconds.append(timed_build(Path(config), Path(site_dir), Path(cache_dir), timings=timings, serve=True))
    source.write_text(text)
    print(json.dumps({"save": statistics.median(seconds), "plain": plain, "summary": timings[-1].summary()}))


def save_under_serve(work: Path, config: Path, module: str) -> dict:
    """`serve_save` of `module` (a path such as "models/trees.py") on a copy of the code in `work`."""
    import subprocess

    code = work / "code"
    if not code.exists():
        copy_code(code)
    out = subprocess.run([sys.executable, __file__, "--serve-save", str(config), str(work / "save-site"),
                          str(work / "save-cache"), str(code / module)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(code)})
    if out.returncode:
        raise RuntimeError(f"the serve-save run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def prose_save_under_serve(config: Path, work: Path, cache: Path, saves: int = 5) -> tuple[float, float]:
    """As under `mkdocs serve`, in this process, with `cache` warm: (the median rebuild after each
    of `saves` saves of a sentence added to the speculative-decoding page, the least of three
    plain rebuilds). Each save's sentence is new, so the page saved is converted every time."""
    page = config.parent / "docs/explainers/speculative-decoding.md"
    text = page.read_text()
    timed_build(config, work / "served", cache, serve=True)
    plain = min(timed_build(config, work / "plain-served", None, enabled=False, serve=True) for _ in range(3))
    seconds = []
    try:
        for _ in range(saves):
            page.write_text(text + f"\n\nAn edited sentence {time.perf_counter_ns()}.\n")
            seconds.append(timed_build(config, work / "served", cache, serve=True))
    finally:
        page.write_text(text)
    return statistics.median(seconds), plain


def print_prose_save(save: float, plain: float) -> None:
    print(f"  same process (mkdocs serve), median of 5 {save:7.3f} s   {save / plain:5.2f} x plain "
          f"({plain:.3f} s)   target <= 1.5 {verdict(save / plain <= 1.5)}")


def only_prose_save() -> None:
    """`--prose-save`: `prose_save_under_serve` on a copy of the site, with a copy of the project's own
    cache (hard links) where it has one, and otherwise after a build that fills one."""
    work = Path(tempfile.mkdtemp(prefix="eg-bench-prose-"))
    try:
        shutil.copytree(REPO / "docs", work / "docs")
        shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
        if (REPO / ".cache" / "explainer").is_dir():
            link_tree(REPO / ".cache" / "explainer", work / "cache")
        fresh_build(work / "mkdocs.yml", work / "site", work / "cache")
        print("rebuild after a prose edit, warm cache:")
        print_prose_save(*prose_save_under_serve(work / "mkdocs.yml", work, work / "cache"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def one_build(config: str, site_dir: str, cache_dir: str, enabled: str) -> None:
    import explainer_gen.plugin  # noqa: F401  (imports outside the timing)

    timings: list = []
    seconds = timed_build(Path(config), Path(site_dir), Path(cache_dir) if cache_dir else None, enabled == "1", timings)
    print(json.dumps({"seconds": seconds, "phases": timings[0].seconds if timings else {}}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-scale", action="store_true", help="skip the synthetic sites of 10, 30 and 100 figures")
    ap.add_argument("--one-build", nargs=4)
    ap.add_argument("--serve-save", nargs=4)
    ap.add_argument("--cards", action="store_true", help="only what the share cards cost (one cold build)")
    ap.add_argument("--phone", action="store_true", help="only what the phone's layout costs (one cold build)")
    ap.add_argument("--keep-lighthouse", type=Path, metavar="DIR", help="copy every Lighthouse JSON report here")
    ap.add_argument("--sliders", type=Path, metavar="SITE", help="only the slider timings, of a built site")
    ap.add_argument("--lighthouse", type=Path, metavar="SITE", help="only Lighthouse, on a built site")
    ap.add_argument("--number-cards", type=Path, metavar="SITE", help="only the numbers' card files, of a built site")
    ap.add_argument("--prose-save", action="store_true", help="only a prose save under mkdocs serve (one cold build first)")
    args = ap.parse_args()
    if args.prose_save:
        only_prose_save()
        return
    if args.sliders:
        print_slider(slider_latency(args.sliders))
        return
    if args.lighthouse:
        print_lighthouse(lighthouse_pages(args.lighthouse, keep=args.keep_lighthouse), 3)
        return
    if args.number_cards:
        print_number_cards(args.number_cards)
        return
    if args.one_build:
        one_build(*args.one_build)
        return
    if args.serve_save:
        serve_save(*args.serve_save)
        return
    if args.cards or args.phone:
        one_cold_build(args.cards, args.phone)
        return
    work = Path(tempfile.mkdtemp(prefix="eg-bench-"))
    try:
        shutil.copytree(REPO / "docs", work / "docs")
        shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
        config = work / "mkdocs.yml"

        from explainer_gen.client.bundle import bundle_key, machine_cache
        machine = machine_cache()
        bundle_warm = machine.path("bundle", bundle_key()) is not None
        fresh_build(config, work / "warm", work / "warm-cache")  # OS caches, bytecode; fills the machine cache
        # Whole processes, as authors and CI run them (issue 15).
        plain_cfg = with_plugin_options(config, work / "mkdocs-plain.yml", enabled=False)
        plain_p = min(process_build(plain_cfg, work / "plain-p")[0] for _ in range(3))
        colds = [process_build(with_plugin_options(config, work / f"mkdocs-cold{i}.yml", cache_dir=f"cold-cache-{i}"),
                               work / f"cold{i}") for i in range(5)]
        cold_p, cold_rss = statistics.median(c[0] for c in colds), max(c[1] for c in colds)
        # One process, workers off, imports before the clock: where the time goes.
        serial = with_plugin_options(config, work / "mkdocs-serial.yml", workers=1)
        cold, phases = min((fresh_build(serial, work / f"serial{i}", work / f"serial-cache-{i}") for i in range(2)),
                           key=lambda r: r[0])
        model_s = phases.get("models", 0.0)
        plain = min(fresh_build(config, work / "plain", None, enabled=False)[0] for _ in range(3))
        cache_cfg = with_plugin_options(config, work / "mkdocs-cached.yml", cache_dir="cold-cache-0")
        cache = work / "cold-cache-0"
        page = work / "docs/explainers/speculative-decoding.md"
        text = page.read_text()

        def edit() -> None:
            page.write_text(text + f"\n\nAn edited sentence {time.perf_counter_ns()}.\n")

        def fresh_after_edit() -> float:
            edit()
            return process_build(cache_cfg, work / "cached")[0]

        cached_cli = min(fresh_after_edit() for _ in range(3))
        page.write_text(text)
        cached_serve, plain_serve = prose_save_under_serve(config, work, cache)

        from explainer_gen.compute.workers import default_workers
        print(f"whole `mkdocs build` processes, {default_workers()} worker processes on {os.cpu_count()} cores; "
              f"the machine's Vega bundle cache was {'warm' if bundle_warm else 'cold (the first build made it)'}")
        print(f"cold build (plugin, empty cache)     {cold_p:7.3f} s   peak RSS {cold_rss / 2**20:5.0f} MB")
        print(f"plain build (plugin disabled)        {plain_p:7.3f} s")
        print(f"cold / plain                         {cold_p / plain_p:7.2f} x   target <= 3.0 {verdict(cold_p / plain_p <= 3)}")
        print(f"rebuild after a prose edit, warm cache, new process {cached_cli:7.3f} s   {cached_cli / plain_p:5.2f} x plain   "
              f"target <= 1.15 {verdict(cached_cli / plain_p <= 1.15)}")
        print(f"\nin one process, imports before the clock, workers off: cold {cold:.3f} s, plain {plain:.3f} s")
        print(f"  time in models                     {model_s:7.3f} s   share {model_s / cold:6.1%}   (target < 5%)")
        print_phases(phases, cold, plain)
        floor = print_cold_floor(phases, plain_p, default_workers(), len(os.sched_getaffinity(0)))
        print(f"cold build / floor (median of 5)     {cold_p / floor:7.2f} x   target <= 2 {verdict(cold_p / floor <= 2)}")
        print("rebuild after a prose edit, warm cache:")
        print_prose_save(cached_serve, plain_serve)
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
        print_number_cards(work / "cold0")
        print_cards(work / "cold0", phases.get("cards", 0.0), cold)
        print_narrow(work / "cold0", phases.get("narrow", 0.0), cold)
        print()
        costs = {}
        for page in ("serving", "draft-trees"):
            cost = costs[page] = page_cost(work, page)
            print(f"the {page} page adds {cost:.2f} s to a cold build (median of 3 pairs)   target <= 3 s "
                  f"{verdict(cost <= 3)}")
        saved = save_under_serve(work, config, "models/trees.py")
        bound = costs["draft-trees"] + saved["plain"]
        print(f"a save of models/trees.py under mkdocs serve: the page shows after {saved['save']:.2f} s (median of 5); "
              f"target <= the draft-trees page's share of a cold build + a plain rebuild = {bound:.2f} s "
              f"{verdict(saved['save'] <= bound)}\n  its summary: {saved['summary']}")
        if not args.no_scale:
            print_scale(scale_rows(work))
        if not args.no_browser:
            runs = 3
            print_slider(slider_latency(work / "cold0"))
            print_lighthouse(lighthouse_pages(work / "cold0", runs, args.keep_lighthouse), runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
