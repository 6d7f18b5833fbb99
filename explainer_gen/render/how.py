"""The section "How the numbers are computed": each computed number's derivation at the page's
default state, which every such number in the prose links to (issue 37). Plain HTML, so it reads
without JavaScript and in print; the loader leaves it as built.

A derivation is written out in full once per page. Where the same one comes again (a number
shown twice, or a term that several numbers combine, such as a decode step under every ratio
built on it), the later place shows its quantity and value and links to the first, so a page
of many numbers over one model does not repeat that model's closed form under each of them.
"""
from __future__ import annotations

import json
from typing import Iterable

from ..names import CLASS
from .markup import SEARCH_EXCLUDE, md_safe as esc

HEADING = "How the numbers are computed"
ANCHOR = "how-the-numbers-are-computed"  # what the heading's slug is (MkDocs' toc, Zensical alike)


def entry_id(number_id: str) -> str:
    return f"how-{number_id}"


def _key(d: dict) -> str:
    """What makes two derivations the same arithmetic, whatever the expression that called them and
    the words each place names its quantity by ("time of one decode pass", "time of that pass")."""
    def arithmetic(d: dict) -> dict:
        # A closed form is its arithmetic; a value, a search or a simulation is also what it is of.
        kept = ("name", "quantity") if d["formula"] else ("name",)
        return {**{k: v for k, v in d.items() if k not in kept}, "parts": [arithmetic(p) for p in d["parts"]]}
    return json.dumps(arithmetic(d), sort_keys=True, ensure_ascii=False)


class _Writer:
    """The section's entries in page order, each derivation written in full where it first comes."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[str, int]] = {}  # derivation -> (its element's id, its entry's number)
        self.entry = 0
        self.parts = 0

    def head(self, d: dict, depth: int, shown: str) -> str:
        kind = "" if d["kind"] == "combination" else f' <span class="eg-how-kind">({esc(d["kind"])})</span>'
        name = f'<code>{esc(d["name"])}</code> ' if d.get("name") and depth else ""
        return f'<p>{name}{esc(d["quantity"])}: <strong>{esc(shown or d["shown"])}</strong>{kind}</p>'

    def seen(self, d: dict) -> str:
        anchor, n = self.first[_key(d)]
        return f'<p class="{CLASS.how_same}">Made as in <a href="#{esc(anchor)}">entry {n}</a>.</p>'

    def body(self, d: dict, depth: int, anchor: str, whole: bool = True) -> str:
        """`d` in full, remembered as written at `anchor`; not `whole`, each part by its head alone."""
        if whole:
            self.first.setdefault(_key(d), (anchor, self.entry))
        out = []
        if d["formula"]:
            out.append(f'<p class="eg-how-formula">= {esc(d["formula"])}</p>')
            out.append('<ul class="eg-how-symbols">' + "".join(
                f"<li><var>{esc(k)}</var>: {esc(words)}, {esc(shown)}</li>" for k, words, shown in d["symbols"]) + "</ul>")
        if d["substituted"]:
            out.append(f'<p class="eg-how-formula">= {esc(d["substituted"])} = {esc(d["shown"])}</p>')
        if d["method"]:
            out.append(f"<p>{esc(d['method'])}</p>")
        if d["sources"]:
            out.append('<p class="eg-how-sources">Source' + ("s" if len(d["sources"]) > 1 else "") + ": "
                       + "; ".join(esc(s) for s in d["sources"]) + "</p>")
        if d["parts"]:
            out.append(f'<ul class="{CLASS.how_parts}">' + "".join(
                self.part(p, depth + 1) if whole else f"<li>{self.head(p, depth + 1, '')}</li>" for p in d["parts"])
                + "</ul>")
        return "".join(out)

    def part(self, d: dict, depth: int) -> str:
        if _key(d) in self.first:
            return f"<li>{self.head(d, depth, '')}{self.seen(d)}</li>"
        self.parts += 1
        anchor = f"how-p{self.parts}"
        return f'<li id="{esc(anchor)}">{self.head(d, depth, "")}{self.body(d, depth, anchor)}</li>'

    def number(self, n) -> str:
        """A number's entry, headed by the number as the prose shows it."""
        self.entry += 1
        anchor = entry_id(n.id)
        rest = self.seen(n.how) if _key(n.how) in self.first else self.body(n.how, 0, anchor)
        return f'<li id="{esc(anchor)}">{self.head(n.how, 0, n.default)}{rest}</li>'


def card(d: dict) -> str:
    """A number's card (the loader's, assets/loader/how.js): its derivation's head and body as its
    entry writes them, each part by its head alone (a part's own derivation is in the entry). `d`
    is `Derivation.to_json(whole=False)`, or a template of many (compute/holes.py), whose marks
    pass through as text for the loader to fill."""
    writer = _Writer()
    return writer.head(d, 0, "") + writer.body(d, 0, "", whole=False)


# Where the finished page gets the section's list (`entries`): like a figure's picture and tables
# (render/blocks.finished_parts), it reaches the page after Markdown and the search index, neither
# of which has anything to do with its thousands of elements (the list is kept out of the index).
PLACEHOLDER = "<!--eg-how-entries-->"


def section(numbers: Iterable) -> str:
    """The section's Markdown (a heading, a sentence and the placeholder of its list: `entries`), or
    "" for a page with no computed number. `numbers` are the page's NumberResults in page order."""
    if not any(n.how for n in numbers):
        return ""
    return (f"## {HEADING}\n\n"
            f"<p>Each number above is computed when the site is built, at the page's starting settings; "
            f"this is how, with the values it uses and where they come from. A derivation is written "
            f"out where it first comes, and linked to where it comes again.</p>\n\n{PLACEHOLDER}\n")


def entries(numbers: Iterable) -> str:
    """The section's list: an entry for each number in page order (a phrase has none)."""
    writer = _Writer()
    shown = [writer.number(n) for n in numbers if n.how]
    if not shown:
        return ""
    # Folded (issue 39): thousands of elements, which a page's load no longer styles or lays out
    # until a reader opens them. A link to an entry opens the list as it lands (the theme's
    # bundle opens the details element the address's hash points into, and the browser does for
    # a followed link or a find in page), and print shows it open (explainer.css).
    summary = "The derivation of the number" if len(shown) == 1 else f"The derivation of each of the {len(shown)} numbers"
    return (f'<details class="{CLASS.how_all}" {SEARCH_EXCLUDE}><summary>{summary}</summary>'
            f'<ol class="eg-how-list">{"".join(shown)}</ol></details>')
