"""Share cards (issue 38, "A shared link shows nothing"): every page of both hosts' builds carries
the Open Graph and Twitter card tags, with absolute URLs under the configured site_url, and its
card image is a 1200 x 630 PNG that is not blank and has the page's title drawn on it. The checks
are fed a blank image, a card without its title and an undrawable title, which must fail them."""
from __future__ import annotations

import functools
import html
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from explainer_gen.render import share
from explainer_gen.site import Memory, PageSource
from explainer_gen.site.cards import check_drawable, title_line
from explainer_gen.sources.markdown import split_front_matter
from helpers import REPO, SITE_ORIGINS, hand_build, scratch_docs, site_pages
from models.yamlsource import SourceError

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

OG = ("og:title", "og:description", "og:type", "og:url", "og:image", "og:image:width", "og:image:height",
      "og:image:alt")
SITE_NAME = re.search(r"^site_name: (.+)$", (REPO / "mkdocs.yml").read_text(), re.M)[1].strip()

# Not blank: the standard deviation of the card's grey levels below its coloured band. A blank or
# one-colour image has exactly 0 there (the PNG is lossless), and so has a card with nothing on it
# but its frame (checked below); the site's name alone, in small type, gives about 6.5.
MIN_SPREAD = 1.0
# The title drawn: pixels of the title's region (the card's left column, above the site's name)
# that differ by more than half the range from the same card composed with an empty title. The
# least a title can add is one stem of a capital at the smallest title size: 0.7 em by 0.1 em.
TITLE_REGION = (slice(share.BAND, share.HEIGHT - share.MARGIN - 2 * share.NAME_SIZE),
                slice(0, share.MARGIN + share.TEXT_COLUMN))
MIN_INK = int(0.7 * share.TITLE_SIZES[-1] * 0.1 * share.TITLE_SIZES[-1])


class _Head(HTMLParser):
    """Every <meta> of the page's <head>: (its property or name, its content), in order."""

    def __init__(self):
        super().__init__()
        self.meta: list[tuple[str, str]] = []
        self.in_head = True

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.in_head = False
        elif tag == "meta" and self.in_head and (a.get("property") or a.get("name")):
            self.meta.append((a.get("property") or a.get("name"), a.get("content") or ""))


def head_meta(page_html: str) -> list[tuple[str, str]]:
    parser = _Head()
    parser.feed(page_html)
    return parser.meta


def source_of(path: str) -> Path:
    """The Markdown file a built page comes from ('' is docs/index.md)."""
    folder = REPO / "docs" / path
    return folder / "index.md" if (folder / "index.md").is_file() else REPO / "docs" / (path.rstrip("/") + ".md")


def front_matter(path: Path) -> dict:
    front, _ = split_front_matter(path.read_text())
    return yaml.safe_load(front or "") or {}


def spread(image: Image.Image) -> float:
    """The standard deviation of the grey levels below the card's band."""
    return float(np.asarray(image.convert("L"), np.float64)[share.BAND:].std())


def title_ink(card: Image.Image, untitled: Image.Image) -> int:
    """Pixels of the title's region that differ by more than half the range between the two cards."""
    a, b = (np.asarray(im.convert("RGB"), np.int16)[TITLE_REGION] for im in (card, untitled))
    return int((np.abs(a - b).max(axis=2) > 127).sum())


def first_figure(page_html: str) -> share.Figure | None:
    """The page's first static picture, as the card composes it."""
    m = re.search(r'<svg class="eg-static"[^>]*viewBox="0 0 (\d+) (\d+)"[^>]*>.*?</svg>', page_html, re.S)
    return share.Figure(m[0], int(m[1]), int(m[2])) if m else None


@functools.lru_cache(maxsize=None)
def untitled_card(figure: share.Figure | None) -> Image.Image:
    """The card of a page with this figure, composed in this process with an empty title."""
    return Image.open(io.BytesIO(share.card_png(share.card_svg("", SITE_NAME, figure)))).convert("RGB")


