"""Computed prose reads as written by a person in every state: nouns agree with their numbers,
phrases chosen by value follow the sliders and the switch, and no page says "1 requests",
"1.0 times", "-3 slots" or the same sentence twice in a row."""
from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from explainer_gen.sources.controls import Slider
from explainer_gen.compute.numbers import (Inline, SourceError, compute_number, find_inline, parse_expr, parse_format, parse_marks,
                                   plural, split_body)
from explainer_gen.compute.pages import scan_fences, split_front_matter
from helpers import REPO, article, assert_build_fails, build_scratch_page

NBSP = "\u00a0"
PAGES = sorted(p.stem for p in (REPO / "docs" / "explainers").glob("*.md"))
# Nouns these pages count, checked after a "1" even where a page forgets the plural unit.
COUNTED = {(w, plural(w)) for w in ("request", "slot", "card", "token", "step", "position")}


# -- nouns after the format ----------------------------------------------------------------------

def test_a_noun_agrees_with_the_number_as_shown():
    fmt = parse_format("d request", "p.md", 3)
    assert [fmt(v) for v in (0, 1, 0.6, 2, 54, 1e4)] == [
        f"0{NBSP}requests", f"1{NBSP}request", f"1{NBSP}request", f"2{NBSP}requests", f"54{NBSP}requests",
        f"10000{NBSP}requests"]
    # Only a number that reads exactly "1" is singular.
    assert parse_format(".1f request", "p.md", 3)(1) == f"1.0{NBSP}requests"
    assert parse_format(",d token", "p.md", 3)(1234) == f"1,234{NBSP}tokens"
    assert parse_format(".4g decode step", "p.md", 3)(1.0) == f"1{NBSP}decode step"


def test_regular_plurals_and_spelt_out_forms():
    assert [plural(w) for w in ("request", "pass", "box", "batch", "query", "day", "draft step")] == \
        ["requests", "passes", "boxes", "batches", "queries", "days", "draft steps"]
    child = parse_format("d child/children", "p.md", 3)
    assert (child(1), child(3)) == (f"1{NBSP}child", f"3{NBSP}children")
    head = parse_format("d KV head/KV heads", "p.md", 3)
    assert (head(1), head(8)) == (f"1{NBSP}KV head", f"8{NBSP}KV heads")
    # A word taken for a misspelt unit can still be counted by spelling out both forms.
    assert parse_format("d set/sets", "p.md", 3)(2) == f"2{NBSP}sets"


@pytest.mark.parametrize("fmt, unit, hint", [
    (".1f mss", "mss", "'ms'"), (".1f msec", "msec", "'ms'"), ("d gb", "gb", "'GB'"),
    (".0f tflops", "tflops", "'TFLOP/s'"), (".2f tb/s", "tb/s", "'TB/s'"), ("d set", "set", "valid:"),
    ("d Requests", "Requests", "valid:")])
def test_a_word_like_a_unit_is_a_misspelt_unit(fmt, unit, hint):
    with pytest.raises(SourceError) as err:
        parse_format(fmt, "docs/p.md", 7)
    message = str(err.value)
    assert message.startswith("docs/p.md:7: ") and f"unknown unit {unit!r}" in message and hint in message
    assert "singular/plural" in message  # and says how to count such a word anyway


def test_a_noun_needs_a_number_format():
    with pytest.raises(SourceError, match=r"p\.md:3: .*needs a number format before it, such as 'd request'"):
        parse_format("request", "p.md", 3)


# -- phrases chosen by value ---------------------------------------------------------------------

SLIDERS = {"r": Slider("r", "R", 0, 4, 0.5, 2), "k": Slider("k", "K", 1, 3, 1, 2)}
ENV = {"min": np.minimum, "max": np.maximum, "name": lambda which="accelerator": "NVIDIA H100 SXM",
       "__scenario__": "s"}


def compute(text: str, fmt: str = "", envs=None, line: int = 5):
    item = Inline(line, 0, 0, text, fmt)
    expr = parse_expr(text, {"min", "max", "name"}, SLIDERS, "docs/p.md", line)
    return compute_number(item, "n0", expr, parse_format(fmt, "docs/p.md", line), SLIDERS, envs or [ENV],
                          "docs/p.md")


