"""Cross-references written into pages: citations and their reference list, glossary terms with
their cards, the glossary page, "Read next", the home page's list of explainers and the feed.

Everything here was checked when the site was collected (`sources.crossref.CrossRefs.collect`,
with the citations, glossary and links it reads), so these functions only write what is known to
be right. URLs arrive as plain strings: `urls` maps a page's src_uri to its site URL, and `rel`
makes a site URL relative to the page being written.
"""
from __future__ import annotations

import re
from typing import Callable

from models.yamlsource import SourceError

from ..names import CLASS
from ..sources import links
from ..sources.bibliography import Bibliography, Paper, author_list_short
from ..sources.citations import Citation, find_citations
from ..sources.crossref import BIB_PATH, CrossRefs, skip_lines
from ..sources.glossary import Glossary, Term, find_markers
from ..sources.links import PageInfo, ReadNext
from .feed import ATOM_PATH, atom_xml, feed_markdown
from .markup import card, esc, md_safe


# -- a whole page ---------------------------------------------------------------------------------

def page_markdown(refs: CrossRefs, src_uri: str, markdown: str, urls: dict[str, str], rel: Callable[[str], str],
                  path: str, before_refs: str = "") -> str:
    """The page's Markdown with its citations, glossary markers and placeholders written out, and
    `before_refs` (the numbers' derivations, render/how.py), its references and "Read next"
    lists at the end."""
    info = refs.pages.get(src_uri)
    if info is None:
        return markdown.rstrip("\n") + "\n\n" + before_refs if before_refs else markdown
    href = _href(refs, urls, rel)
    skip = skip_lines(markdown.split("\n"), path)
    markdown = substitute_citations(markdown, skip, refs.bib, path)
    if refs.glossary_page:
        markdown = substitute_markers(markdown, skip, refs.glossary,
                                      lambda t: href(refs.glossary_page, t.anchor), path)
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        m = links.PLACEHOLDER.match(line) if i not in skip else None
        if m:
            lines[i] = _placeholder(refs, m.group("name"), href, rel)
    markdown = "\n".join(lines)
    tail = [before_refs] if before_refs else []
    if info.cites:
        feed = (lambda key: href(refs.feed_page, key)) if refs.feed_page else (lambda key: None)
        tail += ["## References", "", references_html(info.cites, refs.bib, feed), ""]
    if info.read_next:
        tail += ["## Read next", "", read_next_html(info.read_next, refs.pages, refs.bib, href), ""]
    if tail:
        markdown = markdown.rstrip("\n") + "\n\n" + "\n".join(tail)
    return markdown


def page_html(refs: CrossRefs, src_uri: str, html: str, urls: dict[str, str], rel: Callable[[str], str]) -> str:
    """Link the first use of each glossary term on an explainer."""
    info = refs.pages.get(src_uri)
    if info is None or not info.is_explainer or not refs.glossary_page or src_uri == refs.glossary_page:
        return html
    href = _href(refs, urls, rel)
    return autolink_html(html, refs.glossary, lambda t: href(refs.glossary_page, t.anchor))


def atom(refs: CrossRefs, site_name: str, site_url: str | None, urls: dict[str, str]) -> str:
    """The feed of papers as Atom."""
    feed_url = urls.get(refs.feed_page, "") if refs.feed_page else ""
    titles = {k: [("", refs.pages[u].title) for u in v] for k, v in refs.cited_in.items()}
    return atom_xml(refs.bib, site_name, site_url, feed_url, titles)


def _href(refs: CrossRefs, urls: dict[str, str], rel: Callable[[str], str]) -> Callable[[str, str], str]:
    def href(src_uri: str, anchor: str = "") -> str:
        if src_uri == "@feed":
            src_uri = refs.feed_page
        return rel(urls[src_uri]) + (f"#{anchor}" if anchor else "")
    return href


def _placeholder(refs: CrossRefs, name: str, href, rel) -> str:
    if name == "feed":
        cited = {k: [(href(u), refs.pages[u].title) for u in v] for k, v in refs.cited_in.items()}
        return feed_markdown(refs.bib, cited, rel(ATOM_PATH), rel(BIB_PATH) if len(refs.bib) else None)
    if name == "glossary":
        return glossary_markdown(refs.glossary)
    return "\n" + explainers_html(refs.explainers, href) + "\n"


# -- citations ------------------------------------------------------------------------------------

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


# -- glossary terms -----------------------------------------------------------------------------

def term_html(term: Term, shown_html: str, href: str, card_id: str, markdown: bool) -> str:
    """A term linked to its glossary entry, with its definition on hover and focus."""
    text = md_safe if markdown else esc
    link = (f'<a class="eg-term-link" href="{esc(href)}" data-eg-term="{esc(term.anchor)}" '
            f'aria-describedby="{esc(card_id)}">{shown_html}</a>')
    return card("term", f'<strong>{text(term.heading)}</strong>: {text(term.definition)}', link, card_id)


