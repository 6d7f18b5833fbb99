"""Readers' experience on every page of the built site, in Debian's Chromium.

Every check runs on both hosts' builds of the site (`hosts`, tests/conftest.py): readers must not
be able to tell whether MkDocs or Zensical built what they read."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from helpers import (DRAWING, THEME_BUNDLE, wait_for_events, tab_to_each, HOST_BUILDS, mark_document, same_document, LIVE_TEXTS, REPO, copy_project, figure_pages, live_label_colour, serve,
                     site_pages, wait_for_figures)
from conftest import PageWatch

ARTIFACTS = REPO / "test-artifacts"
from explainer_gen.theme import PALETTE  # noqa: E402

DARK_FG = PALETTE["muted"][1]  # the dark scheme's axis label colour

pytestmark = pytest.mark.hosts()


# The resources a page has fetched from `name`: the Vega bundle must be fetched once a tab (a
# host's instant navigation may drop the <script> element that loaded it, so the count of such
# elements says nothing).
FETCHED = "name => performance.getEntriesByType('resource').filter(e => e.name.includes(name)).length"


def heading(site: Path, path: str) -> str:
    """The start of a built page's first heading, as its text reads."""
    inner = (site / path / "index.html").read_text().split("<h1", 1)[1].split(">", 1)[1].split("</h1>", 1)[0]
    inner = re.sub(r'<a class="headerlink".*?</a>', "", inner)  # the permalink sign
    return html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()[:30]


CONTROLS = ".eg-figure input[type=range], .eg-scenario select"  # what a reader moves


# A control's visible label, its value, and the arrow key that moves it: right on a slider, left
# where it stands at its end; down on a select, up where nothing below can be chosen (a select
# skips greyed-out choices).
KEY_THAT_MOVES = """e => [e.labels && e.labels[0] ? e.labels[0].innerText.trim() : '', e.value,
  e.tagName === 'INPUT' ? (+e.value >= +e.max ? 'ArrowLeft' : 'ArrowRight')
    : [...e.options].slice(e.selectedIndex + 1).some(o => !o.disabled) ? 'ArrowDown' : 'ArrowUp']"""


def keyboard_moves_every_control(page, path: str) -> None:
    """On the page as shown, with its figures live: Tab reaches every control of its figures and
    its switches, each has a visible label, and an arrow key moves it."""
    controls = page.locator(CONTROLS)
    assert page.locator(".eg-view input").count() == 0  # every control is the page's own
    total = controls.count()
    # A figure page without a switch or a slider (the measurements' page) has nothing to move; one
    # whose HTML was built with controls must show them all.
    built = page.evaluate("() => document.querySelectorAll('.eg-controls, .eg-scenario').length")
    assert total > 0 or built == 0, path
    if total == 0:
        return
    reached = set()
    page.locator("body").focus()
    for index in tab_to_each(page, CONTROLS, 400):
        if index not in reached:
            reached.add(index)
            control = controls.nth(index)
            name, before, key = control.evaluate(KEY_THAT_MOVES)
            assert name, f"control {index} on {path} has no visible label"
            page.keyboard.press(key)
            assert control.input_value() != before, (path, name)
        if len(reached) == total:
            break
    assert len(reached) == total, (path, total, sorted(reached))


