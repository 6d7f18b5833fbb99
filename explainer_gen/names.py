"""The names by which the loader finds what the page's HTML holds: classes and data attributes.

This module is their one home, under every layer that names them. `render/blocks.py` (and
`render/markup.py`, `render/refs.py`, `site/render.py`, `theme.py`) write them into the page; `client/contract.facts`
hands the same mapping to the loader, which the build writes at the
head of the loader's file (`client/loader.py`), so the loader never spells one out itself.
`assets/explainer.css` styles some of them too, by the same names.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Classes:
    """Class names the page's HTML, its style sheet and the loader share (keys as the loader reads
    them: `FACTS.classes.view`)."""
    page: str = "eg-page"              # the page root: state URL, bundle URL, switch, page sliders
    figure: str = "eg-figure"          # a figure block
    view: str = "eg-view"              # where the live Vega view goes
    static: str = "eg-static"          # the static picture it replaces
    pictures: str = "eg-pictures"      # the static pictures, hidden once the figure is live
    picture: str = "eg-picture"        # the frame that holds one of them
    wide: str = "eg-wide"              # on a frame: its picture is laid out for a desktop's column
    narrow: str = "eg-narrow"          # on a frame: its picture is laid out for a phone's (compute/layout.py)
    live: str = "eg-live"              # set on a figure once its live view is in place
    desc: str = "eg-desc"              # a figure's text description, kept current by the loader
    controls: str = "eg-controls"      # a group of range inputs
    switch_note: str = "eg-switch-note"  # why some switch choices are greyed out
    announce: str = "eg-announce"      # the polite live region
    card: str = "eg-card"              # a hover card, left out of what is announced
    ref: str = "eg-ref"                # a citation's or a term's link with its card (render/markup.py card)
    how: str = "eg-how"                # a computed number's link to its entry in "How the numbers are computed"
    how_same: str = "eg-how-same"      # in an entry: "made as in entry N", a link to where it is written out
    how_parts: str = "eg-how-parts"    # in an entry: the derivations of the terms it combines
    how_card: str = "eg-how-card"      # the one card of a page's numbers (the loader makes it; also its id)
    how_open: str = "eg-how-open"      # on the number whose card is open: what the card is placed beside
    how_all: str = "eg-how-all"        # the folded list of entries (a details element; print shows it open)
    holds_card: str = "eg-holds-card"  # on a block of the article that holds a citation's or a term's card
    how_host: str = "eg-how-host"      # on the block of the article that holds the open number card (the loader sets it)
    exports: str = "eg-exports"        # a figure's buttons that save or share it (the loader makes them)
    exports_note: str = "eg-exports-note"  # what the last of those buttons did ("Link copied")


@dataclass(frozen=True)
class Attributes:
    """Data attributes the loader reads (`FACTS.attributes.param`)."""
    page: str = "data-eg-page"         # on the page root: the page state's URL
    bundle: str = "data-eg-bundle"     # on the page root: the Vega bundle's URL
    figure: str = "data-eg-figure"     # on a figure: its payload's URL
    param: str = "data-eg-param"       # on a range input: the slider's name
    switch: str = "data-eg-switch"     # on a select: the switch field
    default: str = "data-eg-default"   # on a select: the page's default choice
    num: str = "data-eg-num"           # on an inline number: its id in the page state


CLASS = Classes()
ATTR = Attributes()


def names() -> dict[str, dict[str, str]]:
    """Both, as the loader receives them."""
    return {"classes": asdict(CLASS), "attributes": asdict(ATTR)}