def substitute_markers(markdown: str, skip: set[int], glossary: Glossary, href: Callable[[Term], str],
                       path: str) -> str:
    """Replace each `[[...]]` in the Markdown MkDocs hands over with its linked term."""
    lines = markdown.split("\n")
    markers = list(find_markers(lines, skip))
    for n, marker in reversed(list(enumerate(markers))):
        term = glossary.lookup(marker.name)
        if term is None:  # added after the checks ran, by another plugin
            raise SourceError(path, marker.line, f"unknown glossary term {marker.name!r}")
        i = marker.line - 1
        html_ = term_html(term, md_safe(marker.shown), href(term), f"eg-def-m{n + 1}", markdown=True)
        lines[i] = lines[i][:marker.start] + html_ + lines[i][marker.end:]
    return "\n".join(lines)


_TOKEN = re.compile(r"<!--.*?-->|<[^>]*>", re.S)


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
         "track", "wbr"}


# Elements whose text is never auto-linked.
_SKIP_TAGS = {"a", "code", "pre", "kbd", "samp", "script", "style", "svg", "math", "button", "select",
              "option", "textarea", "label", "summary", "figure", "figcaption", "sup", "abbr", "dt",
              "h1", "h2", "h3", "h4", "h5", "h6", "nav", "caption", "th"}


_SKIP_CLASS = re.compile(r"\b(?:eg-[\w-]+|arithmatex|admonition-title|headerlink|footnote)\b")


_TAG = re.compile(r"<\s*(/)?\s*([a-zA-Z][\w-]*)([^>]*?)(/)?\s*>", re.S)


_CLASS = re.compile(r"""(?<![\w-])class\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")


def _classes(attrs: str) -> str:
    """The value of a tag's class attribute ("" without one)."""
    cls = _CLASS.search(attrs)
    return next((g for g in cls.groups() if g is not None), "") if cls else ""


def _close(stack: list[tuple], name: str) -> None:
    """An end tag: the innermost open element of its name closes, with all opened inside it; one
    with no open element of its name closes nothing."""
    for j in range(len(stack) - 1, -1, -1):
        if stack[j][0] == name:
            del stack[j:]
            return


def autolink_html(html_: str, glossary: Glossary, href: Callable[[Term], str]) -> str:
    """Link the first plain use of each term in rendered HTML, where prose may hold a link.

    A term the author already marked counts as used where the marker stands. Text inside
    code, headings, links, figures, captions and our own widgets is left alone.
    """
    if not glossary or glossary.pattern is None:
        return html_
    seen: set[str] = set()
    stack: list[tuple[str, bool]] = []
    out: list[str] = []
    count = 0
    pos = 0
    for m in _TOKEN.finditer(html_):
        text = html_[pos:m.start()]
        if text:
            if any(skip for _, skip in stack):
                out.append(text)
            else:
                linked, count = _link_text(text, glossary, href, seen, count)
                out.append(linked)
        tag = m.group()
        out.append(tag)
        pos = m.end()
        t = _TAG.match(tag)
        if not t:
            continue
        closing, name, attrs, selfclose = t.group(1), t.group(2).lower(), t.group(3), t.group(4)
        if "data-eg-term=" in attrs:
            found = re.search(r'data-eg-term="([^"]*)"', attrs)
            if found:
                seen.add(found.group(1))
        if closing:
            _close(stack, name)
        elif name not in _VOID and not selfclose:
            stack.append((name, name in _SKIP_TAGS or bool(_SKIP_CLASS.search(_classes(attrs)))))
    tail = html_[pos:]
    if tail and not any(skip for _, skip in stack):
        tail, count = _link_text(tail, glossary, href, seen, count)
    out.append(tail)
    return "".join(out)


_REF_CLASS = re.compile(rf"(?<![\w-]){CLASS.ref}(?![\w-])")


def mark_card_blocks(html_: str) -> str:
    """The body's blocks (its top-level elements, the article's children) that hold a citation's
    or a term's card get the class CLASS.holds_card. The page paints each of its other blocks on
    its own (explainer.css), which would hold a card, shown position: fixed, inside its block's box.
    Elements are matched to their end tags by name (`_close`); a script's or a style's text is
    not read for tags."""
    out: list[str] = []
    stack: list[tuple] = []  # the open elements, outermost first
    block, holds, raw = None, False, None  # the open block's start tag (its index in `out`)
    pos = 0
    for m in _TOKEN.finditer(html_):
        out.append(html_[pos:m.start()])
        out.append(m.group())
        pos = m.end()
        t = _TAG.match(m.group())
        if not t:
            continue
        closing, name, attrs, selfclose = t.group(1), t.group(2).lower(), t.group(3), t.group(4)
        if raw is not None and not (closing and name == raw):
            continue
        raw = None
        if closing:
            _close(stack, name)
            if not stack and block is not None:
                if holds:
                    out[block] = _with_class(out[block], CLASS.holds_card)
                block, holds = None, False
            continue
        if stack and _REF_CLASS.search(_classes(attrs)):
            holds = True
        if name in _VOID or selfclose:
            continue
        if not stack:
            block, holds = len(out) - 1, False
        stack.append((name,))
        if name in _RAW_TEXT:
            raw = name
    out.append(html_[pos:])
    return "".join(out)


_RAW_TEXT = {"script", "style"}


def _with_class(tag: str, name: str) -> str:
    """A start tag with one more class (its class attribute quoted, if it was not)."""
    cls = _CLASS.search(tag)
    if cls is None:
        return tag[:-1].rstrip("/").rstrip() + f' class="{name}"' + (" />" if tag.rstrip().endswith("/>") else ">")
    k = next(k for k in (1, 2, 3) if cls.group(k) is not None)
    if k == 3:
        return tag[:cls.start()] + f'class="{name} {cls.group(3)}"' + tag[cls.end():]
    return tag[:cls.start(k)] + name + " " + tag[cls.start(k):]


def _link_text(text: str, glossary: Glossary, href, seen: set[str], count: int) -> tuple[str, int]:
    pieces, last = [], 0
    for m in glossary.pattern.finditer(text):
        term = glossary.lookup(m.group())
        if term is None or term.anchor in seen:
            continue
        seen.add(term.anchor)
        count += 1
        pieces.append(text[last:m.start()])
        pieces.append(term_html(term, m.group(), href(term), f"eg-def-a{count}", markdown=False))
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces), count


