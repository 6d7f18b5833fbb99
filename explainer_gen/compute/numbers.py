"""Inline numbers: `{{ E(a, 4) | .1f }}` in Markdown becomes the model's value, formatted.

An expression may call the vocabulary (explainer_gen/compute/vocabulary/), whose grouped terms read as
attributes (`chen.c`, `chen.speedup(0)`; `a.b` without a call is `a.b()`), and name the page's
sliders; it is evaluated over every slider position and scenario variant it depends on, so the
page can update it in place without a server. Format specs are Python's, optionally followed by
a unit or by a noun that agrees with the number (`{{ n | d request }}`: "1 request", "54 requests").

An expression may also choose between phrases, `{{ "twice" if r < 2.05 else "more than twice" }}`;
the choice is made at every position too, so the words change with the sliders.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from models.units import COUNT, NAMED, RATIO, UNITS, Dim, fits, units_for
from models.yamlsource import SourceError, closest

from .timing import Timing
from ..sources.controls import Slider, slider_grid
from .resolved import SharedByReads, reading
from ..sources.scan import prose_matches

# `{{ expression }}` or `{{ expression | format }}`; never spans lines.
# In a number's `deps`, the name that stands for the page's switch (its other names are sliders'); the
# loader receives it with the rest of the contract's facts (client/contract.facts).
SCENARIO_DEP = "scenario"
INLINE = re.compile(r"\{\{(?P<body>[^{}\n]*?)\}\}")
_OPEN = re.compile(r"\{\{")

_COMPARE: dict[type, Callable] = {ast.Eq: np.equal, ast.NotEq: np.not_equal, ast.Lt: np.less,
                                  ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal}
_ALLOWED = (ast.Expression, ast.Call, ast.Name, ast.Attribute, ast.Load, ast.Constant, ast.BinOp, ast.UnaryOp,
            ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.USub, ast.UAdd, ast.keyword,
            # choices: `"a" if x < 1 else "b"`, with comparisons joined by and, or, not
            ast.IfExp, ast.Compare, ast.BoolOp, ast.And, ast.Or, ast.Not, *_COMPARE)

# A noun after the format: lowercase words ("request", "draft step"), or both forms spelt out
# ("child/children", "KV head/KV heads"), which must begin with the same letter.
_WORDS = r"[a-z]+(?:-[a-z]+)*(?: [a-z]+(?:-[a-z]+)*)*"
_NOUN = re.compile(_WORDS)
_FORMS = re.compile(r"(?P<one>[A-Za-z][A-Za-z-]*(?: [A-Za-z-]+)*)/(?P<many>[A-Za-z][A-Za-z-]*(?: [A-Za-z-]+)*)")


def plural(noun: str) -> str:
    """English plural of a regular noun; in a phrase of several words, the last one changes."""
    head, _, last = noun.rpartition(" ")
    if last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def _edits(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions turning a into b."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def looks_like_unit(word: str) -> bool:
    """Whether a word is within a letter of a unit, within two letters of a longer unit with the
    same first letter, or a unit with a letter or two added ("mss", "msec", "gb", "tflops", "sec"):
    such a word is taken for a misspelt unit, not a noun."""
    w = word.lower()
    for unit in UNITS:
        u = unit.lower()
        d = _edits(w, u)
        if d <= 1 or (d == 2 and (len(u) >= 2 and w[:1] == u[:1] or w.startswith(u))):
            return True
    return False


@dataclass(frozen=True)
class Format:
    spec: str
    factor: float
    suffix: str
    one: str = ""    # a noun after the number: its singular, shown only when the number reads "1"
    many: str = ""   # and its plural, shown otherwise ("0 requests", "1.0 requests")
    given: bool = True  # whether the author wrote a format at all
    unbounded: str = ""  # the words shown for an infinite value (`| ,d or "never"`); none: inf is an error
    unit: str = ""   # the unit named, a key of models.units.UNITS

    def __call__(self, value: float) -> str:
        if self.unbounded and value == float("inf"):
            return self.unbounded
        value = value * self.factor
        if self.spec.endswith(("d", "n")):  # integer formats: round first
            value = int(round(value))
        number = format(value, self.spec)
        if self.one:
            return number + "\u00a0" + (self.one if number == "1" else self.many)
        return number + self.suffix


def _unit_hint(word: str) -> str:
    """The nearest units by spelling, ignoring case ('gb' -> 'GB'), then all of them."""
    near = sorted((d, unit) for unit in UNITS if (d := _edits(word.lower(), unit.lower())) <= 2)
    if not near:
        return closest(word, list(UNITS))
    return f"did you mean {' or '.join(repr(u) for _, u in near[:3])}? valid: {', '.join(UNITS)}"


def _noun_error(path: str, line: int, unit: str, text: str) -> SourceError:
    return SourceError(path, line, f"unknown unit {unit!r} in format {text!r}; {_unit_hint(unit)}. "
                       "If you meant a noun to count, write both forms, singular/plural, as in "
                       "'d set/sets' or 'd KV head/KV heads': a bare noun must be lowercase words, none "
                       "within a letter or two of a unit")


@dataclass(frozen=True)
class Marks:
    """What the Markdown says of a choice of words after its `|` (compute/assumptions.py):
    `assumes allreduce` (its words may change across that assumption's range, and the page shows
    where), or `at defaults` (it calls a simulation, so it was checked at the assumed values only)."""

    assumes: tuple[str, ...] = ()
    at_defaults: bool = False


NO_MARKS = Marks()
_ASSUMES = re.compile(r"assumes\s+(?P<keys>[a-z][a-z_-]*(?:\s*,\s*[a-z][a-z_-]*)*)\s*$")


def parse_marks(text: str, path: str, line: int, known: tuple[str, ...] | None) -> tuple[str, Marks]:
    """The format text with any mark taken off, and the marks; with `known` None (a page read
    without the assumptions, as some tests read one), any assumption's name is taken as given."""
    stripped = text.strip()
    if stripped == "at defaults":
        return "", Marks(at_defaults=True)
    if stripped.startswith("assumes"):
        found = _ASSUMES.fullmatch(stripped)
        if not found:
            raise SourceError(path, line, f"'| {stripped}': write '| assumes' and the assumptions' names, as in "
                              f"'| assumes allreduce'" + (f" (assumptions: {', '.join(known)})" if known else ""))
        keys = tuple(k.strip() for k in found["keys"].split(","))
        for k in keys:
            if known is not None and k not in known:
                raise SourceError(path, line, f"no assumption {k!r}; {closest(k, list(known))}")
        return "", Marks(assumes=keys)
    return text, NO_MARKS


