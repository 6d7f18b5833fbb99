"""Every explainer page with figures, in Debian's Chromium (the speculative-decoding page's controls
are walked in test_reader): every figure draws, and each slider, moved with the keyboard, changes
what its figure draws. One page load checks all of a page's figures and sliders."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import BACKGROUND, DRAWING, REPO, SETTLED, figures_of, screenshot_rgb, wait_for_figures

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

# Every explainer page with a figure, found in the sources (an `explainer` fence); what each
# page's figures are and which sliders each binds is read from the built page itself, so a new
# figure or page is walked without a list to keep. The speculative-decoding page's controls are
# walked by tests/test_reader.py (its keyboard test moves every one of them), so it is left out here.
ELSEWHERE = {"explainers/speculative-decoding/"}
PAGES = [f"explainers/{p.stem}/" for p in sorted((REPO / "docs" / "explainers").glob("*.md"))
         if "```explainer" in p.read_text(encoding="utf-8")
         and f"explainers/{p.stem}/" not in ELSEWHERE]


def fences(path: str) -> int:
    """How many figures the page's source asks for."""
    return (REPO / "docs" / (path.rstrip("/") + ".md")).read_text(encoding="utf-8").count("```explainer")


# The same drawing as a set of items: Vega may draw the same items in another order after its
# data changed and changed back.
ITEMS = f"id => ({DRAWING})(id).split('|').sort().join('|')"

# How many items the figure's data marks draw (the marks that are not axes, legends, titles or
# frames): a drawing of axes alone would have none.
DATA_ITEMS = """id => {
  const el = document.getElementById(id);
  const fig = window.explainerGen.figures().find(f => f.el === el);
  let n = 0;
  const walk = mark => {
    for (const it of mark.items || []) {
      if (mark.marktype !== 'group' && mark.role === 'mark') n++;
      for (const m of it.items || []) walk(m);
    }
  };
  walk(fig.result.view.scenegraph().root);
  return n;
}"""

BOX = "el => { const r = el.getBoundingClientRect(); return {x: r.left, y: r.top, width: r.width, height: r.height}; }"


def ink(page, anchor: str) -> int:
    """Pixels of the figure's live view, as displayed, that stand out from the page background."""
    view = page.locator(f"#{anchor} .eg-view .marks")
    view.scroll_into_view_if_needed()
    img = screenshot_rgb(page, view.evaluate(BOX))
    bg = np.array(page.evaluate(BACKGROUND), np.int16)
    return int((np.abs(img - bg).max(axis=2) > 64).sum())


def open_page(page, base_url, path, figures):
    page.goto(base_url + path)
    assert len(figures) == fences(path), "every fence of the page's source is a figure on the built page"
    assert wait_for_figures(page) == len(figures)


def move_and_see(page, anchor: str, label: str) -> str:
    """Move the figure's slider `label` one step with the keyboard and check that what the figure
    draws changes, in its scenegraph and in its pixels; returns the key pressed."""
    before = page.evaluate(DRAWING, anchor)
    view = page.locator(f"#{anchor} .eg-view .marks")
    view.scroll_into_view_if_needed()
    pixels = view.screenshot(animations="disabled")
    slider = page.locator(f"#{anchor}").get_by_role("slider", name=label)
    slider.focus()
    # Step towards whichever end is further, so the move never sits at a bound.
    value = float(slider.input_value())
    lo, hi = (float(slider.get_attribute(a)) for a in ("min", "max"))
    key = "ArrowRight" if hi - value >= value - lo else "ArrowLeft"
    page.keyboard.press(key)
    page.wait_for_function(f"prev => ({DRAWING})({anchor!r}) !== prev", arg=before)
    assert page.evaluate(DRAWING, anchor) != before, (anchor, label)
    # What the reader sees changed with it.
    page.evaluate(SETTLED, anchor)
    view.scroll_into_view_if_needed()
    assert view.screenshot(animations="disabled") != pixels, (anchor, label)
    return key


BACK = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight"}


def test_the_walk_covers_the_pages_with_figures():
    """The pages found in the sources are the explainers with figures, those of the earlier hand-kept
    list among them, so that a mistake in finding them cannot quietly walk none."""
    assert {"explainers/roofline/", "explainers/batching/", "explainers/kv-cache/", "explainers/serving/",
            "explainers/draft-trees/"} <= set(PAGES)


@pytest.mark.parametrize("path", PAGES)
def test_every_figure_draws_and_each_slider_changes_the_drawing(site, page, base_url, path):
    """One load of the page: every figure draws (data marks, a drawing, ink on screen); then each
    slider a figure binds, moved one step with the keyboard, changes what that figure draws, and
    the step back returns the figure to the drawing of the page as loaded, so each slider is
    tried from the page's default state, as a fresh load would."""
    figures = figures_of(site, path)
    open_page(page, base_url, path, figures)
    for anchor, _ in figures:
        assert page.evaluate(DATA_ITEMS, anchor) > 0, anchor
        assert page.evaluate(DRAWING, anchor)
        # ... and the view displays it: its pixels carry ink, not just the page behind.
        assert ink(page, anchor) > 500, anchor
    for anchor, labels in figures:
        default = page.evaluate(ITEMS, anchor)
        for label in labels:
            key = move_and_see(page, anchor, label)
            page.locator(f"#{anchor}").get_by_role("slider", name=label).focus()
            page.keyboard.press(BACK[key])
            page.wait_for_function(f"want => ({ITEMS})({anchor!r}) === want", arg=default)
    page.watch.assert_clean()
