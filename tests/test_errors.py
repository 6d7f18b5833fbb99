"""Every author mistake fails the build with the file, the line and the valid choices."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import SCRATCH_CONFIG, assert_build_fails, build_scratch_page, mkdocs_build

GOOD_FENCE = "```explainer\nfigure: speedup-vs-batch\n```\n"


CASES = {
    "unknown figure": ("# T\n\n```explainer\nfigure: speedup-vs-bach\n```\n", 4,
                       ["unknown figure 'speedup-vs-bach'", "speedup-vs-batch"]),
    "unknown accelerator": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  accelerator: h100\n```\n", 6,
                            ["unknown accelerator 'h100'", "h100-sxm", "mi300x"]),
    "unknown model": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  target: llama-70b\n```\n", 6,
                      ["unknown model 'llama-70b'", "llama-3-70b"]),
    "malformed fence yaml": ("# T\n\n```explainer\nfigure: [speedup-vs-batch\n```\n", 4, ["invalid YAML"]),
    "fence not a mapping": ("# T\n\n```explainer\n- speedup-vs-batch\n```\n", 3, ["must be a YAML mapping"]),
    "missing figure key": ("# T\n\n```explainer\ncaption: hello\n```\n", 4, ["needs a 'figure' key", "speedup-vs-batch"]),
    "unknown fence key": ("# T\n\n```explainer\nfigure: speedup-vs-batch\ncolour: red\n```\n", 5,
                          ["unknown key 'colour'", "caption"]),
    "unclosed fence": ("# T\n\n```explainer\nfigure: speedup-vs-batch\n", 3, ["never closed"]),
    "unknown inline function": ("# T\n\nIt is {{ Ee(0.8, 4) | .1f }} tokens.\n", 3, ["unknown function 'Ee'", "'E'"]),
    "invalid inline format": ("# T\n\nIt is {{ E(0.8, 4) | .1q }} tokens.\n", 3, ["invalid format spec '.1q'"]),
    "unknown inline unit": ("# T\n\nIt takes {{ step(1) | .1f msec }}.\n", 3, ["unknown unit 'msec'", "ms"]),
}


@pytest.mark.parametrize("name", CASES)
def test_author_mistake_fails_with_location(tmp_path, name):
    markdown, line, needles = CASES[name]
    assert_build_fails(build_scratch_page(tmp_path, markdown), line, *needles)


# One real `mkdocs build` process for each way a build fails, beside the same build in this
# process (helpers.mkdocs_build, which the other tests here use): an author's mistake (the
# plugin's PluginError), a mistake in the catalogue (the same, from another file) and a plugin
# option of the wrong kind (MkDocs' own configuration error). The command exits with status 1,
# prints the message and no traceback, and the build in this process says exactly the same.
WAYS_A_BUILD_FAILS = {
    "author mistake": (SCRATCH_CONFIG, CASES["unknown figure"][0], "docs/page.md:4: unknown figure 'speedup-vs-bach'"),
    "catalogue mistake": (SCRATCH_CONFIG.replace("plugins: [explainer]",
                                                 "plugins: [{explainer: {catalogue: cat.yaml}}]"),
                          GOOD_FENCE, "cat.yaml:"),
    "plugin option": (SCRATCH_CONFIG.replace("plugins: [explainer]",
                                             "plugins: [{explainer: {cache_keep_days: -1}}]"),
                      GOOD_FENCE, "option 'cache_keep_days': must be a number of days, 0 or more"),
}


@pytest.mark.parametrize("way", WAYS_A_BUILD_FAILS)
def test_the_command_fails_as_the_build_in_this_process_does(tmp_path, way):
    config, markdown, needle = WAYS_A_BUILD_FAILS[way]
    (tmp_path / "cat.yaml").write_text(GOOD_CATALOGUE.replace("bf16_tflops: 989", "bf16_tflops: 0", 1))
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(config)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "page.md").write_text(markdown)
    command = mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=True, process=True)
    here = mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=True)
    for result in (command, here):
        out = result.stdout + result.stderr
        assert result.returncode == 1 and needle in out and "Traceback" not in out, out
    lines = lambda text: [line.strip() for line in text.strip().splitlines()]  # noqa: E731
    assert (lines(here.stdout), lines(here.stderr)) == (lines(command.stdout), lines(command.stderr))
    assert not (tmp_path / "site").exists()


def test_errors_also_fail_strict_builds(tmp_path):
    markdown, line, needles = CASES["unknown figure"]
    assert_build_fails(build_scratch_page(tmp_path, markdown, strict=True), line, *needles)


def test_a_good_page_builds(tmp_path):
    result = build_scratch_page(tmp_path, "# T\n\n" + GOOD_FENCE)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "page" / "index.html").read_text().count('class="eg-figure"') == 1


def test_front_matter_lines_are_counted(tmp_path):
    md = "---\ntitle: T\n---\n\n# T\n\n```explainer\nfigure: nope\n```\n"
    assert_build_fails(build_scratch_page(tmp_path, md), 8, "unknown figure 'nope'")


MORE_CASES = {
    "wrong type": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  cards: four\n```\n", 6,
                   ["cards must be a whole number", "'four'"]),
    "unknown scenario key": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  gpu: h100-sxm\n```\n", 6,
                             ["unknown scenario key 'gpu'", "accelerator"]),
    "unknown slider": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  b: {default: 0.5}\n```\n", 6,
                       ["unknown slider 'b'", "valid: a"]),
    "slider min above max": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  a:\n    min: 0.9\n    max: 0.1\n```\n",
                             7, ["min 0.9 is above max 0.1"]),
    "zero step": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  a:\n    step: 0\n```\n", 7,
                  ["step must be positive, got 0"]),
    "negative step": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  a:\n    step: -0.05\n```\n", 7,
                      ["step must be positive, got -0.05"]),
    "default outside range": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  a:\n    default: 1.5\n```\n", 7,
                              ["default 1.5 is outside 0.05..0.95"]),
    "slider value of the wrong type": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n  a:\n    max: high\n```\n",
                                       7, ["slider max must be a number, got 'high'"]),
    "inline number that is infinite": (
        "---\nexplainer:\n  sliders:\n    a: {label: A, min: 0.1, max: 0.9, step: 0.1, default: 0.3, dimension: ratio}\n---\n\n"
        "# T\n\nIt is {{ 1 / (a - 0.5) | .1f }}.\n", 9, ["is inf at a=0.5"]),
    "invalid math": ("# T\n\nText.\n\n```math\n\\frac{1}{\n```\n", 6, ["math fence", "is not valid LaTeX"]),
    "slider named like a Vega signal": ("---\nexplainer:\n  sliders:\n    width: {label: W, min: 1, max: 2, step: 1, default: 1}\n---\n\n# T\n", 4,
                                        ["slider name 'width'", "Vega's own names"]),
    "unknown page slider in prose": ("# T\n\nAt {{ E(acc, 4) | .1f }}.\n", 3, ["unknown name 'acc'"]),
}


@pytest.mark.parametrize("name", MORE_CASES)
def test_more_author_mistakes(tmp_path, name):
    markdown, line, needles = MORE_CASES[name]
    assert_build_fails(build_scratch_page(tmp_path, markdown), line, *needles)


NAN_HOOK = '''
import numpy as np
from explainer_gen.compute.figures.base import register
from explainer_gen.compute.figures.speedup import SpeedupVsBatch


@register
class Broken(SpeedupVsBatch):
    name = "broken-speedup"

    def compute(self, r, grid):
        cols = super().compute(r, grid)
        cols["speedup"] = np.where(np.isclose(cols["a"], 0.35), np.nan, cols["speedup"])
        return cols
'''


def test_nan_from_a_model_names_the_position(tmp_path):
    (tmp_path / "hooks.py").write_text(NAN_HOOK)
    config = SCRATCH_CONFIG + "hooks: [hooks.py]\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(config)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "page.md").write_text("# T\n\n```explainer\nfigure: broken-speedup\n```\n")
    # In a process of its own: the hook registers a figure kind, which must not stay in the
    # registry of the test run (test_figure_kinds checks every kind registered).
    result = mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=False, process=True)
    assert_build_fails(result, 3, "the model gave nan for 'speedup' at a=0.35")


GOOD_CATALOGUE = (Path(__file__).resolve().parents[1] / "models" / "catalogue.yaml").read_text()

CATALOGUE_CASES = {
    "missing field": (GOOD_CATALOGUE.replace("    bandwidth_tbps: 3.35\n", "", 1), "misses field(s): bandwidth_tbps"),
    "negative bandwidth": (GOOD_CATALOGUE.replace("bandwidth_tbps: 3.35", "bandwidth_tbps: -3.35", 1),
                           "bandwidth_tbps must be positive, got -3.35"),
    "zero flops": (GOOD_CATALOGUE.replace("bf16_tflops: 989", "bf16_tflops: 0", 1), "bf16_tflops must be positive, got 0"),
    "duplicate name": (GOOD_CATALOGUE.replace("key: h200", "key: h100-sxm", 1), "duplicate accelerators key 'h100-sxm'"),
    "invalid yaml": (GOOD_CATALOGUE.replace("accelerators:", "accelerators: [", 1), "invalid YAML"),
    "no source": (re.sub(r"\n    source: [^\n]*", "", GOOD_CATALOGUE, count=1), "entry misses field(s): source"),
    "shape": (GOOD_CATALOGUE.replace("hidden: 8192", "hidden: 8000", 1), "hidden 8000 is not heads × head_dim (64 × 128)"),
    "tied not a yes or no": (GOOD_CATALOGUE.replace("tied_embeddings: false", "tied_embeddings: 0", 1),
                             "tied_embeddings must be true or false, got 0"),
    "embedding larger than the model": (GOOD_CATALOGUE.replace("vocab: 128256", "vocab: 1282560", 1),
                                        "would hold all of the 1235814400 parameters"),
}


@pytest.mark.parametrize("name", CATALOGUE_CASES)
def test_catalogue_mistakes(tmp_path, name):
    text, needle = CATALOGUE_CASES[name]
    (tmp_path / "cat.yaml").write_text(text)
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(SCRATCH_CONFIG.replace("plugins: [explainer]",
                                                                "plugins: [{explainer: {catalogue: cat.yaml}}]"))
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n" + GOOD_FENCE)
    result = mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=False)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert re.search(r"cat\.yaml:\d+: ", out), out
    assert needle in out, out
    assert "Traceback" not in out
    # The line named is the line of the mistake.
    line = int(re.search(r"cat\.yaml:(\d+): ", out).group(1))
    bad_line = text.split("\n")[line - 1]
    assert any(w in bad_line for w in ("bandwidth", "tflops", "key", "accelerators", "- key", "name", "hidden",
                                       "tied", "vocab")), bad_line


def test_failed_build_leaves_previous_site_untouched(tmp_path):
    good = build_scratch_page(tmp_path, "# T\n\n" + GOOD_FENCE)
    assert good.returncode == 0
    snapshot = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    bad = build_scratch_page(tmp_path, "# T\n\n```explainer\nfigure: nope\n```\n")
    assert bad.returncode != 0
    after = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert after == snapshot


def test_slider_grid_over_the_page_budget_gives_its_size(tmp_path):
    fence = ("# T\n\n```explainer\nfigure: speedup-vs-batch\nsliders:\n"
             "  a: {min: 0.005, max: 0.995, step: 0.005, default: 0.5}\n```\n")
    config = SCRATCH_CONFIG.replace("plugins: [explainer]", "plugins: [{explainer: {data_budget_kb: 10}}]")
    result = build_scratch_page(tmp_path, fence, config=config)
    assert_build_fails(result, 3, "KB gzip, over the budget of 10 KB")
    size = float(re.search(r"would be ([\d.]+) KB gzip", result.stderr).group(1))
    assert size > 10


def test_a_wrong_constant_fails_the_build_at_the_measurement_it_moves(tmp_path):
    """Negative control of the measurements' check (models/estimate.py): a catalogue whose H100
    reads twice as fast as its datasheet builds no site, and the error names the line of
    models/measurements.yaml where a measurement's place in the band no longer holds."""
    (tmp_path / "cat.yaml").write_text(GOOD_CATALOGUE.replace("bandwidth_tbps: 3.35", "bandwidth_tbps: 6.7", 1))
    result = build_scratch_page(tmp_path, "# T\n\n" + GOOD_FENCE,
                                config=SCRATCH_CONFIG.replace("plugins: [explainer]",
                                                              "plugins: [{explainer: {catalogue: cat.yaml}}]"))
    out = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in out, out
    found = re.search(r"measurements\.yaml:(\d+): (\S+): measured", out)
    assert found, out
    line = (Path(__file__).resolve().parents[1] / "models" / "measurements.yaml").read_text().split("\n")[int(found.group(1)) - 1]
    assert line.strip().startswith("in_band:"), line
    assert not (tmp_path / "site").exists()
