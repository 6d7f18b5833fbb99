"""The browser contract (explainer_gen/client/contract.py): one shape for the JSON the loader reads, a
JSON Schema in the repository (explainer_gen/client/schema/) that every file the real build writes
is validated against, read by the real loader in a browser; and the facts the loader shares with the
build, which the build writes once into the loader's file (explainer_gen/client/loader.py).

Issue 12, bug 2: the loader used to find a scenario by position arithmetic over the switch's
field names, which the JSON had sorted, while the build laid scenarios out in the front
matter's order. A switch written as {target, accelerator} showed H200 and 8B for H100 and 70B.
"""
from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
from referencing import Registry, Resource

from explainer_gen.client.bundle import short_hash
from explainer_gen.client import contract, loader
from explainer_gen.names import ATTR, CLASS
from explainer_gen.sources.controls import Slider
from helpers import REPO, mkdocs_build, serve, wait_for_events, wake_loader

SCHEMAS = {kind: json.loads(path.read_text()) for kind, path in contract.SCHEMAS.items()}
# The schemas name each other by their $id (figure.schema.json reads page-state's `positions`).
REGISTRY = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values())


def validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(SCHEMAS[kind], registry=REGISTRY,
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def site_json(site, kind: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((site / "assets/explainer" / kind).glob("*.json"))]


def test_the_schemas_are_draft_2020_12_and_carry_the_contract_version():
    for kind, schema in SCHEMAS.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", kind
        jsonschema.Draft202012Validator.check_schema(schema)
    for kind in ("page-state", "figure"):
        assert SCHEMAS[kind]["properties"]["version"] == {"const": contract.VERSION}, kind


def test_every_file_the_build_writes_has_the_contract_shape(site):
    """Every page state, figure payload and variant file of the real build, against its schema;
    then what the schemas cannot say (the scenarios, choices and texts agree)."""
    pages = site_json(site, "page")
    figures = site_json(site, "fig")
    payloads = [j for j in figures if "vega" in j]
    variants = [j for j in figures if "vega" not in j]  # the other scenarios' rows
    cards = site_json(site, "how")
    assert len(pages) >= 4 and len(payloads) >= 10 and len(variants) >= 10 and len(cards) >= 300
    for kind, files in (("page-state", pages), ("figure", payloads), ("variant", variants), ("card", cards)):
        check = validator(kind)
        for doc in files:
            errors = [f"{list(e.absolute_path)}: {e.message}" for e in check.iter_errors(doc)]
            assert not errors, (kind, errors[:5])
    for state in pages:
        contract.check_page_state(state)
    for payload in payloads:
        contract.check_figure_payload(payload)
    for card in cards:
        contract.check_number_card(card)
    # Each page state names a card file for each number its page links to an entry, and the file is there.
    for path in sorted((site / "assets/explainer/page").glob("*.json")):
        named = json.loads(path.read_text())["cards"]
        assert named and all((path.parent / rel).resolve().is_file() for rel in named.values()), path


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


def part_sources() -> dict[str, str]:
    return {name: (loader.FOLDER / name).read_text() for name in loader.PARTS}


def test_the_loader_spells_out_no_fact_of_the_build():
    """No part of the loader names a class, data attribute, contract version or font: it reads them
    from FACTS, which the build writes at the head of the served file, equal to contract.facts()."""
    for part, source in part_sources().items():
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)  # comments may name them
        for name in [*vars(CLASS).values(), *vars(ATTR).values()]:
            assert name not in code, (part, name)
        assert not re.search(r"""["'`]eg-|data-eg-""", code), part
        assert contract.facts()["font"]["family"] not in code, part
        assert not re.search(r"""["'`]scenario["'`]""", code), part
        assert "version !== " + str(contract.VERSION) not in code, part
    served = loader.loader_script()
    m = re.search(r"^var FACTS = (.*);$", served, re.M)
    assert m and json.loads(m.group(1)) == contract.facts()
    # Other facts, another file: its name, which hashes it (site/collect.py), follows.
    assert short_hash(loader.loader_script({**contract.facts(), "version": 0})) != short_hash(served)