def test_a_choice_is_made_at_every_slider_position():
    result = compute('"twice" if r == 2 else "more than twice" if r > 2 else "less than twice"')
    assert result.deps == ["r"]
    assert result.texts == ["less than twice"] * 4 + ["twice"] + ["more than twice"] * 4
    assert result.default == "twice"
    both = compute('"one" if k == 1 else "many" if k > 1 and not r < 1 else "few"')
    assert both.deps == ["r", "k"]
    assert both.texts[:6] == ["one", "few", "few", "one", "few", "few"] and both.texts[-3:] == ["one", "many", "many"]
    assert compute('"inside" if 1 <= r < 3 else "outside"').texts == ["outside"] * 2 + ["inside"] * 4 + ["outside"] * 3


def test_a_choice_follows_the_scenario_and_may_pick_numbers():
    envs = [ENV, {**ENV, "name": lambda which="accelerator": "AMD MI300X", "__scenario__": "t"}]
    result = compute('"an NVIDIA card" if name() == "NVIDIA H100 SXM" else "another card"', envs=envs)
    assert result.deps == ["scenario"] and result.texts == ["an NVIDIA card", "another card"]
    # Numeric outcomes are formatted, nouns included.
    counts = compute("k - 1 if r < 1 else k", "d slot")
    assert counts.texts[:3] == [f"0{NBSP}slots", f"1{NBSP}slot", f"2{NBSP}slots"]


def test_a_bar_inside_a_phrase_does_not_start_the_format():
    assert split_body(' "a | b" if r > 1 else "c" ') == ('"a | b" if r > 1 else "c"', "")
    assert split_body(" r * 2 | .1f ms ") == ("r * 2", ".1f ms")
    (item,) = find_inline(['It is {{ "x|y" if r > 1 else "z" }} now.'], set())
    assert item.expr == '"x|y" if r > 1 else "z"' and item.fmt == ""


@pytest.mark.parametrize("text, fmt, needle", [
    ('"fast" if r > 1 else 3', "", "one outcome is a phrase ('fast') and the other a number (3)"),
    ('"fast" if r > 1 else "slow"', ".1f", "is text, so it takes no format; drop '| .1f'"),
    ("r > 1", "", "is a condition, true or false"),
    ('"fast" if "r" else "slow"', "", "the condition 'r' is a phrase"),
])
def test_a_bad_choice_names_file_and_line(text, fmt, needle):
    with pytest.raises(SourceError) as err:
        compute(text, fmt, line=12)
    assert str(err.value).startswith("docs/p.md:12: ") and needle in str(err.value)


def test_a_choice_outside_the_allowed_syntax_says_what_is_allowed():
    with pytest.raises(SourceError, match=r"p\.md:4: .*Mod is not allowed.*if condition else"):
        parse_expr("r % 2", set(), SLIDERS, "p.md", 4)
    with pytest.raises(SourceError, match=r"p\.md:4: .*not a valid expression"):
        parse_expr('"a" if r >', set(), SLIDERS, "p.md", 4)


# -- the same, through a real build --------------------------------------------------------------

BUILD_CASES = {
    "phrase and number mixed": (
        "---\nexplainer:\n  sliders:\n    r: {label: R, min: 1, max: 3, step: 1, default: 2, dimension: count}\n---\n\n"
        "# T\n\nIt runs {{ \"fast\" if r > 1 else r }} here.\n", 9, ["inline choice", "one outcome is a phrase"]),
    "misspelt unit taken for a noun": ("# T\n\nIt takes {{ step(1) | .1f mss }}.\n", 3,
                                       ["unknown unit 'mss'", "'ms'", "singular/plural"]),
}


@pytest.mark.parametrize("name", BUILD_CASES)
def test_prose_mistakes_fail_the_build_with_file_and_line(tmp_path, name):
    markdown, line, needles = BUILD_CASES[name]
    assert_build_fails(build_scratch_page(tmp_path, markdown), line, *needles)


# -- every page, every scenario, the slider ends -------------------------------------------------

