"""Links between pages: titles and descriptions from front matter, "Read next", the home list.

A page's `read_next:` front matter lists pages (paths relative to docs/) and feed entries
(`@key`); what is shown for each comes from the target's own front matter or from the
bibliography, so no title is ever typed twice. An item may carry a `why:`, the author's
reason to read it next, shown instead of the target's description.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from models.yamlsource import SourceError, SourceMap, closest, line_of

from .bibliography import Bibliography

EXPLAINERS_DIR = "explainers/"
# A line holding only `<!-- explainer: NAME -->` is replaced by generated content.
PLACEHOLDER = re.compile(r"^\s*<!--\s*explainer:\s*(?P<name>[\w-]+)\s*-->\s*$")
PLACEHOLDERS = ("feed", "glossary", "explainers")


@dataclass(frozen=True)
class ReadNext:
    target: str   # a page's src_uri, or a bibliography key
    is_paper: bool
    line: int
    why: str = ""   # the author's reason to read it next; else the target's own description


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


def parse_read_next(meta: Any, front_lines: list[str], path: str) -> list[tuple[str, int, str]]:
    """The raw `read_next` items as (target, line in the file, why); front matter starts at line 2.

    An item is a page path or "@key", or a mapping `{page: path, why: text}` or
    `{paper: "@key", why: text}` whose `why` says why to read that next.
    """
    if not isinstance(meta, dict) or "read_next" not in meta:
        return []
    key_line = meta.line_of("read_next") if isinstance(meta, SourceMap) else 2
    raw = meta["read_next"]
    if not isinstance(raw, list):
        raise SourceError(path, key_line, "read_next must be a list of page paths (relative to docs/), "
                          "feed keys such as '@leviathan2023', or {page: ..., why: ...} / {paper: ..., why: ...}")
    # Plain items carry no line of their own: find each one's text, searching on from the last.
    out, cursor = [], max(key_line - 2, 0)   # index into front_lines
    for item in raw:
        if isinstance(item, dict):
            line = line_of(item, default=key_line)
            if isinstance(item, SourceMap) and item.key_lines:
                cursor = max(cursor, max(item.key_lines.values()) - 2)
            out.append(_read_next_mapping(item, line, path))
            continue
        line = key_line
        text = str(item).strip() if item is not None else ""
        for j in range(cursor, len(front_lines)):
            if text and text in front_lines[j]:
                line, cursor = j + 2, j
                break
        if not isinstance(item, str) or not text:
            raise SourceError(path, line, f"read_next: {item!r} is not a page path, a feed key such as "
                              "'@leviathan2023', or {page: ..., why: ...}")
        out.append((text, line, ""))
    return out


READ_NEXT_KEYS = ("page", "paper", "why")


def _read_next_mapping(item: dict, line: int, path: str) -> tuple[str, int, str]:
    for key in item:
        if key not in READ_NEXT_KEYS:
            raise SourceError(path, line_of(item, key, line),
                              f"read_next: unknown key {key!r}; {closest(str(key), READ_NEXT_KEYS)}")
    kinds = [k for k in ("page", "paper") if k in item]
    if len(kinds) != 1:
        raise SourceError(path, line, "read_next: an item needs exactly one of 'page' (a path relative to "
                          "docs/) or 'paper' (a feed key such as '@leviathan2023')")
    kind = kinds[0]
    target = item[kind]
    if not isinstance(target, str) or not target.strip():
        raise SourceError(path, line_of(item, kind, line), f"read_next: {kind} must be a non-empty string")
    target = target.strip()
    if kind == "paper" and not target.startswith("@"):
        target = "@" + target
    if kind == "page" and target.startswith("@"):
        raise SourceError(path, line_of(item, kind, line),
                          f"read_next: {target!r} is a feed key; write it as paper: {target!r}")
    why = item.get("why", "")
    if not isinstance(why, str) or ("why" in item and not why.strip()):
        raise SourceError(path, line_of(item, "why", line), "read_next: why must be a sentence of text")
    return target, line, " ".join(why.split())


def resolve_read_next(items: list[tuple[str, int, str]], pages: dict[str, PageInfo], bib: Bibliography,
                      has_feed: bool, path: str, src_uri: str = "") -> list[ReadNext]:
    out: list[ReadNext] = []
    seen: dict[str, int] = {}
    for item, line, why in items:
        if item.startswith("@"):
            key = item[1:]
            if key not in bib:
                hint = closest(key, bib.keys()) if len(bib) else "the bibliography has no entries"
                raise SourceError(path, line, f"read_next: unknown feed entry {item!r}; {hint}")
            if not has_feed:
                raise SourceError(path, line, f"read_next: {item!r} needs a feed page "
                                  "(a page holding <!-- explainer: feed -->)")
            entry = ReadNext(key, True, line, why)
        else:
            target = posixpath.normpath(item.lstrip("/"))
            if item.endswith("/") or target == ".":
                target = posixpath.normpath(posixpath.join(target, "index.md"))
            if target not in pages:
                raise SourceError(path, line, f"read_next: no page {item!r} in docs/; "
                                  f"{closest(target, sorted(pages))}")
            if target == src_uri:
                raise SourceError(path, line, f"read_next: {item!r} is this page itself")
            entry = ReadNext(target, False, line, why)
        name = ("@" if entry.is_paper else "") + entry.target
        if name in seen:
            raise SourceError(path, line, f"read_next: {item!r} is already listed on line {seen[name]}")
        seen[name] = line
        out.append(entry)
    return out