def test_the_loader_is_its_parts_joined_in_order():
    """The served loader holds every part of the folder, each once, in PARTS' order; the parts
    share one scope, so no two may declare the same name at their top (the later would silently
    replace the earlier), and the part that starts the loader comes last."""
    parts = part_sources()
    assert sorted(parts) == sorted(p.name for p in loader.FOLDER.glob("*.js"))  # none left out
    served = loader.loader_script()
    at = [served.index(source.rstrip()) for source in parts.values()]
    assert at == sorted(at) and all(served.count(source.rstrip()) == 1 for source in parts.values())
    declared: dict[str, str] = {}
    for part, source in parts.items():
        for line in source.splitlines():
            names = (re.findall(r"(?:^var\s+|,\s*)([A-Za-z_$][\w$]*)\s*=(?!=)", line) if line.startswith("var ")
                     else re.findall(r"^function\s+([A-Za-z_$][\w$]*)", line))
            for name in names:
                assert name not in declared, f"{name} is declared in {declared.get(name)} and in {part}"
                declared[name] = part
    assert {"generation", "page", "state", "init", "snap", "embed", "announce"} <= set(declared)
    assert "document$.subscribe(init)" in list(parts.values())[-1]


def test_the_served_loader_is_the_one_the_build_writes(site):
    served = list((site / "assets/explainer").glob("loader-*.js"))
    assert len(served) == 1 and served[0].read_text() == loader.loader_script()


@pytest.mark.parametrize("kind, broken, where", [
    ("page-state", lambda s: s.pop("default"), "'default' is a required property"),
    ("page-state", lambda s: s.update(version=contract.VERSION - 1), "was expected"),
    ("page-state", lambda s: s.update(extra=1), "Additional properties"),
    ("page-state", lambda s: s["sliders"]["a"].update(count="2"), "is not of type 'integer'"),
    ("page-state", lambda s: s["sliders"]["a"].update(step=0), "less than or equal to the minimum"),
    ("page-state", lambda s: s["sliders"]["a"].pop("decimals"), "'decimals' is a required property"),
    ("page-state", lambda s: s["scenarios"][0].update(blocked={"accelerator": "h200"}), "is not of type 'array'"),
    ("page-state", lambda s: s["numbers"]["n"].update(texts=[1, 2, 3, 4]), "is not of type 'string'"),
    ("page-state", lambda s: s["scenarios"].clear(), "should be non-empty"),
    ("figure", lambda p: p.pop("vega"), "'vega' is a required property"),
    ("figure", lambda p: p.update(version=str(contract.VERSION)), "was expected"),
    ("figure", lambda p: p["data"].update(x=[True]), "is not of type"),
    ("figure", lambda p: p["variants"].update(B="../elsewhere.json"), "does not match"),
    ("figure", lambda p: p["describe"]["values"]["A"]["f"].pop("deps"), "'deps' is a required property"),
    ("figure", lambda p: p["palette"].update(red="--eg-chart-red"), "does not match"),
    ("variant", lambda v: v.update(B=[1, 2]), "is not of type 'object'"),
    ("page-state", lambda s: s.pop("cards"), "'cards' is a required property"),
    ("card", lambda c: c["which"].update(texts=["0"]), "is not of type 'integer'"),
    ("card", lambda c: c["holes"][0].update(texts=[1, 2]), "is not of type 'string'"),
    ("card", lambda c: c.pop("holes"), "'holes' is a required property"),
])
def test_a_file_of_another_shape_fails_its_schema(kind, broken, where):
    """Negative controls: each schema takes a well-formed file and refuses the same file broken."""
    good = {
        "page-state": {"version": contract.VERSION, "switch": {"accelerator": ["h100", "h200"]},
                       "scenarios": [{"key": "A", "choices": {"accelerator": "h100"}, "blocked": {}, "note": ""},
                                     {"key": "B", "choices": {"accelerator": "h200"}, "blocked": {}, "note": ""}],
                       "default": "A", "sliders": {"a": {"min": 0, "step": 1, "count": 2, "default": 0, "decimals": 0}},
                       "numbers": {"n": {"deps": ["scenario", "a"], "texts": ["1", "2", "3", "4"]}},
                       "cards": {"how-n": "../how/0123abcd.json"}},
        "card": {"version": contract.VERSION, "templates": ["<p>a: <strong>\ue0000\ue001</strong></p>"],
                 "which": {"deps": [], "texts": [0]}, "holes": [{"deps": ["a"], "texts": ["1", "2"]}]},
        "figure": {"version": contract.VERSION, "spec": {}, "vega": {"data": [{"name": "table"}]},
                   "narrow": {"data": [{"name": "table"}]},
                   "palette": {"#0e7490": "--eg-chart-series-6"}, "data": {"x": [1, 2.5], "label": ["a", "b"]},
                   "default": "A", "variants": {"B": "0123abcd-1.json"}, "map": {"A": "A", "B": "B"},
                   "describe": {"template": "At {f}.", "fields": ["f"],
                                "values": {"A": {"f": {"deps": ["a"], "texts": ["1", "2"]}}}}},
        "variant": {"B": {"x": [1, 2], "label": ["a", "b"]}},
    }[kind]
    check = validator(kind)
    check.validate(good)
    broken(good)
    errors = [e.message for e in check.iter_errors(good)]
    assert any(where in e for e in errors), errors


