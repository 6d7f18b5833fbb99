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
HOW_CARD = "eg-how-card"  # names.CLASS.how_card: the loader gives the page's one card that id

# The open card as a reader gets it: displayed or not, its box, the head and the note it opens with,
# and the head of the entry the focused or hovered number links to.
HOW_CARD_STATE = """sel => {
  const c = document.getElementById('eg-how-card'), a = document.querySelector(sel);
  const entry = a && a.hash && document.getElementById(a.hash.slice(1));
  const r = c ? c.getBoundingClientRect() : {};
  const moved = c && c.querySelector('.eg-how-moved strong');
  return {shown: !!c && getComputedStyle(c).display !== 'none' && r.height > 0, box: [r.left, r.top, r.right, r.bottom],
          head: c && c.firstElementChild ? c.firstElementChild.textContent : null,
          moved: moved ? moved.textContent : null, number: a && a.textContent,
          described: a && a.getAttribute('aria-describedby'),
          rem: parseFloat(getComputedStyle(document.documentElement).fontSize),
          entryHead: entry ? entry.firstElementChild.textContent : null, hash: location.hash, width: innerWidth};
}"""


def how_card(page, selector: str) -> dict:
    return page.evaluate(HOW_CARD_STATE, selector)


def test_a_number_s_card_opens_by_keyboard_and_pointer_and_says_when_its_number_has_moved(page, base_url):
    """Tab to the first computed number: its card shows its entry's head and describes it; Escape
    closes it. The pointer resting on a number opens its card and leaving it closes it. Once the
    prompt-length slider has moved, the card of the number that shows it says what the number now
    is, above the derivation at the starting settings; moved back, the note goes."""
    page.goto(base_url + ROOFLINE)
    page.wait_for_load_state("networkidle")
    tab_to(page, "a.eg-how")
    got = how_card(page, "a.eg-how:focus")
    assert got["shown"] and got["described"] == HOW_CARD and got["head"] == got["entryHead"] and got["moved"] is None, got
    page.keyboard.press("Escape")
    assert not how_card(page, "a.eg-how:focus")["shown"]

    # The prompt length, as the prose shows it (its entry: "set by the slider 'Prompt length ...'").
    prompt = "a.eg-how:has([data-eg-num='n1'])"
    page.locator(prompt).first.hover()
    got = how_card(page, prompt)
    assert got["shown"] and "Prompt length" in got["head"] and got["moved"] is None, got
    page.mouse.move(0, 0)
    page.wait_for_timeout(500)  # past the pause the pointer has to reach the card (how.js, HOW_CLOSE_MS)
    assert not how_card(page, prompt)["shown"]

    slider = page.locator("input[data-eg-param='prompt']").first
    for value, moved in (("4096", "4,096"), ("2048", None)):
        slider.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)
        page.wait_for_function("sel => document.querySelector(sel).textContent.trim() === (arguments[1] || '2,048')"
                               .replace("arguments[1]", repr(moved or "2,048")), arg=prompt)
        page.locator(prompt).first.focus()
        got = how_card(page, prompt)
        assert got["shown"] and got["moved"] == moved and got["head"] == got["entryHead"], (value, got)
        page.keyboard.press("Escape")
        page.evaluate("document.activeElement.blur()")  # the reader moves on, so the next focus opens it again
    page.watch.assert_clean()


def test_on_a_phone_a_tap_opens_a_number_s_card_docked_below_it_and_a_second_tap_follows_its_link(browser, base_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(base_url + ROOFLINE)
        page.wait_for_load_state("networkidle")
        number = "a.eg-how:has([data-eg-num='n3'])"  # the decode step, whose derivation is long
        page.locator(number).first.tap()
        got = how_card(page, number)
        left, top, right, bottom = got["box"]
        assert got["shown"] and got["hash"] == "" and got["head"] == got["entryHead"], got
        margin = got["rem"] / 2  # docked .5rem in from the window's sides (explainer.css)
        assert left == pytest.approx(margin, abs=1) and right == pytest.approx(got["width"] - margin, abs=1), got
        number_box = page.locator(number).first.bounding_box()
        assert number_box["y"] + number_box["height"] <= top, (number_box, got)  # the number shows above it
        page.locator(number).first.tap()
        page.wait_for_function("() => location.hash === '#how-n3'")
        assert not how_card(page, number)["shown"]
    finally:
        context.close()
