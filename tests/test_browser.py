"""The built site in Debian's Chromium: figures draw, sliders move them, nothing leaves 127.0.0.1."""
from __future__ import annotations

from helpers import wait_for_figures

SPEC = "explainers/speculative-decoding/"


def lines_path(page) -> str:
    """The drawn geometry of every line mark in the first figure."""
    return page.eval_on_selector_all("#fig-speedup-vs-batch .eg-view g.mark-line path",
                                     "els => els.map(e => e.getAttribute('d')).join('|')")


def test_acceptance_slider_redraws_lines(page, base_url):
    page.goto(base_url + SPEC)
    wait_for_figures(page)
    before = lines_path(page)
    assert before
    slider = page.locator("#fig-speedup-vs-batch").get_by_role("slider", name="Acceptance rate")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("prev => { const d = [...document.querySelectorAll('#fig-speedup-vs-batch .eg-view g.mark-line path')]"
                           ".map(e => e.getAttribute('d')).join('|'); return d && d !== prev; }", arg=before)
    assert lines_path(page) != before
    page.watch.assert_clean()


def test_prose_numbers_follow_the_slider(page, base_url):
    page.goto(base_url + SPEC)
    wait_for_figures(page)
    spans = page.locator("[data-eg-num]")
    before = spans.all_inner_texts()
    slider = page.get_by_role("slider", name="Acceptance rate").first
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("prev => [...document.querySelectorAll('[data-eg-num]')].map(e => e.textContent).join() !== prev",
                           arg=",".join(before))
    assert spans.all_inner_texts() != before
    page.wait_for_function("() => location.search.includes('a=0.75')")  # written once the reader pauses
    page.watch.assert_clean()


def test_home_page_is_clean(page, base_url):
    page.goto(base_url)
    page.wait_for_load_state("networkidle")
    page.watch.assert_clean()