@pytest.mark.parametrize("broken, message", [
    (lambda c: c["which"].update(texts=[1]), "beyond its 1"),
    (lambda c: c["templates"].append("<p>\ue0001\ue001</p>"), "marks holes [1]"),
])
def test_a_card_file_that_disagrees_with_itself_is_refused(broken, message):
    card = {"version": contract.VERSION, "templates": ["<p>a: <strong>\ue0000\ue001</strong></p>"],
            "which": {"deps": [], "texts": [0]}, "holes": [{"deps": ["a"], "texts": ["1", "2"]}]}
    contract.check_number_card(card)  # the well-formed one passes
    broken(card)
    validator("card").validate(card)  # still the schema's shape
    with pytest.raises(ValueError, match=re.escape(message)):
        contract.check_number_card(card)


@pytest.mark.parametrize("broken, message", [
    (lambda s: s["scenarios"][1]["choices"].update(accelerator="h100"), "same switch choice"),
    (lambda s: s["scenarios"][0]["choices"].update(accelerator="tpu"), "not a choice"),
    (lambda s: s["numbers"]["n"]["texts"].pop(), "3 texts for 4 positions"),
    (lambda s: s["numbers"]["n"].update(deps=["b"]), "neither the scenario nor a slider"),
    (lambda s: s["scenarios"][0].update(blocked={"accelerator": ["h100"]}, note="x"), "not other choices"),
    (lambda s: s["scenarios"][0].update(blocked={"accelerator": ["h200"]}), "go together"),
])
def test_a_page_state_that_disagrees_with_itself_is_refused(broken, message):
    state = {"version": contract.VERSION, "switch": {"accelerator": ["h100", "h200"]},
             "scenarios": [{"key": "A", "choices": {"accelerator": "h100"}, "blocked": {}, "note": ""},
                           {"key": "B", "choices": {"accelerator": "h200"}, "blocked": {}, "note": ""}],
             "default": "A", "sliders": {"a": {"min": 0, "step": 1, "count": 2, "default": 0, "decimals": 0}},
             "numbers": {"n": {"deps": ["scenario", "a"], "texts": ["1", "2", "3", "4"]}}, "cards": {}}
    validator("page-state").validate(state)
    contract.check_page_state(state)  # the well-formed one passes
    broken(state)
    validator("page-state").validate(state)  # the shape is still the schema's: only the agreement breaks
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
        wait_for_events(page, lambda: errors, seconds=10)  # the loader read the page state and said why it refused it
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


SPEC = "explainers/speculative-decoding/"


