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


def in_view(page, anchor: str, what: str = DRAWING) -> str:
    """What the figure draws (`what`: DRAWING or ITEMS) once its view is on the screen and done: a
    view off the screen may still show an earlier position of a slider it shares with another
    figure (the loader brings it up to date as it shows, or once the reader pauses)."""
    page.locator(f"#{anchor} .eg-view .marks").scroll_into_view_if_needed()
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.evaluate(SETTLED, anchor)
    return page.evaluate(what, anchor)


def move_and_see(page, anchor: str, label: str) -> str:
    """Move the figure's slider `label` one step with the keyboard and check that what the figure
    draws changes, in its scenegraph and in its pixels; returns the key pressed."""
    before = in_view(page, anchor)
    view = page.locator(f"#{anchor} .eg-view .marks")
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
        default = in_view(page, anchor, ITEMS)
        for label in labels:
            key = move_and_see(page, anchor, label)
            page.locator(f"#{anchor}").get_by_role("slider", name=label).focus()
            page.keyboard.press(BACK[key])
            page.wait_for_function(f"want => ({ITEMS})({anchor!r}) === want", arg=default)
    page.watch.assert_clean()


# The page whose slider drives the most figures: the serving page's prompt-chunk slider drives five.
FOLLOW_PAGE = "explainers/serving/"

# As a reader's quick moves arrive, before any timer and mostly within one frame: the slider `param`
# of the figure `own` moved `steps` positions (up, or down if negative), one input event each in a
# task of its own; what each figure with that param shows of it (its view's signal), read at once;
# whether, three frames later and nothing else done, `own` draws `want` (the drawing of a page
# opened at the last position); then the figure `later` scrolled to the middle of the window, and
# frames awaited until it shows the last position. `scrolled` says whether it did so while `paused`
# (off the screen all along) did not yet: then the scroll, not the reader's pause, brought it up
# to date.
MOVE_FAST = """async ([own, later, paused, param, steps, want]) => {
  const input = document.querySelector('#' + own + ' input[type=range][data-eg-param="' + param + '"]');
  const step = +input.step || 1;
  const task = () => new Promise(done => { const ch = new MessageChannel(); ch.port1.onmessage = done; ch.port2.postMessage(0); });
  const frame = () => new Promise(done => requestAnimationFrame(done));
  for (let i = 0; i < Math.abs(steps); i++) {
    if (i) await task();  // each move its own task, as a reader's are, all within a frame or so
    input.value = String(+input.value + Math.sign(steps) * step);
    input.dispatchEvent(new Event('input', {bubbles: true}));
  }
  const value = +input.value, signal = id => window.explainerGen.figures().find(f => f.el.id === id).result.view.signal(param);
  const shown = {};
  for (const f of window.explainerGen.figures()) if (f.params.indexOf(param) >= 0) shown[f.el.id] = signal(f.el.id);
  await frame(); await frame(); await frame();
  const ownDrawn = (""" + ITEMS + """)(own) === want;
  document.getElementById(later).scrollIntoView({block: 'center'});
  const r = document.querySelector('#' + paused + ' .eg-view').getBoundingClientRect();
  let scrolled = null;
  for (let i = 0; i < 120 && scrolled === null; i++) {
    await frame();
    if (signal(later) === value) scrolled = signal(paused) !== value;
  }
  return {value, shown, own_drawn: ownDrawn, scrolled, paused_off: r.bottom <= 0 || r.top >= innerHeight};
}"""

# Whether the figure's view shows on the screen, in part.
ON_SCREEN = """id => {
  const r = document.querySelector('#' + id + ' .eg-view').getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight;
}"""


def test_views_off_the_screen_catch_up_as_they_show_and_no_state_is_skipped(site, page, base_url):
    """A reader moves a slider that several figures draw, quickly: the figure whose slider it is
    follows at once, and those whose views are off the screen are left for later (the loader works
    only for what shows). The last position is never skipped: the moved figure ends on the same
    drawing as a page opened at that position; a figure off the screen shows it as soon as it is
    scrolled to, before the reader's pause brings a third, never scrolled to, up to date too.

    Whether the scroll (and not the pause, 150 ms after the last move) brought the second figure
    up to date is told by the third still being behind at that moment; on a machine so loaded that
    a frame takes longer than the pause, that cannot be told, and the moves are tried again, up
    to three times."""
    figures = figures_of(site, FOLLOW_PAGE)
    open_page(page, base_url, FOLLOW_PAGE, figures)
    param = "chunk"
    drawn = [a for a, _ in figures if page.locator(f"#{a} input[type=range][data-eg-param={param}]").count()]
    assert len(drawn) >= 4, drawn
    own, paused, later = drawn[0], drawn[len(drawn) // 2], drawn[-1]
    slider = page.locator(f"#{own} input[type=range][data-eg-param={param}]")
    lo, hi, step = (float(slider.get_attribute(a)) for a in ("min", "max", "step"))
    for attempt in range(3):
        value = float(slider.input_value())
        steps = 3 if value + 3 * step <= hi else -3
        assert lo <= value + steps * step <= hi
        # What each figure must show: a page opened at that position, as a shared link opens it.
        reference = page.context.new_page()
        try:
            reference.goto(f"{base_url}{FOLLOW_PAGE}?{param}={value + steps * step:g}")
            wait_for_figures(reference)
            want = {a: reference.evaluate(f"async id => {{ await ({SETTLED})(id); return ({ITEMS})(id); }}", a)
                    for a in (own, later, paused)}
        finally:
            reference.close()
        page.bring_to_front()
        page.locator(f"#{own}").evaluate("el => el.scrollIntoView({block: 'center'})")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        assert page.evaluate(ON_SCREEN, own) and not page.evaluate(ON_SCREEN, later)
        assert not page.evaluate(ON_SCREEN, paused)
        assert want[paused] != page.evaluate(ITEMS, paused), "the moves change what the figure off the screen draws"
        moved = page.evaluate(MOVE_FAST, [own, later, paused, param, steps, want[own]])
        assert moved["value"] == pytest.approx(value + steps * step), moved
        # At once: the slider's own figure has the last position; those off the screen do not yet.
        assert moved["shown"][own] == moved["value"], moved
        assert moved["shown"][later] != moved["value"] and moved["shown"][paused] != moved["value"], moved
        # Moves within a frame: one run at the first, one at the next frame with the last position.
        assert moved["own_drawn"], f"{own} does not draw the last position a frame after the moves"
        assert moved["paused_off"], f"{paused} shows beside {later}: choose figures further apart"
        assert moved["scrolled"] is not None, f"{later} never showed the last position: {moved}"
        if moved["scrolled"]:
            break
        page.wait_for_timeout(400)  # the pause's catch-up done, for the next try
    assert moved["scrolled"], "the pause, not the scroll, brought the figure up to date on every try"
    # The one scrolled to draws the last position, and the one never scrolled to once the reader
    # has paused.
    for anchor in (later, paused):
        page.wait_for_function(f"want => ({ITEMS})({anchor!r}) === want", arg=want[anchor])
    page.watch.assert_clean()
