"""Terms, the functions an inline number may call, each declared with what it reads.

A term is a function defined in one of this package's topic modules and registered there with
`@topic.term(depends=...)`. `depends` is required, and it names everything the function is handed
besides the arguments written in the expression; nothing else reaches it:

- `"scenario"`: the page's resolved scenario (accelerator, cards, target, draft), passed as the
  first parameter, which must be called `scenario`. A number calling such a term is computed once
  for every choice the page's scenario switch offers.
- `"catalogue"`: the site's whole catalogue (any accelerator or model, by key), passed as a
  parameter called `catalogue`. It is the same under every scenario.
- `()`: nothing; the value follows from the arguments alone.

The declaration is checked against the function when it is registered, that is when the
vocabulary is imported, so a wrong one fails the build before any page is read: the leading
parameters must be exactly the declared ones, no other parameter may be called `scenario` or
`catalogue`, and the function may not be a closure or be defined inside another function (the
way the old vocabulary's `lambda: acc.ridge` read the scenario it was built in). The only way for
a term to read the scenario is therefore to declare it. A number that calls only scenario-free
terms is evaluated once, in the vocabulary bound without a scenario (`Registry.bind(None, ...)`),
where any term that declares the scenario refuses to run.

Every term also declares what it returns (`returns=`, a `Returns`): its quantity in words and
its dimension by name (models/units.py: "time", "bytes", "count", "ratio", "rate", ...), with
the scale of its value when that is not SI ("time" at 1e-6 for microseconds). An inline number's
dimension follows from its terms' and sliders' through its arithmetic, and its format must fit it
(compute/numbers.py). Three returns are not a dimension: `TEXT` (a name or a phrase), `AS_ARGUMENTS`
(min, max, abs, round: the dimension of what they are given) and `AS_PUBLISHED` (a figure read
from a file, or a setting, whose dimension follows the field an argument names: `published`,
`fitted`, `measured_value`). A call to one is checked where its arguments say what it returns
(`Returns.of_arguments`, by default the term's derivation at those arguments), and not otherwise.

A term defined inside a class is named by its qualified name, `chen.c` for `c` in `class chen`:
the class is only a namespace, never instantiated, and the expression writes `chen.c` or
`chen.speedup(0)` (see numbers.py: `a.b` without a call is `a.b()`).
"""
from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from models.units import NAMED, Dim
from models.yamlsource import SourceError, closest

SCENARIO = "scenario"
CATALOGUE = "catalogue"
DEPENDENCIES = (SCENARIO, CATALOGUE)  # in the order a term's leading parameters take them

_REPO = Path(__file__).resolve().parents[3]


class TermError(SourceError):
    """A term whose declaration does not match its function, at the function's file and line."""


def _where(fn: Callable) -> tuple[str, int]:
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"<{getattr(fn, '__name__', fn)!s}>", 1
    path = Path(code.co_filename)
    try:
        path = path.resolve().relative_to(_REPO)
    except ValueError:
        pass
    return path.as_posix(), code.co_firstlineno


TEXT, AS_ARGUMENTS, AS_PUBLISHED = "text", "as its arguments", "as published"
_KINDS = (TEXT, AS_ARGUMENTS, AS_PUBLISHED)


@dataclass(frozen=True)
class Returns:
    """What a term returns: `words` (the quantity: "time of one decode pass, at its floor"), the
    `dimension` by name (a key of models.units.NAMED, or TEXT, AS_ARGUMENTS or AS_PUBLISHED),
    and `scale`, the SI value of one unit of the number returned (1e-6 for microseconds)."""

    dimension: str
    words: str
    scale: float = 1.0
    # For AS_PUBLISHED: what a call with these arguments returns, (dimension, scale), or None where
    # it cannot tell (an argument the page computes is `...`); for a term that declares none and
    # reads no scenario, the registry asks the term's derivation.
    of_arguments: Callable[..., tuple[Dim, float] | None] | None = field(default=None, compare=False)

    @property
    def dim(self) -> Dim | None:
        """The dimension, or None for the three kinds that are not one."""
        return NAMED.get(self.dimension)


