"""Where a number comes from (issue 37): closed forms that recompute to their terms' values, and
`python -m explainer_gen explain PAGE.md:LINE` with its refusals."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from explainer_gen.__main__ import main
from explainer_gen.compute.derivation import Derivation, show
from explainer_gen.compute.resolved import default_scenario, resolve, unfit_reason
from explainer_gen.compute.vocabulary.papers import PUBLISHED_FIELDS
from explainer_gen.compute.vocabulary import REGISTRY
from helpers import REPO
from models import roofline
from models.units import BYTES, TIME

ROOFLINE = "docs/explainers/roofline.md"

# Settings a closed form must hold at: cards, both formats, a mixture, one card (no collectives).
SETTINGS = [{}, {"cards": 1, "target": "llama-3-8b"}, {"cards": 8, "accelerator": "h200"}, {"weights": "fp8"}, {"weights": "int4"},
            {"accelerator": "mi300x", "cards": 2}, {"target": "mixtral-8x7b", "cards": 2}, {"context": 8192}]
CALLS = [(), (1,), (64,), (512,), (1, "draft")]


def _scenarios(cat):
    base = default_scenario(cat)
    for change in SETTINGS:
        r = resolve(replace(base, **change), cat)
        assert unfit_reason(r, with_draft=True) is None, change  # every setting here runs
        yield change, r


def test_every_closed_form_recomputes_to_its_terms_value(cat):
    """Each term's derivation gives the term's value (in SI units), and a closed form's formula,
    evaluated from the values it shows, gives it too, at every setting and call here that the
    term takes: the formula is the code's, not a copy that may drift."""
    checked = 0
    for change, r in _scenarios(cat):
        terms, derivers = REGISTRY.bind(r, cat), REGISTRY.derivers(r, cat)
        for name, derive in derivers.items():
            if derive is None:
                continue
            for args in CALLS:
                try:
                    raw = terms[name](*args)
                except (TypeError, ValueError):
                    continue  # a call this term does not take
                d = derive(*args)
                if isinstance(raw, str) or np.asarray(raw).dtype.kind in "USb":
                    assert d.result == str(np.asarray(raw)), (name, change, args)
                    continue
                value = float(np.asarray(raw)) * REGISTRY.terms[name].returns.scale
                assert d.result == pytest.approx(value, rel=1e-12), (name, change, args)
                if d.kind == "closed form":
                    assert d.recompute() == pytest.approx(value, rel=1e-9), (name, change, args, d.formula)
                    checked += 1
    assert checked >= 150


def test_negative_control_a_formula_missing_a_kernel_does_not_recompute(cat):
    r = resolve(default_scenario(cat), cat)
    d = REGISTRY.derivers(r, cat)["step"](1)
    assert "R * (tau" in d.formula
    dropped = Derivation(d.kind, d.quantity, d.result, d.dim, d.formula.replace(" + R * (tau + M * t / L)", ""), d.symbols)
    assert dropped.formula != d.formula and dropped.recompute() != pytest.approx(d.result, rel=1e-3)


def test_a_closed_form_shows_its_values_in_units_a_reader_checks(cat):
    """The weights' read in the step: their bytes over the cards' bandwidth, as the datasheet gives it."""
    r = resolve(default_scenario(cat), cat)
    d = REGISTRY.derivers(r, cat)["weights_time"]()
    acc = r.acc
    text = d.substituted()
    assert f"{acc.bandwidth_tbps:.2f}\u00a0TB/s" in text and f"{r.cards}" in text
    assert show(float(roofline.step_time(acc, r.target, r.cards, 1, r.context).weights_s), TIME) == d.shown
    assert any(acc.source == s for s in d.sources) and any(r.target.source in s for s in d.sources)
    assert show(2.5e9, BYTES) == "2.50\u00a0GB" and show(0.0123, TIME) == "12.3\u00a0ms" and show(3.35e12, BYTES / TIME) == "3.35\u00a0TB/s"
    # A whole number shows as one, and one byte is singular.
    assert show(2.0e9, BYTES) == "2\u00a0GB" and show(4.0, None) == "4" and show(1.0, BYTES) == "1\u00a0byte"


# -- the command -----------------------------------------------------------------------------------

def _line_of(text: str) -> int:
    return next(i for i, line in enumerate((REPO / ROOFLINE).read_text().split("\n"), 1) if text in line)


