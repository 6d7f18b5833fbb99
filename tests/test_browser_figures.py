"""The roofline, batching and KV-cache pages in Debian's Chromium: every figure draws, and each
slider, moved with the keyboard, changes what its figure draws."""
from __future__ import annotations

import pytest

from helpers import wait_for_figures

# page -> (figure anchor, slider labels that figure binds); a figure without sliders must still draw.
FIGURES = {
    "explainers/roofline/": [("fig-roofline", ["Prompt length (tokens)", "Decode batch (requests)"]),
                             ("fig-step-time", ["Prompt length (tokens)", "Decode batch (requests)"]),
                             ("fig-prefill-vs-decode", ["Prompt length (tokens)"])],
    "explainers/batching/": [("fig-batch-schedule", ["Batch size (slots)", "Spread of output lengths"]),
                             ("fig-batch-throughput", [])],
    "explainers/kv-cache/": [("fig-kv-slots", ["Context length (tokens)", "Cards"])],
}

DRAWING = """id => [...document.querySelectorAll('#' + id + ' .eg-view svg.marks path, #' + id + ' .eg-view svg.marks text')]
    .map(e => (e.getAttribute('d') || '') + (e.getAttribute('transform') || '') + e.textContent).join('|')"""


def open_page(page, base_url, path):
    page.goto(base_url + path)
    assert wait_for_figures(page) == len(FIGURES[path])


@pytest.mark.parametrize("path", list(FIGURES))
def test_every_figure_draws(page, base_url, path):
    open_page(page, base_url, path)
    for anchor, _ in FIGURES[path]:
        marks = page.locator(f"#{anchor} .eg-view svg.marks path")
        assert marks.count() > 0, anchor
        assert page.evaluate(DRAWING, anchor)
    page.watch.assert_clean()


@pytest.mark.parametrize("path, anchor, label",
                         [(p, a, lab) for p, figs in FIGURES.items() for a, labels in figs for lab in labels])
def test_keyboard_slider_changes_the_drawing(page, base_url, path, anchor, label):
    open_page(page, base_url, path)
    before = page.evaluate(DRAWING, anchor)
    slider = page.locator(f"#{anchor}").get_by_role("slider", name=label)
    slider.focus()
    # Step towards whichever end is further, so the move never sits at a bound.
    value = float(slider.input_value())
    lo, hi = (float(slider.get_attribute(a)) for a in ("min", "max"))
    key = "ArrowRight" if hi - value >= value - lo else "ArrowLeft"
    page.keyboard.press(key)
    page.wait_for_function(f"prev => ({DRAWING})({anchor!r}) !== prev", arg=before)
    assert page.evaluate(DRAWING, anchor) != before
    page.watch.assert_clean()
