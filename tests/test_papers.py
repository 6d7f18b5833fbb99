"""The papers reproduced: the model beside published figures, in models/papers.py and on the page."""
from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import article, numbers_in
from models import papers, sampling, speculative

SPEC_PAGE = "explainers/speculative-decoding/index.html"
PUBLISHED = yaml.safe_load(Path(papers.__file__).with_name("published.yaml").read_text())
CHEN = PUBLISHED["chen2023"]


def _theorem_3_8(a, k, c):
    # Written out from the paper, independently of the code under test.
    return (1 - a ** (k + 1)) / ((1 - a) * (k * c + 1))


# -- the model against the papers -------------------------------------------------------------

@pytest.mark.parametrize("row", PUBLISHED["leviathan2023_table1"], ids=lambda r: f"a{r['a']}-k{r['k']}")
def test_leviathan_table1_speed_and_ops_columns_are_reproduced(row):
    got = {(r.a, r.k): r for r in papers.leviathan_table1()}[(row["a"], row["k"])]
    # The table prints two decimals, so the model must round to what it prints.
    assert got.model_speed == pytest.approx(row["speed"], abs=0.005)
    assert got.model_ops == pytest.approx(row["ops"], abs=0.005)
    assert got.paper_speed == row["speed"] and got.paper_ops == row["ops"]


def test_chen_setting_and_range():
    c = papers.chen2023()
    k, cost = CHEN["lookahead"], CHEN["draft_ms_per_token"] / CHEN["target_ms_per_token"]
    assert c.k == k and c.c == pytest.approx(cost)
    assert c.floor == pytest.approx(1 / (k * cost + 1)) and c.ceiling == pytest.approx((k + 1) / (k * cost + 1))
    # Every measured speedup lies inside what the formula allows at the measured draft cost.
    for m in CHEN["measured"]:
        assert c.floor < m["speedup"] < c.ceiling


@pytest.mark.parametrize("i", range(len(CHEN["measured"])))
def test_chen_implied_acceptance_gives_back_the_measured_speedup(i):
    c = papers.chen2023()
    row, m = c.rows[i], CHEN["measured"][i]
    assert row.task == m["task"] and row.paper_speedup == m["speedup"]
    assert 0 < row.implied_a < 1
    assert _theorem_3_8(row.implied_a, c.k, c.c) == pytest.approx(m["speedup"], rel=1e-9)
    # The roofline prices the draft by weights: a cheaper draft, so a higher speedup at the same a.
    roof = CHEN["draft_params_b"] / CHEN["target_params_b"]
    assert row.roofline_speedup == pytest.approx(_theorem_3_8(row.implied_a, c.k, roof))
    assert row.roofline_speedup > m["speedup"]


def test_chen_nucleus_time_ratio_is_not_the_printed_speedup():
    # Recorded, not fixed: 14.1 / 7.52 = 1.875, while the paper prints 1.92 for XSum nucleus. The
    # other two rows agree with their time ratio. The model uses the printed speedup throughout.
    ratios = [CHEN["target_ms_per_token"] / m["ms_per_token"] for m in CHEN["measured"]]
    printed = [m["speedup"] for m in CHEN["measured"]]
    assert ratios[1:] == pytest.approx(printed[1:], abs=0.005)
    assert abs(ratios[0] - printed[0]) > 0.04


def test_implied_acceptance_is_nan_outside_the_reachable_range():
    k, c = 4, 0.1
    top = float(_theorem_3_8(1 - 1e-12, k, c))
    assert np.isnan(papers.implied_acceptance(top + 0.1, k, c))
    assert np.isnan(papers.implied_acceptance(0.5, k, c))


# -- the same on the built page -----------------------------------------------------------------

def _figure(site: Path, anchor: str) -> tuple[str, dict]:
    page = (site / SPEC_PAGE).read_text()
    m = re.search(rf'<figure class="eg-figure" id="{anchor}".*?</figure>', page, re.S)
    assert m, f"{anchor} missing from the page"
    src = re.search(r'data-eg-figure="([^"]+)"', m.group(0)).group(1)
    return m.group(0), json.loads(((site / SPEC_PAGE).parent / src).read_text())


