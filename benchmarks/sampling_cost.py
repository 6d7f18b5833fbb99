"""What the simulated speculative sampler costs a build.

    python benchmarks/sampling_cost.py     # also times one cold build of the site for the share

`measure()` is what benchmarks/bench.py calls: the sampler grid's time in the models (cold, the
best of a few runs), the random draws it consumes, the sample sizes behind each number, and the
whole figures (model, spec, static SVG) for the two sampling figures, with their data size.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

from explainer_gen.compute.timing import Timing  # noqa: E402
from explainer_gen.compute.artifacts import FigureRequest, build_figure  # noqa: E402
from explainer_gen.compute.resolved import default_scenario  # noqa: E402
from explainer_gen.compute.figures import REGISTRY  # noqa: E402
from models import load_catalogue, sampling  # noqa: E402

KINDS = ("sampling-check", "sampling-speed")
# The target from benchmarks/bench.py: time in the models under 5% of a cold build.
MODEL_SHARE_TARGET = 0.05


def _grid_seconds(drift) -> float:
    sampling._figure_grid.cache_clear()
    start = time.perf_counter()
    sampling.figure_grid(drift)
    return time.perf_counter() - start


def measure(runs: int = 3, cold_build_s: float | None = None) -> dict:
    """Cost of the sampling figures; with `cold_build_s`, also their share of that build."""
    slider = REGISTRY["sampling-check"].sliders["drift"]
    drift = slider.values()
    grid_s = min(_grid_seconds(drift) for _ in range(runs))
    grid = sampling.figure_grid(drift)

    catalogue = load_catalogue()
    sampling._figure_grid.cache_clear()
    timing = Timing()
    figures, start = {}, time.perf_counter()
    for kind in KINDS:
        req = FigureRequest(kind, dict(REGISTRY[kind].sliders), (default_scenario(load_catalogue()),), kind)
        t = time.perf_counter()
        art = build_figure(req, catalogue, timing)
        figures[kind] = {"build_ms": round(1e3 * (time.perf_counter() - t), 1),
                         "data_gz_bytes": art.sizes[art.default]}
    models_s = timing.model_seconds
    out = {
        "slider_positions": len(drift),
        "tokens_per_bar": sampling.FIGURE_TOKENS,
        "steps_per_point": sampling.FIGURE_STEPS,
        "uniform_draws": grid.draws,
        "grid_ms": round(1e3 * grid_s, 1),
        "figures": figures,
        "figures_total_ms": round(1e3 * (time.perf_counter() - start), 1),
        "figures_models_ms": round(1e3 * models_s, 1),
    }
    if cold_build_s:
        out["cold_build_s"] = round(cold_build_s, 3)
        out["share_of_cold_build"] = round(models_s / cold_build_s, 4)
        out["within_model_budget"] = models_s / cold_build_s < MODEL_SHARE_TARGET
    return out


def _cold_build_seconds() -> tuple[float, float]:
    """One build of the site with the figure cache off: (seconds, seconds in all models)."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    work = Path(tempfile.mkdtemp(prefix="eg-sampling-cost-"))
    try:
        shutil.copytree(REPO / "docs", work / "docs")
        shutil.copy(REPO / "mkdocs.yml", work / "mkdocs.yml")
        cfg = load_config(str(work / "mkdocs.yml"), site_dir=str(work / "site"))
        cfg.plugins["explainer"].config.cache_dir = ""
        sampling._figure_grid.cache_clear()
        start = time.perf_counter()
        build(cfg)
        return time.perf_counter() - start, cfg.plugins["explainer"].site.timing.model_seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import json

    cold, all_models = _cold_build_seconds()
    result = measure(cold_build_s=cold)
    result["all_models_share_of_cold_build"] = round(all_models / cold, 4)
    print(json.dumps(result, indent=2))
