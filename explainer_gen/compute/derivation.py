"""How a number was made: its derivation, with this state's values, in units a reader can check.

A vocabulary term may declare a derivation (`@topic.term(..., derive=fn)`): `fn` takes what the
term takes and returns a `Derivation` built from the same model objects the term reads, of one
of four kinds:

- a closed form (`closed_form`): the formula in symbols, the same with this state's values put in,
  and the result. It carries the values in SI units and the formula as arithmetic over them, so
  `recompute()` evaluates it again: a test holds every closed form to its term's value, so the
  written formula cannot drift from the code;
- a value (`value`): a catalogue entry, a paper's figure or an assumption, with its source;
- a search (`search`): the method, and the evaluations either side of the answer;
- a simulation (`simulation`): what was run, and its spread.

An inline number that combines terms (`explain`) shows its expression with each term's value
put in, then each term's own derivation.
"""
from __future__ import annotations

import ast
import copy
import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from models.units import BYTES, COUNT, FLOP, NAMED, RATIO, TIME, Dim

from .memo import remembering

KINDS = ("closed form", "value", "search", "simulation", "combination", "not described")


class FormsDiffer(ValueError):
    """A derivation over arrays (Term.derives_arrays) whose elements would take different forms (one
    closed form for some, another for the rest): `explain_over` then derives them one at a time."""


@dataclass(frozen=True)
class Symbol:
    """One quantity a closed form is written in: its value in SI units and its dimension."""

    value: float | str
    dim: Dim | None
    words: str = ""


@dataclass(frozen=True)
class Derivation:
    kind: str
    quantity: str             # in words: "time of one decode pass, at its floor"
    result: float | str       # in SI units, or the phrase chosen
    dim: Dim | None           # None: a phrase or a number of unstated dimension
    formula: str = ""         # a closed form's arithmetic over `symbols` ("W / (n * B)"), or an expression
    symbols: dict[str, Symbol] = field(default_factory=dict)
    method: str = ""          # a search's or a simulation's account of what was run
    sources: tuple[str, ...] = ()
    parts: tuple["Derivation", ...] = ()
    name: str = ""            # the term, as an expression calls it

    def recompute(self) -> float:
        """A closed form's formula evaluated again from its symbols' values (SI units)."""
        scope = {k: s.value for k, s in self.symbols.items()}
        scope.update(max=max, min=min)
        return float(eval(compile(ast.parse(self.formula, mode="eval"), "<formula>", "eval"), {"__builtins__": {}}, scope))

    @property
    def shown(self) -> str:
        return _shown_each(self.result, self.dim)

    def substituted(self) -> str:
        """The formula with each symbol replaced by its value, in units a reader can check (over
        arrays, as `over_arrays` says: a text at each element)."""
        text, slots = _substitution(self.formula)
        values = [name if (s := self.symbols.get(name)) is None else _shown_each(s.value, s.dim)
                  for _, name, _ in slots]
        if not any(isinstance(v, np.ndarray) for v in values):
            return _put_in(text, slots, values)
        each = np.broadcast_arrays(*(np.asarray(v, dtype=object) for v in values))
        out = np.empty(each[0].shape, dtype=object)
        for i in np.ndindex(out.shape):
            out[i] = _put_in(text, slots, [v[i] for v in each])
        return out

    def to_json(self, whole: bool = True) -> dict:
        """What a page shows of it, all text: the render layer writes it out, without the models.
        Not `whole`: what a number's card shows (render/how.card), each part by its head alone."""
        symbols = [[k, s.words or (s.dim.name if s.dim else ""), _shown_each(s.value, s.dim)]
                   for k, s in self.symbols.items()]
        has_formula = self.kind in ("closed form", "combination") and bool(self.formula)
        return {"kind": self.kind, "quantity": self.quantity, "shown": self.shown, "name": self.name,
                "formula": _readable(self.formula) if has_formula and self.symbols else "",
                "substituted": self.substituted() if has_formula else "", "symbols": symbols,
                "method": self.method, "sources": list(self.sources),
                "parts": [p.to_json() if whole else p.head() for p in self.parts]}

    def head(self) -> dict:
        """What names it and gives its value: how a card shows a part."""
        return {"kind": self.kind, "quantity": self.quantity, "shown": self.shown, "name": self.name}

    def lines(self, depth: int = 0) -> list[str]:
        """The derivation as indented plain text, each part below the whole."""
        pad = "  " * depth
        head = f"{pad}{self.quantity}: {self.shown}"
        out = [head + (f" ({self.kind})" if self.kind not in ("combination",) else "")]
        if self.kind in ("closed form", "combination") and self.formula:
            if self.symbols:
                out.append(f"{pad}  = {_readable(self.formula)}")
                for k, s in self.symbols.items():
                    shown = s.value if isinstance(s.value, str) else show(s.value, s.dim)
                    out.append(f"{pad}    {k}: {s.words or (s.dim.name if s.dim else '')}, {shown}")
            out.append(f"{pad}  = {self.substituted()} = {self.shown}")
        if self.method:
            out.append(f"{pad}  {self.method}")
        for s in self.sources:
            out.append(f"{pad}  source: {s}")
        for p in self.parts:
            out.extend(p.lines(depth + 1))
        return out


