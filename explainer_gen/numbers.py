"""Inline numbers: `{{ E(a, 4) | .1f }}` in Markdown becomes the model's value, formatted.

An expression may call the vocabulary and name the page's sliders; it is evaluated over
every slider position and scenario variant it depends on, so the page can update it in
place without a server. Format specs are Python's, optionally followed by a unit.
"""
from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from models.yamlsource import SourceError, closest

from . import timing
from .controls import Slider
from .scan import prose_matches

# `{{ expression }}` or `{{ expression | format }}`; never spans lines.
INLINE = re.compile(r"\{\{(?P<body>[^{}\n]*?)\}\}")

# Unit suffix -> factor applied to the SI value, and the text shown after the number.
UNITS: dict[str, tuple[float, str]] = {
    "s": (1.0, "\u00a0s"), "ms": (1e3, "\u00a0ms"), "us": (1e6, "\u00a0µs"), "µs": (1e6, "\u00a0µs"),
    "B": (1.0, "\u00a0bytes"), "KB": (1e-3, "\u00a0KB"), "MB": (1e-6, "\u00a0MB"), "GB": (1e-9, "\u00a0GB"),
    "TB": (1e-12, "\u00a0TB"), "KiB": (1 / 1024, "\u00a0KiB"), "GiB": (1 / 2**30, "\u00a0GiB"),
    "GB/s": (1e-9, "\u00a0GB/s"), "TB/s": (1e-12, "\u00a0TB/s"), "TFLOP/s": (1e-12, "\u00a0TFLOP/s"),
    "x": (1.0, "×"), "%": (100.0, "%"),
}
_ALLOWED = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.BinOp, ast.UnaryOp,
            ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.USub, ast.UAdd, ast.keyword)


@dataclass(frozen=True)
class Format:
    spec: str
    factor: float
    suffix: str

    def __call__(self, value: float) -> str:
        value = value * self.factor
        if self.spec.endswith(("d", "n")):  # integer formats: round first
            value = int(round(value))
        return format(value, self.spec) + self.suffix


def parse_format(text: str, path: str, line: int) -> Format:
    text = text.strip()
    spec, _, unit = text.partition(" ")
    unit = unit.strip()
    if spec in UNITS and not unit:  # just a unit: default precision
        spec, unit = "", spec
    if unit and unit not in UNITS:
        raise SourceError(path, line, f"unknown unit {unit!r} in format {text!r}; {closest(unit, list(UNITS))}")
    factor, suffix = UNITS.get(unit, (1.0, ""))
    spec = spec or ".3g"
    try:
        format(1 if spec.endswith(("d", "n")) else 1.5, spec)
    except (ValueError, TypeError) as exc:
        raise SourceError(path, line, f"invalid format spec {spec!r}: {exc}; "
                          f"use a Python format such as .1f, .0f, ,.0f or .2%, then an optional unit") from None
    return Format(spec, factor, suffix)


@dataclass(frozen=True)
class Inline:
    """One `{{ ... }}` occurrence in the source."""

    line: int
    start: int
    end: int
    expr: str
    fmt: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.expr, self.fmt)


def find_inline(lines: list[str], skip: set[int]) -> Iterator[Inline]:
    """Every inline number outside fenced blocks (`skip`, 0-based) and code spans."""
    for line, m in prose_matches(lines, skip, INLINE, "{{"):
        expr, _, fmt = m.group("body").partition("|")
        yield Inline(line, m.start(), m.end(), expr.strip(), fmt.strip())


@dataclass(frozen=True)
class Expr:
    tree: ast.Expression
    names: tuple[str, ...]   # slider names it depends on, in page order
    calls: frozenset[str]