def test_explain_prints_each_number_on_the_line_with_its_derivation(cat, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    line = _line_of("{{ step(1) | .1f ms }}, for a request holding")
    assert main(["explain", f"{ROOFLINE}:{line}", "--set", "accelerator=h200"]) == 0
    out = capsys.readouterr().out
    s = replace(default_scenario(cat), accelerator="h200")
    r = resolve(s, cat)
    step = float(roofline.step_time(r.acc, r.target, r.cards, 1, r.context).seconds)
    assert f"{{{{ step(1) | .1f ms }}}} shows {step * 1e3:.1f}\u00a0ms" in out
    assert "(closed form)" in out and "source: " + r.acc.source in out and f"at {s.key}" in out


@pytest.mark.parametrize("args, needle", [
    (["nowhere.md:3"], "nowhere.md: no such file; valid: "),
    (["docs/explainers/roofine.md:3"], "did you mean 'docs/explainers/roofline.md'"),
    ([], "the following arguments are required: where"),
    ([f"{ROOFLINE}:LINE", "--sett", "a=1"], "unrecognized arguments"),
    ([f"{ROOFLINE}:1"], "no computed number on this line; the nearest is on line"),
    ([f"{ROOFLINE}:LINE", "--set", "speed=3"], "--set speed: not a slider or switch field of this page; valid: prompt, batch"),
    ([f"{ROOFLINE}:LINE", "--set", "prompt=100"], "off the slider's grid; prompt runs 128 to 8192 in steps of 128"),
    ([f"{ROOFLINE}:LINE", "--set", "accelerator=tpu"], "not a choice of the switch; accelerator is one of"),
    ([f"{ROOFLINE}"], "write PAGE.md:LINE"),
])
def test_explain_refuses_with_one_line_naming_the_choices(capsys, monkeypatch, args, needle):
    monkeypatch.chdir(REPO)
    line = _line_of("{{ step(1) | .1f ms }}, for a request holding")
    assert main(["explain", *[a.replace("LINE", str(line)) for a in args]]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and err.startswith("explain: ")


def test_python_dash_m_runs_the_command():
    line = _line_of("{{ step(1) | .1f ms }}, for a request holding")
    ok = subprocess.run([sys.executable, "-m", "explainer_gen", "explain", f"{ROOFLINE}:{line}"], cwd=REPO,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and re.search(r"shows \d+\.\d\u00a0ms", ok.stdout), ok.stderr
    bad = subprocess.run([sys.executable, "-m", "explainer_gen", "nonsense"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "usage: python -m explainer_gen" in bad.stderr


# -- every call the pages make -----------------------------------------------------------------------

def page_calls(cat) -> list[tuple[str, int, str, tuple, dict, object]]:
    """(page, line, term, args, kwargs, resolved scenario) of every term call in every page's inline
    numbers, its arguments evaluated at the sliders' defaults under the page's default scenario."""
    import ast
    from explainer_gen.compute.numbers import dotted, evaluate, Expr
    from explainer_gen.compute.pages import page_numbers, read_page
    from explainer_gen.compute.vocabulary import vocabulary

    out = []
    for path in sorted((REPO / "docs").rglob("*.md")):
        rel = path.relative_to(REPO).as_posix()
        text = read_page(path.read_text(), rel, cat)
        controls = text.controls
        r = resolve(controls.scenario, cat)
        env = {**vocabulary(r, cat), **{n: s.default for n, s in controls.sliders.items()}}
        for item, expr, *_ in page_numbers(text, rel, set(REGISTRY.terms), REGISTRY.returns()):
            called = {id(n.func) for n in ast.walk(expr.tree) if isinstance(n, ast.Call)}
            for node in ast.walk(expr.tree):
                if isinstance(node, ast.Call) and dotted(node.func) in REGISTRY.terms:
                    ev = lambda n: evaluate(Expr(ast.Expression(n), (), frozenset()), env)  # noqa: E731
                    try:
                        args = tuple(ev(a) for a in node.args)
                        kwargs = {k.arg: ev(k.value) for k in node.keywords}
                    except Exception:  # an argument that is itself a term of another scenario's; skipped
                        continue
                    out.append((rel, item.line, dotted(node.func), args, kwargs, r))
                elif isinstance(node, ast.Attribute) and id(node) not in called and dotted(node) in REGISTRY.terms:
                    out.append((rel, item.line, dotted(node), (), {}, r))
    return out


def _parts(d):
    for p in d.parts:
        yield p
        yield from _parts(p)


def test_every_derivation_gives_its_terms_value_at_every_call_the_pages_make(cat):
    """Every call an inline number makes, at the page's default state: a term with a derivation
    derives the value the term returns (in SI units), and a closed form recomputes to it."""
    calls = page_calls(cat)
    assert len(calls) > 500
    checked = set()
    for page, line, name, args, kwargs, r in calls:
        term = REGISTRY.terms[name]
        if term.derive is None:
            continue
        value = term.bind(r, cat)(*args, **kwargs)
        d = term.bind(r, cat, term.derive)(*args, **kwargs)
        where = f"{page}:{line} {name}{args}"
        if isinstance(value, str) or np.asarray(value).dtype.kind in "USb":
            assert d.result == str(np.asarray(value)), where
            continue
        # A paper's figure is held in the unit it was published in (papers.PUBLISHED_FIELDS says which).
        scale = PUBLISHED_FIELDS.get(tuple(args), (None, 1.0))[1] if name == "published" else term.returns.scale
        si = float(np.asarray(value)) * scale
        assert d.result == pytest.approx(si, rel=1e-12), where
        assert d.kind in ("closed form", "value", "search", "simulation"), where
        assert d.quantity.strip() and (d.sources or d.method), (where, "a derivation says where it comes from")
        if d.kind == "closed form":
            assert d.recompute() == pytest.approx(si, rel=1e-9), (where, d.formula)
        for part in _parts(d):  # and every closed form shown below it recomputes to its own result
            assert part.quantity.strip() and (part.sources or part.method or part.formula), (where, part.quantity)
            if part.kind == "closed form" and not isinstance(part.result, str):
                assert part.recompute() == pytest.approx(part.result, rel=1e-9), (where, part.quantity, part.formula)
        checked.add(name)
    assert {"step", "bandwidth"} <= checked


def test_explain_judges_whether_a_state_runs_once_every_setting_is_made(cat, capsys, monkeypatch):
    """A pair of --set that runs where one of them alone would not (one card holds Llama 3 70B and
    its draft only in INT4) is answered; the state that does not run is refused, in one line naming
    the switch's settings and why. The settings are found from the page, not typed here."""
    from dataclasses import replace as with_
    from explainer_gen.compute.numbers import find_inline
    from explainer_gen.compute.pages import read_page

    monkeypatch.chdir(REPO)
    rel = "docs/explainers/speculative-decoding.md"
    text = read_page((REPO / rel).read_text(), rel, cat)
    controls = text.controls
    line = next(i.line for i in find_inline(text.lines, set(text.inside), rel))

    def changed(c):
        return [f for f in controls.switch if getattr(c, f) != getattr(controls.scenario, f)]
    pair = next(c for c in controls.combinations() if c.key not in controls.unfit and len(changed(c)) == 2
                and any(with_(controls.scenario, **{f: getattr(c, f)}).key in controls.unfit for f in changed(c)))
    sets = [a for f in changed(pair) for a in ("--set", f"{f}={getattr(pair, f)}")]
    assert main(["explain", f"{rel}:{line}", *sets]) == 0, capsys.readouterr().err
    assert f"at {pair.key}" in capsys.readouterr().out
    alone = next(f for f in changed(pair) if with_(controls.scenario, **{f: getattr(pair, f)}).key in controls.unfit)
    assert main(["explain", f"{rel}:{line}", "--set", f"{alone}={getattr(pair, alone)}"]) == 2
    err = capsys.readouterr().err.strip()
    bad = with_(controls.scenario, **{alone: getattr(pair, alone)})
    assert controls.unfit[bad.key] in err and "would not run" in err and len(err.splitlines()) == 1, err


def test_a_formula_is_written_as_a_reader_writes_it():
    """Python's ** and // never reach the page: a power is ^ and a whole division floor(a ÷ b),
    in the formula and with the values put in."""
    from explainer_gen.compute.derivation import Symbol, closed_form
    from models.units import RATIO

    d = closed_form("requests that fit", RATIO, 8.0, "(m - w) // b ** 2", m=Symbol(100.0, BYTES), w=Symbol(20.0, BYTES),
                    b=Symbol(3.0, BYTES))
    page = d.to_json()
    assert page["formula"] == "floor((m - w) ÷ b^2)"
    assert page["substituted"].startswith("floor((100 bytes - 20 bytes) ÷ (3 bytes)^2)".replace(" bytes", "\u00a0bytes"))
    assert d.recompute() == 8.0 and "**" not in str(page) and "//" not in str(page)
    # A value under a power or a sign is bracketed: (-3)^2 is 9, -3^2 would read as -9.
    neg = closed_form("a square", RATIO, 10.0, "x ** 2 - y", x=Symbol(-3.0, RATIO), y=Symbol(-1.0, RATIO))
    assert neg.substituted() == "(-3)^2 - (-1)"
    # A phrase holding '//' is a phrase: the text with its values put in is never parsed again.
    url = closed_form("a choice", RATIO, 1.0, "t + u", t=Symbol("see https://example.org", None), u=Symbol(1.0, RATIO))
    assert "https://example.org" in url.substituted()


def test_passes_one_after_another_share_what_they_share_and_number_what_differs():
    """Closed forms added up keep a symbol that every form gives alike, and number one that differs
    in every form that names it; the sum recomputes to the forms' total."""
    from explainer_gen.compute.derivation import Symbol, closed_form, one_after_another

    B = Symbol(2.0e12, BYTES / TIME, "bandwidth")
    first = closed_form("a pass", TIME, 3.0, "W / B + t / B", W=Symbol(4e12, BYTES), t=Symbol(2e12, BYTES), B=B)
    second = closed_form("a pass", TIME, 2.0, "W / B + t / B", W=Symbol(4e12, BYTES), t=Symbol(0.0, BYTES), B=B)
    both = one_after_another("two passes", 5.0, [first, second])
    assert set(both.symbols) == {"W", "B", "t1", "t2"}
    assert both.formula == "(W / B + t1 / B) + (W / B + t2 / B)"
    assert both.recompute() == pytest.approx(5.0) and both.symbols["t2"].words.endswith("pass 2")
    alone = one_after_another("one pass", 3.0, [first])
    assert alone.formula == first.formula and alone.quantity == "one pass"