def parse_format(text: str, path: str, line: int) -> Format:
    text = text.strip()
    if not text:
        return Format(".3g", 1.0, "", given=False)
    # `,d or "never"`: words for a value that grows without bound, such as a batch that never
    # turns compute-bound. Only +inf takes them; NaN and -inf stay errors.
    unbounded = ""
    tail = _UNBOUNDED.search(text)
    if tail:
        text, unbounded = text[:tail.start()].strip(), tail["words"]
        if not unbounded.strip():
            raise SourceError(path, line, f"the words after 'or' in format {text!r} are empty")
    spec, _, unit = text.partition(" ")
    unit = unit.strip()
    if spec in UNITS and not unit:  # just a unit: default precision
        spec, unit = "", spec
    one = many = ""
    if unit and unit not in UNITS:
        forms = _FORMS.fullmatch(unit)
        if forms and forms["one"][0].lower() == forms["many"][0].lower():
            one, many = forms["one"], forms["many"]
        elif _NOUN.fullmatch(unit) and not any(looks_like_unit(w) for w in [unit, *unit.split()]):
            one, many = unit, plural(unit)
        else:
            raise _noun_error(path, line, unit, text)
    if one and not spec:
        raise SourceError(path, line, f"the noun {one!r} in format {text!r} needs a number format before it, "
                          f"such as 'd {unit}' or ',d {unit}'")
    factor, suffix = (UNITS[unit].factor, UNITS[unit].suffix) if unit in UNITS else (1.0, "")
    spec = spec or ".3g"
    try:
        format(1 if spec.endswith(("d", "n")) else 1.5, spec)
    except (ValueError, TypeError) as exc:
        if not unit and (_NOUN.fullmatch(spec) or _FORMS.fullmatch(spec)):
            raise SourceError(path, line, f"format {text!r} is neither a format spec nor a unit; a noun needs "
                              f"a number format before it, such as 'd {spec}', and a unit is one of: "
                              f"{', '.join(UNITS)}") from None
        raise SourceError(path, line, f"invalid format spec {spec!r}: {exc}; "
                          f"use a Python format such as .1f, .0f, ,.0f or .2%, then an optional unit "
                          f"or noun") from None
    return Format(spec, factor, suffix, one, many, unbounded=unbounded, unit=unit if unit in UNITS else "")


_UNBOUNDED = re.compile(r'\s+or\s+"(?P<words>[^"]*)"\s*$')


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


