"""Citations: `[@key]` or `[@key1; @key2]` in Markdown, checked against the bibliography.

Each citation is written (render/refs.py) as a short linked form ("Leviathan et al., 2023") that points at the
page's references list and shows the full reference on hover and on keyboard focus.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from models.yamlsource import SourceError, closest

from .bibliography import Bibliography
from .scan import prose_matches

# Anything that looks like a citation; the keys inside are checked one by one.
CITATION = re.compile(r"\[@(?P<body>[^\[\]\n]*)\]")
_ITEM = re.compile(r"^@?(?P<key>[A-Za-z][\w:-]*)$")


@dataclass(frozen=True)
class Citation:
    line: int
    start: int
    end: int
    keys: tuple[str, ...]


def find_citations(lines: list[str], skip: set[int], path: str) -> Iterator[Citation]:
    """Every `[@...]` outside fenced blocks (`skip`, 0-based) and code spans."""
    for line, m in prose_matches(lines, skip, CITATION, "[@"):
        keys = []
        for part in ("@" + m.group("body")).split(";"):
            item = _ITEM.match(part.strip())
            if not item:
                raise SourceError(path, line, f"malformed citation {m.group()!r}; write [@key] or "
                                  "[@key1; @key2]")
            keys.append(item.group("key"))
        yield Citation(line, m.start(), m.end(), tuple(keys))


def check_citations(lines: list[str], skip: set[int], bib: Bibliography, path: str) -> list[str]:
    """The keys a page cites, first use first; an unknown key is a SourceError at its line."""
    cited: list[str] = []
    for citation in find_citations(lines, skip, path):
        for key in citation.keys:
            if key not in bib:
                hint = closest(key, bib.keys()) if len(bib) else f"the bibliography ({bib.path}) has no entries"
                raise SourceError(path, citation.line, f"unknown citation key {key!r}; {hint}")
            if key not in cited:
                cited.append(key)
    return cited


