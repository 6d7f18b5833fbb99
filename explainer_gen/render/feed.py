"""The feed of papers: its page (Markdown, so search indexes each entry) and an Atom file.

Both come from the bibliography alone plus the "cited in" map the page checks compute.
The Atom file carries no build time: `updated` is the newest entry's date, so two builds of
the same sources give the same bytes.
"""
from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from typing import Callable
from urllib.parse import urljoin

from ..sources.bibliography import Bibliography, Paper
from .markup import esc, md_safe

ATOM_NS = "http://www.w3.org/2005/Atom"
ATOM_PATH = "atom.xml"


def entry_id(key: str) -> str:
    """A stable Atom id for a paper, independent of where the site is hosted."""
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'explainer-gen:paper:' + key)}"


def feed_markdown(bib: Bibliography, cited_in: dict[str, list[tuple[str, str]]], atom_href: str,
                  bib_href: str | None) -> str:
    """One section per paper, newest first. `cited_in[key]` lists (href, page title)."""
    out = [f'<p class="eg-feed-subscribe"><a href="{esc(atom_href)}" type="application/atom+xml">'
           f'Subscribe to the feed (Atom)</a>'
           + (f' · <a href="{esc(bib_href)}">Download the BibTeX</a>' if bib_href else "") + "</p>", ""]
    for paper in bib:
        out += [f"## {md_safe(paper.title)} {{ #{paper.key} }}", "", _entry_html(paper, cited_in.get(paper.key, [])), ""]
    return "\n".join(out)


def _entry_html(paper: Paper, cited: list[tuple[str, str]]) -> str:
    links = " · ".join(f'<a href="{esc(url)}">{esc(label)}</a>' for label, url in paper.links())
    cited_html = (", ".join(f'<a href="{esc(href)}">{esc(title)}</a>' for href, title in cited)
                  if cited else "no explainer yet")
    return (f'<div class="eg-paper" data-eg-paper="{esc(paper.key)}">'
            f'<p class="eg-paper-byline">{esc(paper.author_text)}. <em>{esc(paper.venue)}</em>, '
            f'<time datetime="{paper.date[:7]}">{paper.year}</time>.</p>'
            f'<p class="eg-paper-note">{esc(paper.note)}</p>'
            + (f'<p class="eg-paper-links">{links}</p>' if links else "")
            + f'<p class="eg-paper-cited">Cited in: <span class="eg-cited-in">{cited_html}</span></p></div>')


def atom_xml(bib: Bibliography, site_name: str, site_url: str | None, feed_page_url: str,
             cited_in: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """Atom 1.0: one entry per paper. `feed_page_url` is the feed page's site-relative URL."""
    base = site_url or ""
    absolute: Callable[[str], str] = (lambda path: urljoin(base, path)) if base else (lambda path: path)
    ET.register_namespace("", ATOM_NS)
    q = lambda tag: f"{{{ATOM_NS}}}{tag}"  # noqa: E731
    feed = ET.Element(q("feed"))
    ET.SubElement(feed, q("title")).text = f"{site_name}: papers"
    ET.SubElement(feed, q("subtitle")).text = "Papers the explainers build on, each with a note on why."
    ET.SubElement(feed, q("id")).text = absolute(ATOM_PATH) if base else entry_id("__feed__")
    ET.SubElement(feed, q("updated")).text = _stamp(max((p.date for p in bib), default="1970-01-01"))
    ET.SubElement(feed, q("link"), rel="self", type="application/atom+xml", href=absolute(ATOM_PATH))
    ET.SubElement(feed, q("link"), rel="alternate", type="text/html", href=absolute(feed_page_url))
    ET.SubElement(ET.SubElement(feed, q("author")), q("name")).text = site_name
    ET.SubElement(feed, q("generator")).text = "explainer-gen"
    for paper in bib:
        entry = ET.SubElement(feed, q("entry"))
        ET.SubElement(entry, q("id")).text = entry_id(paper.key)
        ET.SubElement(entry, q("title")).text = paper.title
        ET.SubElement(entry, q("updated")).text = _stamp(paper.date)
        ET.SubElement(entry, q("published")).text = _stamp(paper.date)
        for name in paper.authors:
            ET.SubElement(ET.SubElement(entry, q("author")), q("name")).text = name
        ET.SubElement(entry, q("link"), rel="alternate", type="text/html",
                      href=absolute(feed_page_url + "#" + paper.key))
        for label, url in paper.links():
            ET.SubElement(entry, q("link"), rel="related", href=url, title=label)
        ET.SubElement(entry, q("summary")).text = paper.note
        ET.SubElement(entry, q("content"), type="text").text = (
            paper.reference + "\n\n" + paper.note
            + "".join(f"\nCited in: {title}" for _, title in (cited_in or {}).get(paper.key, [])))
    ET.indent(feed)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(feed, encoding="unicode") + "\n"


def _stamp(date: str) -> str:
    return f"{date}T00:00:00Z"