def test_every_page_has_its_card_tags_and_image(site, host):
    site_url = SITE_ORIGINS[host]
    pages = site_pages(site)
    assert "" in pages and "explainers/roofline/" in pages and len(pages) >= 10
    images = set()
    for path in pages:
        page_html = (site / path / "index.html").read_text()
        meta = head_meta(page_html)
        tags = {name: content for name, content in meta if name.startswith(("og:", "twitter:"))}
        # Every tag exactly once, and nothing else of either kind.
        assert sorted(name for name, _ in meta if name.startswith(("og:", "twitter:"))) == sorted(
            OG + ("twitter:card",)), path
        fm = front_matter(source_of(path))
        assert tags["og:title"] == fm["title"], path
        assert tags["og:description"] == dict(meta)["description"] == " ".join(fm["description"].split()), path
        assert tags["og:type"] == ("website" if path == "" else "article"), path
        assert tags["og:url"] == site_url + path, path
        assert tags["og:image"].startswith(site_url + "assets/explainer/card/") and tags["og:image"].endswith(".png")
        assert (tags["og:image:width"], tags["og:image:height"]) == ("1200", "630"), path
        assert tags["twitter:card"] == "summary_large_image", path
        assert fm["title"] in tags["og:image:alt"], path
        image_file = site / tags["og:image"][len(site_url):]
        assert image_file.is_file(), f"{path}: {image_file} is not in the site"
        images.add(image_file)
        with Image.open(image_file) as im:
            assert im.format == "PNG" and im.size == (1200, 630), path
            card = im.convert("RGB")
        assert spread(card) > MIN_SPREAD, f"{path}: the card is blank ({spread(card):.1f})"
        ink = title_ink(card, untitled_card(first_figure(page_html)))
        assert ink >= MIN_INK, f"{path}: no title drawn on its card ({ink} pixels differ)"
    assert len(images) == len(pages)  # a card of its own for every page


def test_the_checks_fail_a_blank_card_and_a_card_without_its_title():
    # Negative controls of the two image checks above, fed what they must refuse.
    assert spread(Image.new("RGB", (1200, 630), "white")) <= MIN_SPREAD
    assert spread(Image.new("RGB", (1200, 630), (31, 111, 235))) <= MIN_SPREAD
    frame = Image.open(io.BytesIO(share.card_png(share.card_svg("", "", None))))
    assert frame.size == (1200, 630) and spread(frame) <= MIN_SPREAD  # band and background only
    assert spread(untitled_card(None)) > MIN_SPREAD  # the site's name alone is not blank
    untitled = untitled_card(None)
    assert title_ink(untitled, untitled) < MIN_INK  # a card without its title
    # A title of one narrow letter is seen.
    one = Image.open(io.BytesIO(share.card_png(share.card_svg("I", SITE_NAME, None)))).convert("RGB")
    assert title_ink(one, untitled) >= MIN_INK


def test_a_long_title_is_wrapped_inside_its_column_and_cut_short_when_it_cannot_fit():
    # A square picture fills its box from the column's far side: nothing may be drawn in the gap.
    square = share.Figure('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
                          '<rect width="10" height="10" class="f-series-1"/></svg>', 10, 10)
    title = "WWWWWWWWW MMMMMMMMM mmm WWWW, wide words in every line of the card's title column"
    size, lines = share.fit_title(title, share.TEXT_COLUMN, 400)
    assert len(lines) > 2 and all(share.metrics("semibold").width(line, size) <= share.TEXT_COLUMN for line in lines)
    card = np.asarray(Image.open(io.BytesIO(share.card_png(share.card_svg(title, SITE_NAME, square)))).convert("L"))
    gap = card[share.BAND:, share.MARGIN + share.TEXT_COLUMN + 1:share.MARGIN + share.TEXT_COLUMN + share.GAP - 1]
    assert (gap == 255).all() and (card[share.BAND:, :share.MARGIN - 4] == 255).all()
    assert title_ink(Image.fromarray(card).convert("RGB"), untitled_card(None)) >= MIN_INK
    size, lines = share.fit_title("word " * 200, share.TEXT_COLUMN, 400)
    assert size == share.TITLE_SIZES[-1] and lines[-1].endswith("…") and len(lines) * size * share.LEADING <= 400


