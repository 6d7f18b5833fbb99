"""Dimensions: every term says what it returns, an inline number's dimension follows from its
terms and sliders through its arithmetic, and a format that does not fit it fails the build at
its line, naming the units that would (issue 37)."""
from __future__ import annotations

import pytest

from explainer_gen.compute.numbers import Inline, find_inline, fit_format, parse_expr, parse_format, shape_of
from explainer_gen.compute.pages import build_page
from explainer_gen.compute.vocabulary import REGISTRY, Topic, TermError, vocabulary
from explainer_gen.compute.vocabulary.registry import Returns
from explainer_gen.sources.controls import Slider
from models.units import BYTES, COUNT, NAMED, RATIO, TIME, UNITS, Dim, fits, units_for
from models.yamlsource import SourceError

SLIDERS = {"a": Slider("a", "Acceptance rate", 0.05, 0.95, 0.05, 0.8, "ratio"),
           "batch": Slider("batch", "Batch", 1, 65, 8, 1, "count"),
           "bare": Slider("bare", "No dimension", 1, 3, 1, 2)}


@pytest.fixture(scope="module")
def functions(cat):
    return {k for k in vocabulary(None, cat) if not k.startswith("__")}


def shape(text: str, functions) -> object:
    return shape_of(parse_expr(text, functions, SLIDERS, "p.md", 3), REGISTRY.returns(), SLIDERS, text, "p.md", 3)


def fitted(text: str, fmt: str, functions):
    return fit_format(parse_format(fmt, "p.md", 3), shape(text, functions), Inline(3, 0, 0, text, fmt), "p.md")


# -- the algebra -----------------------------------------------------------------------------------

def test_dimensions_multiply_divide_and_cancel():
    assert TIME / TIME == RATIO and (BYTES / TIME) * TIME == BYTES and (TIME ** 2) / TIME == TIME
    assert NAMED["rate"] == COUNT / TIME and NAMED["time per count"].uncounted == TIME
    assert Dim((1, -1, 0, 0)).name == "seconds per bytes" and NAMED["bandwidth"].name == "bandwidth"


def test_each_unit_fits_its_own_dimension_and_counts_do_not_matter():
    for name, unit in UNITS.items():
        assert fits(unit.dim, name) and name in units_for(unit.dim)
    assert fits(NAMED["time per count"], "ms") and not fits(TIME, "GB") and not fits(BYTES, "x")
    assert units_for(NAMED["intensity"]) == [] and units_for(TIME) == ["s", "ms", "us", "µs"]


# -- terms declare what they return ------------------------------------------------------------------

def test_every_term_declares_a_known_dimension_and_its_words():
    kinds = {"text", "as its arguments", "as published"}
    for name, term in REGISTRY.terms.items():
        r = term.returns
        assert r.dimension in NAMED or r.dimension in kinds, name
        assert r.words.strip() and r.scale > 0, name
    # Spot checks against the code, not the declarations: what the functions compute.
    dims = {n: t.returns.dimension for n, t in REGISTRY.terms.items()}
    assert (dims["step"], dims["weight_bytes"], dims["bandwidth"], dims["E"], dims["speedup"], dims["name"]) == (
        "time", "bytes", "bandwidth", "count", "ratio", "text")


def test_a_term_that_declares_no_return_or_an_unknown_dimension_is_refused():
    topic = Topic("scratch")
    with pytest.raises(TypeError, match="returns"):
        topic.term(depends=())

    def seconds():
        return 1.0

    with pytest.raises(TermError, match=r"unknown dimension 'tim'; did you mean 'time'"):
        topic.term(depends=(), returns=Returns("tim", "a time"))(seconds)
    with pytest.raises(TermError, match="say in words"):
        topic.term(depends=(), returns=Returns("time", " "))(seconds)
    with pytest.raises(TermError, match="scale"):
        topic.term(depends=(), returns=Returns("text", "a name", 1e-3))(seconds)


# -- an expression's dimension -------------------------------------------------------------------------

@pytest.mark.parametrize("text, dim, scale", [
    ("step(1)", TIME, 1.0),
    ("step(1) / step(1, 'draft')", RATIO, 1.0),
    ("weight_bytes() / bandwidth()", TIME, 1.0),
    ("2 * step(batch) + step(1)", TIME, 1.0),       # a literal is a ratio in * and /
    ("1 - a", RATIO, 1.0),                          # and takes its partner's dimension in + and -
    ("batch / step(batch)", NAMED["rate"], 1.0),
    ("allreduce_us() * allreduces()", TIME, 1e-6),  # a term's scale carries through
    ("max(step(1), kv_time(1))", TIME, 1.0),
    ("round(E(a, 4), 1)", COUNT, 1.0),
    ("step(1) ** 2", TIME ** 2, 1.0),
    ("step(1) ** -1", RATIO / TIME, 1.0),         # a negative whole power
    ("(1 - a) ** batch", RATIO, 1.0),              # a ratio to a count's power
])
def test_an_expressions_dimension_follows_its_arithmetic(functions, text, dim, scale):
    s = shape(text, functions)
    assert s.kind == "number" and s.dim.uncounted == dim.uncounted and s.scale == pytest.approx(scale)


