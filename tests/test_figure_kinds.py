"""How figure kinds are found and what every kind may and may not do: discovery of the folder and
of the `explainer_gen.figures` entry-point group, loud duplicates, colours only from the theme,
and the one helper that picks the rows of a slider position."""
from __future__ import annotations

import ast
import csv
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from importlib.metadata import EntryPoint

import numpy as np
import pytest
from altair.vegalite.v6.schema.core import load_schema

import explainer_gen.compute.figures as figures
from explainer_gen import theme
from explainer_gen.sources.controls import Slider
from explainer_gen.compute.figures import base
from explainer_gen.compute.figures.base import REGISTRY, DuplicateFigureKind, FigureKind, register, rows_at, slider_filter
from helpers import REPO, env

FOLDER = REPO / "explainer_gen" / "compute" / "figures"
SOURCES = sorted(p for p in FOLDER.glob("*.py") if p.name != "__init__.py")


# Modules the tests below write and import; forgotten afterwards, so that a rerun imports them afresh.
SCRATCH = ("more_kinds", "clashing_kinds", "plugin_kinds", "plugin_module", "plugin_clash", "worked_example")


@pytest.fixture
def registry(figure_registry):
    """REGISTRY as it was before the test, whatever the test registered, and no scratch module left."""
    yield figure_registry
    for name in [m for m in sys.modules if m.split(".")[0] in SCRATCH]:
        del sys.modules[name]


def kind_source(name: str, kind: str, decorate: bool = True) -> str:
    return textwrap.dedent(f'''
        from explainer_gen.compute.figures.base import FigureKind, register

        {"@register" if decorate else ""}
        class {name}(FigureKind):
            name = "{kind}"
            title = "A kind from elsewhere"
            sliders = {{}}
            columns = {{}}
            description = "Nothing."
    ''')


# -- discovery ----------------------------------------------------------------------------------

def test_discovery_imports_every_module_in_the_folder():
    assert figures.MODULES == [p.stem for p in SOURCES]
    for p in SOURCES:
        assert f"explainer_gen.compute.figures.{p.stem}" in sys.modules, p.name


def test_every_kind_class_in_the_folder_is_registered():
    """Each FigureKind subclass a module defines with its own `name` is the one filed under it."""
    found = 0
    for p in SOURCES:
        module = sys.modules[f"explainer_gen.compute.figures.{p.stem}"]
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, FigureKind) and obj.__module__ == module.__name__ \
                    and "name" in vars(obj):
                assert type(REGISTRY[obj.name]) is obj, obj
                found += 1
    ours = [k for k in REGISTRY.values() if type(k).__module__.startswith("explainer_gen.compute.figures.")]
    assert found == len(ours) >= 11


def test_a_module_dropped_into_a_package_is_found_without_being_listed(tmp_path, monkeypatch, registry):
    pkg = tmp_path / "more_kinds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "waterfall.py").write_text(kind_source("Waterfall", "test-waterfall"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(base, "entry_points", lambda group: [])
    assert base.discover("more_kinds", [str(pkg)]) == ["waterfall"]
    assert type(REGISTRY["test-waterfall"]).__module__ == "more_kinds.waterfall"


# -- duplicates ---------------------------------------------------------------------------------

def test_a_name_registered_twice_fails_naming_both_modules(registry):
    before = REGISTRY["roofline"]
    with pytest.raises(DuplicateFigureKind) as err:
        @register
        class Impostor(FigureKind):
            name = "roofline"
    message = str(err.value)
    assert "'roofline'" in message
    assert "module explainer_gen.compute.figures.roofline" in message and f"module {__name__}" in message
    assert REGISTRY["roofline"] is before  # the first registration stands


def test_a_duplicate_in_a_dropped_module_fails_the_discovery(tmp_path, monkeypatch, registry):
    pkg = tmp_path / "clashing_kinds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "steps.py").write_text(kind_source("Steps", "step-time"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DuplicateFigureKind, match=r"explainer_gen\.compute\.figures\.steptime.*clashing_kinds\.steps"):
        base.discover("clashing_kinds", [str(pkg)])


def test_registering_the_same_class_again_is_no_clash(registry):
    cls = type(REGISTRY["kv-slots"])
    assert register(cls) is cls
    assert type(REGISTRY["kv-slots"]) is cls


# -- entry points ------------------------------------------------------------------------------

def fake_entry_points(*eps: EntryPoint):
    asked = []

    def entry_points(group):
        asked.append(group)
        return [ep for ep in eps if ep.group == group]
    entry_points.asked = asked
    return entry_points


