"""Citations, glossary terms and links between pages, for the whole site at once.

`CrossRefs.collect` reads every page, checks every citation, glossary marker, placeholder
and `read_next` item against the bibliography, the glossary and the other pages, and
raises a SourceError (file and line) at the first mistake. render/refs.py then only writes what
was checked. No MkDocs here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models.yamlsource import SourceError, load_yaml

from . import citations
from . import glossary as gl
from . import links
from .bibliography import Bibliography, load_bibliography
from .glossary import Glossary, load_glossary
from .links import PageInfo
from .markdown import scan_fences, split_front_matter

BIB_PATH = "feed/papers.bib"        # relative to docs/
GLOSSARY_PATH = "glossary/terms.yml"


@dataclass(frozen=True)
class Source:
    src_uri: str    # relative to docs/, e.g. explainers/roofline.md
    path: str       # as errors show it, e.g. docs/explainers/roofline.md
    text: str


def skip_lines(lines: list[str], path: str, front_lines: int = 0) -> set[int]:
    """The lines no cross-reference is read from: fenced blocks, and the front matter's `front_lines`."""
    try:
        _, inside = scan_fences(lines)
    except SourceError as exc:
        raise SourceError(path, exc.line, exc.message) from None
    return inside | set(range(front_lines))


class CrossRefs:
    def __init__(self, bib: Bibliography, glossary: Glossary, pages: dict[str, PageInfo], nav_order: list[str]):
        self.bib, self.glossary, self.pages = bib, glossary, pages
        self.feed_page = next((p.src_uri for p in pages.values() if "feed" in p.placeholders), None)
        self.glossary_page = next((p.src_uri for p in pages.values() if "glossary" in p.placeholders), None)
        rank = {uri: i for i, uri in enumerate(nav_order)}
        self.explainers = sorted((p for p in pages.values() if p.is_explainer),
                                 key=lambda p: (rank.get(p.src_uri, len(rank)), p.title.lower()))
        # Papers -> the pages that cite them, in the order the home page lists pages.
        order = {uri: i for i, uri in enumerate([p.src_uri for p in self.explainers] + sorted(pages))}
        self.cited_in: dict[str, list[str]] = {}
        for page in sorted(pages.values(), key=lambda p: order[p.src_uri]):
            for key in page.cites:
                self.cited_in.setdefault(key, []).append(page.src_uri)

    @classmethod
    def collect(cls, docs_dir: Path, docs_display: str, sources: list[Source],
                nav_order: list[str] = (), cache=None) -> "CrossRefs":
        """Read and check every page's cross-references; `cache` (a DiskCache) keeps the parsed bibliography."""
        bib = load_bibliography(docs_dir / BIB_PATH, f"{docs_display}/{BIB_PATH}", cache)
        glossary = load_glossary(docs_dir / GLOSSARY_PATH, f"{docs_display}/{GLOSSARY_PATH}")
        pages: dict[str, PageInfo] = {}
        raw_next: dict[str, list[tuple[str, int, str]]] = {}
        marker_lines: dict[str, int] = {}
        for src in sources:
            front, offset = split_front_matter(src.text)
            meta = load_yaml(front, src.path, 2) if front is not None else {}
            if not isinstance(meta, dict):
                meta = {}
            lines = src.text.split("\n")
            skip = skip_lines(lines, src.path, offset)
            info = PageInfo(src.src_uri, src.path, links.page_title(meta, lines, skip, src.src_uri),
                            links.page_description(meta))
            info.placeholders = links.find_placeholders(lines, skip, src.path)
            info.cites = citations.check_citations(lines, skip, bib, src.path)
            markers = list(gl.find_markers(lines, skip))
            gl.check_markers(lines, skip, glossary, src.path)
            if markers:
                marker_lines[src.src_uri] = markers[0].line
            for line in [c.line for c in citations.find_citations(lines, skip, src.path)] + [m.line for m in markers]:
                if lines[line - 1].lstrip(" ").startswith("#"):
                    raise SourceError(src.path, line, "citations and glossary terms cannot go in a heading; "
                                      "put them in the text below it")
            raw_next[src.src_uri] = links.parse_read_next(meta, front.split("\n") if front else [], src.path)
            pages[src.src_uri] = info
        has_feed = any("feed" in p.placeholders for p in pages.values())
        has_glossary = any("glossary" in p.placeholders for p in pages.values())
        for uri, line in marker_lines.items():
            if not has_glossary:
                raise SourceError(pages[uri].path, line, "glossary terms need a glossary page: "
                                  "a page holding <!-- explainer: glossary -->")
        for uri, items in raw_next.items():
            pages[uri].read_next = links.resolve_read_next(items, pages, bib, has_feed, pages[uri].path, uri)
        return cls(bib, glossary, pages, list(nav_order))
