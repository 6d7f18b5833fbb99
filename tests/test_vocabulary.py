"""The inline-number vocabulary: every term declares what it reads, a wrong declaration cannot
freeze a number silently, and KV-cache bytes per token have one formula."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import explainer_gen.compute.vocabulary as vocab
from explainer_gen.sources.controls import Scenario
from explainer_gen.compute.numbers import evaluate, parse_expr
from explainer_gen.compute.pages import build_page, page_numbers, read_page
from explainer_gen.compute.vocabulary import DEPENDENCIES, REGISTRY, Registry, Term, TermError, Topic
from explainer_gen.compute.derivation import value
from explainer_gen.compute.vocabulary.registry import Returns, check
from models.units import RATIO

SOME = Returns("ratio", "a value a test makes up")
from helpers import REPO
from models import kvcache
from models.yamlsource import SourceError
from explainer_gen.compute.resolved import resolve

H100 = Scenario("h100-sxm", 4, "llama-3-70b", "llama-3.2-1b", 512, "bf16", "bf16")
MI300 = Scenario("mi300x", 1, "llama-3-8b", "llama-3-8b", 512, "bf16", "bf16")


# -- every term declares what it reads ----------------------------------------------------------

def test_depends_has_no_default_so_every_term_declares_it():
    depends = inspect.signature(Topic.term).parameters["depends"]
    assert depends.kind is inspect.Parameter.KEYWORD_ONLY and depends.default is inspect.Parameter.empty
    topic = Topic("scratch")
    with pytest.raises(TypeError, match="depends"):
        topic.term()
    with pytest.raises(TypeError, match="depends"):
        topic.term(lambda: 1)  # a bare @topic.term
    with pytest.raises(TypeError, match="every term declares what it reads"):
        topic.term(lambda: 1, depends=(), returns=SOME)


def test_every_name_an_expression_may_call_is_a_declared_term(cat):
    for name, term in REGISTRY.terms.items():
        assert isinstance(term.depends, tuple) and set(term.depends) <= set(DEPENDENCIES), name
        check(term)  # the declaration matches the function (as registering it checked)
    # The names a page's expressions may call are exactly the registry's: nothing joins undeclared.
    assert set(vocab.vocabulary(resolve(H100, cat), cat)) == set(REGISTRY.terms)
    assert set(vocab.vocabulary(None, cat)) == set(REGISTRY.terms)


def test_every_topic_module_is_in_the_registry():
    """A topic module left out of vocabulary/__init__.py would define terms no page could call."""
    package = Path(vocab.__file__).parent
    for info in pkgutil.iter_modules([str(package)]):
        module = importlib.import_module(f"{vocab.__name__}.{info.name}")
        if hasattr(module, "topic"):
            assert module.topic in vocab.TOPICS, info.name
            assert all(REGISTRY.terms[n] is t for n, t in module.topic.terms.items()), info.name


def test_a_scenario_free_term_is_bound_to_nothing_and_a_scenario_term_needs_a_scenario(cat):
    h100, mi300, unscoped = (vocab.vocabulary(s, cat) for s in (resolve(H100, cat), resolve(MI300, cat), None))
    free = {n for n, t in REGISTRY.terms.items() if t.scenario_free}
    assert {"E", "chen.c", "sampler.alpha", "published", "ridge_of", "params_of", "min"} <= free
    assert {"step", "name", "kv_bytes", "kv_heads", "kv_slots"}.isdisjoint(free)
    for name in free:
        if not REGISTRY.terms[name].depends:  # handed nothing at all: the very function, in every binding
            assert h100[name] is mi300[name] is unscoped[name] is REGISTRY.terms[name].fn, name
    for key in ("a100-80gb", "mi300x"):  # handed the catalogue only: the same under any scenario, or none
        assert h100["ridge_of"](key) == mi300["ridge_of"](key) == unscoped["ridge_of"](key)
    assert h100["params_of"]("llama-3-8b") == mi300["params_of"]("llama-3-8b") == unscoped["params_of"]("llama-3-8b")
    for name in set(REGISTRY.terms) - free:
        with pytest.raises(ValueError, match=rf"{re.escape(name)}\(\) reads the scenario"):
            unscoped[name]()
    assert h100["name"]() != mi300["name"]()  # while bound, they do read it


def test_terms_read_the_scenario_they_are_bound_to(cat):
    h100, mi300 = vocab.vocabulary(resolve(H100, cat), cat), vocab.vocabulary(resolve(MI300, cat), cat)
    assert (h100["name"](), h100["name"]("target"), h100["cards"]()) == ("NVIDIA H100 SXM", "Llama 3 70B", 4)
    assert (mi300["cards"](), mi300["kv_heads"](), mi300["layers"]("draft")) == (1, 8.0, 32.0)
    assert h100["ridge_of"]("mi300x") == mi300["ridge"]()


# -- a wrong declaration fails the build ----------------------------------------------------------

def _peek(scenario):
    """A term that reads the scenario: its memory per card."""
    _peek.calls.append(scenario)
    return scenario.acc.memory_gb


_peek.calls = []


def _how(*args):
    """The scratch terms' derivation: a made-up value, said to be one (these tests are about what
    a number reads, not about its derivation)."""
    return value("a value this test makes up", RATIO, 0.0, "tests/test_vocabulary.py")


def test_a_term_declared_scenario_free_that_takes_the_scenario_is_refused_where_it_is_defined():
    topic = Topic("scratch")
    with pytest.raises(TermError) as err:
        topic.term(depends=(), returns=SOME)(_peek)
    message = str(err.value)
    assert message.startswith(f"tests/test_vocabulary.py:{_peek.__code__.co_firstlineno}: term '_peek' takes a "
                              "parameter 'scenario' but does not declare it: declare depends=('scenario',)")
    assert "_peek" not in topic.terms
    # Declared, the same function is accepted, and is handed the scenario.
    topic.term(depends=("scenario",), returns=SOME)(_peek)
    assert topic.terms["_peek"].depends == ("scenario",)


def test_a_term_declared_scenario_free_that_closes_over_a_scenario_is_refused(cat):
    """The old vocabulary's idiom: terms made inside a function of the scenario, reading it unseen."""
    topic = Topic("scratch")

    def terms_for(r):
        @topic.term(depends=(), returns=SOME)
        def ridge():
            return r.acc.ridge
        return ridge

    with pytest.raises(TermError, match=r"term 'ridge' .*defined inside a function and may read r unseen"):
        terms_for(resolve(H100, cat))


