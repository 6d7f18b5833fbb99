"""Links between pages: titles and descriptions from front matter, "Read next", the home list.

A page's `read_next:` front matter lists pages (paths relative to docs/) and feed entries
(`@key`); what is shown for each comes from the target's own front matter or from the
bibliography, so no title is ever typed twice.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from models.yamlsource import SourceError, SourceMap, closest

from .bibliography import Bibliography, author_list_short
from .markup import esc

EXPLAINERS_DIR = "explainers/"
# A line holding only `<!-- explainer: NAME -->` is replaced by generated content.
PLACEHOLDER = re.compile(r"^\s*<!--\s*explainer:\s*(?P<name>[\w-]+)\s*-->\s*$")
PLACEHOLDERS = ("feed", "glossary", "explainers")


@dataclass(frozen=True)
class ReadNext:
    target: str   # a page's src_uri, or a bibliography key
    is_paper: bool
    line: int


@dataclass
class PageInfo:
    src_uri: str
    path: str                       # as shown in errors, e.g. docs/explainers/x.md
    title: str
    description: str
    read_next: list[ReadNext] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)
    placeholders: dict[str, int] = field(default_factory=dict)   # name -> line

    @property
    def is_explainer(self) -> bool:
        return self.src_uri.startswith(EXPLAINERS_DIR)


def page_title(meta: Any, lines: list[str], skip: set[int], src_uri: str) -> str:
    if isinstance(meta, dict) and isinstance(meta.get("title"), str) and meta["title"].strip():
        return meta["title"].strip()
    for i, line in enumerate(lines):
        if i not in skip and line.startswith("# "):
            return line[2:].strip().rstrip("#").strip()
    stem = posixpath.splitext(posixpath.basename(src_uri))[0]
    if stem == "index":
        stem = posixpath.basename(posixpath.dirname(src_uri)) or "Home"
    return stem.replace("-", " ").capitalize()


def page_description(meta: Any) -> str:
    if isinstance(meta, dict) and isinstance(meta.get("description"), str):
        return " ".join(meta["description"].split())
    return ""


def find_placeholders(lines: list[str], skip: set[int], path: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for i, line in enumerate(lines):
        if i in skip or "<!--" not in line:
            continue
        m = PLACEHOLDER.match(line)
        if not m:
            continue
        name = m.group("name")
        if name not in PLACEHOLDERS:
            raise SourceError(path, i + 1, f"unknown placeholder {name!r}; {closest(name, PLACEHOLDERS)}")
        if name in found:
            raise SourceError(path, i + 1, f"the {name} placeholder appears twice on this page")
        found[name] = i + 1
    return found


def parse_read_next(meta: Any, front_lines: list[str], path: str) -> list[tuple[str, int]]:
    """The raw `read_next` items with their lines in the file (front matter starts at line 2)."""
    if not isinstance(meta, dict) or "read_next" not in meta:
        return []
    key_line = meta.line_of("read_next") if isinstance(meta, SourceMap) else 2
    raw = meta["read_next"]
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        raise SourceError(path, key_line, "read_next must be a list of page paths (relative to docs/) "
                          "and feed keys such as '@leviathan2023'")
    # Items carry no line of their own: find each one's text, searching on from the last.
    out, cursor = [], max(key_line - 2, 0)   # index into front_lines
    for item in raw:
        line = key_line
        for j in range(cursor, len(front_lines)):
            if item.strip() in front_lines[j]:
                line, cursor = j + 2, j
                break
        out.append((item.strip(), line))
    return out


def resolve_read_next(items: list[tuple[str, int]], pages: dict[str, PageInfo], bib: Bibliography,
                      has_feed: bool, path: str) -> list[ReadNext]:
    out = []
    for item, line in items:
        if item.startswith("@"):
            key = item[1:]
            if key not in bib:
                hint = closest(key, bib.keys()) if len(bib) else "the bibliography has no entries"
                raise SourceError(path, line, f"read_next: unknown feed entry {item!r}; {hint}")
            if not has_feed:
                raise SourceError(path, line, f"read_next: {item!r} needs a feed page "
                                  "(a page holding <!-- explainer: feed -->)")
            out.append(ReadNext(key, True, line))
            continue
        target = posixpath.normpath(item.lstrip("/"))
        if target.endswith("/"):
            target += "index.md"
        if target not in pages:
            raise SourceError(path, line, f"read_next: no page {item!r} in docs/; "
                              f"{closest(target, sorted(pages))}")
        out.append(ReadNext(target, False, line))
    return out


def read_next_html(items: list[ReadNext], pages: dict[str, PageInfo], bib: Bibliography,
                   href: Callable[[str, str], str]) -> str:
    """Two groups, like the seed page: explainers (and other pages), then papers.

    `href(src_uri, anchor)` gives a page-relative URL; for papers the src_uri is "@feed".
    """
    groups = []
    page_items = [r for r in items if not r.is_paper]
    paper_items = [r for r in items if r.is_paper]
    if page_items:
        lis = "".join(f'<li><a href="{esc(href(r.target, ""))}">{esc(pages[r.target].title)}</a>'
                      + (f'<p>{esc(pages[r.target].description)}</p>' if pages[r.target].description else "")
                      + "</li>" for r in page_items)
        groups.append(f'<li class="eg-read-next-group"><span class="eg-read-next-kind">Explainers</span><ul>{lis}</ul></li>')
    if paper_items:
        lis = "".join(f'<li><a href="{esc(href("@feed", r.target))}">{esc(bib[r.target].title)}</a>'
                      f'<p>{esc(author_list_short(bib[r.target].surnames))}, {bib[r.target].year}. '
                      f'{esc(bib[r.target].note)}</p></li>' for r in paper_items)
        groups.append(f'<li class="eg-read-next-group"><span class="eg-read-next-kind">From the feed</span><ul>{lis}</ul></li>')
    return f'<ul class="eg-read-next">{"".join(groups)}</ul>'


def explainers_html(pages: list[PageInfo], href: Callable[[str, str], str]) -> str:
    """The home page's list of explainers with their descriptions."""
    lis = "".join(f'<li><a href="{esc(href(p.src_uri, ""))}">{esc(p.title)}</a>'
                  + (f'<p>{esc(p.description)}</p>' if p.description else "") + "</li>" for p in pages)
    return f'<ul class="eg-explainers">{lis}</ul>'
