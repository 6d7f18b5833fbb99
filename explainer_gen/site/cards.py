"""Each page's share card, collected with the rest of the site (issue 38): its PNG, made through
the store (computed once per title, site name, figure picture, font and code), added to the
site's files, and what the page's head tags say (render/share.py composes both).

A card needs absolute URLs, so a site without `site_url` gets none. A title with a character
the site's font lacks fails the build at the title's line, as chart text does.
"""
from __future__ import annotations

from typing import Callable, Mapping

from models.yamlsource import SourceError

from ..compute.pages import PageBuild
from ..render import share
from ..sources.crossref import CrossRefs
from ..sources.markdown import split_front_matter
from .model import ASSETS, Generated, PageSource
from .store import Store

CARD_DIR = f"{ASSETS}/card"


def title_line(text: str) -> int:
    """The line of a page's title: its front matter's `title:`, else its first `# ` heading, else 1
    (the title then comes from the file's name)."""
    front, offset = split_front_matter(text)
    lines = text.split("\n")
    if front is not None:
        for i, line in enumerate(lines[:offset]):
            if line.startswith("title:") and line[len("title:"):].strip():
                return i + 1
    return next((i + 1 for i, line in enumerate(lines) if i >= offset and line.startswith("# ")), 1)


def check_drawable(title: str, where: str, line: int) -> None:
    """SourceError at `where:line` naming the characters of `title` the site's font lacks."""
    missing = share.undrawable(title)
    if missing:
        raise SourceError(where, line, f"the title {title!r} has characters the site's font cannot draw on the "
                          f"page's share card: {', '.join(repr(c) for c in missing)}; write the title without "
                          "them, or add them to tools/make_chart_font.py and run it")


def collect_cards(store: Store, pages: list[PageSource], refs: CrossRefs, computed: Mapping[str, PageBuild],
                  site_name: str, site_url: str | None,
                  add: Callable[[str, Generated], str]) -> dict[str, share.Card]:
    """Every page's card, its PNG added to the site with `add`; SourceError for a title (or a
    site name) the font cannot draw."""
    if not site_url:
        return {}
    check_drawable(site_name, "mkdocs.yml", 1)
    cards = {}
    for p in pages:
        title = refs.pages[p.src_uri].title
        check_drawable(title, p.path, title_line(p.text))
        build = computed.get(p.src_uri)
        first = build.figures[0] if build is not None and build.figures else None
        figure = share.Figure(first.artifacts.svg, *first.artifacts.image_size) if first is not None else None
        png = store.share_card(title, site_name, figure)
        image = add(f"{CARD_DIR}/{share.png_name(png)}", png)
        alt = (f"{title}, beside the page's first figure: {first.request.caption}" if first is not None
               else title if title == site_name or not site_name else f"{title}, on {site_name}")
        cards[p.src_uri] = share.Card(title, p.url, image, alt, "website" if p.url in ("", "/", "./") else "article")
    return cards