def _position_texts(positions: dict, state: dict, scenario: str, sliders: dict[str, float]) -> str:
    """The text of a number (or a description's field) at a position, indexed in Python: C order
    over its deps, a scenario by its place in the page state, a slider by Slider.index_of."""
    index = 0
    for dep in positions["deps"]:
        if dep == contract.facts()["scenario"]:
            size, pos = len(state["scenarios"]), [s["key"] for s in state["scenarios"]].index(scenario)
        else:
            s = _slider(dep, state["sliders"][dep])
            size, pos = s.count, s.index_of(sliders[dep])
        index = index * size + pos
    return positions["texts"][index]


def _slider(name: str, g: dict) -> Slider:
    return Slider(name, name, g["min"], g["min"] + g["step"] * (g["count"] - 1), g["step"], g["default"])


def test_the_real_loader_reads_the_facts_and_the_files_the_build_writes(site, page, base_url):
    """The real loader, in Chromium, on a shared link of the real site: it holds the facts Python
    wrote, snaps the link's slider values as Python's sliders do, and shows each number and each
    figure's description at the text Python indexes for that position; every figure goes live in
    the chart font."""
    html = (site / SPEC / "index.html").read_text()
    state = json.loads((site / SPEC / re.search(f'{ATTR.page}="([^"]+)"', html)[1]).resolve().read_text())
    asked = {"a": 0.79, "k": 99}  # between two positions; past the end
    page.goto(base_url + SPEC + "?" + "&".join(f"{k}={v}" for k, v in asked.items()))
    page.wait_for_function("() => window.explainerGen && window.explainerGen.state()")  # a link's state: at once
    assert page.evaluate("() => window.explainerGen.facts()") == contract.facts()

    expected = {}
    for name, g in state["sliders"].items():
        s = _slider(name, g)
        expected[name] = (float(s.values()[max(0, min(s.count - 1, s.index_of(asked[name])))])
                          if name in asked else g["default"])
    assert expected["a"] == 0.8 and expected["k"] == 8
    loaded = page.evaluate("() => window.explainerGen.state()")
    assert loaded == {"scenario": state["default"], "sliders": expected}
    for name in asked:  # what the reader sees on the sliders
        slider = page.locator(f"input[{ATTR.param}={name}]").first
        assert float(slider.input_value()) == expected[name]
        # written as the build writes it, to the slider's decimals ("0.80", not "0.8")
        decimals = state["sliders"][name]["decimals"]
        assert slider.locator("xpath=..").locator("output").inner_text() == f"{expected[name]:.{decimals}f}"

    shown = page.evaluate(f"""() => [...document.querySelectorAll('[{ATTR.num}]')]
        .map(e => [e.getAttribute('{ATTR.num}'), e.textContent])""")
    assert len(shown) >= 10
    moved = 0
    for nid, text in shown:
        want = _position_texts(state["numbers"][nid], state, state["default"], expected)
        assert text == want, nid
        moved += want != state["numbers"][nid]["texts"][0]
    assert moved  # the link's position shows other texts than the first

    figures = page.locator(f".{CLASS.figure}")
    n = figures.count()
    assert n >= 2
    page.wait_for_function(f"n => window.explainerGen.figures().length === n && "
                           f"document.querySelectorAll('.{CLASS.figure}.{CLASS.live} .{CLASS.view} canvas').length === n",
                           arg=n)
    for i in range(n):
        fig = figures.nth(i)
        payload = json.loads((site / SPEC / fig.get_attribute(ATTR.figure)).resolve().read_text())
        d = payload["describe"]
        values = d["values"][payload["map"].get(state["default"], payload["default"])]
        want = re.sub(r"\{(\w+)\}", lambda m: _position_texts(values[m[1]], state, state["default"], expected),
                      d["template"])
        assert fig.locator(f".{CLASS.desc}").text_content() == want
    font = contract.facts()["font"]
    assert page.evaluate("f => f.weights.every(w => document.fonts.check(w + ' 12px \"' + f.family + '\"'))", font)
    page.watch.assert_clean()