def _put_in(text: str, slots, values: list[str]) -> str:
    """A formula's text from `_substitution` with each slot's value shown, bracketed as the slot needs."""
    for (slot, _, bracket), value in zip(slots, values):
        if (bracket == "any" and (" " in value or "\u00a0" in value or value.startswith("-"))) or \
                (bracket == "negative" and value.startswith("-")):
            value = f"({value})"
        text = text.replace(slot, value, 1)
    return _operators(text)


def _shown_each(v, dim: Dim | None):
    """A value as `show` writes it; over an array (a derivation over arrays), an array of texts."""
    if isinstance(v, str):
        return v
    if isinstance(v, np.ndarray) and v.ndim:
        return _SHOW_EACH(v, dim) if v.dtype.kind not in "USO" else v.astype(object)
    return show(v, dim)


_SHOW_EACH = np.frompyfunc(lambda v, dim: show(v, dim), 2, 1)


@functools.lru_cache(maxsize=None)
def _substitution(formula: str) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    """A formula as `substituted` writes it, made once per formula: its text (floor division as a
    reader writes it) with a slot for each name, and for each slot the name and when its value
    needs brackets: "any" for one that a reader could misread with a unit or a sign under a power
    or a sign of its own (1.50 ms^2 is not (1.50 ms)^2, -3^2 is not (-3)^2), "negative" for one
    after a minus, a division or a product, and "" for none."""
    tree = _floored(ast.parse(formula, mode="eval"))
    bracket: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            bracket[id(node.left)] = bracket[id(node.right)] = "any"
        elif isinstance(node, ast.UnaryOp):
            bracket[id(node.operand)] = "any"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div, ast.Mult)):
            bracket.setdefault(id(node.right), "negative")
    slots: list[tuple[str, str, str]] = []

    class Slot(ast.NodeTransformer):
        def visit_Name(self, node):
            slot = f"\x00{len(slots)}\x00"
            slots.append((slot, node.id, bracket.get(id(node), "")))
            return ast.Name(id=slot)
    return ast.unparse(Slot().visit(tree)), tuple(slots)