def test_instant_navigation_renders_each_figure_once_and_the_keyboard_moves_every_control(browser, base_url, site):
    """A reader's walk over every figure page through the theme's instant navigation: each page's
    figures are drawn once, with Vega loaded once a tab, and on each page's first visit the
    keyboard reaches and moves every control; after the walk the sliders still drive the figures."""
    figs = figure_pages(site)
    assert len(figs) >= 2
    context = browser.new_context()
    page = context.new_page()
    watch = PageWatch(page, base_url.split("/")[2])
    page.goto(base_url + figs[0])
    wait_for_figures(page)
    keyboard_moves_every_control(page, figs[0])
    moved = {figs[0]}
    mark_document(page)  # kept by the theme's instant navigation only
    # End on a page whose figures have sliders (the KV page's follow the switch alone).
    last = next(p for p in figs if 'type="range"' in (site / p / "index.html").read_text())
    for path in figs[1:] + [figs[0]] + figs[1:2] + [last]:
        # Navigate the way a reader does: through Material's instant loader, not a reload.
        page.evaluate("url => { const a = document.createElement('a'); a.href = url;"
                      "document.querySelector('.md-content').appendChild(a); a.click(); }", base_url + path)
        page.wait_for_url(base_url + path)
        # The new page's content, not only its URL: Zensical changes the URL before the content.
        page.wait_for_function("t => { const h = document.querySelector('.md-content h1');"
                               " return h && h.textContent.trim().startsWith(t); }", arg=heading(site, path))
        n = wait_for_figures(page)
        assert same_document(page), f"{path} was loaded as a new page"
        assert page.evaluate("() => window.__explainerGen === true")
        for fig in page.locator(".eg-figure").all():
            assert fig.locator(".eg-view .marks").count() == 1  # one drawing surface: drawn once
            assert fig.locator(".eg-controls input[type=range]").count() == fig.locator(".eg-controls .eg-slider").count()
        assert page.evaluate("() => window.explainerGen.figures().length") == n
        assert page.evaluate(FETCHED, "/vega-") == 1  # the bundle loaded once per tab
        if path not in moved:  # on each page's first visit, the keyboard reaches every control
            keyboard_moves_every_control(page, path)
            moved.add(path)
    assert moved == set(figs)
    # Sliders still drive the figures after all that navigation.
    slider = page.locator(".eg-figure.eg-live input[type=range]").first
    anchor = slider.evaluate("e => e.closest('.eg-figure').id")
    before = page.evaluate(DRAWING, anchor)
    assert before
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"b => ({DRAWING})({anchor!r}) !== b", arg=before)
    watch.assert_clean()
    context.close()


def axis_label_colour(page) -> str | None:
    """The colour the first figure's live view displays its axis labels in, read from its pixels
    (helpers.live_label_colour), once Vega paints every label with that one colour."""
    fills, drawn = live_label_colour(page, page.locator(".eg-figure").first)
    assert len(fills) == 1 and drawn in fills, (fills, drawn)
    return drawn


def test_palette_toggle_rethemes_without_reload(browser, base_url, site):
    ARTIFACTS.mkdir(exist_ok=True)
    path = figure_pages(site)[0]
    # A high-DPI screen, where the labels' colour can be read from their pixels.
    context = browser.new_context(color_scheme="light", device_scale_factor=2)
    page = context.new_page()
    page.goto(base_url + path)
    wait_for_figures(page)
    page.evaluate("() => { window.__noReload = 1; }")
    light = axis_label_colour(page)
    assert light == PALETTE["muted"][0]
    page.locator(".eg-figure").first.screenshot(path=str(ARTIFACTS / "figure-light.png"))
    page.locator("label.md-header__button[for^='__palette']:visible").first.click()
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    page.wait_for_function(f"f => {{ const t = ({LIVE_TEXTS})(f).filter(t => t.role === 'axis-label');"
                           f" return t.length && t.every(t => t.fill === '{DARK_FG}'); }}",
                           arg=page.locator(".eg-figure").first.element_handle())
    wait_for_figures(page)  # every view redrawn in the new scheme
    assert page.evaluate("() => window.__noReload") == 1
    assert axis_label_colour(page) == DARK_FG != light
    page.locator(".eg-figure").first.screenshot(path=str(ARTIFACTS / "figure-dark.png"))
    for fig in page.locator(".eg-figure").all():
        assert fig.locator(".eg-view .marks").count() == 1
        fills, drawn = live_label_colour(page, fig)
        assert fills == {DARK_FG} and drawn == DARK_FG, (fig.get_attribute("id"), fills, drawn)
    context.close()


