"""In Chromium: moving to a citation or a glossary term with the keyboard shows its card.

The cards are plain CSS (:hover and :focus-within), so these tests press Tab through the
page as a keyboard user would and check what is on screen.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

SPEC = "explainers/speculative-decoding/"
MAX_TABS = 400


def tab_to(page, selector: str) -> str:
    """Press Tab until the focused element matches `selector`; return its aria-describedby."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("sel => document.activeElement && document.activeElement.matches(sel)", selector):
            return page.evaluate("() => document.activeElement.getAttribute('aria-describedby')")
    raise AssertionError(f"Tab never reached {selector}")


def card_state(page, card_id: str) -> dict:
    return page.evaluate("""id => {
        const el = document.getElementById(id), s = getComputedStyle(el), r = el.getBoundingClientRect();
        return {visibility: s.visibility, opacity: s.opacity, width: r.width, height: r.height,
                text: el.textContent, bg: s.backgroundColor, role: el.getAttribute('role')};
    }""", card_id)


def shown(state: dict) -> bool:
    return state["visibility"] == "visible" and float(state["opacity"]) == 1 and state["width"] > 0 and state["height"] > 0


def test_keyboard_focus_shows_definition_then_citation_card(page, base_url):
    page.goto(base_url + SPEC)
    page.wait_for_load_state("networkidle")
    first_term = page.locator("a.eg-term-link").first.get_attribute("aria-describedby")
    first_cite = page.locator("a.eg-cite-link").first.get_attribute("aria-describedby")
    assert not shown(card_state(page, first_term)) and not shown(card_state(page, first_cite))

    term_card = tab_to(page, "a.eg-term-link")
    assert term_card == first_term
    state = card_state(page, term_card)
    assert shown(state), state
    assert state["role"] == "tooltip" and ":" in state["text"]

    cite_card = tab_to(page, "a.eg-cite-link")
    assert cite_card == first_cite
    state = card_state(page, cite_card)
    assert shown(state), state
    assert "Leviathan" in state["text"] and "Speculative Decoding" in state["text"]
    # Focus moved on, so the definition is hidden again.
    assert not shown(card_state(page, term_card))
    page.watch.assert_clean()


def test_hover_shows_a_card_and_leaving_hides_it(page, base_url):
    page.goto(base_url + SPEC)
    link = page.locator("a.eg-term-link").first
    card = link.get_attribute("aria-describedby")
    link.hover()
    assert shown(card_state(page, card))
    page.mouse.move(0, 0)
    assert not shown(card_state(page, card))


def test_cards_follow_the_dark_scheme(browser, base_url):
    colours = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)
        pg = context.new_page()
        pg.goto(base_url + SPEC)
        pg.locator("a.eg-cite-link").first.focus()
        card = pg.locator("a.eg-cite-link").first.get_attribute("aria-describedby")
        state = card_state(pg, card)
        assert shown(state)
        colours[scheme] = pg.evaluate("""id => {
            const rgb = getComputedStyle(document.getElementById(id)).backgroundColor.match(/[\\d.]+/g).map(Number);
            return (rgb[0] + rgb[1] + rgb[2]) / 3;
        }""", card)
        context.close()
    assert colours["light"] > 200 and colours["dark"] < 80, colours


def test_feed_and_glossary_pages_are_clean(page, base_url):
    for path in ("feed/", "glossary/"):
        page.goto(base_url + path)
        page.wait_for_load_state("networkidle")
        assert page.locator("h2[id]").count() >= 7
    page.goto(base_url + "glossary/#kv-cache")
    assert page.locator("#kv-cache").is_visible()
    page.watch.assert_clean()


# -- a computed number's card (issue 37) ----------------------------------------------------------

ROOFLINE = "explainers/roofline/"
PROMPT = "a.eg-how:has([data-eg-num='n1'])"  # the prompt length, as the prose shows it (slider 'prompt')
PREFILL = "a.eg-how:has([data-eg-num='n2'])"  # the prefill's time, a closed form over the prompt length

