"""The bibliography: one BibTeX file, read with bibtexparser, checked entry by entry.

Each entry carries the usual fields plus `annote`, our own one- or two-sentence note on
what the paper gives this site. Nothing here knows about MkDocs.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.yamlsource import SourceError

from ..cache import digest, package_version

# Fields every entry must have, and the text the author sees when one is missing.
REQUIRED = ("author", "title", "year", "month", "annote")
MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_KEY = re.compile(r"^[A-Za-z][\w:-]*$")


@dataclass(frozen=True)
class Paper:
    key: str
    authors: tuple[str, ...]   # display names, "First Last"
    surnames: tuple[str, ...]
    title: str
    venue: str                 # journal or proceedings, with volume and pages when given
    year: int
    month: int
    note: str
    arxiv: str = ""
    doi: str = ""
    url: str = ""
    line: int = 1
    suffix: str = ""           # "a", "b", ... when another entry shares its authors and year (`Bibliography`)

    @property
    def date(self) -> str:
        """A sortable, deterministic date: the first of the publication month."""
        return f"{self.year:04d}-{self.month:02d}-01"

    @property
    def short(self) -> str:
        """The in-text form: 'Leviathan et al., 2023', 'Smith and Jones, 2020', 'Li et al., 2024a'."""
        return f"{author_list_short(self.surnames)}, {self.year}{self.suffix}"

    @property
    def author_text(self) -> str:
        return join_names(self.authors)

    @property
    def reference(self) -> str:
        """The full reference as one line of plain text."""
        return f"{self.author_text}. {self.title}. {self.venue}, {self.year}."

    def links(self) -> list[tuple[str, str]]:
        """(label, url) for every external link the entry has."""
        out = []
        if self.arxiv:
            out.append((f"arXiv:{self.arxiv}", f"https://arxiv.org/abs/{self.arxiv}"))
        if self.doi:
            out.append((f"doi:{self.doi}", f"https://doi.org/{self.doi}"))
        if self.url:
            out.append(("Repository" if self.url.startswith("https://github.com/") else "Publisher", self.url))
        return out


def join_names(names: tuple[str, ...] | list[str]) -> str:
    names = list(names)
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def author_list_short(surnames: tuple[str, ...]) -> str:
    if len(surnames) >= 3:
        return f"{surnames[0]} et al."
    return " and ".join(surnames)


def _told_apart(papers: list[Paper]) -> list[Paper]:
    """Entries whose in-text forms would read alike (same short author list, same year) get the
    letters a, b, ... in order of publication, then of key, as author-year styles do."""
    groups: dict[tuple[str, int], list[Paper]] = {}
    for p in papers:
        groups.setdefault((author_list_short(p.surnames), p.year), []).append(p)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.extend(group)
            continue
        for i, p in enumerate(sorted(group, key=lambda p: (p.month, p.key))):
            out.append(dataclasses.replace(p, suffix="abcdefghijklmnopqrstuvwxyz"[i]))
    return out


class Bibliography:
    """Papers by key, in the order of the feed: newest first, then by key."""

    def __init__(self, papers: list[Paper], path: str = ""):
        self.path = path
        papers = _told_apart(papers)
        self.papers = {p.key: p for p in sorted(papers, key=lambda p: (-p.year, -p.month, p.key))}

    def __contains__(self, key: str) -> bool:
        return key in self.papers

    def __getitem__(self, key: str) -> Paper:
        return self.papers[key]

    def __iter__(self):
        return iter(self.papers.values())

    def __len__(self) -> int:
        return len(self.papers)

    def keys(self) -> list[str]:
        return list(self.papers)


# What decides a parse besides the file's text: this module's code as loaded, and the parsers' versions.
_PARSER_KEY = digest(Path(__file__).read_text(encoding="utf-8"), [package_version(d) for d in ("bibtexparser", "pylatexenc")])


def load_bibliography(path: Path, display: str, cache=None) -> Bibliography:
    """Read `path`; a missing file is an empty bibliography. Errors name `display` and a line.

    Parsing BibTeX (its LaTeX decoded by pylatexenc) is the slow part of a rebuild, and the file
    rarely changes: `cache` (a cache.DiskCache) keeps the checked papers by the file's text,
    so a new process reads them back; a file with a mistake is never stored, and raises each time."""
    if not path.is_file():
        return Bibliography([], display)
    text = path.read_text(encoding="utf-8")
    key = digest(_PARSER_KEY, display, text)
    stored = cache.get("bibliography", key) if cache is not None else None
    if stored is not None:
        try:
            entries = json.loads(stored)
            if not isinstance(entries, list):
                raise TypeError("not a list of papers")
            papers = [Paper(**{**d, "authors": tuple(d["authors"]), "surnames": tuple(d["surnames"])})
                      for d in entries]
            return Bibliography(papers, display)
        except (ValueError, TypeError, KeyError):  # torn or foreign: parse the file again
            pass
    bib = parse_bibliography(text, display)
    if cache is not None:
        cache.put("bibliography", key, json.dumps([dataclasses.asdict(p) for p in bib], sort_keys=True))
    return bib


@lru_cache(maxsize=8)  # `mkdocs serve` without a disk cache still parses an unchanged file once
def parse_bibliography(text: str, display: str) -> Bibliography:
    import bibtexparser  # here, not at import: a rebuild reads the parsed papers from the cache
    from bibtexparser import middlewares as mw

    library = bibtexparser.parse_string(
        text, append_middleware=[mw.SeparateCoAuthors(), mw.SplitNameParts(), mw.LatexDecodingMiddleware()])
    for block in library.failed_blocks:
        line = block.start_line + 1
        kind = type(block).__name__
        if kind == "DuplicateBlockKeyBlock":
            raise SourceError(display, line, f"duplicate BibTeX key {block.key!r}")
        if kind == "DuplicateFieldKeyBlock":
            raise SourceError(display, line, f"an entry repeats a field: {block.error}")
        raise SourceError(display, line, "this BibTeX entry could not be parsed; check its braces and commas")
    return Bibliography([_paper(entry, display) for entry in library.entries], display)


@lru_cache(maxsize=1)
def _latex_decoder():
    from pylatexenc.latex2text import LatexNodes2Text
    return LatexNodes2Text()


def _latex(text: str) -> str:
    return " ".join(_latex_decoder().latex_to_text(text).split())


def _paper(entry, display: str) -> Paper:
    line = entry.start_line + 1
    key = entry.key
    if not _KEY.match(key):
        raise SourceError(display, line, f"BibTeX key {key!r} must start with a letter and use only "
                          "letters, digits, '_', ':' and '-'")
    fields = {k.lower(): f for k, f in entry.fields_dict.items()}
    for name in REQUIRED:
        if name not in fields:
            raise SourceError(display, line, f"entry {key!r} needs a {name!r} field")

    def text(name: str) -> str:
        f = fields.get(name)
        return " ".join(str(f.value).split()) if f is not None else ""

    def at(name: str) -> int:
        return fields[name].start_line + 1

    people = fields["author"].value
    if not isinstance(people, list) or not people:
        raise SourceError(display, at("author"), f"entry {key!r} has no authors")
    authors, surnames = [], []
    for person in people:
        # Names are split before their LaTeX is decoded, so that a braced name such as
        # {PyTorch Labs} stays one surname, then each part is decoded (M{\"u}ller -> Müller).
        last = _latex(" ".join(person.von + person.last))
        first = _latex(" ".join(person.first))
        if not last:
            raise SourceError(display, at("author"), f"entry {key!r}: an author has no surname")
        authors.append(" ".join(p for p in (first, last, ", ".join(person.jr)) if p))
        surnames.append(last)
    try:
        year = int(text("year"))
    except ValueError:
        raise SourceError(display, at("year"), f"entry {key!r}: year must be a number, got {text('year')!r}") from None
    month_text = text("month").lower()[:3]
    month = MONTHS.get(month_text) or (int(month_text) if month_text.isdigit() else 0)
    if not 1 <= month <= 12:
        raise SourceError(display, at("month"), f"entry {key!r}: month must be jan..dec or 1..12, "
                          f"got {text('month')!r}")
    venue = _venue(fields, text)
    if not venue:
        raise SourceError(display, line, f"entry {key!r} needs a 'journal', 'booktitle' or 'howpublished' field")
    arxiv = text("eprint") if text("archiveprefix").lower() == "arxiv" or "eprint" in fields else ""
    note = text("annote")
    if not note.endswith((".", "!", "?")):
        raise SourceError(display, at("annote"), f"entry {key!r}: the note should be one or two full sentences")
    return Paper(key, tuple(authors), tuple(surnames), text("title"), venue, year, month, note,
                 arxiv=arxiv, doi=text("doi"), url=text("url"), line=line)


def _venue(fields: dict, text) -> str:
    if "journal" in fields:
        out = text("journal")
        if "volume" in fields:
            out += f" {text('volume')}"
            if "number" in fields:
                out += f"({text('number')})"
        if "pages" in fields:
            out += (":" if "volume" in fields else ", pp. ") + text("pages").replace("--", "–")
        return out
    for name in ("booktitle", "howpublished"):
        if name in fields:
            out = text(name)
            if "pages" in fields:
                out += ", pp. " + text("pages").replace("--", "–")
            return out
    return ""