class _Prose(HTMLParser):
    """The article's paragraphs, list items and table rows as lists of text and (number id, text)."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "tr", "dt", "dd", "figcaption"}
    SKIP = {"script", "style", "svg", "math", "select", "button", "template", "noscript", "figure", "details"}
    VOID = {"br", "img", "input", "hr", "meta", "link", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[list] = []
        self.current: list = []
        self.stack: list[tuple[str, bool]] = []
        self.number: list | None = None

    def skipping(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        a = dict(attrs)
        classes = a.get("class") or ""
        skip = tag in self.SKIP or a.get("role") == "tooltip" or bool(re.search(r"\beg-(controls|card)\b", classes))
        self.stack.append((tag, skip))
        if self.skipping():
            return
        if tag in self.BLOCKS:
            self.flush()
        if tag in ("td", "th"):
            self.current.append(" | ")
        if tag == "span" and "data-eg-num" in a or classes == "eg-num":
            self.number = [a.get("data-eg-num"), ""]

    def handle_endtag(self, tag):
        if not any(t == tag for t, _ in self.stack):
            return
        skipping = self.skipping()
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if skipping and self.skipping():
            return
        if tag == "span" and self.number is not None:
            self.current.append(tuple(self.number))
            self.number = None
        if tag in self.BLOCKS:
            self.flush()

    def handle_data(self, data):
        if self.skipping():
            return
        if self.number is not None:
            self.number[1] += data
        else:
            self.current.append(data)

    def flush(self):
        if any(isinstance(s, tuple) or s.strip() for s in self.current):
            self.blocks.append(self.current)
        self.current = []


def page_parts(site: Path, name: str) -> tuple[list[list], dict]:
    html = (site / "explainers" / name / "index.html").read_text()
    href = re.search(r'data-eg-page="([^"]+)"', html)
    state = json.loads((site / "explainers" / name / href.group(1)).resolve().read_text()) if href else \
        {"scenarios": [""], "default": "", "sliders": {}, "numbers": {}}
    parser = _Prose()
    # The prose, not the derivations listed after it (render/how.py), whose formulas are no sentences.
    parser.feed(re.sub(r'<ol class="eg-how-list".*?</ol>', "", article(html), flags=re.S))
    parser.flush()
    return parser.blocks, state


def states(state: dict):
    """(label, scenario, slider positions) for every scenario and each slider at min, default, max."""
    ends = {n: sorted({0, round((s["default"] - s["min"]) / s["step"]), s["count"] - 1})
            for n, s in state["sliders"].items()}
    for scenario in (s["key"] for s in state["scenarios"]):
        for combo in itertools.product(*ends.values()):
            pos = dict(zip(ends, combo))
            yield f"{scenario} {pos}", scenario, pos


def text_at(number: dict, state: dict, scenario: str, pos: dict) -> str:
    """The text the loader's renderNumbers() shows: row-major over deps, "scenario" first."""
    index = 0
    for dep in number["deps"]:
        size, at = (len(state["scenarios"]), [s["key"] for s in state["scenarios"]].index(scenario)) if dep == "scenario" else \
            (state["sliders"][dep]["count"], pos[dep])
        index = index * size + max(0, min(size - 1, at))
    return number["texts"][index]


def render(block: list, state: dict, scenario: str, pos: dict) -> str:
    out = []
    for seg in block:
        if isinstance(seg, tuple):
            number = state["numbers"].get(seg[0]) if seg[0] else None
            out.append(text_at(number, state, scenario, pos) if number else seg[1])
        else:
            out.append(seg)
    return re.sub(r"\s+", " ", "".join(out)).strip()


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\d])", text) if s]


def declared_nouns(name: str) -> set[tuple[str, str]]:
    """(singular, plural) of every noun the page's source counts through a format."""
    lines = (REPO / "docs" / "explainers" / f"{name}.md").read_text().split("\n")
    _, offset = split_front_matter("\n".join(lines))
    _, inside = scan_fences(lines)
    nouns = set()
    for item in find_inline(lines, inside | set(range(offset))):
        fmt = parse_format(parse_marks(item.fmt, name, item.line, None)[0], name, item.line)
        if fmt.one:
            nouns.add((fmt.one, fmt.many))
    return nouns


def prose_problems(text: str, nouns: set[tuple[str, str]]) -> list[str]:
    """What an editor would strike in one rendered paragraph."""
    problems = []
    plurals = "|".join(re.escape(many) for one, many in nouns if one != many)
    if plurals and (m := re.search(rf"(?<![\d.,])1[ {NBSP}]({plurals})\b", text)):
        problems.append(f"one with a plural: {m.group(0)!r}")
    if m := re.search(rf"(?<![\d.])(1\.0+[ {NBSP}]*×|1\.0+[ {NBSP}]+times\b|\d+\.0+[ {NBSP}]+times\b)", text):
        problems.append(f"a whole ratio with decimals: {m.group(0)!r}")
    if m := re.search(r"(?<![\w\-−])[-−]\d", text):
        problems.append(f"a negative number: {text[max(0, m.start() - 20):m.end() + 20]!r}")
    if m := re.search(r"\s[,.;:](?=\s|$)", text):
        problems.append(f"a space before punctuation: {text[max(0, m.start() - 20):m.end() + 5]!r}")
    said = [re.sub(r"\s+", " ", s).strip().lower() for s in sentences(text)]
    for a, b in zip(said, said[1:]):
        if a == b:
            problems.append(f"a sentence said twice in a row: {a!r}")
    return problems