def test_a_kind_named_by_an_entry_point_is_registered(tmp_path, monkeypatch, registry):
    (tmp_path / "plugin_kinds.py").write_text(kind_source("Sankey", "test-sankey", decorate=False))
    (tmp_path / "plugin_module.py").write_text(kind_source("Gantt", "test-gantt"))
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = fake_entry_points(
        EntryPoint(name="sankey", value="plugin_kinds:Sankey", group="explainer_gen.figures"),
        EntryPoint(name="gantt", value="plugin_module", group="explainer_gen.figures"),
        EntryPoint(name="other", value="no_such_module", group="some.other.group"))
    monkeypatch.setattr(base, "entry_points", fake)
    assert base.load_entry_points() == ["sankey", "gantt"]
    assert fake.asked == [base.ENTRY_POINT_GROUP] == ["explainer_gen.figures"]
    assert type(REGISTRY["test-sankey"]).__module__ == "plugin_kinds"  # a class: registered for it
    assert type(REGISTRY["test-gantt"]).__module__ == "plugin_module"  # a module: its @register did it


def test_an_entry_point_kind_that_takes_a_used_name_fails(tmp_path, monkeypatch, registry):
    (tmp_path / "plugin_clash.py").write_text(kind_source("Roof", "roofline", decorate=False))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(base, "entry_points", fake_entry_points(
        EntryPoint(name="roof", value="plugin_clash:Roof", group="explainer_gen.figures")))
    with pytest.raises(DuplicateFigureKind, match=r"explainer_gen\.compute\.figures\.roofline.*plugin_clash"):
        base.load_entry_points()


def test_a_broken_entry_point_fails_with_its_name(monkeypatch, registry):
    monkeypatch.setattr(base, "entry_points", fake_entry_points(
        EntryPoint(name="gone", value="no_such_module_at_all:Kind", group="explainer_gen.figures")))
    with pytest.raises(ImportError, match=r"entry point 'gone'.*explainer_gen\.figures"):
        base.load_entry_points()


def test_an_installed_package_adds_a_kind_through_the_group(tmp_path):
    """End to end, with real package metadata: a distribution on the path that declares the
    entry point is found when explainer_gen.compute.figures is imported, in a fresh interpreter."""
    (tmp_path / "extra_kinds.py").write_text(kind_source("Ridge", "test-installed-kind", decorate=False))
    info = tmp_path / "extra_kinds-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-kinds\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[explainer_gen.figures]\nridge = extra_kinds:Ridge\n")
    code = "import explainer_gen.compute.figures as f; print(type(f.REGISTRY['test-installed-kind']).__module__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**env(), "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "extra_kinds"