# The open card as a reader gets it: displayed or not, its box, its head, its text, what describes
# the number, and the head of the entry the number links to.
HOW_CARD_STATE = """sel => {
  const c = document.getElementById('eg-how-card'), a = document.querySelector(sel);
  const entry = a && a.hash && document.getElementById(a.hash.slice(1));
  const r = c ? c.getBoundingClientRect() : {};
  const described = a && a.getAttribute('aria-describedby');
  return {shown: !!c && c.previousElementSibling === a && getComputedStyle(c).display !== 'none' && r.height > 0,
          box: [r.left, r.top, r.right, r.bottom], number: a && a.textContent,
          head: c && c.firstElementChild ? c.firstElementChild.textContent : null, text: c ? c.textContent : null,
          description: described ? described.split(' ').map(id => document.getElementById(id).textContent).join(' ') : null,
          rem: parseFloat(getComputedStyle(document.documentElement).fontSize),
          entryHead: entry ? entry.firstElementChild.textContent : null, hash: location.hash, width: innerWidth};
}"""


def how_card(page, selector: str, opening: bool = False) -> dict:
    """The card's state; `opening`: once the card of the number `selector` finds shows beside it
    (its file arrives after the number is reached for)."""
    if opening:
        page.wait_for_function(f"sel => ({HOW_CARD_STATE})(sel).shown", arg=selector)
    return page.evaluate(HOW_CARD_STATE, selector)


def move_prompt(page, value: str, shown: str) -> None:
    """The page's prompt-length slider to `value`, as a reader's move, until the prose shows `shown`."""
    page.locator("input[data-eg-param='prompt']").first.evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)
    page.wait_for_function("([sel, shown]) => document.querySelector(sel).textContent === shown", arg=[PROMPT, shown])


def test_a_number_s_card_opens_by_keyboard_and_pointer_and_follows_the_sliders(page, base_url):
    """Tab to the first computed number: its card shows its entry's head, which describes the number;
    Escape closes it. The pointer resting on a number opens its card, leaving closes it, and after
    Escape the card stays shut until the pointer has left the number. Once the prompt-length slider
    has moved, the cards of the numbers it moves show the derivation at the new length (the
    prefill's closed form with 4,096 prompt tokens put in, and its time as the prose now shows
    it), also while open as the slider moves; moved back, they are their entries again. Enter
    follows the number's link and closes its card."""
    page.goto(base_url + ROOFLINE)
    page.wait_for_load_state("networkidle")
    tab_to(page, "a.eg-how")
    got = how_card(page, "a.eg-how:focus", opening=True)
    assert got["head"] == got["entryHead"] == got["description"], got
    page.keyboard.press("Escape")
    assert not how_card(page, "a.eg-how:focus")["shown"]
    page.evaluate("document.activeElement.blur()")

    number = page.locator(PROMPT).first
    number.hover()
    got = how_card(page, PROMPT, opening=True)
    assert "Prompt length" in got["head"] and "2,048" in got["head"], got
    page.keyboard.press("Escape")
    assert not how_card(page, PROMPT)["shown"]
    number.hover(position={"x": 2, "y": 2})  # still on the number: Escape holds
    page.wait_for_timeout(200)
    assert not how_card(page, PROMPT)["shown"]
    page.mouse.move(0, 0)
    number.hover()  # back on it after leaving: the card opens again
    assert how_card(page, PROMPT, opening=True)["shown"]
    page.mouse.move(0, 0)
    page.wait_for_timeout(500)  # past the pause the pointer has to reach the card (how.js, HOW_CLOSE_MS)
    assert not how_card(page, PROMPT)["shown"]

    prefill = page.locator(PREFILL).first
    for value, shown in (("4096", "4,096"), ("2048", "2,048")):
        move_prompt(page, value, shown)
        prefill.focus()
        got = how_card(page, PREFILL, opening=True)
        assert got["description"] == got["head"] and got["number"] in got["head"], got
        assert f"-token prompt" in got["head"] and f"{shown}-token prompt" in got["head"], got
        assert f"prompt tokens, each a position of the pass, {shown}" in got["text"], got
        assert f"= {got['number'].replace(' ', chr(160))}" in got["text"] or got["number"] in got["text"], got
        assert (got["head"] == got["entryHead"]) == (value == "2048"), got  # the entry: the starting settings
        page.evaluate("document.activeElement.blur()")
    prefill.focus()
    how_card(page, PREFILL, opening=True)
    move_prompt(page, "1024", "1,024")  # the card open as the slider moves
    page.wait_for_function(f"sel => ({HOW_CARD_STATE})(sel).text.includes('each a position of the pass, 1,024')",
                           arg=PREFILL)
    got = how_card(page, PREFILL)
    assert got["shown"] and "1,024-token prompt" in got["head"] and got["number"] in got["head"], got
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash === '#how-n2'")
    assert not how_card(page, PREFILL)["shown"]
    page.watch.assert_clean()


