"""What a screen reader hears: figure descriptions true to the state shown, and one polite
announcement of what changed once the reader pauses."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from explainer_gen.compute.artifacts import fill, text_at
from helpers import REPO, assert_descriptions_agree

PAGES = sorted((REPO / "docs" / "explainers").glob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_compact_descriptions_agree_with_every_grid_point(path, cat):
    """`describe_positions` finds each field's sliders by moving one slider at a time; here every
    combination of slider positions is evaluated directly, so a field that changes only when two
    sliders move together would be caught (helpers.assert_descriptions_agree)."""
    assert_descriptions_agree(path, cat)


def test_static_description_is_the_default_state(site):
    """The picture's text alternative names the default state's numbers, not a template."""
    html = (site / "explainers/speculative-decoding/index.html").read_text()
    desc = re.search(r'<p class="eg-desc" id="([^"]+)">([^<]*)</p>', html)
    assert desc and "{" not in desc.group(2)
    from explainer_gen.compute.figures.tokens import TokenTimeline
    a, k = (TokenTimeline.sliders[n].default for n in ("a", "k"))
    assert f"acceptance {a:.2f} and lookahead {k:.0f}" in desc.group(2)
    assert f'aria-labelledby="{desc.group(1)}"' in html


def _payload(site: Path, page: str, index: int) -> dict:
    html = (site / page / "index.html").read_text()
    url = re.findall(r'data-eg-figure="([^"]+)"', html)[index]
    return json.loads((site / page / url).resolve().read_text())


def test_description_follows_the_sliders_and_the_switch(browser, base_url, site):
    page = browser.new_page()
    page.goto(base_url + "explainers/speculative-decoding/")
    fig = page.locator(".eg-figure").first
    desc = fig.locator(".eg-desc")
    before = desc.text_content()
    slider = fig.get_by_role("slider", name="Acceptance rate")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    from explainer_gen.compute.figures.tokens import TokenTimeline
    sliders = TokenTimeline.sliders
    position = {"a": sliders["a"].default - 2 * sliders["a"].step, "k": sliders["k"].default}
    page.wait_for_function(f"e => e.textContent.includes('acceptance {position['a']:.2f}')", arg=desc.element_handle())
    # The words are the template filled with the texts precomputed for two steps down in a.
    payload = _payload(site, "explainers/speculative-decoding", 0)
    d = payload["describe"]
    texts = [text_at(d["values"][payload["default"]][f], position, sliders) for f in d["fields"]]
    assert desc.text_content() == fill(d["template"], d["fields"], texts) != before
    # A different accelerator changes the figure, and so its description.
    page.select_option("select[data-eg-switch=accelerator]", "mi300x")
    page.wait_for_function("e => e.textContent.includes('MI300X')", arg=desc.element_handle())
    page.close()


def test_one_polite_announcement_after_a_pause(browser, base_url):
    page = browser.new_page()
    page.goto(base_url + "explainers/speculative-decoding/")
    region = page.locator(".eg-announce")
    assert region.get_attribute("aria-live") == "polite" and region.get_attribute("role") == "status"
    # Visually hidden, but in the accessibility tree (not display: none).
    assert region.evaluate("e => getComputedStyle(e).display") != "none"
    from explainer_gen.compute.figures.tokens import TokenTimeline
    a = TokenTimeline.sliders["a"]
    slider = page.locator(".eg-figure").first.get_by_role("slider", name="Acceptance rate")
    # The page's own clock, not the test's: a loaded machine may stretch the gaps between key
    # presses, but each announcement must still come a pause (500 ms) after the input before it.
    page.evaluate("""() => {
      window.__eg = {inputs: [], said: []};
      addEventListener("input", () => __eg.inputs.push(performance.now()), true);
      new MutationObserver(() => __eg.said.push([performance.now(), document.querySelector('.eg-announce').textContent]))
        .observe(document.querySelector('.eg-announce'), {childList: true, characterData: true, subtree: true});
    }""")
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
        page.wait_for_timeout(100)
    page.wait_for_function("() => __eg.said.length && performance.now() - __eg.inputs.at(-1) > 1500", timeout=8000)
    log = page.evaluate("() => __eg")
    assert len(log["inputs"]) == 3
    for when, _ in log["said"]:  # nothing while the reader is still moving
        assert when - max(t for t in log["inputs"] if t < when) >= 500, log
    after = [text for when, text in log["said"] if when > log["inputs"][-1]]
    assert len(after) == 1, log  # one announcement once they stop
    said = after[0]
    assert said == region.text_content()
    assert f"{a.default - 3 * a.step:.0%}" in said  # the sentence whose acceptance number changed, at its new value
    # Hover cards are not read out as part of a sentence.
    assert "gamma" not in said and "Leviathan" not in said
    assert len(said) < 800
    page.close()


def test_a_slider_that_moves_no_prose_announces_the_figure(browser, base_url):
    page = browser.new_page()
    page.goto(base_url + "explainers/speculative-decoding/")
    figs = page.locator(".eg-figure")
    drift = next(f for f in figs.all() if f.get_by_role("slider", name=re.compile("drift", re.I)).count()
                 and "share" in (f.locator(".eg-desc").text_content() or ""))
    drift.get_by_role("slider").first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('.eg-announce').textContent !== ''", timeout=3000)
    assert page.locator(".eg-announce").text_content().strip() == drift.locator(".eg-desc").text_content().strip()
    page.close()
