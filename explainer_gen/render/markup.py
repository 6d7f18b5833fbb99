"""The one escape helper (`esc`) for every module that writes HTML, and small pieces shared by
citations, glossary terms and link lists.

Bibliography fields, definitions and page titles are data, never markup: everything that
lands in a page goes through `esc` (HTML text and attributes) and, when the HTML is placed
inside Markdown prose, through `md_safe` as well, so Markdown cannot read emphasis, links,
inline numbers or maths into it.
"""
from __future__ import annotations

import html
import re

from ..names import CLASS

esc = lambda s: html.escape(str(s), quote=True)  # noqa: E731

# Characters Markdown (and its extensions: arithmatex, inline numbers, tables) would act on.
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]$~^|#+!:]")


def md_safe(s: str) -> str:
    """HTML-escaped text in which no character can start Markdown syntax."""
    parts = re.split(f"({_MD_SPECIAL.pattern})", str(s))
    return "".join(f"&#{ord(p)};" if i % 2 else esc(p) for i, p in enumerate(parts))


def card(kind: str, text_html: str, link_html: str, card_id: str) -> str:
    """A focusable link with a card that shows on hover and on keyboard focus (CSS only).

    `link_html` is an <a> that already carries aria-describedby=`card_id`; `text_html` is
    the card's escaped content. The wrapper is what :hover and :focus-within style.

    The card's text is kept out of the site's search index (`SEARCH_EXCLUDE`): the glossary and
    the feed are its home, and in the index it would run into the sentence around the link.
    """
    return (f'<span class="{CLASS.ref} eg-{kind}">{link_html}'
            f'<span class="{CLASS.card}" role="tooltip" id="{esc(card_id)}" {SEARCH_EXCLUDE}>{text_html}</span></span>')


# What keeps an element and its text out of the theme's search index (Material's and Zensical's
# search both honour it): the controls, the data tables and the cards, which are no prose to find.
SEARCH_EXCLUDE = "data-search-exclude"