@dataclass(frozen=True)
class Term:
    name: str                  # as written in an expression: "step", "chen.c"
    fn: Callable
    depends: tuple[str, ...]   # a subsequence of DEPENDENCIES
    topic: str                 # the module that defines it
    returns: Returns
    # Whether it runs a simulation: a choice of words calling it is not rerun across the assumed
    # constants' ranges (compute/assumptions.py), which would rerun the simulation at every point.
    simulated: bool = False
    # How its value is made (compute/derivation.py): a function taking what `fn` takes and
    # returning a Derivation; None where the term declares none yet.
    derive: Callable | None = None
    # Whether `derive` also takes arrays (arguments that broadcast, as the term itself does) and
    # then gives one Derivation whose values, words and result are arrays over them: a number's
    # card at every slider position is then made in one call (derivation.explain_over).
    derives_arrays: bool = False

    @property
    def scenario_free(self) -> bool:
        return SCENARIO not in self.depends

    def bind(self, scenario: Any, catalogue: Any, fn: Callable | None = None) -> Callable:
        """The function an expression calls: `fn` with what it declared filled in. Without a
        scenario (None), a term that declares one is a function that refuses to run. With `fn`
        (its `derive`), that function, bound the same way."""
        fn = fn or self.fn
        if not self.depends:
            return fn
        if SCENARIO in self.depends and scenario is None:
            return functools.partial(_refuse, self.name)
        given = {SCENARIO: scenario, CATALOGUE: catalogue}
        return functools.partial(fn, *(given[d] for d in self.depends))


def _refuse(name: str, *args, **kwargs):
    raise ValueError(f"{name}() reads the scenario, but this number was evaluated without one; "
                     f"the vocabulary's declarations disagree with the page (explainer_gen/compute/vocabulary)")


def check(term: Term) -> None:
    """Fail, at the function's file and line, if the declaration cannot be what the function reads."""
    fn, name = term.fn, term.name
    path, line = _where(fn)
    r = term.returns
    if not isinstance(r, Returns):
        raise TermError(path, line, f"term {name!r}: returns={r!r}; declare returns=Returns(dimension, words)")
    if r.dimension not in NAMED and r.dimension not in _KINDS:
        raise TermError(path, line, f"term {name!r} returns an unknown dimension {r.dimension!r}; "
                        f"{closest(r.dimension, [*NAMED, *_KINDS])}")
    if not (isinstance(r.words, str) and r.words.strip()):
        raise TermError(path, line, f"term {name!r}: say in words what it returns (Returns(..., words))")
    if term.derives_arrays and term.derive is None:
        raise TermError(path, line, f"term {name!r}: derives_arrays=True says its derive function takes arrays, "
                        "but it declares none (derive=)")
    if term.derive is not None and isinstance(fn, types.FunctionType):
        want = [p.name for p in inspect.signature(fn).parameters.values()]
        got = [p.name for p in inspect.signature(term.derive).parameters.values()]
        if want != got:
            raise TermError(path, line, f"term {name!r}: its derive function takes ({', '.join(got)}); it must "
                            f"take what the term takes, ({', '.join(want)})")
    if not (isinstance(r.scale, (int, float)) and r.scale > 0) or (r.scale != 1.0 and r.dim is None):
        raise TermError(path, line, f"term {name!r}: scale {r.scale!r} must be a positive number, "
                        f"and 1 for {r.dimension!r}")
    unknown = [d for d in term.depends if d not in DEPENDENCIES]
    if unknown or list(term.depends) != [d for d in DEPENDENCIES if d in term.depends]:
        raise TermError(path, line, f"term {name!r}: depends={term.depends!r}; each dependency is one of "
                        f"{', '.join(map(repr, DEPENDENCIES))}, listed once and in that order")
    if isinstance(fn, (np.ufunc, types.BuiltinFunctionType)):
        if term.depends:
            raise TermError(path, line, f"term {name!r}: a numpy or builtin function cannot take "
                            f"{' or '.join(term.depends)}; declare depends=()")
        return
    if not isinstance(fn, types.FunctionType):
        raise TermError(path, line, f"term {name!r} must be a plain function, a numpy ufunc or a builtin, "
                        f"not {type(fn).__name__}: a bound or partial object may carry a scenario unseen")
    params = list(inspect.signature(fn).parameters.values())
    leading = [p.name for p in params[:len(term.depends)]]
    if leading != list(term.depends) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                            for p in params[:len(term.depends)]):
        raise TermError(path, line, f"term {name!r} declares depends={term.depends!r}, so its first "
                        f"parameters must be {', '.join(term.depends)}; it takes ({', '.join(p.name for p in params)})")
    taken = [p.name for p in params[len(term.depends):] if p.name in DEPENDENCIES]
    if taken:
        missing = ", ".join(repr(t) for t in taken)
        raise TermError(path, line, f"term {name!r} takes a parameter {missing} but does not declare it: "
                        f"declare depends={tuple(d for d in DEPENDENCIES if d in (*term.depends, *taken))!r} "
                        f"and take it first, or rename the parameter")
    if fn.__code__.co_freevars or "<locals>" in fn.__qualname__:
        held = ", ".join(fn.__code__.co_freevars) or "the variables of the function around it"
        raise TermError(path, line, f"term {name!r} ({fn.__qualname__}) is defined inside a function and may "
                        f"read {held} unseen; define it at module level (or in a namespace class) and "
                        f"declare what it reads with depends=")