def test_reloading_the_code_reloads_other_packages_kinds_into_the_new_registry(tmp_path):
    """Under `mkdocs serve`, an edit loads the generator again (core.fresh). A kind another package
    adds is loaded again with it: it subclasses the new FigureKind and is filed in the new
    registry, and nothing of the old copy stays in the modules a build imports. Forced here by
    saying the code on disk changed, in a fresh interpreter with the package installed."""
    # A package whose kind subclasses a base of its own, in another of its modules.
    package = tmp_path / "extra_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(kind_source("Base", "test-reloaded-base", decorate=False))
    (package / "ridge.py").write_text("from extra_kinds.base import Base\n\n\nclass Ridge(Base):\n"
                                      "    name = 'test-reloaded-kind'\n")
    info = tmp_path / "extra_kinds-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-kinds\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[explainer_gen.figures]\nridge = extra_kinds.ridge:Ridge\n")
    code = """
import sys
from explainer_gen import core
old_base = sys.modules["explainer_gen.compute.figures.base"]
old_kind = old_base.REGISTRY["test-reloaded-kind"]
core.is_current = lambda: False  # as if a file had been saved
new, reloaded = core.fresh()
new_base = sys.modules["explainer_gen.compute.figures.base"]
kind = new_base.REGISTRY["test-reloaded-kind"]
assert reloaded and new is not core and new_base is not old_base
assert isinstance(kind, new_base.FigureKind) and not isinstance(kind, old_base.FigureKind)
assert sys.modules["extra_kinds.ridge"].Ridge is type(kind) and type(kind) is not type(old_kind)
assert sys.modules["extra_kinds.base"].Base.__mro__[1] is new_base.FigureKind  # its own base, loaded again
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={**env(), "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- colours only from the theme ----------------------------------------------------------------

CSS_NAMES = {c.lower() for c in load_schema()["definitions"]["ColorName"]["enum"]} | {"currentcolor", "transparent"}
HEX = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\b")
FUNC = re.compile(r"\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color)\(", re.I)
COLOUR_KEYWORDS = re.compile(r"(?:^|_)(?:colou?r|fill|stroke)$|Colou?r$", re.I)


def colour_literals(source: str) -> list[str]:
    """Colours written into a module rather than taken from `theme.colour(role)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.strip().lower() in CSS_NAMES or HEX.search(text) or FUNC.search(text) or \
                    re.search(r"'(?:%s)'" % "|".join(sorted(CSS_NAMES)), text, re.I):
                found.append(f"line {node.lineno}: {text!r}")
        if isinstance(node, ast.keyword) and node.arg and COLOUR_KEYWORDS.search(node.arg) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and node.value.value not in ("shared", "independent"):  # resolve_scale(color=...)
            found.append(f"line {node.value.lineno}: {node.arg}={node.value.value!r}")
    return found


def test_the_scan_sees_colour_literals():
    bad = ('mark_point(color="black")', 'mark_rule(stroke="#ddd")', "alt.value('gray')", 'x(fill="rgb(0, 0, 0)")',
           'mark_point(stroke="currentColor")', "alt.value('transparent')", "calc(c=\"'white'\")",
           'Axis(titleColor="var(--x)")')
    for source in bad:
        assert colour_literals(source), source
    for source in ('mark_point(color=colour("fg"))', 'Legend(title="Phase")', "x = 'decode'", 'f("#1 choice")',
                   'resolve_scale(color="shared")'):
        assert colour_literals(source) == [], source


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_no_kind_module_writes_a_colour(path):
    assert colour_literals(path.read_text()) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_role_a_kind_asks_for_is_in_the_palette(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "colour":
            assert len(node.args) == 1 and isinstance(node.args[0], ast.Constant), ast.unparse(node)
            assert node.args[0].value in theme.PALETTE, ast.unparse(node)


# -- one row helper -----------------------------------------------------------------------------

A = Slider("a", "Acceptance", 0.05, 0.95, 0.05, 0.8)
B = Slider("batch", "Batch", 1, 513, 8, 1)


def test_rows_at_takes_half_a_step_either_side_and_no_more():
    assert base.AT_TOLERANCE == 0.5
    step = A.step
    cols = {"a": np.array([0.8, 0.8 + 0.49 * step, 0.8 - 0.49 * step, 0.8 + 0.5 * step, 0.8 - 0.51 * step, 0.85])}
    assert rows_at(cols, {"a": A}, {"a": 0.8}).tolist() == [True, True, True, False, False, False]


def test_rows_at_absorbs_float_noise_and_the_browsers_rounding():
    # 0.1 + 0.2 is not 0.3 in floating point; the browser's copy keeps four significant digits.
    cols = {"a": np.array([0.1 + 0.2, float(f"{0.3000000001:.4g}")])}
    slider = Slider("a", "A", 0.05, 0.95, 0.05, 0.3)
    assert rows_at(cols, {"a": slider}).all()


def test_every_grid_row_is_at_exactly_one_position():
    values = A.values()
    cols = {"a": np.repeat(values, 3)}
    hits = np.array([rows_at(cols, {"a": A}, {"a": v}) for v in values])
    assert (hits.sum(axis=0) == 1).all() and (hits.sum(axis=1) == 3).all()


def test_rows_at_checks_only_the_sliders_named_and_the_label():
    cols = {"what": np.array(["decode", "decode", "prefill", "roof"]), "a": np.zeros(4),
            "batch": np.array([9.0, 17.0, 0.0, 0.0])}
    sliders = {"a": A, "batch": B}
    assert rows_at(cols, sliders, {"batch": 9}, what="decode").tolist() == [True, False, False, False]
    assert rows_at(cols, sliders, {}, what="roof").tolist() == [False, False, False, True]
    # Left out, the position is every slider's default: a = 0.8 matches no row here.
    assert not rows_at(cols, sliders).any()


def test_the_browser_filter_uses_the_same_tolerance():
    expr = slider_filter({"a": A, "batch": B})
    assert expr == f"abs(datum.a - a) < {A.step * 0.5!r} && abs(datum.batch - batch) < {B.step * 0.5!r}"
    assert slider_filter({}) == "true"


def test_no_kind_module_picks_rows_by_its_own_rule():
    """Only base.py compares slider columns with a tolerance; kinds call rows_at / slider_filter."""
    rule = re.compile(r"isclose|allclose|abs\(datum\.|(?<!datum)\.step\b|1e-[69]")
    for path in SOURCES:
        if path.name != "base.py":
            assert not rule.search(path.read_text()), path.name


# -- the worked example: a new kind is its module, its page and its test ---------------------------
# CONTRIBUTING.md's worked example adds a kind in three files. Its module and its fence are read
# from there, the module is imported from a scratch folder, and everything the site derives from
# the registry and from built pages must then pick the kind up with nothing else edited: the rules
# above, the picture in the palette's colours and the chart font, the description at every slider
# position, the table and the CSV, the page's figure list and sliders as the browser tests read them.

def worked_example(lang: str) -> list[str]:
    """The `lang` code blocks of CONTRIBUTING.md's worked example, in order."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("### Worked example"):]
    section = section[:section.index("\n## ")]
    return re.findall(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)


@pytest.fixture
def example(tmp_path, monkeypatch, registry):
    """The worked example's kind, registered from its module as CONTRIBUTING.md gives it."""
    (module,) = worked_example("python")[:1]
    (tmp_path / "worked_example.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "decode-reads" not in REGISTRY
    __import__("worked_example")
    return REGISTRY["decode-reads"], tmp_path / "worked_example.py"


def test_the_worked_example_follows_the_rules_every_kind_does(example):
    kind, path = example
    source = path.read_text()
    assert colour_literals(source) == []
    assert not re.search(r"isclose|allclose|abs\(datum\.|(?<!datum)\.step\b|1e-[69]", source)
    assert type(kind).__module__ == "worked_example" and set(kind.sliders) <= set(kind.columns)


def test_the_worked_example_draws_describes_and_tabulates_with_nothing_else_edited(example, cat):
    from explainer_gen.compute.artifacts import FigureRequest, build_figure
    from explainer_gen.compute.resolved import default_scenario

    kind, _ = example
    art = build_figure(FigureRequest(kind.name, dict(kind.sliders), (default_scenario(cat),), "caption"), cat)
    # Its two series take the palette's first two series colours by position: no colour of its own.
    assert 's-series-1' in art.svg and 's-series-2' in art.svg
    assert theme.missing_glyphs(art.svg) == ""  # its labels are in the shipped font as it is
    assert art.alt.startswith("At 4,096 tokens of context per request, ") and "{" not in art.alt
    assert len(art.table.rows) == 9 and art.table.headers == ["Requests", "Weights (ms)", "KV cache (ms)"]
    header = next(csv.reader(art.csv.splitlines()[:1]))
    assert header[-len(kind.columns):] == [c.header for c in kind.columns.values()]
    assert "time to read (ms)" in header
    assert len(art.csv.splitlines()) == 1 + 2 * 9 * len(kind.sliders["ctx"].values())


def test_the_worked_examples_own_test_passes(example, cat):
    (test,) = worked_example("python")[1:]
    scope: dict = {}
    exec(compile(test, "CONTRIBUTING.md (the worked example's test)", "exec"), scope)
    (name,) = [n for n in scope if n.startswith("test_")]
    scope[name](cat)


def test_the_worked_example_on_a_page_is_found_by_the_tests_that_read_pages(example, tmp_path, cat):
    """The page as the example writes it, computed and converted in this process (no MkDocs, as
    tests/test_markdown_ext.py does), then read by the derivations of the page-reading tests."""
    from explainer_gen import core
    from explainer_gen.compute.pages import split_front_matter
    from explainer_gen.site import PageSource
    from helpers import (anchors, assert_descriptions_agree, assert_figure_data_within_budget,
                         assert_figures_have_svg_table_and_csv, figures_of, hand_build, markdown_with,
                         scratch_docs)

    (fence,) = worked_example("explainer")
    text = f"---\ntitle: Reads\n---\n\n# Reads\n\nWhat a step reads.\n\n```explainer\n{fence}```\n"
    docs = scratch_docs(tmp_path, {"explainers/example.md": text})
    assert_descriptions_agree(docs / "explainers" / "example.md", cat)
    build = hand_build(tmp_path, docs)
    files = build.collect([PageSource("explainers/example.md", "docs/explainers/example.md", "explainers/example/",
                                      text)])
    md = markdown_with(core.host.ExplainerExtension(lambda: build, lambda md: "explainers/example.md"))
    _, offset = split_front_matter(text)
    body = md.convert("\n".join(text.split("\n")[offset:]))
    site = tmp_path / "site"
    for path, content in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        data = content.read_bytes() if isinstance(content, Path) else content
        (site / path).write_bytes(data if isinstance(data, bytes) else data.encode())
    page = site / "explainers" / "example" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(build.finish_page("explainers/example.md", f"<html><head></head><body>{body}</body></html>"))
    assert anchors(site, "example") == ["fig-decode-reads"]
    assert figures_of(site, "explainers/example/") == [("fig-decode-reads", ["Context per request (tokens)"])]
    assert_figures_have_svg_table_and_csv(site, "example")
    assert_figure_data_within_budget(site, "example")
