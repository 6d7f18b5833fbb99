"""The estimate fitted on published measurements (models/estimate.py, models/measurements.yaml):
the file, the fit, its band, the build's check and the command that prices any setup."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

from helpers import REPO
from models import estimate, roofline
from models.catalogue import load_catalogue
from models.precision import Precision
from models.yamlsource import SourceError

pytestmark = pytest.mark.unit

CAT = load_catalogue()
DATA = estimate.load()
FIT = estimate.fit(DATA)
RAW = yaml.safe_load(estimate.MEASUREMENTS_PATH.read_text())


# -- 1. the measurements ---------------------------------------------------------------------------

def test_the_file_has_the_variety_the_estimate_is_judged_on():
    """At least 25 measurements; 3 kinds of card, 2 engines; latencies, throughputs and serving
    runs; a training set larger than the fit's terms, and held-out kinds absent from training
    (a card, and serving runs)."""
    rows = DATA.rows
    assert len(rows) >= 25
    assert len({m.setup.acc.key for m in rows}) >= 3
    assert len({m.raw["engine"].split()[0] for m in rows}) >= 2
    quantities = {m.quantity for m in rows}
    assert {"prefill", "throughput"} <= quantities and {"serving-ttft", "serving-itl"} <= quantities
    training, held = DATA.training(), DATA.held_out()
    assert len(training) > len(estimate.TERMS) and held
    assert {m.setup.acc.key for m in held} - {m.setup.acc.key for m in training}
    assert {m.quantity for m in held} - {m.quantity for m in training}
    for row in RAW["measurements"]:
        assert row["source"]["key"] and row["source"]["where"], row["id"]
    assert RAW["left_out"] and all(item["why"] for item in RAW["left_out"])


def test_the_file_reads_as_published():
    """Values are read as printed: a latency in ms becomes seconds, a batch-one decode published
    as tokens per second becomes a step of batch / rate."""
    by_id = {m.id: m for m in DATA.rows}
    for row in RAW["measurements"]:
        m = by_id[row["id"]]
        if row["unit"] == "ms":
            assert m.value == pytest.approx(row["value"] / 1e3)
        elif m.quantity == "decode":
            assert m.value == pytest.approx(row["batch"] / row["value"])
        else:
            assert m.value == row["value"]


# -- 2. the estimate's terms and the fit -------------------------------------------------------------

def test_the_floor_is_the_estimate_with_every_share_one_and_no_fixed_cost():
    """`StepTime.at(FLOOR)` is the step's own seconds; lowering any share, or adding a fixed cost,
    never makes a pass faster (so a time's estimate never beats its floor), and makes some pass of
    the range slower (a read-bound pass does not feel a slower GEMM, a compute-bound one does)."""
    acc, model = CAT.accelerator("h100-sxm"), CAT.model("llama-3-70b")
    tokens = np.array([1.0, 64.0, 512.0, 4096.0])
    for precision in (Precision.of("bf16", "bf16"), Precision.of("fp8", "fp8")):
        st = roofline.step_time(acc, model, 4, tokens, 1024.0, precision=precision)
        assert np.allclose(st.at(roofline.FLOOR), st.seconds)
        for name in estimate.TERMS:
            worse = dataclasses.replace(roofline.FLOOR, **{
                name: 0.5 if name in estimate.SHARES else 2.0 if name == "overlap" else 1e-4})
            slower = st.at(worse)
            if name == "fp8" and precision.weights.key == "bf16":  # no product runs in FP8
                assert np.allclose(slower, st.seconds)
            else:
                assert np.all(slower >= st.seconds) and np.any(slower > st.seconds), name


def test_each_share_slows_only_the_kernels_it_names():
    """Bandwidth at one half doubles a pure read (a decode step's weights on one card), and
    leaves a compute-bound pass's GEMMs alone; the FP8 share slows FP8 weights' products, not BF16
    ones; the link share slows the collectives' bytes only, never one card's pass."""
    acc, model = CAT.accelerator("h100-sxm"), CAT.model("llama-3-8b")
    read = roofline.step_time(acc, model, 1, 1.0, 0.0)
    half_bw = roofline.Efficiency(bandwidth=0.5)
    gemm, *_ = read.pieces.times(*read.carried, eff=half_bw)
    assert float(gemm) == pytest.approx(2 * float(read.gemm_s))
    fp8, bf16 = Precision.of("fp8", "bf16"), Precision.of("bf16", "bf16")
    busy_fp8 = roofline.step_time(acc, model, 1, 8192.0, 0.0, precision=fp8)
    busy_bf16 = roofline.step_time(acc, model, 1, 8192.0, 0.0, precision=bf16)
    assert bool(busy_fp8.compute_bound) and bool(busy_bf16.compute_bound)
    slow_fp8 = roofline.Efficiency(fp8=0.5)
    assert float(busy_fp8.pieces.times(*busy_fp8.carried, eff=slow_fp8)[0]) == pytest.approx(2 * float(busy_fp8.gemm_s))
    assert float(busy_bf16.pieces.times(*busy_bf16.carried, eff=slow_fp8)[0]) == pytest.approx(float(busy_bf16.gemm_s))
    one = roofline.step_time(acc, model, 1, 64.0, 0.0)
    assert float(one.at(roofline.Efficiency(link=0.1))) == pytest.approx(float(one.seconds))
    four = roofline.step_time(acc, model, 4, 64.0, 0.0)
    assert float(four.at(roofline.Efficiency(link=0.1))) > float(four.seconds)


def test_the_fit_reports_a_residual_for_every_training_measurement_and_its_band_holds_them():
    """Every training measurement has its residual ln(measured / estimate); the band of each kind
    runs from the least to the greatest training ratio, so it holds every training measurement,
    and is within its declared limit; the fitted shares lie in (0, 1] and the fixed costs at 0 or
    above."""
    training = DATA.training()
    assert set(FIT.residuals) == {m.id for m in training}
    for m in training:
        ratio = m.value / m.price(FIT.eff)
        assert math.log(ratio) == pytest.approx(FIT.residuals[m.id])
        low, high = FIT.band[m.kind]
        assert low - 1e-12 <= ratio <= high + 1e-12
    for kind, (low, high) in FIT.band.items():
        assert low <= 1.0 <= high and high / low <= DATA.band_limit[kind]
        assert min(r for i, r in FIT.residuals.items() if DATA_BY_ID[i].kind == kind) == pytest.approx(math.log(low))
    for name in estimate.SHARES:
        assert 0.0 < getattr(FIT.eff, name) <= 1.0
    assert FIT.eff.pass_s >= 0.0 and FIT.eff.layer_s >= 0.0


DATA_BY_ID = {m.id: m for m in DATA.rows}


def test_the_fit_finds_terms_it_was_made_from():
    """Measurements priced by the model itself at known terms (an efficiency unlike the start),
    with no prior: the fit recovers every term that the measurements can tell apart, and its
    residuals vanish. Here the latencies and throughputs of the file's own training setups."""
    truth = roofline.Efficiency(bandwidth=0.8, bf16=0.55, fp8=0.5, link=0.3, pass_s=2e-3, layer_s=3e-5, overlap=2.0)
    rows = tuple(dataclasses.replace(m, value=m.price(truth)) for m in DATA.training())
    synthetic = dataclasses.replace(DATA, rows=rows, priors={})
    got = estimate.fit(synthetic)
    assert max(abs(r) for r in got.residuals.values()) < 1e-3
    for name in estimate.TERMS:
        assert getattr(got.eff, name) == pytest.approx(getattr(truth, name), rel=0.02), name
    assert got.at_limit == ()
    # Negative control: the A100's latencies 50% slower and its throughputs 50% lower than the truth
    # (no one term slows one card) cannot be fitted exactly: the residuals no longer vanish.
    skewed = tuple(dataclasses.replace(m, value=m.value * (1.5 if m.setup.acc.key == "a100-80gb" and m.kind == "latency"
                                                           else 1 / 1.5 if m.setup.acc.key == "a100-80gb" else 1.0))
                   for m in rows)
    bent = estimate.fit(dataclasses.replace(DATA, rows=skewed, priors={}))
    assert max(abs(r) for r in bent.residuals.values()) > 0.05


@pytest.mark.parametrize("factor", [0.5, 0.8, 2.0, 10.0])
def test_a_wild_measurement_moves_the_fit_without_breaking_it(factor):
    """One training value scaled by 0.5 to 10 (a typo in the file): the fit still ends, with
    finite terms in their ranges, and the check reports what moved rather than failing itself."""
    rows = list(DATA.rows)
    i = next(j for j, m in enumerate(rows) if m.id == "trtllm-0.8.0-ttft-h100-fp8-70b-tp8-128")
    rows[i] = dataclasses.replace(rows[i], value=rows[i].value * factor)
    data = dataclasses.replace(DATA, rows=tuple(rows))
    fitted = estimate.fit(data)
    assert all(math.isfinite(getattr(fitted.eff, name)) for name in estimate.TERMS)
    errors = estimate.check(data, fitted)
    assert all(isinstance(e, SourceError) for e in errors)
    if factor in (0.5, 10.0):
        assert errors, "a training value halved or multiplied tenfold moved nothing"


def test_the_fit_says_which_terms_sit_at_the_edge_of_their_range():
    """On the file as it stands the fixed cost a pass comes out at 0: the data cannot tell it from
    the per-layer cost, and the fit reports it rather than printing it as a measurement."""
    assert "pass_s" in FIT.at_limit and FIT.eff.pass_s < 1e-9
    for name in FIT.at_limit:
        assert name in estimate.TERMS


# -- 3. the build's check ----------------------------------------------------------------------------

def test_the_file_agrees_with_the_model_as_it_stands():
    assert estimate.check(DATA, FIT) == []




def test_a_wrong_constant_fails_the_check_at_a_measurements_line(tmp_path):
    """Negative control: the H100's bandwidth doubled in the catalogue (a wrong constant) moves
    measurements across the band's edge, and the check names them by their line in the file."""
    text = (REPO / "models" / "catalogue.yaml").read_text().replace("bandwidth_tbps: 3.35", "bandwidth_tbps: 6.7", 1)
    bad = tmp_path / "catalogue.yaml"
    bad.write_text(text)
    cat = load_catalogue(bad)
    data = estimate.load(estimate.MEASUREMENTS_PATH, cat)
    errors = estimate.check(data)
    assert errors, "a doubled bandwidth went unnoticed"
    lines = estimate.MEASUREMENTS_PATH.read_text().split("\n")
    for e in errors:
        assert e.path == str(estimate.MEASUREMENTS_PATH)
        assert lines[e.line - 1].strip().startswith(("in_band:", "band_limit:")), (e.line, lines[e.line - 1])


@pytest.mark.parametrize("edit, needle", [
    (lambda t: t.replace("accelerator: h100-sxm", "accelerator: h100", 1), "no accelerator 'h100'"),
    (lambda t: t.replace("model: llama-2-7b", "model: llama-2-8b", 1), "no model 'llama-2-8b'"),
    (lambda t: t.replace("    tokens: 128\n", "", 1), "prefill needs 'tokens'"),
    (lambda t: t.replace("unit: ms", "unit: parsecs", 1), "not 'parsecs'"),
    (lambda t: t.replace("split: training", "split: trained", 1), "split 'trained'"),
    (lambda t: t.replace("in_band: false\n    reason:", "in_band: false\n    note:", 1), "says why"),
    (lambda t: t.replace("band_limit: {latency: 1.5,", "band_limit: {latency: 0.5,", 1), "ratio above 1"),
    (lambda t: t.replace("    split: training\n    in_band: true", "    split: training\n    in_band: false\n    reason: a test", 1),
     "inside the band by construction"),
    (lambda t: t.replace("    cards: 1\n", "    cards: true\n", 1), "whole number"),
    (lambda t: t.replace("    rate: 2\n", "    rate: 0\n", 1), "a rate above 0"),
])
def test_a_mistake_in_the_file_is_named_at_its_line(tmp_path, edit, needle):
    text = estimate.MEASUREMENTS_PATH.read_text()
    changed = edit(text)
    assert changed != text
    path = tmp_path / "measurements.yaml"
    path.write_text(changed)
    with pytest.raises(SourceError) as info:
        estimate.load(path, CAT)
    assert needle in info.value.message
    differs = next(i for i, (a, b) in enumerate(zip(text.split("\n"), changed.split("\n"))) if a != b) + 1
    assert abs(info.value.line - differs) <= 16, (info.value.line, differs)  # within the measurement's entry


# -- 4. the command -----------------------------------------------------------------------------------

SETUPS = [("a100-80gb", 1, "llama-3-8b", "bf16", "bf16"), ("h100-sxm", 4, "llama-3-70b", "fp8", "fp8"),
          ("h200", 8, "llama-3.1-405b", "fp8", "bf16"), ("mi300x", 2, "mixtral-8x7b", "bf16", "bf16"),
          ("b200", 1, "llama-2-7b", "int4", "fp8")]
QUANTITIES = [["prefill", "--tokens", "2048"], ["decode", "--batch", "32", "--context", "4096"],
              ["throughput", "--input", "1024", "--output", "256"]]


def _run(argv, capsys):
    try:
        code = estimate.main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "-".join(map(str, s)))
def test_the_command_prices_any_setup_with_the_floor_on_the_right_side(setup, capsys):
    """For each quantity: SI units, low <= estimate <= high, the floor a lower bound of a time and
    an upper bound of a throughput, and the same object with --json before or after the
    sub-command; without --json, one line."""
    acc, cards, model, weights, kv = setup
    base = ["--accelerator", acc, "--cards", str(cards), "--model", model, "--weights", weights, "--kv", kv]
    for q in QUANTITIES:
        code, first, err = _run(["--json", *base, *q], capsys)
        assert code == 0, err
        code, after, _ = _run([*base, *q, "--json"], capsys)
        assert first == after
        out = json.loads(first)
        assert out["quantity"] == q[0] and out["unit"] == ("tokens/s" if q[0] == "throughput" else "s")
        assert out["low"] <= out["estimate"] <= out["high"]
        if q[0] == "throughput":
            assert out["floor"] >= out["estimate"] > 0 and out["batch"] >= 1
        else:
            assert 0 < out["floor"] <= out["estimate"]
        code, line, _ = _run([*base, *q], capsys)
        assert code == 0 and line.count("\n") == 1 and "estimate" in line and "floor" in line


def test_the_command_and_the_file_price_alike(capsys):
    """The command's estimate of a training measurement's setup is the one the fit was judged by."""
    m = next(x for x in DATA.training() if x.quantity == "prefill")
    argv = ["--accelerator", m.setup.acc.key, "--cards", str(m.setup.cards), "--model", m.setup.model.key,
            "--weights", m.setup.precision.weights.key, "--kv", m.setup.precision.kv.key, "--json",
            "prefill", "--tokens", str(int(m.args["tokens"]))]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and json.loads(out)["estimate"] == pytest.approx(m.price(FIT.eff))


BAD = {
    "unknown accelerator": (["--accelerator", "h300", "--cards", "1", "--model", "llama-3-8b", "prefill", "--tokens", "8"],
                            "h100-sxm"),
    "unknown model": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-9", "prefill", "--tokens", "8"],
                      "llama-3-8b"),
    "no sub-command": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b"], "prefill,decode,throughput"),
    "zero tokens": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "prefill", "--tokens", "0"],
                    "above 0"),
    "negative output": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "throughput",
                         "--input", "8", "--output", "-3"], "above 0"),
    "negative context": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "decode",
                          "--batch", "1", "--context", "-1"], "0 or more"),
    "does not fit": (["--accelerator", "a100-80gb", "--cards", "1", "--model", "llama-3.1-405b", "prefill", "--tokens", "8"],
                     "does not fit"),
    "does not split": (["--accelerator", "h100-sxm", "--cards", "3", "--model", "llama-3-8b", "prefill", "--tokens", "8"],
                       "splits over 1, 2, 4, 8"),
    "batch does not fit": (["--accelerator", "a100-80gb", "--cards", "1", "--model", "llama-3-8b", "decode",
                            "--batch", "100000", "--context", "8000"], "at most"),
    "fractional batch": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "decode",
                          "--batch", "0.5", "--context", "8"], "whole number"),
    "infinite context": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "decode",
                          "--batch", "1", "--context", "inf"], "finite"),
    "fractional cards": (["--accelerator", "h100-sxm", "--cards", "1.5", "--model", "llama-3-8b", "prefill",
                          "--tokens", "8"], "whole number"),
    "unknown format": (["--accelerator", "h100-sxm", "--cards", "1", "--model", "llama-3-8b", "--weights", "int8",
                        "prefill", "--tokens", "8"], "bf16"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_arguments_exit_2_with_one_line_naming_the_choices(name, capsys):
    argv, needle = BAD[name]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


def test_the_command_itself_exits_2_without_a_traceback():
    """The real command line, once: a process, its exit status and its one line."""
    result = subprocess.run([sys.executable, "-m", "models.estimate", "--accelerator", "h100-sxm", "--cards", "1",
                             "--model", "nope", "prefill", "--tokens", "8"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "invalid choice" in result.stderr and "Traceback" not in result.stderr


def test_every_source_is_a_key_of_the_bibliography():
    bib = (REPO / "docs" / "feed" / "papers.bib").read_text()
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M))
    assert {row["source"]["key"] for row in RAW["measurements"]} <= keys
