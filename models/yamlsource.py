"""YAML loading that remembers where every mapping and value came from.

Author-facing errors must name a file and a line, so every mapping loaded here is a
`SourceMap`: a plain dict that also knows the line of itself and of each of its keys.
"""
from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Any

import yaml


class SourceError(ValueError):
    """A mistake in a source file, located by file and 1-based line."""

    def __init__(self, path: str, line: int, message: str):
        self.path, self.line, self.message = str(path), int(line), message
        super().__init__(f"{self.path}:{self.line}: {message}")


class SourceMap(dict):
    """A dict with the 1-based line of the mapping (`line`) and of each key (`key_lines`)."""

    line: int = 1
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Safe loading; libyaml's parser when present (its nodes carry line marks too)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> SourceMap:
    loader.flatten_mapping(node)
    out = SourceMap()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@lru_cache(maxsize=512)
def load_yaml(text: str, path: str, first_line: int = 1) -> Any:
    """Parse YAML; on a syntax error raise SourceError at the offending line.

    `first_line` is the line in `path` where `text` starts, for YAML embedded in Markdown.
    Results are shared between callers (a rebuild reads the same front matter again), so
    treat them as read-only.
    """
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and (mark is None or mark.index >= len(text.rstrip())):
            mark = exc.context_mark  # found only at the end: point at what was left open
        line = first_line + (mark.line if mark else 0)
        raise SourceError(path, line, f"invalid YAML: {exc.problem or exc}") from None
    _shift(data, first_line - 1)
    return data


def _shift(data: Any, offset: int) -> None:
    if not offset:
        return
    if isinstance(data, SourceMap):
        data.line += offset
        data.key_lines = {k: v + offset for k, v in data.key_lines.items()}
        for value in data.values():
            _shift(value, offset)
    elif isinstance(data, list):
        for item in data:
            _shift(item, offset)


def line_of(data: Any, key: str | None = None, default: int = 1) -> int:
    """Line of `data` (or of its `key`), falling back to `default` for plain values."""
    if isinstance(data, SourceMap):
        return data.line_of(key) if key is not None else data.line
    return default


def closest(word: str, choices: list[str] | tuple[str, ...] | Any) -> str:
    """A hint naming the nearest valid choices, then all of them."""
    choices = [str(c) for c in choices]
    near = difflib.get_close_matches(str(word), choices, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
    return f"{hint}valid: {', '.join(choices)}"