def parse_expr(text: str, functions: set[str], sliders: dict[str, Slider], path: str, line: int) -> Expr:
    if not text:
        raise SourceError(path, line, "empty inline number {{ }}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SourceError(path, line, f"inline number {text!r} is not a valid expression: {exc.msg}") from None
    used, calls = set(), set()
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise SourceError(path, line, f"inline number {text!r}: {type(node).__name__} is not allowed; "
                              "use numbers, slider names, + - * / ** and calls")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in functions:
                name = getattr(node.func, "id", ast.unparse(node.func))
                raise SourceError(path, line, f"unknown function {name!r} in {{{{ {text} }}}}; "
                                  f"{closest(name, sorted(functions))}")
            calls.add(node.func.id)
        elif isinstance(node, ast.Name) and node.id not in functions:
            if node.id not in sliders:
                raise SourceError(path, line, f"unknown name {node.id!r} in {{{{ {text} }}}}; "
                                  f"{closest(node.id, list(sliders) + sorted(functions))}")
            used.add(node.id)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
            raise SourceError(path, line, f"inline number {text!r}: only numbers and strings may be literals")
    return Expr(tree, tuple(n for n in sliders if n in used), frozenset(calls))


def evaluate(expr: Expr, env: dict[str, Any]) -> Any:
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            ops: dict[type, Callable] = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                                         ast.Div: np.true_divide, ast.Pow: np.power, ast.FloorDiv: np.floor_divide}
            return ops[type(node.op)](left, right)
        if isinstance(node, ast.Call):
            fn = env[node.func.id]
            return fn(*[ev(a) for a in node.args], **{k.arg: ev(k.value) for k in node.keywords})
        raise AssertionError(node)
    with np.errstate(all="ignore"):
        return ev(expr.tree)


@dataclass
class NumberResult:
    """The formatted value at every position of the dimensions it depends on."""

    id: str
    deps: list[str]          # "scenario" and/or slider names, outermost first
    texts: list[str]         # flattened in C order over `deps`
    default: str

    def span(self) -> str:
        attrs = f' data-eg-num="{html.escape(self.id)}"' if self.deps else ""
        return f'<span class="eg-num"{attrs}>{html.escape(self.default)}</span>'


def compute_number(item: Inline, number_id: str, expr: Expr, fmt: Format, sliders: dict[str, Slider],
                   envs: list[dict[str, Any]], path: str, default_env: int = 0) -> NumberResult:
    """Evaluate over the sliders the expression names and every scenario env given.

    `envs` are in the browser's scenario order; `default_env` is the page's default among them.
    """
    axes = [sliders[n] for n in expr.names]
    shape = [s.count for s in axes]
    per_scenario = []
    for env in envs:
        scope = dict(env)
        for i, s in enumerate(axes):
            scope[s.name] = s.values().reshape([-1 if j == i else 1 for j in range(len(axes))])
        try:
            with timing.in_models():
                raw = evaluate(expr, scope)
            if isinstance(raw, str):  # a name from the scenario, such as the accelerator's
                per_scenario.append([raw] * int(np.prod(shape)))
                continue
            value = np.broadcast_to(np.asarray(raw, dtype=float), shape)
        except (TypeError, ValueError) as exc:
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} failed: {exc}") from None
        bad = ~np.isfinite(value)
        if bad.any():
            pos = np.unravel_index(int(np.argmax(bad)), shape) if shape else ()
            where = ", ".join(f"{s.name}={s.values()[p]:g}" for s, p in zip(axes, pos)) or "its only value"
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} is {value[pos]} at {where}"
                              f"{' under scenario ' + env['__scenario__'] if len(envs) > 1 else ''}")
        per_scenario.append([fmt(v) for v in value.ravel().tolist()])
    default_index = int(np.ravel_multi_index([s.index_of(s.default) for s in axes], shape)) if axes else 0
    default = per_scenario[default_env][default_index]
    varies_by_scenario = any(t != per_scenario[0] for t in per_scenario[1:])
    deps = (["scenario"] if varies_by_scenario else []) + list(expr.names)
    texts = [t for block in (per_scenario if varies_by_scenario else per_scenario[:1]) for t in block]
    if len(set(texts)) == 1:
        deps = []
    return NumberResult(number_id, deps, texts if deps else [default], default)