@pytest.mark.parametrize("text, needle", [
    ("step(1) + weight_bytes()", "adds a time and bytes"),
    ("step(1) if a > 0.5 else weight_bytes()", "chooses between a time and bytes"),
    ("step(1) > weight_bytes()", "compares a time and bytes"),
    ("step(1) + allreduce_us()", "same quantity in the same units"),
    ("step(1) ** a", "whole power written as a number"),
    ("max(step(1), weight_bytes())", "max() compares"),
    ("step(bare)", "slider 'bare' declares no dimension"),
    ('"x" if step(1) > weight_bytes() else "y"', "compares a time and bytes"),   # a choice's condition
    ('"x" if a > 0.5 and step(1) > weight_bytes() else "y"', "compares a time and bytes"),
    ("step", "step is a term: call it, as in step(...)"),
])
def test_arithmetic_across_dimensions_fails_at_the_line(functions, text, needle):
    with pytest.raises(SourceError) as err:
        shape(text, functions)
    assert str(err.value).startswith("p.md:3: inline number {{ " + text) and needle in str(err.value)


def test_text_and_conditions_are_not_numbers_of_a_dimension(functions):
    assert shape("name('target')", functions).kind == "text"
    assert shape("a > 0.5", functions).kind == "bool"


# -- figures read by their field (AS_PUBLISHED) ---------------------------------------------------------

@pytest.mark.parametrize("text, dim, scale", [
    ("published('kwon2023', 'kv_used_low')", RATIO, 1.0),
    ("1 / published('kwon2023', 'kv_used_low')", RATIO, 1.0),
    ("published('mlperf', 'tpot_p99_ms')", TIME, 1e-3),                    # written in milliseconds
    ("published('frantar2025', 'full_speedup_batch_low')", COUNT, 1.0),
    ("fitted('layer_s')", TIME, 1.0),
    ("fitted('bandwidth')", RATIO, 1.0),
    ("measured_value('trtllm-0.8.0-ttft-a100-fp16-7b-tp1-128')", TIME, 1.0),
    ("measured_value('trtllm-0.8.0-ttft-a100-fp16-7b-tp1-128', 'tokens')", COUNT, 1.0),
    ("measured_value('trtllm-0.17-throughput-a100-fp16-8b-tp1-128-128')", NAMED["rate"], 1.0),
])
def test_a_figure_read_by_its_field_has_the_dimension_its_derivation_gives(functions, text, dim, scale):
    got = shape(text, functions)
    assert got.kind == "number" and got.dim.uncounted == dim.uncounted and got.scale == pytest.approx(scale), got


@pytest.mark.parametrize("text, fmt, needle", [
    ("fitted('layer_s')", ".0f GB", "'GB' is bytes; use one of s, ms, us, µs"),
    ("published('mlperf', 'tpot_p99_ms')", ".0f", "it needs a unit"),
    ("measured_value('trtllm-0.8.0-ttft-a100-fp16-7b-tp1-128')", ".1f", "it needs a unit"),
    ("measured_value('trtllm-0.8.0-ttft-a100-fp16-7b-tp1-128') + fitted('bandwidth')", ".1f ms", "a time and a ratio"),
])
def test_a_figure_read_by_its_field_must_be_shown_in_its_units(functions, text, fmt, needle):
    with pytest.raises(SourceError, match=needle):
        fitted(text, fmt, functions)


def test_a_figure_in_milliseconds_shows_its_own_value_in_ms(functions):
    assert fitted("published('mlperf', 'tpot_p99_ms')", ".0f ms", functions)(200.0) == "200\u00a0ms"


def test_a_figure_whose_field_says_nothing_or_whose_arguments_are_not_written_is_unchecked(functions):
    """The negative control of the test below: a field the table does not list, and arguments the
    shape cannot read without running the page, leave the number unknown."""
    assert shape("published('kwon2023', 'not_a_field')", functions).kind == "unknown"
    assert shape("fitted(name('weights'))", functions).kind == "unknown"
    assert REGISTRY.returns()["published"].of_arguments("chen2023", "chips") is None  # listed nowhere


def test_every_figure_the_pages_read_by_its_field_has_a_dimension(cat):
    """Every call the pages make to a term whose dimension follows its arguments is one whose
    dimension is known, so its number's format is checked like any other."""
    import ast
    from explainer_gen.compute.numbers import dotted
    from explainer_gen.compute.pages import page_numbers, read_page
    from helpers import REPO

    returns, unknown, seen = REGISTRY.returns(), [], 0
    for path in sorted((REPO / "docs").rglob("*.md")):
        rel = path.relative_to(REPO).as_posix()
        for item, expr, *_ in page_numbers(read_page(path.read_text(), rel, cat), rel, set(REGISTRY.terms), returns):
            for node in ast.walk(expr.tree):
                if isinstance(node, ast.Call) and returns.get(dotted(node.func)) and \
                        returns[dotted(node.func)].dimension == "as published":
                    seen += 1
                    if shape(ast.unparse(node), set(REGISTRY.terms)).kind != "number":
                        unknown.append(f"{rel}:{item.line}: {ast.unparse(node)}")
    assert seen > 20 and unknown == []


