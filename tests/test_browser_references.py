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
