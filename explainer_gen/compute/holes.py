"""Many JSON values over a grid of states, written as a few templates and the holes in them.

A number's card (compute/derivation.explain_over) is a JSON object of strings at every state of
the page: tens of thousands of states on some pages, nearly all alike. Here they become:

- `templates`: each distinct structure of them (the same keys, the same list lengths), with every
  string that is the same at every state of that structure written in, and every other string
  replaced by a mark, HOLE_OPEN + its hole's number + HOLE_CLOSE;
- `which`: the template of each state, by its place in `templates`;
- `holes`: each hole's strings.

`which` and each hole are laid out as a page's inline numbers are (client/contract.py): a list of
texts in C order over the axes (`deps`) along which it changes, the others dropped. A hole that
is the step time changes along the scenario and the batch slider, not the acceptance rate.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

HOLE_OPEN, HOLE_CLOSE = "\ue000", "\ue001"  # private-use characters: no text a page writes holds them


# Numbers in a text (digits, with thousands' commas and a decimal part): a hole's own texts where
# its wording stays among at most MAX_WORDINGS (a template for each).
_NUMERALS = re.compile(r"(\d(?:[\d,]*\d)?(?:\.\d+)?)")
MAX_WORDINGS = 12


def hole_mark(n: int) -> str:
    return f"{HOLE_OPEN}{n}{HOLE_CLOSE}"


def _flatten(value: Any, strings: list) -> Any:
    """The structure of a JSON value with its strings (or arrays of strings) taken out into
    `strings`, in a fixed order: what two states share to share a template. (Made at every state
    of every number: the commonest types are tested first.)"""
    kind = type(value)
    if kind is str or kind is np.ndarray:
        strings.append(value)
        return None
    if kind is dict:
        return tuple([(k, _flatten(v, strings)) for k, v in value.items()])
    if kind is list:
        return ("[", *[_flatten(v, strings) for v in value])
    return value


def _filled(value: Any, strings: Any) -> Any:
    """`value` with its strings replaced, in `_flatten`'s order, by those `strings` gives."""
    kind = type(value)  # as _flatten tells them
    if kind is dict:
        return {k: _filled(v, strings) for k, v in value.items()}
    if kind is list:
        return [_filled(v, strings) for v in value]
    return next(strings) if kind is str or kind is np.ndarray else value


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
        strings: list = []
        structure = _flatten(value, strings)
        t = self.shapes.get(structure)
        if t is None:
            t = self.shapes[structure] = len(self.templates)
            self.templates.append(value)
            self.columns.append([np.empty(self.size, dtype=object) for _ in strings])
        block = slice(start, start + math.prod(shape))
        self.which[block] = t
        for column, s in zip(self.columns[t], strings):
            column[block] = s if isinstance(s, str) else np.broadcast_to(np.asarray(s, dtype=object), shape).reshape(-1)

    def copy(self, start: int, source: int, count: int) -> None:
        """The states from `start` on are those from `source` on (a scenario that reads only what another does)."""
        self.which[start:start + count] = self.which[source:source + count]
        for columns in self.columns:
            for column in columns:
                column[start:start + count] = column[source:source + count]

    def written(self) -> dict:
        """{"templates": [...], "which": {"deps", "texts"}, "holes": [{"deps", "texts"}, ...]}.

        A string that changes from state to state is a hole, or where its wording stays (its words
        and signs, the numbers in it apart) among a few wordings, each number in it that changes
        is: a template is then made per wording, so a long sentence is written once and only its
        numbers at every state."""
        if (self.which < 0).any():
            raise ValueError(f"state {int(np.argmax(self.which < 0))} of {self.size} was never put")
        holes: list[dict] = []
        templates: list[Any] = []
        which = np.full(self.size, -1, dtype=np.int64)
        for t, (template, columns) in enumerate(zip(self.templates, self.columns)):
            here = np.flatnonzero(self.which == t)
            if not len(here):  # every state it was put for was put again since
                continue
            varying, wordings = [], []
            for c, column in enumerate(columns):
                values = column[here]
                distinct = sorted(set(values.tolist()))  # sorted: a set's order changes from process to process
                if len(distinct) == 1:
                    continue
                varying.append(c)
                split = {v: _NUMERALS.split(v) for v in distinct}  # words and numbers, alternately
                words = {v: tuple(parts[0::2]) for v, parts in split.items()}
                kinds = {w: i for i, w in enumerate(dict.fromkeys(words.values()))}
                wordings.append((split, np.array([kinds[words[v]] for v in values.tolist()], dtype=np.int64)
                                 if len(kinds) <= MAX_WORDINGS else None))
            keyed = [w[1] for w in wordings if w[1] is not None]
            groups = (np.unique(np.stack(keyed, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
                      if keyed else np.zeros(len(here), dtype=np.int64))
            if groups.max(initial=0) >= MAX_WORDINGS:  # wordings that do not go together: each string whole
                wordings = [(split, None) for split, _ in wordings]
                groups = np.zeros(len(here), dtype=np.int64)
            for g in range(int(groups.max(initial=0)) + 1):
                states = here[groups == g]
                present = np.zeros(self.size, dtype=bool)
                present[states] = True
                strings = [column[states[0]] for column in columns]
                for c, (split, kinds) in zip(varying, wordings):
                    column = columns[c]
                    if kinds is None:
                        strings[c] = hole_mark(len(holes))
                        holes.append(self._laid_out(column, present))
                        continue
                    parts = list(split[column[states[0]]])
                    for n in range(1, len(parts), 2):
                        numbers = np.empty(self.size, dtype=object)
                        numbers[states] = [split[v][n] for v in column[states].tolist()]
                        if len(set(numbers[states].tolist())) > 1:
                            parts[n] = hole_mark(len(holes))
                            holes.append(self._laid_out(numbers, present))
                    strings[c] = "".join(parts)
                which[states] = len(templates)
                templates.append(_filled(template, iter(strings)))
        return {"templates": templates, "which": self._laid_out(which.astype(object), np.ones(self.size, dtype=bool)),
                "holes": holes}

    def _laid_out(self, column: np.ndarray, present: np.ndarray) -> dict:
        """`column` over the axes along which it changes among the `present` states (an absent
        state may take any value: no reader meets it), as {"deps", "texts"}."""
        names, inverse = np.unique(column[present], return_inverse=True)
        coded = np.full(self.size, -1, dtype=np.int64)
        coded[present] = inverse.reshape(-1)
        coded = coded.reshape(self.axes)
        kept = list(range(len(self.axes)))
        for axis in range(len(self.axes)):
            here = kept.index(axis)
            high = coded.max(axis=here)
            low = np.where(coded < 0, np.iinfo(np.int64).max, coded).min(axis=here)
            if ((high < 0) | (high == low)).all():  # the same wherever it is present along this axis
                coded = high
                kept.remove(axis)
        names = names.tolist()
        texts = [names[c] if c >= 0 else "" for c in coded.reshape(-1).tolist()]
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
    if isinstance(value, str) and HOLE_OPEN in value:
        return _MARKS.sub(lambda m: hole(int(m[1])), value)
    return value


_MARKS = re.compile(f"{HOLE_OPEN}(\\d+){HOLE_CLOSE}")
