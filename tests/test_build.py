"""The real site, built with --strict: figures, files and numbers are what the models say."""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import altair
import jsonschema
import numpy as np
import pytest

from helpers import article, numbers_in
from models import load_catalogue, roofline, speculative

SPEC_PAGE = "explainers/speculative-decoding/index.html"


def _figure(site: Path, page: str, kind_anchor: str) -> tuple[str, dict, Path]:
    """The figure's own HTML, its JSON payload and the payload's path."""
    html = (site / page).read_text()
    m = re.search(rf'<figure class="eg-figure" id="{kind_anchor}"[^>]*data-eg-figure="([^"]+)".*?</figure>', html, re.S)
    assert m, f"{kind_anchor} missing from {page}"
    path = (site / page).parent / m.group(1)
    return m.group(0), json.loads(path.read_text()), path


@pytest.fixture(scope="module")
def speedup_fig(site):
    return _figure(site, SPEC_PAGE, "fig-speedup-vs-batch")


def _vega_lite_validator():
    schema = json.loads((Path(altair.__file__).parent / "vegalite/v6/schema/vega-lite-schema.json").read_text())
    return jsonschema.Draft7Validator(schema)


def test_every_figure_spec_validates_against_vega_lite_schema(site):
    """The build asks altair for specs without its per-figure validation (issue 15), so this test
    is where every shipped spec, one per figure of the site, meets the Vega-Lite schema."""
    validator = _vega_lite_validator()
    specs = [json.loads(p.read_text())["spec"] for p in sorted((site / "assets/explainer/fig").glob("*.json"))
             if not re.search(r"-\d+\.json$", p.name)]
    on_pages = sum(html.read_text().count('data-eg-figure="') for html in site.rglob("index.html"))
    assert len(specs) == on_pages >= 11
    for spec in specs:
        errors = list(validator.iter_errors(dict(spec, datasets={**spec.get("datasets", {}), "table": []})))
        assert not errors, f"{spec.get('description', '')[:60]}: {errors[0].message}"
    # Negative control: the same check rejects a spec with a mark Vega-Lite does not have.
    broken = json.loads(json.dumps(next(spec for spec in specs if "layer" in spec)))
    broken["layer"][0]["mark"] = "blob"
    assert list(validator.iter_errors(broken))


def test_spec_validates_against_vega_lite_schema(speedup_fig):
    _, payload, _ = speedup_fig
    spec = dict(payload["spec"], datasets={**payload["spec"].get("datasets", {}), "table": []})
    _vega_lite_validator().validate(spec)
    assert spec["$schema"].endswith(f"{altair.SCHEMA_VERSION}.json")
    bound = [p for p in spec["params"] if p.get("bind", {}).get("input") == "range"]
    assert [p["name"] for p in bound] == ["a"]
    assert bound[0]["bind"]["min"] == 0.05 and bound[0]["bind"]["max"] == 0.95 and bound[0]["bind"]["step"] == 0.05


def test_precomputed_table_holds_every_slider_position(speedup_fig):
    _, payload, _ = speedup_fig
    cols = payload["data"]
    assert sorted(set(cols["a"])) == pytest.approx(list(np.round(np.arange(0.05, 0.951, 0.05), 2)))
    assert sorted(set(cols["k"])) == [1, 2, 4, 8]
    assert min(cols["batch"]) == 1 and max(cols["batch"]) == 1024


def test_data_equals_the_model(speedup_fig):
    _, payload, _ = speedup_fig
    cat = load_catalogue()
    acc, target, draft = cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
    cols = {k: np.array(v, dtype=float) for k, v in payload["data"].items()}
    model = speculative.speedup(acc, target, draft, 4, cols["batch"], cols["a"], cols["k"], 512)
    assert np.allclose(cols["speedup"], model, rtol=1e-3)