# -- the format must fit ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, fmt, needle", [
    ("step(1)", ".1f GB", "'GB' is bytes; use one of s, ms, us, µs"),
    ("step(1)", ".1f parsecs", "'parsecs' is read as a counted noun"),
    ("step(1)", ".1f", "it needs a unit: use one of s, ms, us, µs"),
    ("step(1)", "", "it needs a unit: use one of s, ms, us, µs"),        # no format at all
    ("step(1)", ".0%", "a percentage is of a ratio"),
    ("weight_bytes()", ".1f ms", "'ms' is a time; use one of B, KB"),
    ("weight_bytes()", "d request", "'request' is read as a counted noun"),
    ("E(a, 4)", ".1f GB/s", "'GB/s' is a bandwidth; a count takes a noun, as in 'd request', a ratio x or %"),
    ("speedup(a, 4)", ".1f GB", "a ratio x or %"),
    ("bandwidth()", ".1f second/seconds", "a noun counts only a time; use one of GB/s, TB/s"),
])
def test_a_format_that_does_not_fit_fails_naming_the_units_that_would(functions, text, fmt, needle):
    with pytest.raises(SourceError) as err:
        fitted(text, fmt, functions)
    assert str(err.value).startswith(f"p.md:3: inline number {{{{ {text} | {fmt} }}}} is ") and needle in str(err.value)


@pytest.mark.parametrize("text, fmt", [
    ("step(1)", ".1f ms"), ("step(batch) / batch", ".1f us"), ("E(a, 4)", ".2f token"),
    ("speedup(a, 4)", ".2f x"), ("a", ".0%"), ("weight_bytes()", ".0f GB"), ("tps(batch)", ",.0f"),
    ("weight_value_bytes()", ".3g byte/bytes"), ("intensity(1)", ".0f"), ("batch", "d request"),
])
def test_formats_that_fit(functions, text, fmt):
    fitted(text, fmt, functions)


def test_a_term_in_microseconds_shows_its_own_value_in_us(functions, cat):
    """The scale enters the format's factor: the catalogue's 10 µs all-reduce shows as its own
    number of µs (without the scale it was shown a million times too large)."""
    h100 = cat.accelerator("h100-sxm")
    fmt = fitted("allreduce_us()", ".0f us", functions)
    assert fmt(h100.allreduce_us) == f"{h100.allreduce_us:.0f}\u00a0µs"
    assert fitted("peer_gbps()", ".0f GB/s", functions)(450.0) == "450\u00a0GB/s"
    # Negative control: the same format against a number declared in seconds multiplies by 1e6.
    assert fitted("step(1)", ".0f us", functions)(h100.allreduce_us) == f"{h100.allreduce_us * 1e6:.0f}\u00a0µs"


# -- an inline number never closed ------------------------------------------------------------------------

def test_an_unclosed_inline_number_fails_at_its_line():
    lines = ["# T", "", "Fine {{ E(0.8, 4) | .1f }} here.", "It takes {{ step(1) | .1f ms and more.",
             "`{{ not a number` in code is fine."]
    with pytest.raises(SourceError) as err:
        list(find_inline(lines, set(), "docs/p.md"))
    assert str(err.value).startswith("docs/p.md:4: '{{' at column 10 is never closed on its line")
    assert [i.line for i in find_inline([lines[2], lines[4]], set(), "docs/p.md")] == [1]


def test_a_mismatched_format_fails_the_page_build_at_the_numbers_line(cat):
    page = "---\ntitle: P\n---\n\n# P\n\nA step takes {{ step(1) | .1f GB }}.\n"
    with pytest.raises(SourceError) as err:
        build_page(page, "docs/p.md", cat, lambda r: None, 10**9)
    assert str(err.value).startswith("docs/p.md:7: inline number {{ step(1) | .1f GB }} is a time")


def test_a_paper_figure_in_milliseconds_is_declared_a_time_in_milliseconds():
    """Read apart from the table the code reads: a field whose name says milliseconds is a time of
    scale 1e-3, one whose name says a share or a gain is a ratio, one that says a batch is a count."""
    from explainer_gen.compute.vocabulary.papers import PUBLISHED_FIELDS

    for (paper, field), (dimension, unit) in PUBLISHED_FIELDS.items():
        if field.endswith("_ms"):
            assert (dimension, unit) == ("time", 1e-3), (paper, field)
        elif "gain" in field or "acceptance" in field or "kv_used" in field:
            assert (dimension, unit) == ("ratio", 1.0), (paper, field)
        elif "batch" in field:
            assert (dimension, unit) == ("count", 1.0), (paper, field)
        else:
            raise AssertionError(f"{paper}.{field}: say here what its name implies")
