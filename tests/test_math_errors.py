"""A math fence with invalid LaTeX fails the build, naming the mistake, where it is in the formula,
and the file and line of the fence; latex2mathml alone would render most of these silently."""
from __future__ import annotations

from pathlib import Path

import pytest

from explainer_gen.render.mathml import to_mathml
from explainer_gen.compute.pages import scan_fences
from helpers import assert_build_fails, build_scratch_page

DOCS = Path(__file__).resolve().parents[1] / "docs"


def rejected(formula: str) -> str:
    with pytest.raises(ValueError) as info:
        to_mathml(formula)
    return str(info.value)


# formula: needles of the message, each naming the offending piece and, when there is one, its column.
MISTAKES = {
    "unclosed brace": (r"\frac{1}{2", ["math fence is not valid LaTeX", "'{' is never closed", "column 9"]),
    "stray closing brace": (r"a + b}", ["'}' has no matching '{'", "column 6"]),
    "escaped brace opens no group": (r"\{ a }", ["'}' has no matching '{'", "column 6"]),
    "brace closed inside left-right": (r"{\left( a } \right)",
                                       [r"'\left' is not closed by '\right' before '}'", "column 2"]),
    "left without right": (r"\left( a + b", [r"'\left' is never closed by '\right'", "column 1"]),
    "right without left": (r"a + b \right)", [r"'\right' has no matching '\left'", "column 7"]),
    "left without delimiter": (r"\left x \right)", [r"'\left' needs a delimiter", "got 'x'"]),
    "middle outside left-right": (r"a \middle| b", [r"'\middle' is not between '\left' and '\right'"]),
    "begin without end": (r"\begin{matrix} a & b", [r"'\begin{matrix}' is never closed by '\end{matrix}'"]),
    "end without begin": (r"a \end{matrix}", [r"'\end{matrix}' has no matching '\begin{matrix}'", "column 3"]),
    "mismatched environments": (r"\begin{matrix} a \end{pmatrix}",
                                [r"'\begin{matrix}' is closed by '\end{pmatrix}'", "column 18"]),
    "unknown environment": (r"\begin{aligned} a &= b \end{aligned}",
                            ["unknown environment 'aligned'", "did you mean 'align'", "valid: "]),
    "unknown command": (r"x = \alpah + 1", [r"unknown command '\alpah'", r"did you mean '\alpha'", "column 5"]),
    "unknown font command": (r"\mathfoo{x}", [r"unknown command '\mathfoo'"]),
    "unknown command in a macro": (r"\newcommand{\R}{\reals} \R", [r"unknown command '\reals'", "column 17"]),
    "command out of place": (r"a \hline b", [r"'\hline' cannot be used here", "print it as text", "column 3"]),
    "display math delimiters": (r"\[ x \]", [r"unknown command '\['"]),
    "dollar signs": (r"$x^2$", ["'$' is not needed", "column 1"]),
    "frac with one argument": (r"\frac{a}", [r"'\frac' needs 2 arguments, found 1", "column 1"]),
    "frac taking the closing brace": (r"{\frac{a}} + b", [r"'\frac' needs 2 arguments, found 1", "column 2"]),
    "binom with one argument": (r"\binom{n}", [r"'\binom' needs 2 arguments, found 1"]),
    "sqrt without argument": (r"1 + \sqrt", [r"'\sqrt' needs 1 argument, found 0", "column 5"]),
    "trailing superscript": (r"a^", ["'^' has no superscript after it", "column 2"]),
    "subscript before a closing brace": (r"{x_} + 1", ["'_' has no subscript after it", "column 3"]),
    "over with nothing below": (r"{a \over}", [r"'\over' has nothing below it"]),
    "limits without a script": (r"\sum\limits x", [r"'\limits' must be followed by '_' or '^'"]),
    "ampersand outside an environment": (r"a & b", ["'&' is outside an environment", "column 3"]),
    "braces inside text": (r"\text{a {b} c}", [r"'\text{...}' cannot hold braces"]),
    "big with a command delimiter": (r"\big\{ x \big\}", [r"'\big' needs one of", r"got '\{'"]),
    "only a comment": ("% E(a, k) to come", ["only comments"]),
    "empty fence": ("", ["math fence is empty"]),
    "blank fence": ("  \n\t\n", ["math fence is empty"]),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_mistake_is_named_with_its_column(name):
    formula, needles = MISTAKES[name]
    message = rejected(formula)
    for needle in needles:
        assert needle in message, message


def test_a_mistake_on_a_later_line_names_that_line_of_the_formula():
    exc = pytest.raises(ValueError, to_mathml, "\\sum_i x_i\n= \\left( a\n+ b").value
    assert r"""line 2, column 3 of the formula ("= \left( a"): '\left' is never closed by '\right'""" in str(exc)
    assert exc.line == 2


def docs_math_fences():
    fences = []
    for page in sorted(DOCS.rglob("*.md")):
        found, _ = scan_fences(page.read_text().split("\n"))
        fences += [pytest.param(f.body, id=f"{page.relative_to(DOCS)}:{f.line}") for f in found if f.lang == "math"]
    return fences


# Guards against rejecting good LaTeX: these pass on the old code too, by design.
@pytest.mark.parametrize("formula", docs_math_fences())
def test_every_math_fence_in_the_docs_still_converts(formula):
    assert to_mathml(formula).startswith("<math")


VALID = [
    r"E(a, k) = \frac{1 - a^{k+1}}{1 - a}",
    r"\left\{ x \mid x > 0 \right.",
    r"\{ a, b \}",
    r"\left\langle q \middle| k \right\rangle",
    r"\sqrt[3]{x} + \frac12 + x^2_3 + x''",
    r"\mathbb{R}^n \ni \mathbf{x}, \boldsymbol{\alpha}, \mathrm{d}x",
    r"\sum\limits_{i=1}^{n} \operatorname{softmax}(z)_i",
    r"\begin{align} a &= b \\ c &= d \end{align}",
    r"f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{otherwise} \end{cases}",
    r"\begin{array}{cc} a & b \end{array}",
    r"\newcommand{\norm}[1]{\left\| #1 \right\|} \norm{x}",
    r"{a \over b} + \binom{n}{k} + \bigl( x \bigr) + \xrightarrow[a]{b}",
    "T_{\\text{step}} % time per decoding step\n  = \\max(t_c, t_m)",
    r"\textcolor{red}{x} + \verb|\x|",
]


@pytest.mark.parametrize("formula", VALID)
def test_valid_latex_still_converts(formula):
    assert to_mathml(formula).startswith("<math")


# End to end: the plugin reports the mistake at its own line in the Markdown file.
PAGES = {
    "unclosed brace on the fence's second line": (
        "# T\n\nText.\n\n```math\nE(a, k) = \\frac{1 - a^{k+1}}\n  {1 - a\n```\n", 7,
        ["math fence is not valid LaTeX", "line 2, column 3 of the formula", "'{' is never closed"]),
    "unknown command after front matter": (
        "---\ntitle: T\n---\n\n# T\n\n```math\nx = \\alpah + 1\n```\n", 8,
        [r"unknown command '\alpah'", "column 5"]),
    "fraction missing its denominator": (
        "# T\n\n```math\nE = \\frac{1 - a^{k+1}}\n```\n", 4, [r"'\frac' needs 2 arguments, found 1"]),
}


@pytest.mark.parametrize("name", PAGES)
def test_bad_math_fence_fails_the_build_at_its_line(tmp_path, name):
    markdown, line, needles = PAGES[name]
    assert_build_fails(build_scratch_page(tmp_path, markdown), line, *needles)


def test_bad_math_fence_leaves_the_previous_site_untouched(tmp_path):
    good = build_scratch_page(tmp_path, "# T\n\n```math\nE = \\frac{1}{2}\n```\n")
    assert good.returncode == 0, good.stderr
    snapshot = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert "<math" in (tmp_path / "site" / "page" / "index.html").read_text()
    bad = build_scratch_page(tmp_path, "# T\n\n```math\nE = \\frac{1}{2\n```\n")
    assert_build_fails(bad, 4, "'{' is never closed")
    after = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert after == snapshot