def test_prose_problems_catches_what_it_should():
    nouns = {("request", "requests")}
    for bad in ("Two cards hold 1 requests.", "They buy 162.0 times the requests.", "That is 1.0× as many.",
                "The draft costs -3 slots.", "It fits , here.", "It fits. It fits."):
        assert prose_problems(bad, nouns), bad
    for good in ("Two cards hold 1 request and eight hold 11 requests.", "They buy 4.4 times the requests.",
                 "It is 2.0× as fast.", "Acceptance of 0.8 and E(a, k) tokens.", "It fits. It fits well."):
        assert prose_problems(good, nouns) == [], good


@pytest.mark.parametrize("name", PAGES)
def test_every_state_of_every_page_reads_right(site, name):
    blocks, state = page_parts(site, name)
    nouns = declared_nouns(name) | COUNTED
    seen, problems = 0, []
    for label, scenario, pos in states(state):
        for block in blocks:
            text = render(block, state, scenario, pos)
            problems += [f"{name} [{label}]: {p}" for p in prose_problems(text, nouns)]
            seen += 1
    # A page with a switch or sliders (an `explainer:` block in its front matter) is read in more
    # than one state; a page without, such as the measurements', in its one.
    front = (REPO / "docs" / "explainers" / f"{name}.md").read_text().split("\n---", 1)[0]
    assert seen > len(blocks) if "\nexplainer:" in front else seen == len(blocks) > 0
    assert problems == [], "\n".join(problems[:20])


@pytest.mark.parametrize("name", PAGES)
def test_every_counted_noun_agrees_at_every_position(site, name):
    """Every text a noun-counting number can show, at every slider position and scenario."""
    blocks, state = page_parts(site, name)
    nouns = declared_nouns(name)
    texts = [t for n in state["numbers"].values() for t in n["texts"]]
    texts += [seg[1] for block in blocks for seg in block if isinstance(seg, tuple)]
    checked = 0
    for text in texts:
        number, _, noun = text.partition(NBSP)
        for one, many in nouns:
            if noun in (one, many) and one != many:
                checked += 1
                assert (noun == one) == (number == "1"), f"{name}: {text!r}"
                assert not number.startswith(("-", "−")), f"{name}: a negative count {text!r}"
    assert checked or not nouns, f"{name} declares nouns but none was shown"


def test_chosen_words_follow_the_controls_in_the_browser(page, base_url):
    """The loader swaps phrases as it swaps numbers: move a slider, change the switch, read."""
    from helpers import wait_for_figures

    page.goto(base_url + "explainers/kv-cache/")
    wait_for_figures(page)
    says = "text => document.querySelector('article').innerText.replace(/\\u00a0/g, ' ').includes(text)"
    assert page.evaluate(says, "On 4 cards, with 8,192 tokens of context per request, Llama 3 70B fits 54 requests")
    # One H100 cannot hold the 70B at all: that choice is greyed out, and the switch says why.
    cards = page.locator("select[data-eg-switch=cards]")
    assert cards.locator("option[value='1']").evaluate("o => o.disabled")
    page.select_option("select[data-eg-switch=cards]", "2")
    page.wait_for_function(says, arg="On 2 cards, with 8,192 tokens of context per request, Llama 3 70B fits 1 request at once")
    note = page.locator(".eg-switch-note")
    assert "1 card: Llama 3 70B needs 2 × NVIDIA H100 SXM at 8,192 tokens of context" in note.inner_text()
    page.select_option("select[data-eg-switch=target]", "llama-3-8b")
    page.wait_for_function(says, arg="Llama 3 8B fits 119 requests at once")
    # The 8B fits on one card, so that choice is no longer greyed out, and the note drops it.
    page.wait_for_function("() => !document.querySelector(\"select[data-eg-switch=cards] option[value='1']\").disabled")
    page.select_option("select[data-eg-switch=cards]", "1")
    page.wait_for_function(says, arg="On 1 card, with 8,192 tokens of context per request, Llama 3 8B fits 52 requests")
    page.watch.assert_clean()
