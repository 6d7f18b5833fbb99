"""The browser contract (explainer_gen/client/contract.py): one shape for the JSON the loader reads, checked
on every file the real build writes, and read by the real loader in a browser.

Issue 12, bug 2: the loader used to find a scenario by position arithmetic over the switch's
field names, which the JSON had sorted, while the build laid scenarios out in the front
matter's order. A switch written as {target, accelerator} showed H200 and 8B for H100 and 70B.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from explainer_gen.client import contract
from helpers import REPO, mkdocs_build, serve, wake_loader

LOADER = REPO / "explainer_gen" / "assets" / "loader.js"


def site_json(site, kind: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((site / "assets/explainer" / kind).glob("*.json"))]


def test_every_file_the_build_writes_has_the_contract_shape(site):
    pages = site_json(site, "page")
    figures = [j for j in site_json(site, "fig") if "vega" in j]  # not the other scenarios' rows
    assert len(pages) >= 4 and len(figures) >= 10
    for state in pages:
        contract.check_page_state(state)
    for payload in figures:
        contract.check_figure_payload(payload)


def test_each_switch_offers_its_choices_in_the_order_the_page_lists_them(site):
    """A page's switch shows its fields, and each field's choices, in the order the front matter
    lists them (the first choice is the one a reader meets first). Read from every built page
    against its Markdown's front matter."""
    import yaml

    from explainer_gen.sources.markdown import split_front_matter

    checked = 0
    for source in sorted((REPO / "docs").rglob("*.md")):
        front, _ = split_front_matter(source.read_text())
        switch = ((yaml.safe_load(front or "") or {}).get("explainer") or {}).get("switch")
        if not switch:
            continue
        rel = source.relative_to(REPO / "docs").with_suffix("")
        html = (site / (rel.parent if rel.name == "index" else rel) / "index.html").read_text()
        shown = re.findall(r'<select name="([^"]+)" data-eg-switch=[^>]*>(.*?)</select>', html, re.S)
        assert [name for name, _ in shown] == list(switch), source
        for name, options in shown:
            assert re.findall(r'<option value="([^"]+)"', options) == [str(v) for v in switch[name]], (source, name)
        checked += 1
    assert checked >= 4


def test_the_loader_reads_the_version_the_build_writes():
    m = re.search(r"var CONTRACT = (\d+);", LOADER.read_text())
    assert m and int(m.group(1)) == contract.VERSION


@pytest.mark.parametrize("broken, message", [
    (lambda s: s.pop("default"), "missing ['default']"),
    (lambda s: s.update(version=1), "version 1"),
    (lambda s: s["scenarios"][1]["choices"].update(accelerator="h100"), "same switch choice"),
    (lambda s: s["scenarios"][0]["choices"].update(accelerator="tpu"), "not a choice"),
    (lambda s: s["numbers"]["n"]["texts"].pop(), "3 texts for 4 positions"),
    (lambda s: s["numbers"]["n"].update(deps=["b"]), "neither the scenario nor a slider"),
    (lambda s: s["scenarios"][0].update(blocked={"accelerator": ["h100"]}, note="x"), "not other choices"),
    (lambda s: s["scenarios"][0].update(blocked={"accelerator": ["h200"]}), "go together"),
])
def test_a_malformed_page_state_is_refused(broken, message):
    state = {"version": contract.VERSION, "switch": {"accelerator": ["h100", "h200"]},
             "scenarios": [{"key": "A", "choices": {"accelerator": "h100"}, "blocked": {}, "note": ""},
                           {"key": "B", "choices": {"accelerator": "h200"}, "blocked": {}, "note": ""}],
             "default": "A", "sliders": {"a": {"min": 0, "step": 1, "count": 2, "default": 0, "decimals": 0}},
             "numbers": {"n": {"deps": ["scenario", "a"], "texts": ["1", "2", "3", "4"]}}}
    contract.check_page_state(state)  # the well-formed one passes
    broken(state)
    with pytest.raises(ValueError, match=re.escape(message)):
        contract.check_page_state(state)