class Topic:
    """The terms one module defines."""

    def __init__(self, name: str):
        self.name = name
        self.terms: dict[str, Term] = {}

    def term(self, name: str | None = None, *, depends: Iterable[str], returns: Returns,
             simulated: bool = False, derive: Callable | None = None,
             derives_arrays: bool = False) -> Callable[[Callable], Callable]:
        """Register the decorated function as a term, under `name` or its qualified name.

        `depends` and `returns` have no default: every term says what it reads and what it gives
        (see the module's docstring); `simulated`, that it runs a simulation (see `Term`)."""
        if callable(name):
            raise TypeError("write @topic.term(depends=...) or @topic.term('name', depends=...): "
                            "every term declares what it reads")

        def register(fn: Callable) -> Callable:
            self.add(name or fn.__qualname__.rpartition("<locals>.")[2], fn, depends=depends, returns=returns,
                     simulated=simulated, derive=derive, derives_arrays=derives_arrays)
            return fn
        return register

    def add(self, name: str, fn: Callable, *, depends: Iterable[str], returns: Returns,
            simulated: bool = False, derive: Callable | None = None, derives_arrays: bool = False) -> None:
        if isinstance(depends, str):  # depends="scenario": a string is not a tuple of names
            depends = (depends,)
        term = Term(name, fn, tuple(depends), self.name, returns, simulated, derive, derives_arrays)
        check(term)
        if name in self.terms:
            path, line = _where(fn)
            raise TermError(path, line, f"term {name!r} is defined twice in {self.name}")
        self.terms[name] = term


class Registry:
    """The names an expression may call: every topic's terms, each name defined once."""

    def __init__(self, *topics: Topic):
        self.terms: dict[str, Term] = {}
        for topic in topics:
            for name, term in topic.terms.items():
                if name in self.terms:
                    path, line = _where(term.fn)
                    raise TermError(path, line, f"term {name!r} of {topic.name} is already defined by "
                                    f"{self.terms[name].topic}")
                self.terms[name] = term

    def bind(self, scenario: Any, catalogue: Any) -> dict[str, Callable]:
        """Name -> function for inline numbers under `scenario` (None: scenario-free terms only run)."""
        return {name: term.bind(scenario, catalogue) for name, term in self.terms.items()}

    def derivers(self, scenario: Any, catalogue: Any) -> dict[str, Callable | None]:
        """Name -> the term's derive function bound like `bind`'s, or None where it has none."""
        return {name: term.bind(scenario, catalogue, term.derive) if term.derive else None
                for name, term in self.terms.items()}

    def derive_arrays(self) -> frozenset[str]:
        """The terms whose derive function also takes arrays (`Term.derives_arrays`)."""
        return frozenset(name for name, term in self.terms.items() if term.derives_arrays)

    def returns(self) -> dict[str, Returns]:
        """Name -> what the term returns, for every term. A term whose dimension follows the field
        its arguments name (AS_PUBLISHED) answers it for given arguments from its derivation, which
        says what the figure is (its dimension, and its value in SI units beside the term's)."""
        return {name: replace(term.returns, of_arguments=functools.partial(_published_shape, term))
                if term.returns.dimension == AS_PUBLISHED and term.returns.of_arguments is None
                and term.derive is not None and not term.depends
                else term.returns for name, term in self.terms.items()}

    def simulated(self, names: Iterable[str]) -> list[str]:
        """Those of `names` that run a simulation."""
        return sorted(n for n in names if self.terms[n].simulated)

    def scenario_free(self, names: Iterable[str]) -> bool:
        """Whether an expression calling `names` reads no scenario: none of them declares one."""
        return all(self.terms[n].scenario_free for n in names)


@functools.lru_cache(maxsize=None)
def _published_shape(term: Term, *args, **kwargs) -> tuple[Dim, float] | None:
    """A scenario-free AS_PUBLISHED term's (dimension, scale) at these arguments: its derivation's
    dimension, with the term's value in SI units as the derivation's is (scale 1; a term that
    returns another unit declares its own `of_arguments`). None: an argument is not written out
    (`...`), the derivation names no dimension, or the term's value is not its derivation's. Kept
    per term and arguments: a derivation may run a simulation."""
    if any(a is ... for a in (*args, *kwargs.values())):
        return None
    try:
        d = term.derive(*args, **kwargs)
        value = float(term.fn(*args, **kwargs))
    except (ValueError, KeyError, TypeError):
        return None  # the number's own evaluation reports the mistake, at its line
    if d.dim is None or not isinstance(d.result, float) or not np.isclose(d.result, value, rtol=1e-9, atol=0.0):
        return None
    return d.dim, 1.0
