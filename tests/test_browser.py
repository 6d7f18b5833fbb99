"""The built site in Debian's Chromium: figures draw, sliders move them, nothing leaves 127.0.0.1."""
from __future__ import annotations

import pytest

from helpers import LIVE_FIGURE, SETTLED, wait_for_figures

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

SPEC = "explainers/speculative-decoding/"

# The drawn geometry of every line mark in a figure, from Vega's scenegraph (what its renderer,
# a canvas or SVG, paints): each line's points, x and y. Empty while the figure is not live.
LINES = "id => {" + LIVE_FIGURE + """
  const out = [];
  const walk = mark => {
    if (mark.marktype === 'line') out.push((mark.items || []).map(i => i.x + ',' + i.y).join(' '));
    for (const it of mark.items || []) for (const m of it.items || []) walk(m);
  };
  walk(fig.result.view.scenegraph().root);
  return out.join('|');
}"""


def lines_path(page) -> str:
    """The drawn geometry of every line mark in the first figure."""
    return page.evaluate(LINES, "fig-speedup-vs-batch")


def test_acceptance_slider_redraws_lines(page, base_url):
    page.goto(base_url + SPEC)
    wait_for_figures(page)
    before = lines_path(page)
    assert before
    view = page.locator("#fig-speedup-vs-batch .eg-view .marks")
    view.scroll_into_view_if_needed()
    pixels = view.screenshot(animations="disabled")
    slider = page.locator("#fig-speedup-vs-batch").get_by_role("slider", name="Acceptance rate")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"prev => {{ const d = ({LINES})('fig-speedup-vs-batch'); return d && d !== prev; }}",
                           arg=before)
    assert lines_path(page) != before
    page.evaluate(SETTLED, "fig-speedup-vs-batch")
    view.scroll_into_view_if_needed()
    assert view.screenshot(animations="disabled") != pixels  # and the reader sees the lines move
    page.watch.assert_clean()


def test_prose_numbers_follow_the_slider(page, base_url):
    page.goto(base_url + SPEC)
    wait_for_figures(page)
    spans = page.locator("[data-eg-num]")
    before = spans.all_inner_texts()
    slider = page.get_by_role("slider", name="Acceptance rate").first
    # Each number's and the slider's shown value's text node, to see whether a move keeps them.
    page.evaluate("""() => { window.__texts = [...document.querySelectorAll('[data-eg-num], .eg-controls output')]
                                                .map(e => [e, e.firstChild, e.textContent]); }""")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("prev => [...document.querySelectorAll('[data-eg-num]')].map(e => e.textContent).join() !== prev",
                           arg=",".join(before))
    assert spans.all_inner_texts() != before
    # A text that changed, changed in place (base.js setText): on every move the browser would
    # otherwise restyle and lay out a new text node for it.
    kept = page.evaluate("""() => window.__texts.filter(([e, node, was]) => e.textContent !== was)
                               .map(([e, node]) => [e.tagName, e.firstChild === node && !node.nextSibling])""")
    assert len({tag for tag, _ in kept}) == 2 and all(same for _, same in kept), kept  # numbers and shown values
    page.wait_for_function("() => location.search.includes('a=0.75')")  # written once the reader pauses
    page.watch.assert_clean()


def test_home_page_is_clean(page, base_url):
    page.goto(base_url)
    page.wait_for_load_state("networkidle")
    page.watch.assert_clean()


# Where the first data point (a symbol mark's item) of a figure is drawn, in page coordinates,
# from Vega's scenegraph: item positions are in their group's frame, offset by the groups above,
# the view's origin and its padding.
FIRST_POINT = """f => {
  const fig = window.explainerGen.figures().find(x => x.el === f), view = fig.result.view;
  const r = f.querySelector('.eg-view .marks').getBoundingClientRect(), pad = view.padding(), o = view.origin();
  let found = null;
  const walk = (mark, dx, dy) => {
    for (const it of mark.items || []) {
      if (!found && mark.marktype === 'symbol' && mark.role === 'mark') found = {x: r.left + o[0] + pad.left + dx + it.x,
        y: r.top + o[1] + pad.top + dy + it.y, datum: it.datum};
      for (const child of it.items || []) walk(child, dx + (it.x || 0), dy + (it.y || 0));
    }
  };
  walk(view.scenegraph().root, 0, 0);
  return found;
}"""


def test_hovering_a_point_shows_its_tooltip(page, base_url):
    page.goto(base_url + SPEC)
    wait_for_figures(page)
    fig = page.locator("#fig-speedup-vs-batch")
    fig.evaluate("f => f.querySelector('.eg-view .marks').scrollIntoView({block: 'center', behavior: 'instant'})")
    point = fig.evaluate(FIRST_POINT)
    assert point
    page.mouse.move(point["x"], point["y"])
    tip = page.locator("#vg-tooltip-element.visible")
    tip.wait_for(state="visible")
    shown = tip.inner_text()
    assert "speedup" in shown and f"{point['datum']['speedup']:.2f}" in shown, (shown, point["datum"])
    page.watch.assert_clean()