SWITCHED = """---
explainer:
  switch: {{target: [llama-3-8b, llama-3-70b], accelerator: [{accelerators}]}}
---

# Switched

Runs <span id="where">{{{{ name('target') }}}} on {{{{ name('accelerator') }}}}</span>.
"""


@pytest.mark.parametrize("accelerators", ["h100-sxm, h200", "h200, h100-sxm"])
def test_the_switch_shows_the_chosen_scenario_whatever_the_order_of_its_fields(tmp_path, browser, accelerators):
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO / "models" / "catalogue.yaml", root / "catalogue.yaml")
    (root / "mkdocs.yml").write_text(
        "site_name: order\ntheme: {name: material, font: false}\n"
        "plugins: [{explainer: {catalogue: catalogue.yaml}}]\nmarkdown_extensions: [pymdownx.superfences, md_in_html]\n")
    (root / "docs" / "index.md").write_text(SWITCHED.format(accelerators=accelerators))
    result = mkdocs_build(tmp_path / "site", root / "mkdocs.yml")
    assert result.returncode == 0, result.stderr
    with serve(tmp_path / "site") as url:
        page = browser.new_page()
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(url)
        wake_loader(page)
        for target, target_name in (("llama-3-70b", "Llama 3 70B"), ("llama-3-8b", "Llama 3 8B")):
            for acc, acc_name in (("h100-sxm", "H100"), ("h200", "H200")):
                page.select_option("select[data-eg-switch=target]", target)
                page.select_option("select[data-eg-switch=accelerator]", acc)
                shown = page.locator("#where").inner_text()
                assert target_name in shown and acc_name in shown, (target, acc, shown)
                key = page.evaluate("() => window.explainerGen.state().scenario").split(".")
                assert (key[0], key[2]) == (acc, target), key
        page.close()
    assert errors == []


def test_a_page_state_of_another_version_leaves_the_page_as_built(site, browser):
    """The loader refuses JSON of another contract version: default numbers stay, nothing moves."""
    with serve(site) as url:
        page = browser.new_page()
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))

        def old(route):
            body = json.loads(route.fetch().text())
            body["version"] = contract.VERSION - 1
            route.fulfill(body=json.dumps(body), content_type="application/json")
        page.route(re.compile(r".*/assets/explainer/page/.*\.json$"), old)
        page.goto(url + "explainers/speculative-decoding/")
        page.mouse.move(12, 12)  # the loader reads the page state once the reader acts
        for _ in range(100):  # until the loader has read the page state and said why it refused it
            if errors:
                break
            page.wait_for_timeout(100)
        assert any("contract version" in e for e in errors), errors
        assert page.evaluate("() => window.explainerGen.state()") is None
        page.close()



def test_variant_files_hold_every_other_scenario_once_in_few_files():
    """Issue 15: the other scenarios' rows travel several to a file, by key, so a build copies tens
    of files rather than hundreds; no file passes the size unless one scenario alone does."""
    from explainer_gen.compute.artifacts import dumps

    data = {f"s{i:03d}": {"x": list(range(i % 7 * 200))} for i in range(300)}
    data["big"] = {"x": list(range(40_000))}
    files = contract.variant_files(data, "s000", dumps)
    held = [k for keys, _ in files for k in keys]
    assert sorted(held) == sorted(k for k in data if k != "s000") and len(held) == len(set(held))
    assert held == sorted(held)
    for keys, text in files:
        assert json.loads(text) == {k: data[k] for k in keys}
        assert len(text) <= contract.VARIANT_FILE_CHARS or keys == ["big"]
    assert len(files) < len(held) / 10
    assert [keys for keys, text in files if len(text) > contract.VARIANT_FILE_CHARS] == [["big"]]
    # The same rows in another order make the same files (a computed figure and a cached one).
    assert contract.variant_files(dict(reversed(list(data.items()))), "s000", dumps) == files