@pytest.mark.parametrize("depends, params, needle", [
    (("scenario",), "tokens", "first parameters must be scenario"),
    (("catalogue", "scenario"), "catalogue, scenario", "listed once and in that order"),
    (("weather",), "weather", "each dependency is one of"),
    ((), "catalogue, key", "does not declare it"),
])
def test_declarations_that_do_not_match_the_function_are_refused(depends, params, needle):
    namespace: dict = {}
    exec(f"def term_under_test({params}):\n    return 0\n", namespace)
    with pytest.raises(TermError, match=needle):
        Topic("scratch").term(depends=depends, returns=SOME)(namespace["term_under_test"])


def test_a_name_defined_twice_is_refused():
    one, two = Topic("one"), Topic("two")
    one.add("max", np.maximum, depends=(), returns=SOME)
    two.add("max", np.fmax, depends=(), returns=SOME)
    with pytest.raises(TermError, match="'max' of two is already defined by one"):
        Registry(one, two)


PAGE = """---
title: P
explainer:
  scenario: {accelerator: h100-sxm, cards: 4, target: llama-3-70b, draft: llama-3.2-1b}
  switch: {accelerator: [h100-sxm, mi300x]}
---

# P

It reads {{ peek() | .0f }}.
"""


def _no_figures(request):
    raise AssertionError("the scratch page has no figures")


def _scratch_registry(monkeypatch, term: Term) -> None:
    """The shipped vocabulary plus one scratch term, as the pages see it."""
    registry = Registry(*vocab.TOPICS)
    registry.terms[term.name] = term
    monkeypatch.setattr(vocab, "REGISTRY", registry)


def test_a_number_of_scenario_free_terms_is_evaluated_once_without_a_scenario(monkeypatch, cat):
    """Positive control: declared, the term follows the switch; the same page with only
    scenario-free terms is evaluated once, and given no scenario."""
    _peek.calls = []
    _scratch_registry(monkeypatch, Term("peek", _peek, ("scenario",), "scratch", SOME, derive=_how))
    page = build_page(PAGE, "docs/p.md", cat, _no_figures, 10**9)
    (number,) = page.numbers.values()
    assert number.deps == ["scenario"] and number.texts == ["80", "192"]
    # Once under each scenario; once more for its derivation, under the default scenario; then for
    # its card, once under each scenario again.
    assert [s.acc.key for s in _peek.calls] == ["h100-sxm", "mi300x", "h100-sxm", "h100-sxm", "mi300x"]

    seen = []

    def free(*args):
        seen.append(args)
        return 7.0

    monkeypatch.setattr(vocab, "REGISTRY", Registry(*vocab.TOPICS))
    vocab.REGISTRY.terms["peek"] = Term("peek", free, (), "scratch", SOME, derive=_how)
    (number,) = build_page(PAGE, "docs/p.md", cat, _no_figures, 10**9).numbers.values()
    # Its value, its derivation, then its card: each once, without a scenario.
    assert number.deps == [] and number.default == "7" and seen == [(), (), ()]