def split_body(body: str) -> tuple[str, str]:
    """`expression | format` at the first bar outside quotes, so a phrase may hold a bar."""
    quote = None
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "|":
            return body[:i].strip(), body[i + 1:].strip()
    return body.strip(), ""


def find_inline(lines: list[str], skip: set[int], path: str = "") -> Iterator[Inline]:
    """Every inline number outside fenced blocks (`skip`, 0-based) and code spans. A `{{` left
    over once the line's numbers are taken out is one never closed on its line: it fails there
    (a page would otherwise show the raw braces)."""
    found: dict[int, list[re.Match]] = {}
    for line, m in prose_matches(lines, skip, INLINE, "{{"):
        found.setdefault(line, []).append(m)
    for line, m in prose_matches(lines, skip, _OPEN, "{{"):
        if not any(n.start() <= m.start() < n.end() for n in found.get(line, [])):
            raise SourceError(path, line, f"'{{{{' at column {m.start() + 1} is never closed on its line: "
                              "an inline number is {{ expression }} or {{ expression | format }} on one line")
    for line in sorted(found):
        for m in found[line]:
            expr, fmt = split_body(m.group("body"))
            yield Inline(line, m.start(), m.end(), expr, fmt)


@dataclass(frozen=True)
class Expr:
    tree: ast.Expression
    names: tuple[str, ...]   # slider names it depends on, in page order
    calls: frozenset[str]    # vocabulary terms it uses: called, or read as attributes ("chen.c")

    @property
    def chooses_words(self) -> bool:
        """Whether it picks between phrases by a condition (`"a" if ... else "b"`)."""
        return any(isinstance(n, ast.IfExp) and any(isinstance(b, ast.Constant) and isinstance(b.value, str)
                                                    for b in (n.body, n.orelse))
                   for n in ast.walk(self.tree))


