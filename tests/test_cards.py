"""A number's card at every state (issue 37): the card files of the real build hold each computed
number's derivation at the states the reader can set, and a closed form's shown values recompute
to its shown result there.

The derivation at a state is computed here afresh, one state at a time (derivation.explain), and
held against the card file the build wrote for the whole grid at once (derivation.explain_over,
over arrays where a term's derivation takes them, through holes.Holes): five states a number,
the page's starting one and four drawn with a fixed seed."""
from __future__ import annotations

import ast
import html
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest

from explainer_gen.client import contract
from explainer_gen.compute.derivation import SHOWN_UNITS, explain
from explainer_gen.compute.holes import HOLE_CLOSE, HOLE_OPEN, Holes, at
from explainer_gen.compute.numbers import SCENARIO_DEP
from explainer_gen.compute.pages import distinct_numbers, page_numbers, read_page
from explainer_gen.compute.resolved import resolve
from explainer_gen.compute.vocabulary import derivers, returns, scenario_free, vocabulary
from explainer_gen.render import how
from helpers import CARD_OF, REPO

EXPLAINERS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs/explainers").glob("*.md"))
STATES = 4  # drawn states a number, besides the page's starting one
_MARK = re.compile(f"{HOLE_OPEN}(\\d+){HOLE_CLOSE}")


def card_at(card: dict, where: dict[str, tuple[int, int]]) -> str:
    """The card's HTML at a state, as the loader makes it (assets/loader/how.js, howHtml)."""
    def pick(laid):
        flat = 0
        for d in laid["deps"]:
            flat = flat * where[d][1] + where[d][0]
        return laid["texts"][flat]
    return _MARK.sub(lambda m: html.escape(pick(card["holes"][int(m[1])]), quote=False),
                     card["templates"][pick(card["which"])])


def page_cards(site: Path, page: str) -> dict:
    """The page's card files by entry id, from its page state (which the page's root names)."""
    index = site / Path(page).relative_to("docs").with_suffix("") / "index.html"
    state_url = re.search(r'data-eg-page="([^"]+)"', index.read_text()).group(1)
    state_path = (index.parent / state_url).resolve()
    state = json.loads(state_path.read_text())
    return {entry: json.loads((state_path.parent / rel).read_text()) for entry, rel in state["cards"].items()}


def states_of(page: str, cat, seed: int = 37):
    """Each computed number of the page, in page order, with its id and the states to check: (its
    place along each axis by name, the scenario and the sliders' values there)."""
    text = read_page((REPO / page).read_text(), page, cat)
    controls = text.controls
    grid = controls.grid()
    rng = random.Random(f"{page}:{seed}")
    for number_id, item, expr, shape, fmt, _ in distinct_numbers(text, page):
        if shape.kind == "text" or not (expr.calls or expr.names):
            continue
        free = scenario_free(expr.calls)
        axes = [controls.sliders[n] for n in expr.names]
        start = (grid.index(controls.scenario), *(s.index_of(s.default) for s in axes))
        picks = [start] + [(rng.randrange(len(grid)), *(rng.randrange(s.count) for s in axes)) for _ in range(STATES)]
        states = []
        for s, *positions in picks:
            where = {} if free else {SCENARIO_DEP: (s, len(grid))}
            where.update({a.name: (p, a.count) for a, p in zip(axes, positions)})
            values = {a.name: float(a.values()[p]) for a, p in zip(axes, positions)}
            states.append((where, None if free else grid[s], values))
        yield number_id, item, shape, controls, states


def derived_card(item, shape, controls, scenario, values, cat) -> str:
    r = None if scenario is None else resolve(scenario, cat)
    env = {**vocabulary(r, cat), **{n: s.default for n, s in controls.sliders.items()}, **values}
    with np.errstate(all="ignore"):
        d = explain(item.expr, env, returns(), derivers(r, cat), controls.sliders,
                    shape.dim if shape.kind == "number" else None, shape.scale)
    return how.card(d.to_json(whole=False))


