"""In Chromium: no page shifts as it loads or scrolls sideways, and a citation or glossary card
stays in the window.

Issue 39: the theme's palette switch, drawn in a first frame before the rest of the header had
arrived, moved when the search did: a layout shift on every page. Each page load here counts
every shift no input caused (SHIFTS), on every screen and both hosts, and there must be none.

Issue 11: hidden cards used to be laid out past the right edge of the text column, so two
pages were wider than a 1280 px window. Every built page is loaded on a desktop and on a
phone; every card is shown by the pointer (with its link in the middle of the window) and by the
keyboard (pressing Tab through the article, as a reader would, which scrolls each link just
into view at the bottom edge), and must lie inside the window, on top, without widening the
page. The desktop checks run twice: with CSS
anchor positioning, where the card sits against its link, and with it taken out of the style
sheet, as in a browser without it, where the card docks to the bottom of the window.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import PAINTED, route_fetch, tab_to_each

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

DESKTOP, PHONE = (1280, 900), (390, 844)
MAX_TABS = 500

WIDTHS = """() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
                  inner: innerWidth})"""

# The card of a link, where it is on screen, and whether it is on top of whatever it covers, as
# drawn once the page has come to rest: Chromium places an anchored card (and picks its fallback,
# above the link or flipped) when it renders the frame after its link moved, so while a scroll or
# a layout shift is still moving the link, the card trails it by a frame. Measured once the link
# has stayed put over two frames running (the same place at three frames, at most 120 frames): the
# card has then been placed, in the second, against where the link rests, as a reader sees it. A
# card measured too early fails and is measured again (`assert_card_settles_inside`).
CARD = """async a => {
  const frame = () => new Promise(r => requestAnimationFrame(r));
  const where = () => { const l = a.getBoundingClientRect(); return [l.left, l.top, scrollX, scrollY].join(); };
  let last = where(), still = 0;
  for (let i = 0; i < 120 && still < 2; i++) {
    await frame();
    const now = where();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  const card = document.getElementById(a.getAttribute('aria-describedby'));
  const r = card.getBoundingClientRect(), l = a.getBoundingClientRect(), s = getComputedStyle(card);
  const hit = r.width && r.height ? document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2) : null;
  return {text: a.textContent, id: card.id, display: s.display, visibility: s.visibility, opacity: +s.opacity,
          left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height,
          link: {left: l.left, right: l.right, top: l.top, bottom: l.bottom},
          onTop: !!hit && card.contains(hit),
          width_: innerWidth, height_: innerHeight, client: document.documentElement.clientWidth,
          scroll: document.documentElement.scrollWidth};
}"""


# Scroll a link to the middle of the window; the middle of its first line.
POINT_AT = """a => {
  a.scrollIntoView({block: 'center'});
  const r = a.getClientRects()[0];
  return [(r.left + r.right) / 2, (r.top + r.bottom) / 2];
}"""


def built_pages(site: Path) -> list[str]:
    """Every page MkDocs wrote, as URL paths relative to the site root."""
    out = []
    for f in sorted(site.rglob("*.html")):
        rel = f.relative_to(site).as_posix()
        if rel.startswith("assets/"):
            continue
        out.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return out


def pages_with_cards(site: Path) -> list[str]:
    return [u for u in built_pages(site)
            if 'class="eg-card"' in (site / (u + "index.html" if u.endswith("/") or not u else u)).read_text()]


def without_anchor_positioning(css: str) -> tuple[str, int]:
    """The style sheet with every @supports block that uses anchor positioning removed."""
    out, removed, i = [], 0, 0
    for m in re.finditer(r"@supports[^{]*\{", css):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        if "anchor" in css[m.start():j]:
            out.append(css[i:m.start()])
            i, removed = j, removed + 1
    return "".join(out) + css[i:], removed


# Every layout shift of the page that no input of the reader's caused, from the start of its load,
# with what moved (the Layout Instability API, as Lighthouse's CLS counts them).
SHIFTS = """window.__egShifts = [];
new PerformanceObserver(list => { for (const e of list.getEntries()) if (!e.hadRecentInput) __egShifts.push({
  value: e.value, at: Math.round(e.startTime), moved: e.sources.map(s => s.node && s.node.nodeType === 1
    ? s.node.tagName.toLowerCase() + '.' + [...s.node.classList].join('.') : String(s.node)) }); })
  .observe({type: 'layout-shift', buffered: true});"""
SHIFTS_SO_FAR = "async () => { await (PAINTED)(); return window.__egShifts; }".replace("PAINTED", PAINTED)


@pytest.fixture(params=["desktop", "desktop-without-anchors", "phone"])
def screen(request, browser):
    width, height = PHONE if request.param == "phone" else DESKTOP
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(SHIFTS)
    pg = context.new_page()
    pg.anchored = request.param == "desktop"
    pg.stripped = None   # how many blocks were taken out of the style sheet, when asked to
    if request.param == "desktop-without-anchors":
        def strip(route):
            response = route_fetch(route)
            css, pg.stripped = without_anchor_positioning(response.text())
            route.fulfill(response=response, body=css)
        pg.stripped = 0
        pg.route(re.compile(r".*/explainer\.css(\?.*)?$"), strip)
    yield pg
    context.close()


def load(pg, url: str) -> None:
    """Load the page; nothing on it moves while it loads and its fonts arrive (no layout shift,
    counted to two frames after both)."""
    pg.goto(url, wait_until="load")
    pg.evaluate("() => document.fonts.ready.then(() => true)")
    assert pg.stripped is None or pg.stripped > 0, "the style sheet has no anchor positioning to take out"
    shifts = pg.evaluate(SHIFTS_SO_FAR)
    assert shifts == [], f"{url}: layout shifts while the page loads: {shifts}"


# The article's blocks are painted each on its own (explainer.css: paint containment), which must
# change nothing of where anything is: every element's box in the article, as laid out, then with
# the containment taken off (a style added for the measure and removed after), and how many
# blocks are contained. Contained, a block's children's margins stop at its edge: with wrapper
# divs contained too, 656 of the batching page's 1,729 boxes moved, which this measure caught.
# With it off, the page must not scroll sideways either: a clip would hide a block that overflows.
ARTICLE_BOXES = """() => [...document.querySelectorAll('article.md-typeset *')].map(e => {
  const r = e.getBoundingClientRect();
  return [Math.round(r.left * 4), Math.round((r.top + scrollY) * 4), Math.round(r.width * 4), Math.round(r.height * 4)];
})"""
CONTAINED = """() => { const blocks = [...document.querySelectorAll('article.md-typeset > *')];
  const shown = blocks.filter(b => getComputedStyle(b).display !== 'none');
  return {blocks: shown.length, contained: shown.filter(b => getComputedStyle(b).contain.includes('paint')).length}; }"""
UNCONTAIN = """on => { let s = document.getElementById('eg-test-uncontain');
  if (on && !s) { s = document.createElement('style'); s.id = 'eg-test-uncontain';
    s.textContent = 'article.md-typeset > * { contain: none !important; }'; document.head.append(s); }
  if (!on && s) s.remove(); }"""


def contained_blocks(pg, url: str) -> int:
    """The article's blocks painted on their own, laid out exactly as they are without it: returns
    how many are."""
    counted = pg.evaluate(CONTAINED)
    before = pg.evaluate(ARTICLE_BOXES)
    pg.evaluate(UNCONTAIN, True)
    try:
        after = pg.evaluate(ARTICLE_BOXES)
        assert pg.evaluate(CONTAINED)["contained"] == 0, url
        assert_no_sideways_scroll(pg, f"{url} (blocks not contained)")
    finally:
        pg.evaluate(UNCONTAIN, False)
    moved = sum(a != b for a, b in zip(before, after))
    assert len(before) == len(after) and moved == 0, f"{url}: {moved} of {len(before)} boxes move with the blocks' paint containment"
    return counted["contained"]


def assert_no_sideways_scroll(pg, where: str) -> None:
    w = pg.evaluate(WIDTHS)
    assert w["scroll"] <= w["client"] <= w["inner"], f"{where}: {w}"


def assert_card_inside(state: dict, where: str, anchored: bool) -> None:
    where = f"{where}, card of {state['text']!r}"
    assert state["display"] != "none" and state["visibility"] == "visible" and state["opacity"] == 1, (where, state)
    assert state["width"] > 0 and state["height"] > 0, (where, state)
    assert state["left"] >= 0 and state["right"] <= state["client"], (where, state)
    assert state["top"] >= 0 and state["bottom"] <= state["height_"], (where, state)
    assert state["scroll"] <= state["client"], (where, state)
    assert state["onTop"], (where, "the card is covered", state)
    if anchored:
        # Next to its link: touching its bottom or top edge, and overlapping it sideways.
        link = state["link"]
        assert abs(state["top"] - link["bottom"]) < 2 or abs(state["bottom"] - link["top"]) < 2, (where, state)
        assert state["left"] < link["right"] and state["right"] > link["left"], (where, state)


def assert_card_settles_inside(link, where: str, anchored: bool, tries: int = 15) -> None:
    """The card of `link` comes to lie inside the window: measured once the page is at rest and
    again, up to `tries` times (about a second at 60 frames a second), while Chromium may still be
    moving it, as it does on a loaded machine for a frame or more after a scroll. A card that is
    still outside after that is what a reader would see."""
    for attempt in range(tries):
        try:
            assert_card_inside(link.evaluate(CARD), where, anchored)
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def cards_shown_by_the_pointer(screen, url: str) -> int:
    """Every card of the loaded page, shown by the pointer with its link in the middle of the
    window, settles inside the window; returns how many were checked."""
    links = screen.locator(".eg-ref > a").element_handles()  # the page stays: its links are found once
    for link in links:
        screen.mouse.move(0, 0)
        x, y = link.evaluate(POINT_AT)
        screen.mouse.move(x, y)
        assert_card_settles_inside(link, url, screen.anchored)
    screen.mouse.move(0, 0)  # over the header: no card left shown by the pointer
    return len(links)


def cards_shown_by_the_keyboard(screen, url: str) -> None:
    """Tab through the loaded page's article: every card settles inside the window, and Tab
    reaches every card (helpers.tab_to_each)."""
    handles = screen.locator(".eg-ref > a").element_handles()
    links = screen.locator(".eg-ref > a").evaluate_all("as => as.map(a => a.getAttribute('aria-describedby'))")
    # Start from the top of the article, past the header and the sidebars.
    screen.evaluate("() => { const a = document.querySelector('article'); a.tabIndex = -1; a.focus(); }")
    seen: set[str] = set()
    for index in tab_to_each(screen, ".eg-ref > a", MAX_TABS):
        assert_card_settles_inside(handles[index], f"{url} (keyboard)", screen.anchored)
        seen.add(links[index])
        if seen == set(links):
            break
    assert seen == set(links), f"{url}: Tab never reached {sorted(set(links) - seen)}"


def test_no_page_scrolls_sideways_and_every_card_stays_in_the_window(site, base_url, screen):
    """One load of every page on each screen: nothing on it shifts as it loads, it does not
    scroll sideways, and its blocks painted on their own are laid out as without it; then, on a
    page with cards, each card shown by the pointer, and then each shown by the keyboard, stays
    in the window (and on top, which a card held inside its block's box would not be)."""
    checked, with_cards, contained = 0, set(pages_with_cards(site)), 0
    assert with_cards
    for url in built_pages(site):
        load(screen, base_url + url)
        assert_no_sideways_scroll(screen, url)
        contained += contained_blocks(screen, url)
        if url in with_cards:
            checked += cards_shown_by_the_pointer(screen, url)
            cards_shown_by_the_keyboard(screen, url)
    assert checked >= 20
    assert contained >= 200  # the blocks of every page, but for the wrapper divs


def test_stripping_anchor_positioning_leaves_the_rest():
    css = "a{b:c}@supports (x:y){@media (z){.q{anchor-name:--a}}}.r{s:t}@supports (u:v){.w{x:y}}"
    assert without_anchor_positioning(css) == ("a{b:c}.r{s:t}@supports (u:v){.w{x:y}}", 1)