def test_a_term_wrongly_declared_scenario_free_fails_the_build_at_the_number(monkeypatch, cat):
    """Negative control: the same term as above, declared scenario-free (the declaration check
    bypassed by building the Term directly, as a mistaken registry would). Its number must not be
    frozen at the default scenario's value: it is given no scenario, so the page fails to build,
    at the number's line, naming the function."""
    _peek.calls = []
    _scratch_registry(monkeypatch, Term("peek", _peek, (), "scratch", SOME, derive=_how))
    with pytest.raises(SourceError) as err:
        build_page(PAGE, "docs/p.md", cat, _no_figures, 10**9)
    message = str(err.value)
    assert message.startswith("docs/p.md:10: inline number {{ peek() }} failed") and "_peek()" in message
    assert "scenario" in message and _peek.calls == []


def test_a_number_whose_term_declares_no_derivation_fails_at_its_line_naming_the_term(monkeypatch, cat):
    _scratch_registry(monkeypatch, Term("peek", lambda: 7.0, (), "scratch", SOME))
    with pytest.raises(SourceError) as err:
        build_page(PAGE, "docs/p.md", cat, _no_figures, 10**9)
    assert str(err.value).startswith("docs/p.md:10: inline number {{ peek() }} calls peek, which declares no "
                                     "derivation: give the term derive=")
    # Positive control: the same term with a derivation builds, and the number carries it.
    _scratch_registry(monkeypatch, Term("peek", lambda: 7.0, (), "scratch", SOME, derive=_how))
    (number,) = build_page(PAGE, "docs/p.md", cat, _no_figures, 10**9).numbers.values()
    assert number.default == "7" and number.how["kind"] == "value" and number.how["quantity"] == "a value this test makes up"