def test_on_a_phone_a_tap_opens_a_number_s_card_docked_below_it_and_a_second_tap_follows_its_link(browser, base_url):
    """The decode step, at the bottom of a phone's screen (where its docked card would cover it), is
    tapped: its card spans the bottom of the screen and the page scrolls so the number shows above
    it. A tap elsewhere closes it. Another number, in the middle of the screen (so that no scroll
    moves it from under the finger), is tapped: its card opens and the page stays where it is; a
    second tap follows the number's link, and the card closes."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()

    def tap(selector: str, block: str) -> dict:
        page.locator(selector).first.evaluate("(a, block) => a.scrollIntoView({block})", block)
        box = page.locator(selector).first.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        return box

    try:
        page.goto(base_url + ROOFLINE)
        page.wait_for_load_state("networkidle")
        step = "a.eg-how:has([data-eg-num='n3'])"  # the decode step, whose derivation is long
        tap(step, "end")
        got = how_card(page, step, opening=True)
        left, top, right, bottom = got["box"]
        assert got["shown"] and got["hash"] == "" and got["head"] == got["entryHead"], got
        margin = got["rem"] / 2  # docked .5rem in from the window's sides (explainer.css)
        assert left == pytest.approx(margin, abs=1) and right == pytest.approx(got["width"] - margin, abs=1), got
        box = page.locator(step).first.bounding_box()
        assert box["y"] + box["height"] <= top, (box, got)  # the number shows above it
        page.touchscreen.tap(5, 200)
        assert not how_card(page, step)["shown"]

        ratio = "a.eg-how:has([data-eg-num='n5'])"  # prefill in decode steps
        before = tap(ratio, "center")
        got = how_card(page, ratio, opening=True)
        assert got["shown"] and got["hash"] == "" and got["head"] == got["entryHead"], got
        assert page.locator(ratio).first.bounding_box()["y"] == pytest.approx(before["y"], abs=1)
        tap(ratio, "center")
        page.wait_for_function("() => location.hash === '#how-n5'")
        assert not how_card(page, ratio)["shown"]
    finally:
        context.close()


ENTRY_SHOWN = """id => {
    const e = document.getElementById(id), r = e.getBoundingClientRect();
    return {open: e.closest('details').open, visible: e.checkVisibility(), top: r.top, height: r.height,
            innerHeight: innerHeight, hash: location.hash};
}"""


def test_a_number_s_link_opens_the_folded_list_of_entries_and_shows_its_entry(page, base_url):
    """"How the numbers are computed" keeps its entries folded (render/how.py), so a page's load
    does not lay them out. A link into the list opens it: the theme opens a details element that
    the address's hash points into (both hosts' bundles), and Chromium does too as a followed link
    lands in one. The theme's part is checked alone first: the address is changed without a
    navigation (history.pushState) and the page told that its hash changed, and the list must
    open. Then a number's link is clicked: its entry shows near the top of the window. (Before
    either, the list is closed and the entry not drawn, so each check can fail.)"""
    page.goto(base_url + ROOFLINE)
    page.wait_for_load_state("networkidle")
    before = page.evaluate(ENTRY_SHOWN, "how-n2")
    assert not before["open"] and not before["visible"], before
    page.evaluate("""() => { history.pushState(null, '', '#how-n2');
                             window.dispatchEvent(new HashChangeEvent('hashchange')); }""")
    by_theme = page.evaluate(ENTRY_SHOWN, "how-n2")
    assert by_theme["open"] and by_theme["visible"], by_theme
    page.evaluate("""() => { document.querySelector('details.eg-how-all').open = false;
                             history.pushState(null, '', location.pathname); scrollTo(0, 0); }""")
    assert not page.evaluate(ENTRY_SHOWN, "how-n2")["visible"]
    page.locator("a.eg-how[href$='#how-n2']").first.click()
    page.wait_for_function("() => location.hash === '#how-n2'")
    page.wait_for_function("() => Math.abs(document.getElementById('how-n2').getBoundingClientRect().top) < innerHeight")
    got = page.evaluate(ENTRY_SHOWN, "how-n2")
    assert got["open"] and got["visible"] and got["height"] > 0, got
    assert 0 <= got["top"] < got["innerHeight"] / 2, got
