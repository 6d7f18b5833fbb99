"""Finding author syntax in Markdown prose: outside fenced blocks and inline code."""
from __future__ import annotations

import re
from typing import Iterator

_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


def code_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CODE_SPAN.finditer(line)]


def prose_matches(lines: list[str], skip: set[int], pattern: re.Pattern, hint: str) -> Iterator[tuple[int, re.Match]]:
    """(1-based line, match) for `pattern` outside the lines in `skip` (0-based fenced-block
    lines) and outside code spans. `hint` is a substring every match contains, to skip lines fast."""
    for i, line in enumerate(lines):
        if i in skip or hint not in line:
            continue
        spans = code_spans(line)
        for m in pattern.finditer(line):
            if not any(a <= m.start() < b for a, b in spans):
                yield i + 1, m
