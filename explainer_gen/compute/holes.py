"""Many JSON values over a grid of states, written as a few templates and the holes in them.

A number's card (compute/derivation.explain_over) is a JSON object of strings at every state of
the page: tens of thousands of states on some pages, nearly all alike. Here they become:

- `templates`: each distinct structure of them (the same keys, the same list lengths), with every
  string that is the same at every state of that structure written in, and every other string
  replaced by a mark, HOLE_OPEN + its hole's number + HOLE_CLOSE;
- `which`: the template of each state;
- `holes`: each hole's strings.

`which` and each hole are laid out as a page's inline numbers are (client/contract.py): a list of
texts in C order over the axes (`deps`) along which it changes, the others dropped. A hole that
is the step time changes along the scenario and the batch slider, not the acceptance rate.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

HOLE_OPEN, HOLE_CLOSE = "\ue000", "\ue001"  # private-use characters: no text a page writes holds them


def hole_mark(n: int) -> str:
    return f"{HOLE_OPEN}{n}{HOLE_CLOSE}"


def _shape_of(value: Any) -> Any:
    """The structure of a JSON value with its strings left out: what two states share to share a template."""
    if isinstance(value, dict):
        return tuple((k, _shape_of(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("[", *(_shape_of(v) for v in value))
    return None if isinstance(value, (str, np.ndarray)) else value


def _strings(value: Any, out: list) -> list:
    """Its strings (or arrays of strings) in a fixed order."""
    if isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    elif isinstance(value, (str, np.ndarray)):
        out.append(value)
    return out


def _filled(value: Any, strings: Any) -> Any:
    """`value` with its strings replaced, in `_strings`' order, by those `strings` gives."""
    if isinstance(value, dict):
        return {k: _filled(v, strings) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, strings) for v in value]
    return next(strings) if isinstance(value, (str, np.ndarray)) else value


class Holes:
    """JSON values put in state by state, or a block of states at once, then `written` out.

    `axes` are the grid's sizes and `deps` their names, outermost first. `put(start, value, shape)`
    gives the block of states of `shape` (the innermost axes' sizes; none: one state) from flat
    index `start` on, in C order: `value` is a JSON value whose strings are each either one
    string for every state of the block or an array of strings that broadcasts to `shape`."""

    def __init__(self, axes: Sequence[int], deps: Sequence[str]):
        self.axes, self.deps = tuple(int(n) for n in axes), list(deps)
        self.size = math.prod(self.axes)
        self.which = np.full(self.size, -1, dtype=np.int64)
        self.templates: list[Any] = []
        self.shapes: dict[Any, int] = {}
        self.columns: list[list[np.ndarray]] = []  # per template, per string: the string at each state

    def put(self, start: int, value: Any, shape: Sequence[int] = ()) -> None:
        structure = _shape_of(value)
        t = self.shapes.get(structure)
        if t is None:
            t = self.shapes[structure] = len(self.templates)
            self.templates.append(value)
            self.columns.append([np.empty(self.size, dtype=object) for _ in _strings(value, [])])
        block = slice(start, start + math.prod(shape))
        self.which[block] = t
        for column, s in zip(self.columns[t], _strings(value, [])):
            column[block] = s if isinstance(s, str) else np.broadcast_to(np.asarray(s, dtype=object), shape).reshape(-1)

    def copy(self, start: int, source: int, count: int) -> None:
        """The states from `start` on are those from `source` on (a scenario that reads only what another does)."""
        self.which[start:start + count] = self.which[source:source + count]
        for columns in self.columns:
            for column in columns:
                column[start:start + count] = column[source:source + count]

    def written(self) -> dict:
        """{"templates": [...], "which": {"deps", "texts"}, "holes": [{"deps", "texts"}, ...]}."""
        if (self.which < 0).any():
            raise ValueError(f"state {int(np.argmax(self.which < 0))} of {self.size} was never put")
        holes: list[dict] = []
        templates = []
        for t, (template, columns) in enumerate(zip(self.templates, self.columns)):
            here = self.which == t
            strings = []
            for column in columns:
                seen = set(column[here].tolist())
                if len(seen) == 1:
                    strings.append(next(iter(seen)))
                    continue
                strings.append(hole_mark(len(holes)))
                holes.append(self._laid_out(column, here))
            templates.append(_filled(template, iter(strings)))
        which = self._laid_out(self.which.astype(object), np.ones(self.size, dtype=bool))
        return {"templates": templates, "which": which, "holes": holes}

    def _laid_out(self, column: np.ndarray, present: np.ndarray) -> dict:
        """`column` over the axes along which it changes among the `present` states (an absent
        state may take any value: no reader meets it), as {"deps", "texts"}."""
        codes: dict[Any, int] = {}
        coded = np.array([codes.setdefault(v, len(codes)) if p else -1 for v, p in zip(column.tolist(), present.tolist())],
                         dtype=np.int64).reshape(self.axes)
        kept = list(range(len(self.axes)))
        for axis in range(len(self.axes)):
            here = kept.index(axis)
            high = coded.max(axis=here)
            low = np.where(coded < 0, np.iinfo(np.int64).max, coded).min(axis=here)
            if ((high < 0) | (high == low)).all():  # the same wherever it is present along this axis
                coded = high
                kept.remove(axis)
        names = {c: v for v, c in codes.items()}
        texts = [names.get(c, "") for c in coded.reshape(-1).tolist()]
        return {"deps": [self.deps[a] for a in kept], "texts": texts}


def at(written: dict, where: dict[str, tuple[int, int]]) -> Any:
    """The value at one state, `where` giving each axis's (position, size) by name: what the
    browser builds from `written` (assets/loader/how.js), here for the tests."""
    def pick(laid: dict) -> Any:
        flat = 0
        for d in laid["deps"]:
            position, size = where[d]
            flat = flat * size + position
        return laid["texts"][flat]
    return _fill_marks(written["templates"][int(pick(written["which"]))], lambda n: pick(written["holes"][n]))


def _fill_marks(value: Any, hole) -> Any:
    if isinstance(value, dict):
        return {k: _fill_marks(v, hole) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_marks(v, hole) for v in value]
    if isinstance(value, str) and value.startswith(HOLE_OPEN) and value.endswith(HOLE_CLOSE):
        return hole(int(value[1:-1]))
    return value