def glossary_markdown(glossary: Glossary) -> str:
    """The glossary page's body: one heading per term (so search finds it), then its definition."""
    out = []
    for t in glossary.terms:
        out += [f"## {md_safe(t.heading)} {{ #{t.anchor} }}", "",
                f'<div class="eg-definition" data-eg-term-entry="{esc(t.anchor)}"><p>{esc(t.definition)}</p>'
                + (f'<p class="eg-aliases">Also written: {esc(", ".join(t.aliases))}</p>' if t.aliases else "")
                + "</div>", ""]
    return "\n".join(out)


# -- links between pages -------------------------------------------------------------------------

# Read next groups, always in this order whatever the order in front matter: the explainers
# that continue the argument, then the papers, then any other page (such as the glossary).
READ_NEXT_GROUPS = (("explainers", "Explainers"), ("papers", "From the feed"), ("pages", "Elsewhere on the site"))


def read_next_kind(item: ReadNext, pages: dict[str, PageInfo]) -> str:
    if item.is_paper:
        return "papers"
    return "explainers" if pages[item.target].is_explainer else "pages"


def read_next_html(items: list[ReadNext], pages: dict[str, PageInfo], bib: Bibliography,
                   href: Callable[[str, str], str]) -> str:
    """Groups by kind, as in READ_NEXT_GROUPS; within a group, the order of the front matter.

    Each entry shows its title and the author's `why`, else the target page's description or,
    for a paper, its authors, year and note. `href(src_uri, anchor)` gives a page-relative
    URL; for papers the src_uri is "@feed".
    """
    def entry(r: ReadNext) -> str:
        if r.is_paper:
            paper = bib[r.target]
            link, title = href("@feed", r.target), paper.title
            text = f"{author_list_short(paper.surnames)}, {paper.year}. {r.why or paper.note}"
        else:
            link, title, text = href(r.target, ""), pages[r.target].title, r.why or pages[r.target].description
        return (f'<li><a href="{esc(link)}">{esc(title)}</a>' + (f"<p>{esc(text)}</p>" if text else "")
                + "</li>")

    groups = []
    for kind, label in READ_NEXT_GROUPS:
        members = [r for r in items if read_next_kind(r, pages) == kind]
        if members:
            groups.append(f'<li class="eg-read-next-group" data-eg-kind="{kind}">'
                          f'<span class="eg-read-next-kind">{esc(label)}</span>'
                          f'<ul>{"".join(entry(r) for r in members)}</ul></li>')
    return f'<ul class="eg-read-next">{"".join(groups)}</ul>'


def explainers_html(pages: list[PageInfo], href: Callable[[str, str], str]) -> str:
    """The home page's list of explainers with their descriptions."""
    lis = "".join(f'<li><a href="{esc(href(p.src_uri, ""))}">{esc(p.title)}</a>'
                  + (f'<p>{esc(p.description)}</p>' if p.description else "") + "</li>" for p in pages)
    return f'<ul class="eg-explainers">{lis}</ul>'