@pytest.mark.parametrize("source", EXPLAINERS)
def test_each_card_file_holds_the_derivation_at_the_states_a_reader_sets(mkdocs_site, cat, source):
    """At the page's starting state and four drawn ones, every computed number's card file gives
    the card that the number's derivation at that state makes. Compared as text: the loader puts a
    hole's text in escaped for HTML alone, the build escapes a template's Markdown's characters too."""
    page = source  # ("page" is the browser's fixture)
    cards = page_cards(mkdocs_site, page)
    checked = moved = 0
    for nid, item, shape, controls, states in states_of(page, cat):
        card = cards[how.entry_id(nid)]
        contract.check_number_card(card)
        shown = set()
        for where, scenario, values in states:
            want = html.unescape(derived_card(item, shape, controls, scenario, values, cat))
            got = html.unescape(card_at(card, where))
            assert got == want, (page, item.line, item.expr, where)
            shown.add(got)
            checked += 1
        moved += len(shown) > 1
    assert checked >= 5 * 20, checked
    # The states drawn do move the cards: a comparison at one state alone would pass stale files.
    # (The measured page's numbers read no slider or switch: they never move.)
    assert moved >= {"measured.md": 0, "serving.md": 1, "batching.md": 5}.get(Path(page).name, 10), (page, moved)


# -- a closed form's shown values recompute to its shown result ---------------------------------

_SHOWN = re.compile(r"(-?[\d,]+(?:\.(\d+))?)(?:\u00a0(.+))?")


def interval(text: str) -> tuple[float, float] | None:
    """What a value shown to its last digit may be, in SI units: the number, half a unit of its last
    digit either side (derivation.show writes three figures, or a whole number in full); None for a
    phrase."""
    m = _SHOWN.fullmatch(text.strip())
    if not m:
        return None
    unit = m[3] or ""
    factor = 1.0 if unit.startswith("(") or not unit else SHOWN_UNITS.get(unit)
    if factor is None:
        return None
    v = float(m[1].replace(",", ""))
    # A number below 100 that is not whole shows decimals (three figures), so one shown whole is exact.
    half = 0.5 * 10.0 ** -len(m[2]) if m[2] else (0.5 if abs(v) >= 100 else 0.0)
    return ((v - half) * factor, (v + half) * factor)


def _span(op, a, b):
    ends = [op(x, y) for x in a for y in b]
    return (min(ends), max(ends))


def evaluate(formula: str, symbols: dict[str, tuple[float, float]]) -> tuple[float, float] | None:
    """The formula (as a card writes it: × ÷ ^ and floor) over intervals: every value each
    operation can give from values within its operands' intervals. None where a division's
    interval holds zero."""
    tree = ast.parse(formula.replace("×", "*").replace("÷", "/").replace("^", "**"), mode="eval")

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return (float(node.value), float(node.value))
        if isinstance(node, ast.Name):
            return symbols[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            lo, hi = ev(node.operand)
            return (-hi, -lo)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return (a[0] + b[0], a[1] + b[1])
            if isinstance(node.op, ast.Sub):
                return (a[0] - b[1], a[1] - b[0])
            if isinstance(node.op, ast.Mult):
                return _span(lambda x, y: x * y, a, b)
            if isinstance(node.op, ast.Div):
                return None if b[0] <= 0 <= b[1] else _span(lambda x, y: x / y, a, b)
            if isinstance(node.op, ast.Pow):  # over positive bases, monotone in each operand
                return None if a[0] <= 0 else _span(lambda x, y: x ** y, a, b)
        if isinstance(node, ast.Call):
            args = [ev(x) for x in node.args]
            if any(x is None for x in args):
                return None
            name = node.func.id
            if name in ("max", "min"):
                pick = max if name == "max" else min
                return (pick(x[0] for x in args), pick(x[1] for x in args))
            if name == "floor":
                return (math.floor(args[0][0]), math.floor(args[0][1]))
            if name == "round":
                return (round(args[0][0], int(args[1][0]) if len(args) > 1 else 0),
                        round(args[0][1], int(args[1][0]) if len(args) > 1 else 0))
        if isinstance(node, ast.IfExp):  # a choice: its branch where the test is decided, else either
            test = ev(node.test)
            body, other = ev(node.body), ev(node.orelse)
            if test is None or body is None or other is None:
                return None
            if test == (1.0, 1.0):
                return body
            if test == (0.0, 0.0):
                return other
            return (min(body[0], other[0]), max(body[1], other[1]))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.GtE, ast.Gt, ast.Lt, ast.LtE)):
            a, b = ev(node.left), ev(node.comparators[0])
            if isinstance(node.ops[0], (ast.Lt, ast.LtE)):
                a, b = b, a
            sure = a[0] >= b[1] if isinstance(node.ops[0], (ast.GtE, ast.LtE)) else a[0] > b[1]
            never = a[1] < b[0] if isinstance(node.ops[0], (ast.GtE, ast.LtE)) else a[1] <= b[0]
            return (1.0, 1.0) if sure else (0.0, 0.0) if never else (0.0, 1.0)
        raise ValueError(f"cannot evaluate {ast.unparse(node)}")
    return ev(tree)