def _table(fig_html: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", fig_html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [[htmllib.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows]


def test_paper_table_on_the_page_matches_the_papers_and_the_model(site):
    fig, payload = _figure(site, "fig-paper-check")
    rows = _table(fig)
    lev, chen = PUBLISHED["leviathan2023_table1"], CHEN["measured"]
    assert len(rows) == len(lev) + len(chen)
    for cells, pub in zip(rows, lev):
        setting, a, c, paper, model = cells
        assert f"a = {pub['a']:.1f}, k = {pub['k']}" in setting
        assert paper == f"{pub['speed']:.2f}×"
        assert model == f"{_theorem_3_8(pub['a'], pub['k'], 0.0):.2f}×"
        assert model == paper  # the speed column reproduced, row by row, as printed
    roof = CHEN["draft_params_b"] / CHEN["target_params_b"]
    for cells, pub, row in zip(rows[len(lev):], chen, papers.chen2023().rows):
        setting, a, c, paper, model = cells
        assert pub["task"] in setting and paper == f"{pub['speedup']:.2f}×"
        assert a == f"{row.implied_a:.2f} (implied)" and c == f"{roof:.3f}"
        assert model == f"{_theorem_3_8(row.implied_a, CHEN['lookahead'], roof):.2f}×"
    data = payload["data"]
    assert data["paper"] == [r["speed"] for r in lev] + [m["speedup"] for m in chen]
    assert np.allclose(data["model"][:len(lev)], [r["speed"] for r in lev], atol=0.005)


def test_chen_numbers_in_the_prose_come_from_the_paper_and_the_model(site):
    shown = numbers_in(article((site / SPEC_PAGE).read_text()))
    cost, k = CHEN["draft_ms_per_token"] / CHEN["target_ms_per_token"], CHEN["lookahead"]
    expected = [f"{CHEN['target_ms_per_token']:.1f}\u00a0ms", f"{CHEN['draft_ms_per_token']:.1f}\u00a0ms",
                f"{cost:.3f}", f"{1 / (k * cost + 1):.2f}×", f"{(k + 1) / (k * cost + 1):.2f}×",
                f"{CHEN['measured'][0]['speedup']:.2f}×", f"{CHEN['measured'][-1]['speedup']:.2f}×"]
    for text in expected:
        assert text in shown, text


def test_sampling_figures_on_the_page_show_the_check(site):
    fig, payload = _figure(site, "fig-sampling-check")
    cols = {k: np.array(v) for k, v in payload["data"].items()}
    p = sampling.figure_target()
    radius = sampling.tv_radius(sampling.FIGURE_TOKENS, p.size, 1e-6)
    plain, spec, draft = "Plain sampling from p", f"Speculative sampling, k = {sampling.FIGURE_LOOKAHEAD}", "Draft q"
    for d in np.unique(cols["drift"]):
        at = cols["drift"] == d
        for series in (plain, spec):
            share = cols["share"][at & (cols["series"] == series)]
            assert len(share) == p.size and 0.5 * np.abs(share - p).sum() < radius
    far = cols["share"][(cols["drift"] == 1) & (cols["series"] == draft)]
    assert 0.5 * np.abs(far - p).sum() > 20 * radius
    # The bound slider is the figure's own, an identifier Vega does not use.
    assert [q["name"] for q in payload["spec"]["params"] if "bind" in q] == ["drift"]
    assert "Data table" in fig

    _, speed = _figure(site, "fig-sampling-speed")
    cols = {k: np.array(v) for k, v in speed["data"].items()}
    measured = cols["series"] == "Measured"
    for k in sampling.FIGURE_LOOKAHEADS:
        sel = measured & (cols["k"] == k)
        want = speculative.expected_tokens(cols["alpha"][sel], k)
        assert np.all(np.abs(cols["tokens"][sel] - want) < sampling.hoeffding_radius(sampling.FIGURE_STEPS, k, 1e-6))
