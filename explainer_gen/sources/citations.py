"""Citations: `[@key]` or `[@key1; @key2]` in Markdown, checked against the bibliography.

Each citation becomes a short linked form ("Leviathan et al., 2023") that points at the
page's references list and shows the full reference on hover and on keyboard focus.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from models.yamlsource import SourceError, closest

from .bibliography import Bibliography, Paper
from ..render.markup import card, esc, md_safe
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


def ref_id(key: str) -> str:
    return f"ref-{key}"


def citation_html(citation: Citation, bib: Bibliography, first_card: int) -> str:
    """The inline form of one `[@...]`: '(Leviathan et al., 2023; Chen et al., 2023)'."""
    items = []
    for n, key in enumerate(citation.keys):
        paper = bib[key]
        card_id = f"eg-cite-{first_card + n}"
        link = (f'<a class="eg-cite-link" href="#{esc(ref_id(key))}" data-eg-cite="{esc(key)}" '
                f'aria-describedby="{esc(card_id)}">{md_safe(paper.short)}</a>')
        items.append(card("cite", md_safe(paper.reference), link, card_id))
    return '<span class="eg-citation">(' + "; ".join(items) + ")</span>"


def substitute_citations(markdown: str, skip: set[int], bib: Bibliography, path: str) -> str:
    lines = markdown.split("\n")
    found = list(find_citations(lines, skip, path))
    numbers, n = [], 1
    for c in found:
        numbers.append(n)
        n += len(c.keys)
    for citation, first in reversed(list(zip(found, numbers))):
        for key in citation.keys:
            if key not in bib:
                raise SourceError(path, citation.line, f"unknown citation key {key!r}")
        i = citation.line - 1
        lines[i] = lines[i][:citation.start] + citation_html(citation, bib, first) + lines[i][citation.end:]
    return "\n".join(lines)


def references_html(keys: list[str], bib: Bibliography, feed_href: Callable[[str], str | None]) -> str:
    """The list that ends a page which cites: full references, external links, feed entry."""
    items = []
    for key in keys:
        paper: Paper = bib[key]
        links = [f'<a href="{esc(url)}">{esc(label)}</a>' for label, url in paper.links()]
        feed = feed_href(key)
        if feed:
            links.append(f'<a href="{esc(feed)}">In the feed</a>')
        items.append(f'<li id="{esc(ref_id(key))}"><span class="eg-ref-text">{esc(paper.reference)}</span> '
                     f'<span class="eg-ref-links">{" · ".join(links)}</span></li>')
    return f'<ol class="eg-references">{"".join(items)}</ol>'