_FORMULA = re.compile(r'<p class="eg-how-formula">= (.*?)</p>')
_SYMBOL = re.compile(r"<li><var>([^<]+)</var>: (.*?)</li>")
_HEAD = re.compile(r"<strong>(.*?)</strong>")


def recomputes(card: str) -> bool | None:
    """Whether the card's formula, evaluated over its symbols as shown, can give its result as
    shown; None for a card with no formula of shown numbers (a value, a search, a phrase)."""
    text = html.unescape(card)
    formulas = _FORMULA.findall(text)
    if len(formulas) != 2:
        return None
    listed = text.split('<ul class="eg-how-symbols">', 1)[1].split("</ul>", 1)[0]
    symbols = {k: interval(said.rsplit(", ", 1)[-1]) for k, said in _SYMBOL.findall(listed)}  # words, then the value
    result = interval(_HEAD.search(text)[1])
    if result is None or any(v is None for v in symbols.values()):
        return None
    got = evaluate(formulas[0], symbols)
    if got is None:
        return None
    return got[0] <= result[1] and result[0] <= got[1]


@pytest.mark.parametrize("source", ["docs/explainers/roofline.md", "docs/explainers/speculative-decoding.md",
                                    "docs/explainers/kv-cache.md", "docs/explainers/draft-trees.md"])
def test_a_closed_form_shown_in_a_card_recomputes_to_its_result_at_every_state_drawn(mkdocs_site, cat, source):
    """Every closed form the cards show, at the states drawn: its formula over the values shown,
    each anywhere within half a unit of its last digit, can give the result shown (interval
    arithmetic: the tolerance is the rounding, derived, not chosen). Negative control: the same
    card with the starting state's values under the state's own result (a card that does not follow
    the sliders) fails, wherever the two results are more than a tenth apart.""" 
    page = source
    cards = page_cards(mkdocs_site, page)
    held = stale_caught = stale = 0
    for nid, item, shape, controls, states in states_of(page, cat):
        card = cards[how.entry_id(nid)]
        built = card_at(card, states[0][0])
        for where, _, _ in states[1:]:
            now = card_at(card, where)
            verdict = recomputes(now)
            if verdict is None:
                continue
            assert verdict, (page, item.line, item.expr, where, html.unescape(now)[:800])
            held += 1
            # The starting state's body under this state's head: the values did not follow.
            head_now, head_built = _HEAD.search(now)[1], _HEAD.search(built)[1]
            stale_card = built.replace(f"<strong>{head_built}</strong>", f"<strong>{head_now}</strong>", 1)
            now_at, built_at = interval(head_now), interval(head_built)
            if now_at and built_at and abs(now_at[0] - built_at[0]) > 0.1 * abs(built_at[0]) \
                    and recomputes(stale_card) is not None:
                stale += 1
                stale_caught += not recomputes(stale_card)
    assert held >= 20, held
    assert stale >= 20 and stale_caught == stale, (stale, stale_caught)


# -- holes.Holes ------------------------------------------------------------------------------------

def _grid_values(axes):
    """Made-up cards over a grid: a head that changes along every axis, words that change along one,
    a value along another, a constant, and a wording that changes with a branch."""
    for i, (s, a, k) in enumerate(np.ndindex(*axes)):
        yield i, {"kind": "search", "quantity": f"batch {a * 10 + 1:,} at k = {k}",
                  "method": (f"speedup {1 + s / 7:.4f}× at batch {s * 100 + a:,}, {k}" if a else f"slower at batch 1, {s}"),
                  "parts": [{"name": "cap", "shown": f"{s * 1000:,} requests"}], "sources": ["a source"]}


def test_holes_give_back_every_value_and_lay_each_out_over_the_axes_it_changes_along():
    axes, deps = (3, 4, 5), ["scenario", "a", "k"]
    held = Holes(axes, deps)
    truth = dict(_grid_values(axes))
    for i, v in truth.items():
        held.put(i, v)
    written = held.written()
    for i, (s, a, k) in enumerate(np.ndindex(*axes)):
        assert at(written, {"scenario": (s, 3), "a": (a, 4), "k": (k, 5)}) == truth[i]
    laid = {tuple(h["deps"]) for h in written["holes"]}
    assert ("scenario",) in laid and ("k",) in laid and ("a",) in laid  # each along its own axes alone
    assert len(written["templates"]) == 2  # the two wordings of the method, each written once
    assert all("a source" in json.dumps(t) for t in written["templates"])  # the constant, in the template


