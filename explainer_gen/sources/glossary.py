"""The glossary: terms from one YAML file, explicit `[[term]]` markers, and automatic links.

Authors mark a term with `[[KV cache]]`, or `[[KV cache|the cache]]` to show other words;
an unknown term fails the build. On explainers the build also links the first plain use of
every term, in the rendered HTML, outside code, headings, links and figures.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from models.yamlsource import SourceError, SourceMap, closest, load_yaml

from .scan import prose_matches

TERM_KEYS = ("term", "definition", "anchor", "aliases")
# `[[term]]` or `[[term|shown text]]`, on one line.
MARKER = re.compile(r"\[\[(?P<body>[^\[\]\n]+?)\]\]")
_ANCHOR = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Term:
    term: str
    anchor: str
    definition: str
    aliases: tuple[str, ...]
    line: int

    @property
    def heading(self) -> str:
        """The term as a heading: first letter up, unless the word is a code like 'bf16'."""
        first = self.term.split()[0]
        if any(c.isdigit() for c in first) or not self.term[0].islower():
            return self.term
        return self.term[0].upper() + self.term[1:]

    def names(self) -> tuple[str, ...]:
        return (self.term,) + self.aliases


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class Glossary:
    def __init__(self, terms: list[Term], path: str = ""):
        self.path = path
        self.terms = sorted(terms, key=lambda t: t.term.lower())
        self._by_name: dict[str, Term] = {}
        for t in self.terms:
            for name in t.names() + (t.anchor,):
                self._by_name.setdefault(name.lower(), t)
        names = sorted({n for t in self.terms for n in t.names()}, key=len, reverse=True)
        # Longest names first, so "speculative decoding" wins over "decoding" at one position.
        self.pattern = (re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in names) + r")(?:e?s)?(?![\w-])",
                                   re.IGNORECASE) if names else None)

    def __bool__(self) -> bool:
        return bool(self.terms)

    def lookup(self, name: str) -> Term | None:
        name = " ".join(name.split()).lower()
        for candidate in (name, name[:-1] if name.endswith("s") else None, name[:-2] if name.endswith("es") else None):
            if candidate and candidate in self._by_name:
                return self._by_name[candidate]
        return None

    def all_names(self) -> list[str]:
        return [t.term for t in self.terms]


def load_glossary(path: Path, display: str) -> Glossary:
    """Read the terms file; a missing file is an empty glossary."""
    if not path.is_file():
        return Glossary([], display)
    raw = load_yaml(path.read_text(encoding="utf-8"), display)
    if raw is None:
        return Glossary([], display)
    if not isinstance(raw, list):
        raise SourceError(display, 1, "the glossary must be a YAML list of terms")
    terms: list[Term] = []
    seen: dict[str, int] = {}
    for item in raw:
        line = item.line if isinstance(item, SourceMap) else 1
        if not isinstance(item, dict):
            raise SourceError(display, line, "each glossary entry must be a mapping with 'term' and 'definition'")
        for key in item:
            if key not in TERM_KEYS:
                raise SourceError(display, item.line_of(key), f"unknown key {key!r} in a glossary entry; "
                                  f"{closest(str(key), TERM_KEYS)}")
        for key in ("term", "definition"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise SourceError(display, item.line_of(key), f"a glossary entry needs a {key!r} (text)")
        term = " ".join(item["term"].split())
        anchor = item.get("anchor", slug(term))
        if not isinstance(anchor, str) or not _ANCHOR.match(anchor):
            raise SourceError(display, item.line_of("anchor"), f"anchor {anchor!r} must be lower-case letters, "
                              "digits and hyphens")
        aliases = item.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            raise SourceError(display, item.line_of("aliases"), "aliases must be a list of words")
        aliases = tuple(" ".join(a.split()) for a in aliases)
        for name in (term, *aliases, anchor):
            if name.lower() in seen and seen[name.lower()] != line:
                raise SourceError(display, line, f"{name!r} is already used by the entry on line {seen[name.lower()]}")
            seen[name.lower()] = line
        terms.append(Term(term, anchor, " ".join(item["definition"].split()), aliases, line))
    return Glossary(terms, display)


@dataclass(frozen=True)
class Marker:
    line: int    # 1-based
    start: int
    end: int
    name: str    # the term as written
    shown: str   # the words shown on the page


def find_markers(lines: list[str], skip: set[int]) -> Iterator[Marker]:
    """Every `[[...]]` outside fenced blocks (`skip`, 0-based line indexes) and code spans."""
    for line, m in prose_matches(lines, skip, MARKER, "[["):
        name, _, shown = m.group("body").partition("|")
        yield Marker(line, m.start(), m.end(), name.strip(), (shown.strip() or name.strip()))


def check_markers(lines: list[str], skip: set[int], glossary: Glossary, path: str) -> list[Term]:
    """The terms a page marks, in order; an unknown one is a SourceError at its line."""
    found = []
    for marker in find_markers(lines, skip):
        term = glossary.lookup(marker.name)
        if term is None:
            hint = closest(marker.name, glossary.all_names()) if glossary else "the glossary has no terms yet"
            raise SourceError(path, marker.line, f"unknown glossary term {marker.name!r} in [[{marker.name}]]; {hint}")
        found.append(term)
    return found