def _floored(tree: ast.AST) -> ast.AST:
    """`a // b` as a reader writes it: floor(a / b)."""
    class Floor(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if isinstance(node.op, ast.FloorDiv):
                return ast.Call(ast.Name("floor"), [ast.BinOp(node.left, ast.Div(), node.right)], [])
            return node
    return Floor().visit(tree)


@functools.lru_cache(maxsize=None)
def _readable(formula: str) -> str:
    """A formula (Python arithmetic over symbols) as a reader writes it: floor(a ÷ b) for a // b,
    then the operators as `_operators` writes them."""
    return _operators(ast.unparse(_floored(ast.parse(formula, mode="eval"))))


def _operators(text: str) -> str:
    """× ÷ and ^ for Python's * / and **, in text already unparsed (never parsed again: with values
    put in, it is no longer Python)."""
    return text.replace(" ** ", "^").replace(" * ", " × ").replace(" / ", " ÷ ")


def closed_form(quantity: str, dim: Dim, result: float, formula: str, sources: tuple[str, ...] = (),
                **symbols: Symbol) -> Derivation:
    return Derivation("closed form", quantity, _number(result), dim, formula, dict(symbols), sources=sources)


def each(words: Callable[..., str], *values):
    """`words(*values)`; over arrays (a derivation over a grid, Term.derives_arrays), an array of
    the words at each element."""
    if all(np.ndim(v) == 0 for v in values):
        return words(*(float(np.asarray(v)) for v in values))
    return np.frompyfunc(lambda *v: words(*v), len(values), 1)(*values)


def one_after_another(quantity: str, result: float, forms: list[Derivation], words: str = "pass") -> Derivation:
    """Closed forms of one dimension added up (passes run one after another) as one closed form. A
    symbol every form that names it gives the same value and words keeps its name; one that
    differs between them is numbered in each (t1, t2, ...), its words saying whose it is."""
    if len(forms) == 1:
        f = forms[0]
        return Derivation("closed form", quantity, float(result), f.dim, f.formula, f.symbols, sources=f.sources)
    differ = {name for name in {n for f in forms for n in f.symbols}
              if len({f.symbols[name] for f in forms if name in f.symbols}) > 1}
    symbols: dict[str, Symbol] = {}
    terms = []
    taken = {n for f in forms for n in f.symbols}
    for i, f in enumerate(forms, 1):
        # A numbered name that some form already uses (F and pass 16 would make F16) takes a mark.
        rename = {name: f"{name}{i}" if f"{name}{i}" not in taken else f"{name}_{i}" for name in f.symbols
                  if name in differ}

        class Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                return ast.Name(id=rename.get(node.id, node.id))
        terms.append(f"({ast.unparse(Rename().visit(ast.parse(f.formula, mode='eval')))})")
        for name, sym in f.symbols.items():
            new = rename.get(name, name)
            symbols[new] = Symbol(sym.value, sym.dim, f"{sym.words}, {words} {i}") if name in rename else sym
    sources = tuple(dict.fromkeys(src for f in forms for src in f.sources))
    return Derivation("closed form", quantity, float(result), forms[0].dim, " + ".join(terms), symbols, sources=sources)


def value(quantity: str, dim: Dim, result: float, *sources: str) -> Derivation:
    return Derivation("value", quantity, float(result), dim, sources=tuple(sources))


def from_catalogue(quantity: str, dim: Dim, result: float, entry: str, field_: str, source: str) -> Derivation:
    """A value the catalogue gives: `entry` (an accelerator's or model's key), its `field_` in
    models/catalogue.yaml, and the source the catalogue names for it."""
    return Derivation("value", quantity, float(result), dim,
                      method=f"models/catalogue.yaml: {entry}, {field_}", sources=(source,) if source else ())


def search(quantity: str, dim: Dim, result: float, method: str, *sources: str) -> Derivation:
    return Derivation("search", quantity, float(result), dim, method=method, sources=tuple(sources))


def simulation(quantity: str, dim: Dim, result: float, method: str, *sources: str) -> Derivation:
    return Derivation("simulation", quantity, float(result), dim, method=method, sources=tuple(sources))


def peak_words(acc, fmt) -> str:
    """What the peak that products with `fmt` weights run at is, on accelerator `acc`, in words:
    the FP8 peak only where both the weights and the card have FP8 (as Accelerator.peak reads it)."""
    own = "fp8" if fmt.arithmetic == "fp8" and acc.fp8_tflops else "bf16"
    why = "" if own == fmt.key else (" (its BF16 peak: the card has no FP8 units)" if fmt.arithmetic == "fp8"
                                     else " (its BF16 peak: the weights are unpacked to 16 bits)")
    return f"dense {own.upper()} peak of one card{why}"


# -- numbers in units a reader can check --------------------------------------------------------

_SCALES: dict[Dim, list[tuple[float, str]]] = {
    TIME: [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")],
    BYTES: [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "bytes")],
    BYTES / TIME: [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s")],
    FLOP / TIME: [(1e12, "TFLOP/s"), (1e9, "GFLOP/s")],
    FLOP: [(1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1.0, "FLOP")],
    RATIO / TIME: [(1.0, "per second")],
    FLOP / BYTES: [(1.0, "FLOP/byte")],
}
# Every unit `show` writes, and its factor in SI: a reader of a shown value (tests) parses by it.
SHOWN_UNITS: dict[str, float] = {**{unit: f for scales in _SCALES.values() for f, unit in scales}, "byte": 1.0}


def _digits(v: float) -> str:
    """Three significant figures, as a reader checks arithmetic: 12.0, 3.35, 989, 139,000; a
    whole number as one (2 bytes, 1 s, not 2.00 and 1.00)."""
    a = abs(v)
    if a == 0 or not math.isfinite(a):
        return f"{v:g}"
    if float(v).is_integer():
        return f"{v:,.0f}"
    if a >= 1000:
        return f"{v:,.0f}"
    decimals = max(0, 2 - int(math.floor(math.log10(a))))
    return f"{v:.{decimals}f}"


def show(v: float, dim: Dim | None) -> str:
    """`v` (SI) in the unit of its dimension that puts it between 1 and 1000, to three figures."""
    if dim is None:
        return f"{v}" if isinstance(v, str) else _digits(float(v))
    v = float(v)
    return _shown(v, dim) if v != 0.0 else _shown.__wrapped__(v, dim)  # -0.0 and 0.0 are one key


@functools.lru_cache(maxsize=1 << 16)
def _shown(v: float, dim: Dim) -> str:
    """`show` of a number: kept, as a page's derivations show the same values at state after state."""
    base = dim.uncounted
    if base in _SCALES:
        for factor, unit in _SCALES[base]:
            if abs(v) >= factor or factor == _SCALES[base][-1][0]:
                number = _digits(v / factor)
                return f"{number}\u00a0{'byte' if unit == 'bytes' and number == '1' else unit}"
    if base == RATIO:
        return f"{v:,.0f}" if v.is_integer() else _digits(v)
    return f"{_digits(v)}\u00a0({dim.name})"


# -- an inline number's derivation at one state -------------------------------------------------------

@dataclass(frozen=True)
class _Slot:
    """One symbol of an inline number's expression as its derivation writes it: a slider's value
    (`term` empty) or a term call's, with the call's arguments to evaluate and the call as written."""

    symbol: str                      # s0, t1, ...: its name in the formula
    name: str                        # the slider's or the term's name
    written: str = ""                # the call as the expression writes it (a part's name)
    args: tuple = ()                 # numbers.Expr each
    kwargs: tuple = ()               # (keyword, numbers.Expr) each


@dataclass(frozen=True)
class _Plan:
    """What an inline number's derivation is at every state: its expression with a symbol in place
    of each term call and slider, the symbols in order, and the expression itself. It depends on
    the text, the sliders and what the terms it names are, so it is made once for those (`_plan`),
    not once per state."""

    formula: str
    slots: tuple[_Slot, ...]
    whole: Any                       # numbers.Expr of the text
    calls: frozenset[str]            # every term the text calls, in arguments too
    slider: str | None = None        # the number is this slider's value


_PLANS: dict[tuple, _Plan] = {}


@functools.lru_cache(maxsize=None)
def _named(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every dotted name an expression calls or reads, and those it calls or reads an attribute
    of (its terms are among these), from one parse."""
    from .numbers import dotted
    named, called = set(), set()
    for node in ast.walk(ast.parse(text, mode="eval")):
        if isinstance(node, (ast.Call, ast.Attribute, ast.Name)) and (name := dotted(getattr(node, "func", node))):
            named.add(name)
            if not isinstance(node, ast.Name):
                called.add(name)
    return tuple(sorted(named)), tuple(sorted(called))


def _plan(text: str, returns: dict[str, Any], sliders: dict[str, Any]) -> _Plan:
    named, called = _named(text)
    key = (text, tuple(sliders), tuple((n, returns[n].dimension) for n in named if n in returns))
    if key in _PLANS:
        return _PLANS[key]
    from .numbers import Expr, dotted  # the evaluator an inline number is computed by

    def expr(node: ast.AST):
        return Expr(ast.Expression(node), (), frozenset())

    slots: list[_Slot] = []
    calls = {name for name in called if name in returns}

    class Put(ast.NodeTransformer):
        def visit_Call(self, node):
            name = dotted(node.func)
            if returns[name].dimension == "as its arguments":  # min, max, abs, round: shown as written
                node.args = [self.visit(a) for a in node.args]
                return node
            return self._term(node, name, tuple(expr(a) for a in node.args),
                              tuple((k.arg, expr(k.value)) for k in node.keywords))

        def visit_Constant(self, node):
            if isinstance(node.value, str) and len(node.value) > 40:  # a long phrase: its first words
                return ast.Constant(" ".join(node.value.split()[:5]) + " …")
            return node

        def visit_Attribute(self, node):
            return self._term(node, dotted(node), (), ())

        def visit_Name(self, node):
            if node.id in sliders:
                slots.append(_Slot(f"s{len(slots)}", node.id))
                return ast.Name(id=slots[-1].symbol)
            return node

        def _term(self, node, name, args, kwargs):
            slots.append(_Slot(f"t{len(slots)}", name, ast.unparse(node), args, kwargs))
            return ast.Name(id=slots[-1].symbol)

    tree = ast.parse(text, mode="eval")
    slider = tree.body.id if isinstance(tree.body, ast.Name) and tree.body.id in sliders else None
    whole = expr(copy.deepcopy(tree.body))  # before Put rewrites the tree
    formula = ast.unparse(Put().visit(tree))
    plan = _PLANS[key] = _Plan(formula, tuple(slots), whole, frozenset(calls), slider)
    return plan


def _number(x, scale: float = 1.0):
    """A value as a derivation holds it: a number in SI units (`scale` times it) or a phrase; over
    arrays (`explain` over the sliders' grid), an array of them."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        return str(arr) if arr.dtype.kind in "USb" else float(arr) * scale
    return arr.astype(str).astype(object) if arr.dtype.kind in "USb" else arr.astype(float) * scale


def explain(text: str, env: dict[str, Any], returns: dict[str, Any], derivers: dict[str, Callable | None],
            sliders: dict[str, Any], dim: Dim | None = None, scale: float = 1.0, remembered: bool = False,
            plan: _Plan | None = None) -> Derivation:
    """The derivation of an inline number's expression under `env` (its vocabulary bound to a
    scenario, and its sliders' values): the expression with each term call's value put in, then
    each term's own derivation (`derivers`, the terms' bound derive functions; None where a
    term declares none). `dim` and `scale`: the number's, as numbers.shape_of found them.
    Each distinct term call runs once: for its part, and again for the whole, from memory; with
    `remembered`, the env's terms already answer from memory (`remembering`), as `explain_over`'s do;
    `plan`, the expression's (`_plan`), made once for all the states it derives."""
    from .numbers import evaluate

    plan = plan or _plan(text, returns, sliders)
    if plan.slider is not None:  # the number is a slider's value
        s = sliders[plan.slider]
        return Derivation(
            "value", s.label, float(env[s.name]), NAMED.get(s.dimension), name=text,
            method=f"set by the slider {s.label!r}, which runs {s.min:g} to {s.max:g} in steps of {s.step:g}")
    if not remembered:
        env = {**env, **{k: remembering(env[k]) for k in plan.calls}}

    parts: list[Derivation] = []
    symbols: dict[str, Symbol] = {}
    for slot in plan.slots:
        if not slot.written:
            s = sliders[slot.name]
            symbols[slot.symbol] = Symbol(_number(env[slot.name]), NAMED.get(s.dimension, RATIO), s.label)
            continue
        name = slot.name
        args = [evaluate(a, env) for a in slot.args]
        kwargs = {k: evaluate(v, env) for k, v in slot.kwargs}
        result = env[name](*args, **kwargs)
        r = returns[name]
        tdim, unit = r.dim, r.scale
        if r.dimension == "as published" and r.of_arguments is not None:  # a figure read by its field
            said = r.of_arguments(*args, **kwargs)
            tdim, unit = said if said is not None else (None, 1.0)
        si = _number(result, unit if tdim is not None else 1.0)
        derive = derivers.get(name)
        d = derive(*args, **kwargs) if derive is not None else Derivation("not described", r.words, si, tdim)
        parts.append(Derivation(d.kind, d.quantity, d.result, d.dim, d.formula, d.symbols, d.method, d.sources,
                                d.parts, name=slot.written))
        symbols[slot.symbol] = Symbol(si, tdim, r.words)
    if len(parts) == 1 and plan.formula == plan.slots[0].symbol:  # the number is one term: its own derivation
        return parts[0]
    result = _number(evaluate(plan.whole, env), scale)
    return Derivation("combination", text, result, dim, plan.formula, symbols, parts=tuple(parts), name=text)


def explain_over(text: str, scenarios: list[tuple[dict[str, Any], dict[str, Callable | None], Any]], axes: list,
                 returns: dict[str, Any], sliders: dict[str, Any], dim: Dim | None = None, scale: float = 1.0,
                 scenario_dep: str = "scenario", arrays: frozenset[str] = frozenset()) -> dict:
    """What an inline number's card shows (`explain`, as `to_json(whole=False)` writes it) at
    every state, as `holes.Holes` writes many values: under each of `scenarios` (its env, its
    terms' bound derive functions, and the scenario's fields, or None where it has none), at
    every position of the sliders `axes`, in C order over (scenario, then each slider), as a
    number's texts are laid out; the scenario's axis is named `scenario_dep`. Scenarios that
    agree on every field the derivations read share them (resolved.Watched), as a number's
    texts do (numbers.compute_number). Where every term the number shows takes arrays in its
    derive function (`arrays`, as vocabulary.registry.Term.derives_arrays), a scenario's every
    slider position is made in one call, over the sliders' grid, as its texts are."""
    from ..sources.controls import slider_grid
    from .holes import Holes
    from .resolved import SharedByReads, reading

    grids = [s.values() for s in axes]
    block = math.prod(len(g) for g in grids)
    held = Holes([len(scenarios), *map(len, grids)], [scenario_dep, *(s.name for s in axes)])
    shared = SharedByReads()  # the first scenario's place, by what its derivations read
    plan = _plan(text, returns, sliders)
    over_grid = bool(axes) and plan.slider is None and all(not s.written or s.name in arrays for s in plan.slots)
    for i, (env, derivers, fields) in enumerate(scenarios):
        known = None if fields is None else shared.find(fields)
        if known is not None:
            held.copy(i * block, known * block, block)
            continue
        # Each term call answers from memory within the scenario (its reads are then noted once,
        # on the first call, inside this `reading`).
        scope = {**env, **{k: remembering(env[k]) for k in plan.calls}}
        remembered = {k: remembering(derivers[k]) if derivers.get(k) is not None else None for k in plan.calls}
        with reading() as read, np.errstate(all="ignore"):
            whole = None
            if over_grid:
                scope.update({s.name: grid for s, grid in zip(axes, slider_grid(axes))})
                try:
                    whole = explain(text, scope, returns, remembered, sliders, dim, scale, True, plan).to_json(whole=False)
                except FormsDiffer:  # a grid whose states take different forms: one state at a time
                    pass
            if whole is not None:
                held.put(i * block, whole, [len(g) for g in grids])
            else:
                for j, position in enumerate(itertools.product(*grids)):
                    for s, v in zip(axes, position):
                        scope[s.name] = v
                    d = explain(text, scope, returns, remembered, sliders, dim, scale, True, plan)
                    held.put(i * block + j, d.to_json(whole=False))
        if fields is not None:
            shared.keep(fields, read, i)
    return held.written()