def test_a_wrong_declaration_in_a_topic_module_fails_the_import_that_starts_every_build(tmp_path, monkeypatch):
    """A topic module with a wrong declaration cannot even be imported (the plugin imports the
    vocabulary before it reads a page), and the error names its file, line and function."""
    module = tmp_path / "scratch_topic.py"
    module.write_text("from explainer_gen.compute.vocabulary.registry import Returns, Topic\n\ntopic = Topic('scratch')\n\n\n"
                      "@topic.term(depends=(), returns=Returns('bytes', 'memory of one card'))\n"
                      "def memory_per_card(scenario):\n    return scenario.acc.memory_bytes\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TermError) as err:
        importlib.import_module("scratch_topic")
    # A decorated function's line is its decorator's.
    assert str(err.value).startswith(f"{module.resolve()}:6: term 'memory_per_card' takes a parameter 'scenario' "
                                     "but does not declare it")


# -- grouped terms read as attributes --------------------------------------------------------------

def test_grouped_terms_read_as_attributes_and_are_checked_by_name(cat):
    env = vocab.vocabulary(resolve(H100, cat), cat)
    functions = set(env)
    expr = parse_expr("chen.c / chen.c_roofline + chen.speedup(0) - leviathan.k(5)", functions, {}, "docs/p.md", 3)
    assert expr.calls == {"chen.c", "chen.c_roofline", "chen.speedup", "leviathan.k"}
    assert REGISTRY.scenario_free(expr.calls)
    want = env["chen.c"]() / env["chen.c_roofline"]() + env["chen.speedup"](0) - env["leviathan.k"](5)
    assert evaluate(expr, env) == want
    assert evaluate(parse_expr("chen.c()", functions, {}, "p.md", 1), env) == env["chen.c"]()
    with pytest.raises(SourceError, match=r"p\.md:4: 'chen' in \{\{ chen\('c'\) \}\} is a group of terms, not a "
                                          r"function: write one of chen\.c, chen\.c_roofline"):
        parse_expr("chen('c')", functions, {}, "p.md", 4)
    with pytest.raises(SourceError, match=r"p\.md:5: unknown name 'chen\.cc' .*did you mean 'chen\.c'"):
        parse_expr("chen.cc", functions, {}, "p.md", 5)
    with pytest.raises(SourceError, match=r"only a vocabulary term may be written with a dot \(step\(1\)\.real"):
        parse_expr("step(1).real", functions, {}, "p.md", 6)
    assert not REGISTRY.scenario_free(parse_expr("step(1) * chen.c", functions, {}, "p.md", 7).calls)


def test_no_page_uses_a_string_keyed_accessor():
    """chen('c'), sampler('vocab'), leviathan(5, 'a') and shape('layers') became named terms."""
    for page in (REPO / "docs").rglob("*.md"):
        found = re.findall(r"\{\{[^}]*\b(?:chen|sampler|leviathan|shape)\(['\"]", page.read_text())
        assert not found, (page, found)


# -- every term is called by some page -------------------------------------------------------------

# Terms that no page calls, kept on purpose: name -> the reason (a term that only other terms call,
# a term a test needs). Any other term that no page calls is dead, and is removed.
UNCALLED: dict[str, str] = {}


def called_by_pages(cat) -> set[str]:
    """Every term called by the inline numbers of some page in docs/, read as a build reads them
    (pages.read_page, pages.page_numbers)."""
    called = set()
    for path in sorted((REPO / "docs").rglob("*.md")):
        rel = path.relative_to(REPO).as_posix()
        text = read_page(path.read_text(encoding="utf-8"), rel, cat)
        for _, expr, *_ in page_numbers(text, rel, set(REGISTRY.terms), REGISTRY.returns()):
            called |= expr.calls
    return called


def uncalled(registry: Registry, called: set[str], kept: dict[str, str] = UNCALLED) -> list[str]:
    """The registry's terms that no page calls and that are not kept on purpose."""
    return sorted(set(registry.terms) - called - set(kept))


def _never_called() -> float:
    return 1.0


def test_every_term_is_called_by_some_page_or_kept_for_a_reason(cat):
    called = called_by_pages(cat)
    assert len(called) > 100
    assert uncalled(REGISTRY, called) == [], "no page calls these terms: remove them, or keep them in UNCALLED, saying why"
    for name, reason in UNCALLED.items():  # the list goes stale when a term goes, or a page starts calling it
        assert name in REGISTRY.terms and name not in called and reason.strip(), name
    # Negative control: a term registered beside the shipped ones, which no page calls, is reported;
    # kept in the list, with its reason, it is not.
    topic = Topic("scratch")
    topic.add("never_called", _never_called, depends=(), returns=SOME)
    registry = Registry(*vocab.TOPICS, topic)
    assert uncalled(registry, called) == ["never_called"]
    assert uncalled(registry, called, {**UNCALLED, "never_called": "a test needs it"}) == []


# -- one formula for KV-cache bytes per token ------------------------------------------------------

CATALOGUE = yaml.safe_load((REPO / "models/catalogue.yaml").read_text())


@pytest.mark.parametrize("row", CATALOGUE["models"], ids=lambda row: row["key"])
def test_kv_bytes_per_token_from_the_catalogue_config(row, cat):
    """Derived here from the config numbers: K and V (x2), every layer, every KV head, head_dim
    values of 2 bytes each (bf16). Llama 3 70B: 2 x 80 x 8 x 128 x 2 = 327,680 bytes."""
    expected = 2 * row["layers"] * row["kv_heads"] * row["head_dim"] * 2
    if row["key"] == "llama-3-70b":
        assert expected == 327_680
    assert kvcache.bytes_per_token(cat.model(row["key"])) == expected
    env = vocab.vocabulary(resolve(Scenario("h100-sxm", 4, row["key"], row["key"], 512, "bf16", "bf16"), cat), cat)
    assert env["kv_bytes"]() == env["kv_bytes"]("draft") == expected
    assert kvcache.cache_bytes_per_token(cat.model(row["key"]), cat.model(row["key"])) == 2 * expected


def _computes_kv_bytes(path: Path) -> list[int]:
    """Lines of `path` that multiply by a model's kv_heads, or call a KV-bytes method other than
    models.kvcache's."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
                isinstance(side, ast.Attribute) and side.attr == "kv_heads" for side in ast.walk(node)):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "kv_bytes_per_token":
            lines.append(node.lineno)
    return sorted(set(lines))


CODE = sorted(p for root in ("explainer_gen", "models") for p in (REPO / root).rglob("*.py")
              if p != REPO / "models/kvcache.py" and "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.relative_to(REPO).as_posix())
def test_only_models_kvcache_computes_kv_bytes_per_token(path):
    assert _computes_kv_bytes(path) == []