def dotted(node: ast.AST) -> str | None:
    """`chen.c` for the attribute chain chen.c; None for anything else (such as `f(x).c`)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _unknown_term(name: str, text: str, functions: set[str], what: str) -> str:
    members = sorted(f for f in functions if f.startswith(name + "."))
    if members:  # chen('c') written for chen.c
        return (f"{name!r} in {{{{ {text} }}}} is a group of terms, not a function: write one of "
                f"{', '.join(members)} (as in {members[0]} or {members[0]}(...))")
    return f"unknown {what} {name!r} in {{{{ {text} }}}}; {closest(name, sorted(functions))}"


def parse_expr(text: str, functions: set[str], sliders: dict[str, Slider], path: str, line: int) -> Expr:
    if not text:
        raise SourceError(path, line, "empty inline number {{ }}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SourceError(path, line, f"inline number {text!r} is not a valid expression: {exc.msg}") from None
    used, calls = set(), set()
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # parts of a longer chain
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise SourceError(path, line, f"inline number {text!r}: {type(node).__name__} is not allowed; "
                              "use numbers, slider names, + - * / ** and calls, or choose a phrase with "
                              "\"a\" if condition else \"b\" (conditions compare with < <= > >= == != "
                              "and join with and, or, not)")
        if id(node) in inner:
            continue
        if isinstance(node, ast.Attribute):
            name = dotted(node)
            if name is None:
                raise SourceError(path, line, f"inline number {text!r}: only a vocabulary term may be written "
                                  f"with a dot ({ast.unparse(node)} is not one)")
            if name not in functions:
                raise SourceError(path, line, _unknown_term(name, text, functions, "name"))
            calls.add(name)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                continue  # the chain is checked as an Attribute
            if not isinstance(node.func, ast.Name) or node.func.id not in functions:
                name = getattr(node.func, "id", ast.unparse(node.func))
                raise SourceError(path, line, _unknown_term(name, text, functions, "function"))
            calls.add(node.func.id)
        elif isinstance(node, ast.Name) and node.id not in functions:
            if node.id not in sliders:
                raise SourceError(path, line, f"unknown name {node.id!r} in {{{{ {text} }}}}; "
                                  f"{closest(node.id, list(sliders) + sorted(functions))}")
            used.add(node.id)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
            raise SourceError(path, line, f"inline number {text!r}: only numbers and strings may be literals")
    return Expr(tree, tuple(n for n in sliders if n in used), frozenset(calls))


# A noun that is itself the SI unit of a dimension: "1 byte", "2 bytes" count bytes, not things.
_UNIT_NOUNS: dict[str, Dim] = {"byte": NAMED["bytes"], "bytes": NAMED["bytes"],
                               "second": NAMED["time"], "seconds": NAMED["time"]}


@dataclass(frozen=True)
class Shape:
    """What an inline number's expression gives, known before it runs: a number of a dimension
    (models/units.py) whose SI value is the number times `scale`, a phrase ("text"), a condition
    ("bool"), or a number whose dimension the vocabulary does not state ("unknown": a figure as a
    file publishes it). `literal`: a number written in the expression, which takes the dimension of
    what it is added to or compared with (`1 - a`, `step(1) > 0.01`) and is a ratio otherwise."""

    kind: str
    dim: Dim = RATIO
    scale: float = 1.0
    literal: bool = False

    @property
    def described(self) -> str:
        if self.kind != "number":
            return {"text": "a phrase", "bool": "a condition"}.get(self.kind, "a number of unstated dimension")
        return quantity_phrase(self.dim) + (f" (in units of {self.scale:g} SI)" if self.scale != 1.0 else "")


_UNKNOWN, _TEXT, _BOOL = Shape("unknown"), Shape("text"), Shape("bool")


def quantity_phrase(dim: Dim) -> str:
    """'a time', 'bytes', 'an intensity', 'seconds x bytes': a dimension as an error names it."""
    name = dim.name
    if name not in NAMED or name in ("bytes", "FLOP", "bytes per count"):
        return name
    return ("an " if name[0] in "aeiou" else "a ") + name


def shape_of(expr: Expr, returns: dict[str, Any], sliders: dict[str, Slider], text: str, path: str,
             line: int) -> Shape:
    """The expression's shape from its terms' declared returns (vocabulary/registry.Returns) and
    its sliders' dimensions, carried through its arithmetic: + - and comparisons need the same
    dimension and scale on both sides; * and / multiply them; ** takes a whole literal power of a
    dimensioned base. A mismatch fails at the number's line, naming both sides. Counts are
    dimensionless here, as in SI: tokens, requests and cards are all counts, and a count over a
    count (requests a card holds per request a token needs) cannot be told from a ratio, so +, -
    and comparisons, like units, look past the count power."""
    def fail(message: str) -> SourceError:
        return SourceError(path, line, f"inline number {{{{ {text} }}}}: {message}")

    def agree(a: Shape, b: Shape, node: ast.AST, doing: str) -> Shape:
        if a.kind != "number" or b.kind != "number":
            return a if a.kind == b.kind and a.kind != "number" else _UNKNOWN
        if a.literal or b.literal:
            return b if a.literal else a
        if a.dim.uncounted != b.dim.uncounted or not np.isclose(a.scale, b.scale, rtol=1e-9):
            raise fail(f"{doing} {a.described} and {b.described} in {ast.unparse(node)}; "
                       "both sides must be the same quantity in the same units")
        return a

    def published_shape(node: ast.AST, name: str, r: Any) -> Shape:
        """A figure read by its field: its shape where its term can say from the arguments written out
        (Returns.of_arguments; one not written out is `...`); unknown, and unchecked, otherwise."""
        def written(a: ast.AST) -> Any:
            try:
                return ast.literal_eval(a)
            except ValueError:
                return ...  # not written out: only the page's run knows it
        args = [written(a) for a in node.args] if isinstance(node, ast.Call) else []
        kwargs = {k.arg: written(k.value) for k in node.keywords} if isinstance(node, ast.Call) else {}
        try:
            said = r.of_arguments(*args, **kwargs) if r.of_arguments else None
        except Exception as exc:  # a term's own mistake, still named at the number's line
            raise fail(f"{ast.unparse(node)} cannot say what it returns: {exc}") from None
        return _UNKNOWN if said is None else Shape("number", said[0], float(said[1]))

    def go(node: ast.AST) -> Shape:
        if isinstance(node, ast.Expression):
            return go(node.body)
        if isinstance(node, ast.Constant):
            return _TEXT if isinstance(node.value, str) else Shape("number", literal=True)
        if isinstance(node, ast.Name):
            if node.id not in sliders:  # a term named without its call
                raise fail(f"{node.id} is a term: call it, as in {node.id}(...)")
            slider = sliders[node.id]
            if slider.dimension not in NAMED:
                raise fail(f"slider {node.id!r} declares no dimension; give it one, as in "
                           f"'dimension: count' ({', '.join(NAMED)})")
            return Shape("number", NAMED[slider.dimension])
        if isinstance(node, (ast.Attribute, ast.Call)):
            name = dotted(node.func if isinstance(node, ast.Call) else node)
            r = returns[name]
            if isinstance(node, ast.Call) and r.dimension != "as its arguments":
                for a in [*node.args, *(k.value for k in node.keywords)]:
                    go(a)  # a term's arguments are checked too, though they make no dimension of its result
            if r.dimension == "as its arguments":  # min, max, abs; round's second argument is its digits
                args = [go(a) for a in node.args] if isinstance(node, ast.Call) else []
                out = args[0] if args else _UNKNOWN
                for a in ([] if name == "round" else args[1:]):
                    out = agree(out, a, node, f"{name}() compares")
                return out
            if r.dimension == "as published":
                return published_shape(node, name, r)
            if r.dim is None:
                return _TEXT
            return Shape("number", r.dim, float(r.scale))
        if isinstance(node, ast.UnaryOp):
            return _BOOL if isinstance(node.op, ast.Not) else go(node.operand)
        if isinstance(node, ast.Compare):
            left = go(node.left)
            for right in node.comparators:
                left = agree(left, go(right), node, "compares")
            return _BOOL
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                go(v)
            return _BOOL
        if isinstance(node, ast.IfExp):
            go(node.test)  # the condition's comparisons are checked too
            body, orelse = go(node.body), go(node.orelse)
            if body.kind == "number" and orelse.kind == "number":
                return agree(body, orelse, node, "chooses between")
            return body if body.kind == orelse.kind else _UNKNOWN
        if isinstance(node, ast.BinOp):
            a, b = go(node.left), go(node.right)
            if isinstance(node.op, (ast.Add, ast.Sub)):
                return agree(a, b, node, "adds" if isinstance(node.op, ast.Add) else "subtracts")
            if a.kind != "number" or b.kind != "number":
                return _UNKNOWN
            if isinstance(node.op, ast.Mult):
                return Shape("number", a.dim * b.dim, a.scale * b.scale, a.literal and b.literal)
            if isinstance(node.op, (ast.Div, ast.FloorDiv)):
                return Shape("number", a.dim / b.dim, a.scale / b.scale, a.literal and b.literal)
            if isinstance(node.op, ast.Pow):
                if a.dim.uncounted == RATIO and b.dim.uncounted == RATIO and a.scale == 1.0:
                    return Shape("number", RATIO, 1.0, a.literal and b.literal)  # (1 - a) ** k
                try:
                    power = ast.literal_eval(node.right)  # 2, or -1
                except ValueError:
                    power = None
                if not (isinstance(power, (int, float)) and float(power).is_integer()):
                    raise fail(f"raises {a.described} to {ast.unparse(node.right)}; a quantity with a "
                               "dimension takes only a whole power written as a number")
                return Shape("number", a.dim ** int(power), a.scale ** int(power))
        return _UNKNOWN

    return go(expr.tree)


def fit_format(fmt: Format, shape: Shape, item: Inline, path: str) -> Format:
    """`fmt` checked against the number's shape, with its factor taking the number's scale in: a
    unit fits its dimension (counts aside: a time per token is shown in ms); a counted noun fits
    only a dimensionless number, a count or a ratio of counts ("byte/bytes" and "second/seconds",
    only bytes and a time); `%` and a percent
    spec fit a ratio; a time, bytes or a rate of either, which have units, must name one. A
    number whose dimension is not stated, or a phrase, is not checked here."""
    if shape.kind != "number":
        return fmt
    dim, what = shape.dim, shape.described

    def fail(message: str) -> SourceError:
        return SourceError(path, item.line, f"inline number {{{{ {item.expr} | {item.fmt} }}}} is {what}: {message}")

    def suggest() -> str:
        if dim.uncounted == RATIO:
            return ("a count takes a noun, as in 'd request', a ratio x or %, and either a spec alone, "
                    "such as .2f")
        if units_for(dim):
            return f"use one of {', '.join(units_for(dim))}"
        return f"no unit fits {dim.name}: give a spec alone, such as ',.0f', and say the unit in the prose"

    if fmt.unit:
        if not fits(dim, fmt.unit):
            raise fail(f"{fmt.unit!r} is {quantity_phrase(UNITS[fmt.unit].dim)}; {suggest()}")
        return replace(fmt, factor=fmt.factor * shape.scale)
    if fmt.one:
        wants = _UNIT_NOUNS.get(fmt.one, _UNIT_NOUNS.get(fmt.many, COUNT))
        if dim.uncounted != wants.uncounted or (wants != COUNT and shape.scale != 1.0):
            raise fail(f"{fmt.one!r} is read as a counted noun (it is not a unit), and a noun counts only "
                       f"{'a count' if wants == COUNT else quantity_phrase(wants)}; {suggest()}")
        return fmt
    if fmt.spec.endswith("%") and dim.uncounted != RATIO:
        raise fail(f"a percentage is of a ratio; {suggest()}")
    if units_for(dim) and dim.uncounted != RATIO:
        raise fail(f"it needs a unit: {suggest()}")
    return fmt


class ChoiceError(ValueError):
    """A choice whose outcomes are not all phrases or all numbers."""


def is_text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, np.ndarray) and value.dtype.kind in "US")


def evaluate(expr: Expr, env: dict[str, Any]) -> Any:
    """The expression's value under `env`. The caller sets numpy's error state (compute_number
    ignores floating-point warnings: a value that is not finite fails the number instead)."""
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.Attribute):  # a grouped term read as a value: chen.c is chen.c()
            return env[dotted(node)]()
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return np.logical_not(v)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Compare):  # a < b <= c: every link holds
            left, result = ev(node.left), True
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                result = np.logical_and(result, _COMPARE[type(op)](left, right))
                left = right
            return result
        if isinstance(node, ast.BoolOp):
            join = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            values = [ev(v) for v in node.values]
            result = values[0]
            for v in values[1:]:
                result = join(result, v)
            return result
        if isinstance(node, ast.IfExp):  # both outcomes are computed; the condition picks, everywhere
            test, body, orelse = ev(node.test), ev(node.body), ev(node.orelse)
            if is_text(body) != is_text(orelse):
                text, number = (node.body, node.orelse) if is_text(body) else (node.orelse, node.body)
                raise ChoiceError(f"one outcome is a phrase ({ast.unparse(text)}) and the other a number "
                                  f"({ast.unparse(number)}); make both phrases, or both numbers")
            if is_text(test):
                raise ChoiceError(f"the condition {ast.unparse(node.test)} is a phrase; compare it, "
                                  "as in name('target') == 'Llama 3 70B'")
            return np.where(test, body, orelse)
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            ops: dict[type, Callable] = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
                                         ast.Div: np.true_divide, ast.Pow: np.power, ast.FloorDiv: np.floor_divide}
            return ops[type(node.op)](left, right)
        if isinstance(node, ast.Call):
            fn = env[dotted(node.func)]
            return fn(*[ev(a) for a in node.args], **{k.arg: ev(k.value) for k in node.keywords})
        raise AssertionError(node)
    return ev(expr.tree)


def check_across(item: Inline, path: str, texts: list[list[str]], envs: list[dict[str, Any]], axes: list[Slider],
                 under: Callable[[dict[str, Any], int | None], list[str]], default_env: int, default_index: int,
                 marks: Marks, across: Across) -> list[list[str]]:
    """A choice of words evaluated at `assumptions.POINTS` of every assumption's range: at every
    slider position under the page's default scenario, and at the sliders' defaults under every
    other scenario (each a full evaluation costs a simulation-free model run; the whole product
    of scenarios and positions would cost the page's numbers many times over). Words that change
    fail the build at the choice's line unless the Markdown marks the choice `| assumes <that
    assumption>`; then the texts gain, where they change, the note of where in the range
    (`assumptions.flip_note`, found by bisection between the points whose words differ).
    `under(env, i)` evaluates under one env, at every position (None) or at position `i` only.
    Returns the texts the page shows."""
    if across.simulated:
        if not marks.at_defaults:
            raise SourceError(path, item.line, f"inline choice {{{{ {item.expr} }}}} calls a simulation "
                              f"({', '.join(across.simulated)}), which is not rerun across the assumed constants' "
                              "ranges: mark it '| at defaults', and say on the page that its words were checked at "
                              "the assumed values only")
        return texts
    if marks.at_defaults:
        raise SourceError(path, item.line, f"'| at defaults' is for a choice that calls a simulation; "
                          f"{{{{ {item.expr} }}}} calls none, so it is checked across every range: drop the mark")
    rules, shown = across.rules, [list(block) for block in texts]
    accelerators = [env["__fields__"].accelerator if env.get("__fields__") is not None else None for env in envs]

    def one(a, t: float, s: int, i: int | None = None) -> dict[tuple[int, int], str]:
        """The words under scenario `s` with `a` at `t`: at position `i`, or where the check looks
        (every position for the default scenario, the default position for the others)."""
        varied, context = across.at(a, t, s)
        with context:
            if i is None and s == default_env:
                return {(s, j): w for j, w in enumerate(under(varied, None))}
            i = default_index if i is None else i
            return {(s, i): under(varied, i)[0]}

    for a in rules.ASSUMPTIONS.values():
        runs = {t: {k: w for s in range(len(envs)) for k, w in one(a, t, s).items()} for t in rules.POINTS}
        changed = [k for k in runs[rules.POINTS[0]] if len({runs[t][k] for t in rules.POINTS}) > 1]
        if not changed:
            # A mark where the words hold across the range here is kept, and says nothing: the
            # words may change in another setting (another default scenario, say) or at positions
            # the check does not evaluate.
            continue
        if a.key not in marks.assumes:
            s, i = changed[0]
            first = rules.POINTS[0]
            other = next(t for t in rules.POINTS if runs[t][s, i] != runs[first][s, i])
            show = lambda t: a.show(a.value(across.catalogue, accelerators[s], t))  # noqa: E731
            raise SourceError(path, item.line, f"inline choice {{{{ {item.expr} }}}} changes its words across the "
                              f"{a.range_text(across.catalogue, accelerators[s])} assumed for {a.what} ({a.declared})"
                              f"{_position(axes, i, envs[s], len(envs))}: {runs[first][s, i]!r} at {show(first)}, "
                              f"{runs[other][s, i]!r} at {show(other)}. Reword it to hold across the range, or mark "
                              f"it '| assumes {a.key}' so that the page shows the reader where it changes")
        for s, i in changed:
            flips = []
            for lo, hi in zip(rules.POINTS, rules.POINTS[1:]):
                start = runs[lo][s, i]
                if start == runs[hi][s, i]:
                    continue
                for _ in range(rules.BISECTIONS):
                    mid = (lo + hi) / 2.0
                    lo, hi = (mid, hi) if one(a, mid, s, i)[s, i] == start else (lo, mid)
                flips.append((lo + hi) / 2.0)
            shown[s][i] += rules.flip_note(a, across.catalogue, accelerators[s], flips)
    return shown


def _position(axes: list[Slider], index: int, env: dict[str, Any], n_envs: int) -> str:
    """' (at batch=8 under scenario ...)': where a number was evaluated, for an error."""
    shape = [s.count for s in axes]
    at = np.unravel_index(index, shape) if shape else ()
    parts = [f"{s.name}={s.values()[p]:g}" for s, p in zip(axes, at)]
    if n_envs > 1 and "__scenario__" in env:
        parts.append(f"under scenario {env['__scenario__']}")
    return f" (at {', '.join(parts)})" if parts else ""


class _Scope(dict):
    """An env with the sliders' values set over it, made without copying the env: a number is
    evaluated tens of thousands of times in a build, and an env may bind its terms only as they
    are asked for (pages.varied_env). A name not set here is looked up in the env."""

    def __init__(self, env: dict[str, Any]):
        super().__init__()
        self.env = env

    def __missing__(self, name: str) -> Any:
        return self.env[name]


@dataclass
class NumberResult:
    """The formatted value at every position of the dimensions it depends on."""

    id: str
    deps: list[str]          # SCENARIO_DEP and/or slider names, outermost first
    texts: list[str]         # flattened in C order over `deps`
    default: str
    # How the default state's value is made (compute/derivation.py, Derivation.to_json); None for
    # a phrase, which the page shows rather than derives.
    how: dict | None = None
    # What its card shows at every state (derivation.explain_over, as holes.Holes writes it): the
    # heavy part, None once read back light (site/store.Store.number keeps it apart, by `key`).
    cards: dict | None = None
    key: str = ""            # its cache key, where a store computed it
    has_cards: bool = False  # whether it has `cards`, read back light or not

    HEAVY = ("cards",)

    def light_json(self) -> dict:
        """Itself without its heavy part, as a build reads it back."""
        return {k: v for k, v in vars(self).items() if k not in self.HEAVY}


@dataclass(frozen=True)
class Across:
    """How to evaluate a number with an assumed constant moved across its range: `rules` is
    `compute.assumptions` (its ASSUMPTIONS, POINTS, BISECTIONS and flip_note), handed in by the
    build so that only choices of words, whose cache keys hold that module, depend on it;
    `at(assumption, t, s)` gives the env of the number's `s`-th scenario with the assumption `t` of the
    way across its range, and a context to evaluate it in; `simulated` names the simulations the
    number calls, if any."""

    rules: Any
    at: Callable[[Any, float, int], tuple[dict[str, Any], Any]]
    catalogue: Any
    simulated: tuple[str, ...] = ()


@np.errstate(all="ignore")
def compute_number(item: Inline, number_id: str, expr: Expr, fmt: Format, sliders: dict[str, Slider],
                   envs: list[dict[str, Any]], path: str, default_env: int = 0,
                   timing: Timing | None = None, marks: Marks = NO_MARKS,
                   across: Across | None = None) -> NumberResult:
    """Evaluate over the sliders the expression names and every scenario env given.

    `envs` are in the browser's scenario order; `default_env` is the page's default among them.
    Floating-point warnings are off throughout (set once, not per scenario): a value that is not
    finite fails the number with its position instead. With `across`, a choice of words is also
    evaluated across every assumption's range and checked against its `marks` (`check_across`).
    """
    timing = timing or Timing()
    axes = [sliders[n] for n in expr.names]
    shape = [s.count for s in axes]
    def texts_under(env: dict[str, Any], only: int | None = None) -> list[str]:
        """The number's texts over its sliders under one scenario's env (or its one text at the
        `only`-th position, in C order over the sliders)."""
        scope = _Scope(env)
        if only is not None:
            at = np.unravel_index(only, [s.count for s in axes]) if axes else ()
            scope.update({s.name: s.values()[at[i]] for i, s in enumerate(axes)})
        else:
            scope.update({s.name: grid for s, grid in zip(axes, slider_grid(axes))})
        shape = [] if only is not None else [s.count for s in axes]
        try:
            with timing.in_models():
                raw = evaluate(expr, scope)
        except ChoiceError as exc:
            raise SourceError(path, item.line, f"inline choice {{{{ {item.expr} }}}}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} failed: {exc}") from None
        if is_text(raw):  # a phrase, or a name from the scenario such as the accelerator's
            if fmt.given:
                raise SourceError(path, item.line, f"inline phrase {{{{ {item.expr} | {item.fmt} }}}} is text, "
                                  f"so it takes no format; drop '| {item.fmt}'")
            return [str(t) for t in np.broadcast_to(np.asarray(raw), shape).ravel().tolist()]
        if np.asarray(raw).dtype == bool:
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} is a condition, true or "
                              "false; to show words by it, write \"a\" if condition else \"b\"")
        try:
            value = np.broadcast_to(np.asarray(raw, dtype=float), shape)
        except (TypeError, ValueError) as exc:
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} failed: {exc}") from None
        bad = ~np.isfinite(value) & ~(bool(fmt.unbounded) & (value == np.inf))
        if bad.any():
            pos = np.unravel_index(int(np.argmax(bad)), shape) if shape else ()
            where = ", ".join(f"{s.name}={s.values()[p]:g}" for s, p in zip(axes, pos)) or "its only value"
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} is {value[pos]} at {where}"
                              f"{' under scenario ' + env['__scenario__'] if len(envs) > 1 else ''}")
        return [fmt(v) for v in value.ravel().tolist()]

    def texts_over(envs: list[dict[str, Any]]) -> list[list[str]]:
        """The texts under each env. Scenarios that agree on every field the evaluation read share
        its texts (resolved.Watched); an env without `__fields__` (no scenario, or one not watched)
        is always evaluated."""
        shared = SharedByReads()
        out = []
        for env in envs:
            fields = env.get("__fields__")
            if fields is None:
                out.append(texts_under(env))
                continue
            known = shared.find(fields)
            if known is None:
                with reading() as read:
                    known = texts_under(env)
                shared.keep(fields, read, known)
            out.append(known)
        return out

    per_scenario = texts_over(envs)
    default_index = int(np.ravel_multi_index([s.index_of(s.default) for s in axes], shape)) if axes else 0
    if across is not None and expr.chooses_words and expr.calls:
        per_scenario = check_across(item, path, per_scenario, envs, axes, texts_under, default_env, default_index,
                                    marks, across)
    elif marks != NO_MARKS and not (expr.chooses_words and expr.calls):
        raise SourceError(path, item.line, f"'| {item.fmt.strip()}' marks a choice of words that calls the models; "
                          f"{{{{ {item.expr} }}}} is not one")
    default = per_scenario[default_env][default_index]
    varies_by_scenario = any(t != per_scenario[0] for t in per_scenario[1:])
    deps = ([SCENARIO_DEP] if varies_by_scenario else []) + list(expr.names)
    texts = [t for block in (per_scenario if varies_by_scenario else per_scenario[:1]) for t in block]
    if len(set(texts)) == 1:
        deps = []
    return NumberResult(number_id, deps, texts if deps else [default], default)