def test_holes_put_a_block_of_arrays_as_they_put_its_states_one_by_one():
    axes = (2, 3, 4)
    one, block = Holes(axes, ["scenario", "a", "k"]), Holes(axes, ["scenario", "a", "k"])
    for i, v in _grid_values(axes):
        one.put(i, v)
    for s in range(2):
        quantity = np.array([[f"batch {x * 10 + 1:,} at k = {y}" for y in range(4)] for x in range(3)], dtype=object)
        method = np.array([[f"speedup {1 + s / 7:.4f}× at batch {s * 100 + x:,}, {y}" if x else f"slower at batch 1, {s}"
                            for y in range(4)] for x in range(3)], dtype=object)
        block.put(s * 12, {"kind": "search", "quantity": quantity, "method": method,
                           "parts": [{"name": "cap", "shown": f"{s * 1000:,} requests"}], "sources": ["a source"]},
                  (3, 4))
    assert one.written() == block.written()


def test_negative_control_holes_that_drop_an_axis_they_change_along_give_wrong_values(monkeypatch):
    """A layout that keeps a hole's first axis alone (as if it changed along no other) is caught."""
    axes = (3, 4, 5)
    held = Holes(axes, ["scenario", "a", "k"])
    truth = dict(_grid_values(axes))
    for i, v in truth.items():
        held.put(i, v)
    real = Holes._laid_out

    def broken(self, column, present):
        laid = real(self, column, present)
        if len(laid["deps"]) > 1:
            size = self.axes[self.deps.index(laid["deps"][0])]
            laid = {"deps": laid["deps"][:1], "texts": laid["texts"][::len(laid["texts"]) // size][:size]}
        return laid
    monkeypatch.setattr(Holes, "_laid_out", broken)
    written = held.written()
    wrong = sum(at(written, {"scenario": (s, 3), "a": (a, 4), "k": (k, 5)}) != truth[i]
                for i, (s, a, k) in enumerate(np.ndindex(*axes)))
    assert wrong > 10


# -- the cards in the browser ------------------------------------------------------------------------

SHARED = "explainers/speculative-decoding/?accelerator=mi300x&cards=8&context=32768&a=0.35&k=7"

# Every computed number's card at the page's state: each number focused in turn, its card awaited.
CARDS_SHOWN = """async () => {
  const cardOf = """ + CARD_OF + """;
  const out = {}, seen = new Set();
  for (const a of document.querySelectorAll('a.eg-how')) {
    if (seen.has(a.hash)) continue;
    seen.add(a.hash);
    a.focus();
    const c = await cardOf(a);
    out[decodeURIComponent(a.hash.slice(1))] = {number: a.textContent, html: c ? c.innerHTML : null};
  }
  document.activeElement.blur();
  const s = window.explainerGen.state();
  return {cards: out, scenario: s.scenario, sliders: s.sliders};
}"""


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split()


@pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)
def test_every_card_shows_its_file_at_the_state_of_a_shared_link(page, base_url, site):
    """A shared link that moves the switch and both sliders: every computed number's card shows
    its card file at that state (the scenario's place and each slider's position, as the loader
    finds them), headed by the number as the prose shows it. Negative control: the files at the
    page's starting state differ from what the cards of the numbers that move show."""
    page.goto(base_url + SHARED)
    page.wait_for_load_state("networkidle")
    got = page.evaluate(CARDS_SHOWN)
    state_url = re.search(r'data-eg-page="([^"]+)"', (site / "explainers/speculative-decoding/index.html").read_text())[1]
    state = json.loads(((site / "explainers/speculative-decoding") / state_url).resolve().read_text())
    keys = [s["key"] for s in state["scenarios"]]
    assert got["scenario"] != state["default"] and (got["sliders"]["a"], got["sliders"]["k"]) == (0.35, 7), got

    def where(scenario: str, sliders: dict) -> dict:
        out = {SCENARIO_DEP: (keys.index(scenario), len(keys))}
        for name, s in state["sliders"].items():
            value = sliders.get(name, s["default"])
            out[name] = (round((value - s["min"]) / s["step"]), s["count"])
        return out
    cards = page_cards(site, "docs/explainers/speculative-decoding.md")
    here = where(got["scenario"], got["sliders"])
    start = where(state["default"], {})
    stale = 0
    assert len(got["cards"]) == len(cards) >= 100
    for entry, shown in got["cards"].items():
        assert shown["html"] is not None, (entry, "no card")
        want = re.sub(r"<strong>.*?</strong>", f"<strong>{html.escape(shown['number'])}</strong>",
                      card_at(cards[entry], here), count=1)
        assert _text(shown["html"]) == _text(want), (entry, shown["number"])
        built = re.sub(r"<strong>.*?</strong>", f"<strong>{html.escape(shown['number'])}</strong>",
                       card_at(cards[entry], start), count=1)
        stale += _text(shown["html"]) != _text(built)
    # A loader that showed the starting state's cards would fail on these (54 of the 109 when written:
    # the others read neither the switch nor a slider, such as the papers' figures).
    assert stale >= 40, stale
    page.watch.assert_clean()


def test_a_grid_whose_passes_take_different_forms_is_derived_one_state_at_a_time(monkeypatch, cat):
    """The decode step over the batch slider, derived over arrays (Term.derives_arrays) and one
    state at a time, gives the same cards; where the grid's passes would take different closed
    forms (made to here: every grid refused), it falls back to one state at a time, and still
    gives them; any other failure over arrays fails the number."""
    from explainer_gen.compute.derivation import FormsDiffer, explain_over
    from explainer_gen.compute.resolved import Watched
    from explainer_gen.compute.vocabulary import derive_arrays
    from explainer_gen.compute.vocabulary import roofline as terms

    path = "docs/explainers/roofline.md"
    text = read_page((REPO / path).read_text(), path, cat)
    controls = text.controls
    item, expr, shape, _, _ = next(n for n in page_numbers(text, path) if n[0].expr == "step(batch)")
    scenarios = [(vocabulary(r, cat), derivers(r, cat), s)
                 for s in controls.grid()[:3] for r in [Watched.of(resolve(s, cat))]]

    def cards(arrays):
        return explain_over(item.expr, scenarios, [controls.sliders["batch"]], returns(), controls.sliders, shape.dim,
                            shape.scale, SCENARIO_DEP, arrays)
    one_by_one = cards(frozenset())
    assert "step" in derive_arrays() and cards(derive_arrays()) == one_by_one
    refused = []

    def mixed(held, what):
        if np.ndim(held):
            refused.append(what)
            raise FormsDiffer(what)
        return bool(held)
    monkeypatch.setattr(terms, "_alike", mixed)
    assert cards(derive_arrays()) == one_by_one and refused

    # Any other failure over arrays is the derivation's own: it fails the number, not hidden by a retry.
    def broken(held, what):
        if np.ndim(held):
            raise ValueError("a broadcast that does not fit")
        return bool(held)
    monkeypatch.setattr(terms, "_alike", broken)
    with pytest.raises(ValueError, match="does not fit"):
        cards(derive_arrays())


def test_scenarios_share_a_card_only_where_they_agree_on_every_field_it_reads(monkeypatch, cat):
    """The decode step's card under three scenarios of the speculative page: the starting one, one
    with the other draft (which the step does not read: it shares the first's card, derived once)
    and one on the other accelerator (derived anew). Negative control: were no field noted as read,
    the third would get the first's card, and show the wrong accelerator's step."""
    from dataclasses import replace as with_
    from explainer_gen.compute import resolved as watch
    from explainer_gen.compute.derivation import explain_over
    from explainer_gen.compute.resolved import Watched
    from models.units import TIME

    path = "docs/explainers/speculative-decoding.md"
    controls = read_page((REPO / path).read_text(), path, cat).controls
    grid, start = controls.grid(), controls.scenario
    other_draft = next(s for s in grid if s == with_(start, draft=s.draft) and s.draft != start.draft)
    other_card = next(s for s in grid if s == with_(start, accelerator=s.accelerator) and s.accelerator != start.accelerator)
    chosen = [start, other_draft, other_card]
    derived = []

    def scenarios():
        out = []
        for s in chosen:
            r = Watched.of(resolve(s, cat))
            ways = derivers(r, cat)
            step = ways["step"]
            ways["step"] = lambda *args, step=step, **kw: derived.append(1) or step(*args, **kw)
            out.append((vocabulary(r, cat), ways, s))
        return out

    def alone(s) -> dict:
        r = resolve(s, cat)
        return explain("step(1)", vocabulary(r, cat), returns(), derivers(r, cat), {}, TIME).to_json(whole=False)

    held = explain_over("step(1)", scenarios(), [], returns(), {}, TIME, 1.0, SCENARIO_DEP)
    assert [at(held, {SCENARIO_DEP: (i, 3)}) for i in range(3)] == [alone(s) for s in chosen]
    assert len(derived) == 2  # the other draft's card is the first's

    @__import__("contextlib").contextmanager
    def unwatched():
        yield set()
    monkeypatch.setattr(watch, "reading", unwatched)
    blind = explain_over("step(1)", scenarios(), [], returns(), {}, TIME, 1.0, SCENARIO_DEP)
    assert at(blind, {SCENARIO_DEP: (2, 3)}) == alone(start) != alone(other_card)
