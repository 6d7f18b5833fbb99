"""The section "How the numbers are computed" as render/how.py writes it, on made-up numbers: a
derivation is written out once, where it first comes; a repeat links to it by the number the
reader sees in the list; two different quantities are never taken for one."""
from __future__ import annotations

import re

from explainer_gen.compute.derivation import Symbol, closed_form, value
from explainer_gen.compute.numbers import NumberResult
from explainer_gen.render import how
from models.units import BYTES, COUNT, TIME

STEP = closed_form("time of one decode pass", TIME, 0.012, "W / B", ("datasheet",),
                   W=Symbol(40e9, BYTES, "weights"), B=Symbol(3.35e12, BYTES / TIME, "bandwidth"))


def number(i: int, d, shown: str = "") -> NumberResult:
    return NumberResult(f"n{i}", [], [shown], shown or d.shown, d.to_json())


def entries(html: str) -> list[tuple[str, str]]:
    """(id, its body) of each entry of the list, in the reader's order."""
    items = re.split(r'(?=<li id="how-n\d+">)', html[html.index('<ol class="eg-how-list"'):])[1:]
    return [(re.match(r'<li id="(how-n\d+)">', it).group(1), it) for it in items]


def test_a_derivation_is_written_once_and_its_repeats_link_to_it_by_the_number_the_reader_sees():
    ratio = closed_form("decode over prefill", COUNT, 2.0, "a / b", a=Symbol(2.0, COUNT), b=Symbol(1.0, COUNT))
    combo = ratio.__class__("combination", "step(1) * 2", 0.024, TIME, "t0 * 2", {"t0": Symbol(0.012, TIME)},
                            parts=(STEP,), name="step(1) * 2")
    html = how.entries([number(0, ratio), number(1, STEP, "12.0 ms"), number(2, combo), number(3, STEP, "12 ms")])
    got = entries(html)
    assert [i for i, _ in got] == ["how-n0", "how-n1", "how-n2", "how-n3"]
    assert html.count('<ul class="eg-how-symbols"><li><var>W</var>') == 1  # the step's closed form, once
    # The combination's part and the later number both link to entry 2, the step's place in the list.
    assert 'Made as in <a href="#how-n1">entry 2</a>' in got[2][1]
    assert 'Made as in <a href="#how-n1">entry 2</a>' in got[3][1]
    assert "<strong>12 ms</strong>" in got[3][1]  # headed by the number as that place shows it


def test_two_values_that_differ_only_in_what_they_are_are_both_written():
    a = value("requests of 0 tokens that fit on 2 cards", COUNT, 5.0, "catalogue")
    b = value("requests of 0 tokens that fit on 8 cards", COUNT, 5.0, "catalogue")
    html = how.entries([number(0, a), number(1, b)])
    assert "Made as in" not in html and html.count("(value)") == 2


def test_a_phrase_or_a_page_without_numbers_has_no_section():
    phrase = NumberResult("n0", [], ["fast"], "fast", None)
    for numbers in ([], [phrase]):
        assert how.section(numbers) == "" and how.entries(numbers) == ""
    # A page with a number has the heading in its Markdown and its list's place after it.
    section = how.section([phrase, number(1, STEP)])
    assert section.startswith(f"## {how.HEADING}\n") and section.rstrip().endswith(how.PLACEHOLDER)
