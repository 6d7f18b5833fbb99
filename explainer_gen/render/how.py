"""The section "How the numbers are computed": each computed number's derivation at the page's
default state, which every such number in the prose links to (issue 37). Plain HTML, so it reads
without JavaScript and in print; the loader leaves it as built."""
from __future__ import annotations

from typing import Iterable

from .markup import SEARCH_EXCLUDE, md_safe as esc

HEADING = "How the numbers are computed"
ANCHOR = "how-the-numbers-are-computed"  # what the heading's slug is (MkDocs' toc, Zensical alike)


def entry_id(number_id: str) -> str:
    return f"how-{number_id}"


def _derivation(d: dict, depth: int = 0, shown: str = "") -> str:
    """One derivation as HTML; `shown`: the number as the prose shows it (its own format), which
    heads the entry in place of the derivation's three-figure rendering."""
    kind = "" if d["kind"] == "combination" else f' <span class="eg-how-kind">({esc(d["kind"])})</span>'
    name = f'<code>{esc(d["name"])}</code> ' if d.get("name") and depth else ""
    head = shown or d["shown"]
    out = [f'<p>{name}{esc(d["quantity"])}: <strong>{esc(head)}</strong>{kind}</p>']
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
        out.append('<ul class="eg-how-parts">' + "".join(f"<li>{_derivation(p, depth + 1)}</li>" for p in d["parts"])
                   + "</ul>")
    return "".join(out)


def section(numbers: Iterable) -> str:
    """The section's Markdown (a heading, then an HTML list), or "" for a page with no computed
    number. `numbers` are the page's NumberResults in page order; a phrase has no entry."""
    entries = [n for n in numbers if n.how]
    if not entries:
        return ""
    items = "".join(f'<li id="{esc(entry_id(n.id))}">{_derivation(n.how, shown=n.default)}</li>' for n in entries)
    return (f"## {HEADING}\n\n"
            f"<p>Each number above is computed when the site is built, at the page's starting settings; "
            f"this is how, with the values it uses and where they come from.</p>\n\n"
            f'<ol class="eg-how-list" {SEARCH_EXCLUDE}>{items}</ol>\n')