def test_a_title_the_font_cannot_draw_fails_naming_the_file_line_and_characters(tmp_path):
    assert share.undrawable("Two phases, two bottlenecks — 2× faster") == ""
    with pytest.raises(SourceError) as err:
        check_drawable("Speed \U0001F600 and 速度", "docs/fast.md", 2)
    assert err.value.path == "docs/fast.md" and err.value.line == 2
    assert "'\U0001F600', '速', '度'" in str(err.value)
    # Through a build's collect step: the title's line, in front matter or as the heading.
    page = "---\ntitle: Speed \U0001F600\ndescription: x\n---\n\n# Speed\n\nText.\n"
    heading = "Some text.\n\n# Fast \u2603\n"
    assert title_line(page) == 2 and title_line(heading) == 3 and title_line("No title.\n") == 1
    docs = scratch_docs(tmp_path, {"fast.md": page})
    with pytest.raises(SourceError) as err:
        hand_build(tmp_path, docs).collect([PageSource("fast.md", "docs/fast.md", "fast/", page)],
                                           site_name=SITE_NAME, site_url="https://example.github.io/repo/")
    assert (err.value.path, err.value.line) == ("docs/fast.md", 2) and repr("\U0001F600") in err.value.message


def test_cards_follow_a_site_url_with_a_path_and_are_made_once(tmp_path, monkeypatch):
    base = "https://example.github.io/repo/"
    assert share.absolute(base, "explainers/x/") == base + "explainers/x/"
    assert share.absolute(base.rstrip("/"), "/assets/explainer/card/a.png") == base + "assets/explainer/card/a.png"
    assert share.absolute(base, "") == base
    page = "---\ntitle: A page & its <card>\ndescription: What it says.\n---\n\n# A page\n\nText.\n"
    docs = scratch_docs(tmp_path, {"index.md": page, "other/page.md": page})
    sources = [PageSource("index.md", "docs/index.md", "", page),
               PageSource("other/page.md", "docs/other/page.md", "other/page/", page)]
    first = hand_build(tmp_path, docs, Memory(), cache_dir=tmp_path / "cache")
    files = first.collect(sources, site_name=SITE_NAME, site_url=base)
    head = '<html><head><meta name="description" content="What it says."></head><body></body></html>'
    meta = dict(head_meta(first.finish_page("other/page.md", head)))
    assert meta["og:url"] == base + "other/page/" and meta["og:image"].startswith(base + "assets/explainer/card/")
    assert meta["og:title"] == "A page & its <card>" and meta["og:type"] == "article"
    assert dict(head_meta(first.finish_page("index.md", head)))["og:type"] == "website"
    png = files[meta["og:image"][len(base):]]
    assert Image.open(io.BytesIO(png)).size == (1200, 630)
    # The 404 page (no page of the build) gets no card; a site without site_url gets none.
    assert "og:" not in first.finish_page("404.html", head)
    bare = hand_build(tmp_path, docs, Memory(), cache_dir=tmp_path / "bare-cache")
    assert not any("/card/" in p for p in bare.collect(sources, site_name=SITE_NAME, site_url=None))
    assert "og:" not in bare.finish_page("index.md", head)
    # A warm rebuild in a new process reads the card from the disk cache and composes nothing.
    monkeypatch.setattr(share, "card_png", lambda svg: pytest.fail("a card was composed again"))
    again = hand_build(tmp_path, docs, Memory(), cache_dir=tmp_path / "cache")
    assert again.collect(sources, site_name=SITE_NAME, site_url=base) == files
    # A new title is a new card, under a new name.
    monkeypatch.undo()
    edited = [PageSource(s.src_uri, s.path, s.url, s.text.replace("A page &", "The page &")) for s in sources]
    third = hand_build(tmp_path, docs, Memory(), cache_dir=tmp_path / "cache")
    new = third.collect(edited, site_name=SITE_NAME, site_url=base)
    assert {p for p in new if "/card/" in p}.isdisjoint(p for p in files if "/card/" in p)
    assert html.escape("The page & its <card>", quote=True) in third.finish_page("index.md", head)
