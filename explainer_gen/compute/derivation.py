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
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from models.units import BYTES, COUNT, FLOP, NAMED, RATIO, TIME, Dim

from .memo import remembering

KINDS = ("closed form", "value", "search", "simulation", "combination", "not described")


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
        return self.result if isinstance(self.result, str) else show(self.result, self.dim)

    def substituted(self) -> str:
        """The formula with each symbol replaced by its value, in units a reader can check."""
        text, slots = _substitution(self.formula)
        for slot, name, bracket in slots:
            s = self.symbols.get(name)
            if s is None:
                value = name
            else:
                value = s.value if isinstance(s.value, str) else show(s.value, s.dim)
                if (bracket == "any" and (" " in value or "\u00a0" in value or value.startswith("-"))) or \
                        (bracket == "negative" and value.startswith("-")):
                    value = f"({value})"
            text = text.replace(slot, value, 1)
        return _operators(text)

    def to_json(self) -> dict:
        """What a page shows of it, all text: the render layer writes it out, without the models."""
        symbols = [[k, s.words or (s.dim.name if s.dim else ""),
                    s.value if isinstance(s.value, str) else show(s.value, s.dim)] for k, s in self.symbols.items()]
        has_formula = self.kind in ("closed form", "combination") and bool(self.formula)
        return {"kind": self.kind, "quantity": self.quantity, "shown": self.shown, "name": self.name,
                "formula": _readable(self.formula) if has_formula and self.symbols else "",
                "substituted": self.substituted() if has_formula else "", "symbols": symbols,
                "method": self.method, "sources": list(self.sources), "parts": [p.to_json() for p in self.parts]}

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
    return Derivation("closed form", quantity, float(result), dim, formula, dict(symbols), sources=sources)


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

def explain(text: str, env: dict[str, Any], returns: dict[str, Any], derivers: dict[str, Callable | None],
            sliders: dict[str, Any], dim: Dim | None = None, scale: float = 1.0) -> Derivation:
    """The derivation of an inline number's expression under `env` (its vocabulary bound to a
    scenario, and its sliders' values): the expression with each term call's value put in, then
    each term's own derivation (`derivers`, the terms' bound derive functions; None where a
    term declares none). `dim` and `scale`: the number's, as numbers.shape_of found them."""
    from .numbers import dotted, evaluate, Expr  # the evaluator an inline number is computed by

    # Each distinct term call runs once here: for its part, and again for the whole, from memory.
    env = {k: remembering(v) if callable(v) and k in returns else v for k, v in env.items()}

    def ev(node: ast.AST):
        return evaluate(Expr(ast.Expression(node), (), frozenset()), env)

    parts: list[Derivation] = []
    symbols: dict[str, Symbol] = {}

    class Put(ast.NodeTransformer):
        def visit_Call(self, node):
            name = dotted(node.func)
            if returns[name].dimension == "as its arguments":  # min, max, abs, round: shown as written
                node.args = [self.visit(a) for a in node.args]
                return node
            return self._term(node, name, [ev(a) for a in node.args], {k.arg: ev(k.value) for k in node.keywords})

        def visit_Constant(self, node):
            if isinstance(node.value, str) and len(node.value) > 40:  # a long phrase: its first words
                return ast.Constant(" ".join(node.value.split()[:5]) + " …")
            return node

        def visit_Attribute(self, node):
            return self._term(node, dotted(node), [], {})

        def visit_Name(self, node):
            if node.id in sliders:
                s = f"s{len(symbols)}"
                symbols[s] = Symbol(float(env[node.id]), NAMED.get(sliders[node.id].dimension, RATIO),
                                    sliders[node.id].label)
                return ast.Name(id=s)
            return node

        def _term(self, node, name, args, kwargs):
            result = env[name](*args, **kwargs)
            r = returns[name]
            dim, unit = r.dim, r.scale
            if r.dimension == "as published" and r.of_arguments is not None:  # a figure read by its field
                said = r.of_arguments(*args, **kwargs)
                dim, unit = said if said is not None else (None, 1.0)
            arr = np.asarray(result)
            si = str(arr) if arr.dtype.kind in "USb" else float(arr) * (unit if dim is not None else 1.0)
            derive = derivers.get(name)
            if derive is not None:
                d = derive(*args, **kwargs)
            else:
                d = Derivation("not described", r.words, si, dim)
            parts.append(Derivation(d.kind, d.quantity, d.result, d.dim, d.formula, d.symbols, d.method, d.sources,
                                    d.parts, name=ast.unparse(node)))
            s = f"t{len(symbols)}"
            symbols[s] = Symbol(si, dim, r.words)
            return ast.Name(id=s)

    plain = ast.parse(text, mode="eval")
    if isinstance(plain.body, ast.Name) and plain.body.id in sliders:  # the number is a slider's value
        s = sliders[plain.body.id]
        return Derivation(
            "value", s.label, float(env[s.name]), NAMED.get(s.dimension), name=text,
            method=f"set by the slider {s.label!r}, which runs {s.min:g} to {s.max:g} in steps of {s.step:g}")
    tree = Put().visit(plain)
    formula = ast.unparse(tree)
    value_ = evaluate(Expr(ast.parse(text, mode="eval"), (), frozenset()), env)
    if len(parts) == 1 and formula == next(iter(symbols)):  # the number is one term: its own derivation
        return parts[0]
    arr = np.asarray(value_)
    result = str(arr) if arr.dtype.kind in "USb" else float(arr) * scale
    return Derivation("combination", text, result, dim, formula, symbols, parts=tuple(parts), name=text)