def test_state_is_shareable_through_the_url(browser, base_url, site):
    path = "explainers/speculative-decoding/"
    context = browser.new_context()
    page = context.new_page()
    page.goto(base_url + path)
    wait_for_figures(page)
    slider = page.get_by_role("slider", name="Acceptance rate").first
    slider.focus()
    for _ in range(4):
        page.keyboard.press("ArrowLeft")
    page.select_option("select[data-eg-switch=accelerator]", "mi300x")
    page.wait_for_function("() => location.search.includes('accelerator=mi300x') && location.search.includes('a=0.6')")
    shared = page.url
    numbers = page.locator(".eg-num").all_inner_texts()
    fresh = context.new_page()
    fresh.goto(shared)
    wait_for_figures(fresh)
    fresh.wait_for_function("n => [...document.querySelectorAll('.eg-num')].map(e => e.textContent).join('|') === n",
                            arg="|".join(numbers))
    assert fresh.input_value("select[data-eg-switch=accelerator]") == "mi300x"
    assert fresh.get_by_role("slider", name="Acceptance rate").first.input_value() == "0.6"
    context.close()


def test_pages_workflow_uses_the_readme_build_command():
    workflow = yaml.safe_load((REPO / ".github/workflows/pages.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    readme = (REPO / "README.md").read_text()
    command = re.search(r"`(make build)` runs `mkdocs build --strict`", readme).group(1)
    assert command in runs
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^build:.*\n\t.*mkdocs build --strict", makefile, re.M)
    uses = [step.get("uses", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)


def test_pages_workflow_keeps_the_figure_cache_and_pips_between_deploys():
    """A deploy is a cold build unless the workflow carries `.cache/explainer` (the plugin's
    default cache_dir) and pip's downloads from one run to the next (issue 15)."""
    workflow = yaml.safe_load((REPO / ".github/workflows/pages.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    order = {i: step for i, step in enumerate(steps)}
    build_at = next(i for i, step in order.items() if step.get("run") == "make build")
    python = next(step for step in steps if step.get("uses", "").startswith("actions/setup-python"))
    assert python["with"].get("cache") == "pip"  # setup-python restores pip's cache and saves it after the job
    caches = [(i, step) for i, step in order.items() if step.get("uses", "").startswith("actions/cache@")]
    assert len(caches) == 1
    at, cache = caches[0]
    assert at < build_at  # restored before the build that reads it; actions/cache saves after the job
    from explainer_gen.config import ExplainerConfig
    assert cache["with"]["path"] == dict(ExplainerConfig._schema)["cache_dir"].default
    # A key that changes every run is saved every run; an exact hit would skip the save and freeze
    # the cache at its first version. The prefix restores the newest earlier save.
    key, prefix = cache["with"]["key"], cache["with"]["restore-keys"]
    assert "github.run_id" in key or "github.sha" in key
    assert key.startswith(prefix.strip())


def test_site_works_under_a_subpath(browser, tmp_path, host, warm_cache):
    """The site built by the host and served under /inference/, as GitHub Pages serves a project's
    site: every page loads with its figures, and every request stays under the prefix."""
    project = copy_project(tmp_path / "project", warm_cache)
    with serve(tmp_path / "out", prefix="inference") as url:
        cfg = (project / "mkdocs.yml").read_text()
        (project / "mkdocs.yml").write_text(re.sub(r"^site_url:.*$", f"site_url: {url}", cfg, flags=re.M))
        result = HOST_BUILDS[host](tmp_path / "out", project / "mkdocs.yml")
        assert result.returncode == 0, result.stderr
        context = browser.new_context()
        netloc = url.split("/")[2]
        for path in site_pages(tmp_path / "out"):
            page = context.new_page()
            watch = PageWatch(page, netloc)
            responses = []
            page.on("response", lambda r: responses.append((r.status, r.url)))
            page.goto(url + path)
            wait_for_figures(page)
            # Every figure's data, SVG and CSV loads from under the subpath.
            for href in page.eval_on_selector_all("a[download], link[rel=preload]", "els => els.map(e => e.href)"):
                assert href.startswith(url), href
                assert page.request.get(href).ok, href
            watch.assert_clean()
            assert all(status < 400 for status, _ in responses), responses
            assert all(u.startswith(url) for _, u in responses if not u.startswith("data:")), responses
            page.close()
        context.close()


def test_an_act_before_the_theme_has_started_reads_the_state(browser, base_url):
    """A reader may press a key or touch a figure while the theme's bundle is still arriving or
    starting (on a phone, for hundreds of milliseconds), before the loader's init has run: that
    runs once the theme emits the page, which in Chromium comes in a task after DOMContentLoaded
    (start.js). Here the bundle is held back, which keeps init waiting as that task does. The act
    still counts: the page's state is read with no further act, and a figure the reader touched is
    brought to life. (A key and a touch, not the pointer: a pointer resting on a page whose layout
    changes receives moves the browser makes up, which would wake the loader anyway.)"""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    asked = []
    page.on("request", lambda r: "/assets/explainer/page/" in r.url and asked.append(r.url))
    held = []  # the theme's bundle, held back until the reader has acted
    page.route(THEME_BUNDLE, lambda route: held.append(route))
    page.goto(base_url + "explainers/speculative-decoding/", wait_until="commit")
    # The page is parsed and our loader has run; the theme's bundle has not, so no init either.
    page.wait_for_function("() => document.readyState === 'interactive' && window.explainerGen")
    wait_for_events(page, lambda: held)
    assert held and page.evaluate("() => window.document$ === undefined")
    page.keyboard.press("Shift")
    figure = page.locator(".eg-figure").nth(1)
    figure.locator(".eg-picture:visible").tap()
    page.wait_for_timeout(100)
    assert asked == []  # nothing is read before init
    held[0].continue_()
    page.wait_for_function("() => window.explainerGen.state()", timeout=10000)
    own = page.evaluate("() => new URL(document.querySelector('.eg-page[data-eg-page]').dataset.egPage, location.href).href")
    assert asked == [own] and page.evaluate("() => !!window.document$"), (asked, own)
    page.wait_for_function("f => window.explainerGen.figures().some(x => x.el === f)",
                           arg=figure.element_handle(), timeout=10000)
    context.close()


def test_vega_loads_only_when_a_reader_reaches_for_a_figure(browser, base_url):
    """A reader who only reads downloads neither Vega nor the page's state (the numbers' texts);
    the state comes at the reader's first act, and a slider moved before it arrives still ends
    with the numbers of where the slider stands."""
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    held = []  # the page state's response, held back until the slider has moved
    page.route(re.compile(r".*/assets/explainer/page/[^/]*\.json$"), lambda route: held.append(route))
    page.goto(base_url + "explainers/speculative-decoding/")
    page.wait_for_load_state("networkidle")
    assert not [u for u in requested if "/vega-" in u or "/assets/explainer/page/" in u], requested
    first = page.locator(".eg-figure").first
    # Until then each figure is its static picture, in the reader's colour scheme.
    assert first.locator("svg.eg-static:visible").is_visible()
    label = first.locator("svg.eg-static:visible .role-axis-label text").first
    assert label.evaluate("e => getComputedStyle(e).fill") == "rgb(%d, %d, %d)" % tuple(
        int(PALETTE["muted"][1][i:i + 2], 16) for i in (1, 3, 5))
    # The controls drive the prose, even when moved before the page's state has arrived.
    before = page.locator("[data-eg-num]").all_inner_texts()
    slider = first.get_by_role("slider", name="Acceptance rate")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    # The reader's act asks for the state (at the focus or at the key).
    wait_for_events(page, lambda: held)
    moved_to = slider.input_value()
    assert len(held) == 1 and page.locator("[data-eg-num]").all_inner_texts() == before
    # What a page whose state arrived before the slider moved to the same place shows.
    other = context.new_page()
    other.goto(base_url + f"explainers/speculative-decoding/?a={moved_to}")
    other.wait_for_function("() => window.explainerGen && window.explainerGen.state()")
    expected = other.locator("[data-eg-num]").all_inner_texts()
    assert expected != before
    held[0].continue_()
    page.wait_for_function("""want => JSON.stringify(Array.from(document.querySelectorAll('[data-eg-num]'),
                                                     e => e.innerText)) === JSON.stringify(want)""",
                           arg=expected, timeout=5000)
    first.locator(".eg-view .marks").wait_for(state="visible")
    assert [u for u in requested if "/vega-" in u]
    context.close()