def test_svg_and_csv_exist_and_match_the_model(site, speedup_fig):
    html, payload, path = speedup_fig
    svg_text = re.search(r'<svg class="eg-static".*?</svg>', html, re.S).group(0)
    assert "Batch size" in svg_text
    # One picture for both schemes: no colour is written into it. Every paint is a palette class,
    # which the site's style sheet paints with the scheme's variable, its light value behind.
    from explainer_gen.theme import PALETTE, css_var, paint_class
    assert not re.findall(r'(?:fill|stroke)\s*[:=]\s*"?\s*(?:#|rgb)', svg_text), "a colour written into the picture"
    assert "style=" not in svg_text
    classes = {c for attr in re.findall(r'class="([^"]*)"', svg_text) for c in attr.split()}
    paints = {c for c in classes if re.fullmatch(r"[fs]-[\w-]+", c)}
    known = {paint_class(prop, role) for role in PALETTE for prop in ("fill", "stroke")}
    assert paints and paints <= known, paints - known
    css = (site / "assets/explainer/explainer.css").read_text()
    for c in paints:
        prop, role = {"f": "fill", "s": "stroke"}[c[0]], c[2:]
        assert f".eg-static .{c} {{ {prop}: var({css_var(role)}, {PALETTE[role][0]}); }}" in css, c
    csv_href = re.search(r'<a href="([^"]+\.csv)" download', html).group(1)
    rows = list(csv.DictReader(io.StringIO(((site / SPEC_PAGE).parent / csv_href).read_text())))
    assert len(rows) == len(payload["data"]["a"])
    cat = load_catalogue()
    acc, target, draft = cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
    for row in rows[::97]:
        model = speculative.speedup(acc, target, draft, 4, float(row["batch size"]), float(row["acceptance rate"]),
                                    float(row["lookahead k"]), 512)
        assert float(row["speedup over plain decoding"]) == pytest.approx(float(model), rel=1e-3)


def test_accessible_table_shows_the_default_state(site, speedup_fig):
    html, _, _ = speedup_fig
    table = re.search(r"<table>.*?</table>", html, re.S).group(0)
    assert "acceptance rate 0.80" in table
    cat = load_catalogue()
    acc, target, draft = cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
    row = re.search(r'<tr><th scope="row">64</th>(.*?)</tr>', table).group(1)
    shown = [float(x) for x in re.findall(r"<td>([\d.]+)×</td>", row)]
    model = speculative.speedup(acc, target, draft, 4, 64, 0.8, np.array([1, 2, 4, 8]), 512)
    assert shown == pytest.approx(np.round(model, 2).tolist())


def test_inline_numbers_come_from_the_models(site):
    html = (site / SPEC_PAGE).read_text()
    shown = numbers_in(article(html))
    cat = load_catalogue()
    acc, target = cat.accelerator("h100-sxm"), cat.model("llama-3-70b")
    step_ms = float(roofline.step_time(acc, target, 4, 1).seconds) * 1e3
    assert f"{step_ms:.1f}\u00a0ms" in shown
    assert f"{float(speculative.expected_tokens(0.8, 4)):.1f}" in shown


def test_bundle_is_self_hosted_and_loaded_lazily(site):
    html = (site / SPEC_PAGE).read_text()
    bundle = re.search(r'data-eg-bundle="([^"]+)"', html).group(1)
    text = ((site / SPEC_PAGE).parent / bundle).read_text()
    assert "window.vegaEmbed" in text and len(text) > 500_000
    # The bundle is fetched by the loader, not by a script tag on every page.
    assert f'src="{bundle}"' not in html
    home = (site / "index.html").read_text()
    assert "vega-" not in home and "loader-" not in home


def test_pictures_are_in_the_page_but_not_in_the_search_index(site):
    """Static pictures are placed in the finished page, after Markdown and the search plugin
    have seen it: the page shows every chart label, search finds none of them."""
    from explainer_gen.compute.figures.tokens import ROWS
    page = (site / SPEC_PAGE).read_text()
    search = (site / "search" / "search_index.json").read_text()
    for html_path in site.rglob("index.html"):
        assert "<!--eg-" not in html_path.read_text(), html_path
    for label in ROWS:
        assert label in page and label not in search, label
