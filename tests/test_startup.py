"""The theme's start-up restyles no page as a whole (render/chrome.py, issue 11), and the light/dark
switch that replaces Material's palette component behaves as the reader expects.

Material's bundle (Zensical's too) ran at the end of the body (it is now deferred). As it started, it changed <html>,
<body>, the head's stylesheets and its color-scheme meta tag, and each change restyled every
element of a long page. Now the same changes are made before the content exists, and when the
bundle makes them again, nothing changes. Every check runs on both hosts' builds, and each has a
negative control: the page as the theme alone would serve it (`theme_only`) must fail it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from explainer_gen.render.chrome import PALETTE_FORM, REVEAL, WAITING_FORM, Chrome
from helpers import THEME_BUNDLE, direct, figure_pages, mark_document, route_fetch, same_document, site_pages

pytestmark = pytest.mark.hosts()

CHROME = Chrome.read()


def theme_only(page_html: str) -> str:
    """The page without what chrome.py adds: the theme's own palette component and start-up, and its
    bundle read where its tag is."""
    out = page_html.replace(f"<script>{CHROME.start}</script>", "").replace(f"<script>{CHROME.palette}</script>", "")
    out = re.sub(r'(<script src="[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js") defer', r"\1", out)
    out = out.replace(WAITING_FORM, PALETTE_FORM).replace(REVEAL, "")
    assert out != page_html and WAITING_FORM not in out and CHROME.palette not in out, "chrome.py's additions not found"
    return out


def unboxed(page_html: str) -> str:
    """The page with its Markdown tables out of their boxes, as the Markdown extension had left them."""
    out = re.sub(r'<div class="eg-table-box">(<table>.*?</table>)</div>', r"\1", page_html, flags=re.S)
    assert out != page_html, "no table box found"
    return out


def open_page(browser, url: str, *, scheme: str = "light", undo=None, init: str = "", block_bundle=False,
              width: int = 412):
    """A new context's page for `url`, not yet loaded. `undo` rewrites the page as it is served."""
    context = browser.new_context(color_scheme=scheme, viewport={"width": width, "height": 823})
    page = context.new_page()
    if init:
        page.add_init_script(init)
    if undo:
        def serve_theme_only(route):
            response = route_fetch(route)
            route.fulfill(response=response, body=undo(response.text()))
        page.route(url, serve_theme_only)
    if block_bundle:
        page.route(THEME_BUNDLE, lambda route: route.abort())
    return context, page


# Records every change, once the theme's bundle is in the page, to what the page's styles depend
# on: an attribute of <html> or <body>, a stylesheet's URL, a color-scheme meta tag. A mutation
# record is queued even when an attribute is set to the value it has, so a change is a record
# whose old value differs from the value that follows it.
# When the theme's bundle runs: the document's readyState as it sets `document$`, the last thing it
# does as it starts. Deferred (render/chrome.py, DEFER), it runs once the page is parsed
# ("interactive"), in a task of its own; read where its tag is, it runs while the parser waits
# ("loading"), in the parser's task, which then holds the page's whole first layout too (the bundle
# reads the scroll position as it starts).
# And whether the page's components mount apart from it: the first page `document$` emits, on
# which they mount, comes once DOMContentLoaded's dispatch is over, its last listener (on window)
# run (start.js hands it on). Left to itself, the bundle's listener on the document emits it
# during the dispatch, which Chromium runs in the bundle's task.
BUNDLE_AT = r"""
window.__dcl = "not yet";
document.addEventListener("DOMContentLoaded", () => { window.__dcl = "dispatching"; }, {capture: true, once: true});
window.addEventListener("DOMContentLoaded", () => { window.__dcl = "over"; }, {once: true});
Object.defineProperty(window, "document$", {configurable: true, set(value) {
  Object.defineProperty(window, "document$", {value, writable: true, configurable: true});
  window.__bundleAt = document.readyState;
  value.subscribe(() => { if (window.__mountedApart === undefined) window.__mountedApart = window.__dcl === "over"; });
}});
"""

LATE_CHANGES = BUNDLE_AT + r"""
window.__late = [];
(() => {
  const value = (t, name) => t.getAttribute(name);
  new MutationObserver(records => {
    const late = !!document.querySelector('script[src*="javascripts/bundle."]');
    for (const r of records) {
      const t = r.target;
      if (r.type === 'childList') {
        if (late && t === document.head) for (const n of r.addedNodes)
          if (n.tagName === 'META' && n.name === 'color-scheme') __late.push('color-scheme meta added');
        continue;
      }
      const watched = t === document.documentElement || t === document.body
        || (t.tagName === 'LINK' && r.attributeName === 'href' && /stylesheet/.test(t.rel))
        || (t.tagName === 'META' && t.name === 'color-scheme' && r.attributeName === 'content');
      if (!watched) continue;
      // The record's old value against the value after it: the next record's old value, or now.
      const later = records.slice(records.indexOf(r) + 1).find(n => n.target === t && n.attributeName === r.attributeName);
      const after = later ? later.oldValue : value(t, r.attributeName);
      if (late && r.oldValue !== after) __late.push(`${t.tagName.toLowerCase()} ${r.attributeName}: ${r.oldValue} -> ${after}`);
    }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true, childList: true});
})();
"""


class StartUp(NamedTuple):
    """What one page's start-up did: LATE_CHANGES' record, the scheme it ended in, and, when
    traced, the kinds of page-wide restyle after the bundle started and how many style passes
    restyled a large part of the page (see restyled below)."""
    late: list[str]
    scheme: str
    restyles: list[str] | None = None
    large: int | None = None
    bundle_at: str | None = None  # the document's readyState as the bundle finished starting (BUNDLE_AT)
    mounted_apart: bool | None = None  # the page's components mounted after DOMContentLoaded's dispatch (BUNDLE_AT)


def start_up_of(browser, urls: list[str], init: str = "", trace: bool = False, **options) -> dict[str, StartUp]:
    """Each page's start-up, each loaded in a new context (a first visit, or the storage `init`
    sets) and watched for at least a second after its load, which gives the theme's deferred steps
    (its transition guard) time to run. The pages are loaded one after another and stay open side
    by side (each is visible and has focus in its own context), so their seconds of watching
    overlap. With `trace`, Chromium's trace of the whole browser is read too: a context has
    renderer processes of its own, so each page's events are those of the process that
    committed its URL."""
    opened = [(url, *open_page(browser, url, init=init + LATE_CHANGES, **options)) for url in urls]
    if trace:  # once the contexts are made: a context made while tracing takes seconds more
        browser.start_tracing(categories=CATEGORIES)
    try:
        for url, _, page in opened:
            page.goto(url, wait_until="load")
        opened[-1][2].wait_for_timeout(1000)  # the last page loaded, and so every page, has had its second
        found, elements = {}, {}  # each page's start-up, and (traced) how many elements it has
        for url, _, page in opened:
            assert page.evaluate("() => !!window.document$"), f"the theme's bundle did not start on {url}"
            # start.js's hand-off is for the first page only: the theme's next pages go straight through.
            assert page.evaluate("() => !Object.prototype.hasOwnProperty.call(document$, 'next')"), url
            found[url] = StartUp(page.evaluate("() => window.__late"),
                                 page.evaluate("() => document.body.getAttribute('data-md-color-scheme')"),
                                 bundle_at=page.evaluate("() => window.__bundleAt"),
                                 mounted_apart=page.evaluate("() => window.__mountedApart"))
            if trace:
                elements[url] = page.evaluate(STYLED)
    finally:
        events = json.loads(browser.stop_tracing())["traceEvents"] if trace else []
        for _, context, _ in opened:
            context.close()
    if trace:
        process = {}  # renderer process -> the URL its main frame committed
        for e in events:
            data = (e.get("args") or {}).get("data") or {}
            if e.get("name") == "CommitLoad" and data.get("isMainFrame") and data.get("url") in found:
                process[e["pid"]] = data["url"]
        assert set(process.values()) == set(found), f"no trace of {set(found) - set(process.values())}"
        by_process: dict = {}
        for e in events:
            by_process.setdefault(e.get("pid"), []).append(e)
        for pid, url in process.items():
            found[url] = found[url]._replace(**restyled(by_process[pid], elements[url]))
    return found


def test_theme_start_up_changes_nothing_the_page_is_styled_by(browser, base_url, site):
    """On every page, in both schemes, on a first visit and with a stored choice: once the
    theme's bundle runs, <html>, <body>, the stylesheets' URLs and the color-scheme meta tag stay
    exactly as the page's own start-up left them. On every figure page, in the light scheme, the
    trace shows no restyle of the whole page after the bundle starts (below)."""
    urls = [base_url + path for path in site_pages(site)]
    figures = {base_url + path for path in figure_pages(site)}
    for scheme in ("light", "dark"):
        found = start_up_of(browser, urls, scheme=scheme, trace=scheme == "light")
        assert {url: s.late for url, s in found.items()} == {url: [] for url in urls}, scheme
        assert {url: s.bundle_at for url, s in found.items()} == {url: "interactive" for url in urls}, scheme
        assert {url: s.mounted_apart for url, s in found.items()} == {url: True for url in urls}, scheme
        if scheme == "light":  # and the browser's own account: no restyle of the whole page
            assert figures <= set(found)
            restyles = {url: (s.restyles, s.large) for url, s in found.items() if url in figures}
            assert [url for url, (kinds, large) in restyles.items() if kinds or large > 1] == [], restyles
    # A stored choice opposite to the system's: the page starts in it, and still nothing changes.
    context, page = open_page(browser, base_url, scheme="light")
    page.goto(base_url)
    page.locator("label.md-header__button[for^='__palette']:visible").click()
    storage = page.evaluate("() => JSON.stringify(Object.entries(localStorage))")
    context.close()
    restore = f"for (const [k, v] of {storage}) localStorage.setItem(k, v);"
    urls = [base_url + path for path in figure_pages(site)[:2]]
    found = start_up_of(browser, urls, scheme="light", init=restore)
    assert {url: (s.late, s.scheme) for url, s in found.items()} == {url: ([], "slate") for url in urls}


def test_negative_control_the_theme_alone_changes_them(browser, base_url, site):
    """The same check on the page as the theme alone serves it finds each change chrome.py moved."""
    url = direct(base_url + figure_pages(site)[0])
    found = start_up_of(browser, [url], undo=theme_only)[url].late
    text = "\n".join(found)
    assert "html class: no-js" in text, found                            # the no-js swap
    assert "html data-js-focus-visible: null" in text, found             # the focus-visible mark
    assert re.search(r"link href: [./]*assets/stylesheets/\S* -> http", text), found  # a stylesheet's URL
    assert "color-scheme meta added" in found, found                     # the palette's meta tag
    assert "body data-md-color-switching: null -> " in text, found       # its transition guard


HAND_OFF = 'document.addEventListener("DOMContentLoaded"'
HAND_OFF_END = '}, { once: true, capture: true });\n})();'


def without_hand_off(page_html: str) -> str:
    """The page with start.js as it was before it handed the theme's first page on (its last step)."""
    start = CHROME.start
    assert start.count(HAND_OFF) == 1 and start.endswith(HAND_OFF_END), "start.js's hand-off not found"
    assert start[start.index(HAND_OFF):].count("\n})") == 1, "a step after start.js's hand-off would be cut too"
    out = page_html.replace(start, start[:start.index(HAND_OFF)] + "})();")
    assert out != page_html, "start.js not found in the page"
    return out


def test_negative_control_without_the_hand_off_the_components_mount_in_the_bundles_task(browser, base_url, site):
    """Without start.js's hand-off, the deferred bundle's own listener emits the page during
    DOMContentLoaded's dispatch (in Chromium, in the task that ran the bundle): the check above tells
    the two apart."""
    url = direct(base_url + figure_pages(site)[0])
    start_up = start_up_of(browser, [url], undo=without_hand_off)[url]
    assert (start_up.bundle_at, start_up.mounted_apart) == ("interactive", False), start_up


# The browser's own account of what it restyled: Chromium's trace. After the bundle starts, the
# platform colours (which a color-scheme meta tag sets) may not change, no invalidation may reach
# the whole document or the article, and at most one style pass may reach a large part of the
# page: the first styling of the content the parser added last, which on a fast machine happens
# only once the bundle asks for styles. (Each of the theme's own changes was such a pass.)
WHOLE = ("HTML", "BODY", "ARTICLE", "DIV class='md-container", "MAIN", "DIV class='md-main",
         "DIV class='md-content")
CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline",
              "disabled-by-default-devtools.timeline.invalidationTracking"]
LARGE = 0.3  # of the page's elements; our own later passes stay under a quarter of them
# The page's elements that a style pass can reach: all but the contents of a closed details element
# (such as the folded list of how the numbers are computed), which the browser neither styles nor
# lays out until it opens.
STYLED = """() => {
  let skipped = 0;
  for (const folded of document.querySelectorAll('details:not([open])')) {
    if (folded.parentElement.closest('details:not([open])')) continue;  // counted with the outer one
    for (const child of folded.children)
      if (child.tagName !== 'SUMMARY') skipped += 1 + child.getElementsByTagName('*').length;
  }
  return document.getElementsByTagName('*').length - skipped;
}"""


def restyled(events: list[dict], elements: int) -> dict:
    """What one page's trace events show after its bundle starts: the kinds of page-wide restyle
    (`restyles`), and how many style passes restyled a large part of its `elements` (`large`)."""
    starts = [e["ts"] for e in events if e.get("name") == "EvaluateScript"
              and THEME_BUNDLE.search((e.get("args", {}).get("data") or {}).get("url", ""))]
    assert starts, "no trace of the theme's bundle running"
    after = [e for e in events if e.get("ts", 0) >= min(starts)]
    found = set()
    for e in after:
        data = (e.get("args") or {}).get("data") or {}
        if "InvalidationTracking" not in e.get("name", ""):
            continue
        node = data.get("nodeName", "")
        if data.get("reason") == "PlatformColorChange":
            found.add("platform colours changed")
        elif data.get("reason") == "Invalidation set invalidates subtree" and node.startswith(WHOLE):
            found.add(f"restyled all of {node.split(' ')[0]}")
    large = sum(1 for e in after if e.get("name") == "UpdateLayoutTree" and e.get("ph") == "X"
                and (e.get("args", {}).get("elementCount") or 0) > LARGE * elements)
    return {"restyles": sorted(found), "large": large}


def restyles_after_bundle(browser, url: str, **options) -> tuple[list[str], int]:
    """One page, loaded and traced alone: its kinds of page-wide restyle, and its large passes."""
    found = start_up_of(browser, [url], trace=True, **options)[url]
    return found.restyles, found.large


def test_negative_control_the_theme_alone_restyles_the_whole_page(browser, base_url, site):
    """The trace sees each kind of restyle the theme alone makes: its change of the platform
    colours on every load, and its style passes over most of the page (five on every load of a
    quiet machine, and under three busy processes). In full runs of the browser tier on two busy
    cores, a load's trace has twice held one such pass, or none, and missed the change of the
    platform colours (stops 48 and 49; a cause not found: the trace, not the page, since the
    theme's code is the same on every load). A negative control shows that the trace can see
    both, so a page is loaded up to three times and must show the colours' change and three or
    more large passes on at least one load."""
    for path in figure_pages(site)[:2]:
        most, colours, seen = 0, False, []
        for _ in range(3):
            url = direct(base_url + path)
            got = start_up_of(browser, [url], trace=True, undo=theme_only)[url]
            found, large = got.restyles, got.large
            seen.append((found, large))
            colours = colours or "platform colours changed" in found
            most = max(most, large)
            if colours and most >= 3:
                break
        assert colours and most >= 3, (path, seen)
        assert got.bundle_at == "loading", f"{path}: the theme's bundle, read where its tag is, ran {got.bundle_at}"
    # Without their boxes, the theme's re-wrapping of the tables restyles the whole article.
    path = next(p for p in figure_pages(site) if '<div class="eg-table-box">' in (site / p / "index.html").read_text())
    found, _ = restyles_after_bundle(browser, direct(base_url + path), undo=unboxed)
    assert "restyled all of ARTICLE" in found, found


# -- The light/dark switch ------------------------------------------------------------------------

SWITCH = "label.md-header__button[for^='__palette']:visible"


def shown_scheme(page) -> dict:
    return page.evaluate(r"""() => ({
        scheme: document.body.getAttribute('data-md-color-scheme'),
        meta: [...document.querySelectorAll('meta[name=color-scheme]')].map(m => m.content),
        theme: [...document.querySelectorAll('meta[name=theme-color]')].map(m => m.content),
        background: getComputedStyle(document.body).backgroundColor,
        header: '#' + getComputedStyle(document.querySelector('.md-header')).backgroundColor.match(/\d+/g)
                  .slice(0, 3).map(v => (+v).toString(16).padStart(2, '0')).join(''),
        toggles: [...document.querySelectorAll("label.md-header__button[for^='__palette']")]
                   .filter(l => l.getBoundingClientRect().width > 0).map(l => l.title),
    })""")


def test_first_visit_takes_the_systems_scheme_before_the_bundle(browser, base_url):
    """A first visit in a dark system is dark from the first paint: with the theme's bundle never
    loaded, the page is already in the dark palette, its meta tags say so, and the one toggle
    shown offers light mode."""
    backgrounds = set()
    for scheme in ("dark", "light"):
        context, page = open_page(browser, base_url, scheme=scheme, block_bundle=True)
        page.goto(base_url, wait_until="load")
        assert page.evaluate("() => !window.document$"), "the bundle was meant to be blocked"
        before = shown_scheme(page)
        # What the page's own palette form offers for this system setting: its scheme, and the
        # toggle that follows it (the theme's markup, read as written in the page).
        palette, toggle = page.evaluate("""s => { const i = document.querySelector(
            `input[data-md-color-media='(prefers-color-scheme: ${s})']`);
            return [i.getAttribute('data-md-color-scheme'), i.nextElementSibling.title]; }""", scheme)
        context.close()
        assert before["scheme"] == palette and before["meta"] == [scheme] and before["toggles"] == [toggle], before
        backgrounds.add(before["background"])
        assert len(before["theme"]) == 1 and re.fullmatch(r"#[0-9a-f]{6}", before["theme"][0]), before
        # With the bundle: the same, so nothing it does differs from what the reader first saw.
        context, page = open_page(browser, base_url, scheme=scheme)
        page.goto(base_url, wait_until="load")
        page.wait_for_function("() => !!window.document$")
        after = shown_scheme(page)
        context.close()
        assert after == before
    assert len(backgrounds) == 2  # the two systems' pages really differ


def test_switch_is_kept_across_pages_reloads_and_the_keyboard(browser, base_url, site):
    context, page = open_page(browser, base_url, scheme="light", width=1280)
    page.goto(base_url)
    page.wait_for_function("() => !!window.document$")
    light = shown_scheme(page)
    page.locator(SWITCH).click()
    dark = shown_scheme(page)
    assert dark["scheme"] == "slate" and dark["meta"] == ["dark"] and dark["toggles"] == ["Switch to light mode"]
    assert dark["background"] != light["background"]
    assert dark["theme"] == [dark["header"]] and light["theme"] == [light["header"]]  # the browser's bar matches
    page.wait_for_function("() => !document.body.hasAttribute('data-md-color-switching')")
    # Instant navigation keeps the header: the switch still works on the next page.
    target = figure_pages(site)[0]
    mark_document(page)
    page.locator(f"a.md-nav__link[href$='{target}']").first.click()
    page.wait_for_url(re.compile(re.escape(target) + "$"))
    page.wait_for_function("() => document.querySelector('.eg-figure')")
    assert same_document(page), "the link was loaded as a new page"
    assert shown_scheme(page)["scheme"] == "slate"
    page.locator(SWITCH).click()
    assert shown_scheme(page)["scheme"] == "default"
    # A reload keeps the choice.
    page.locator(SWITCH).click()
    page.reload()
    assert shown_scheme(page)["scheme"] == "slate"
    context.close()
    # The keyboard: Enter on the focused switch moves to the next palette.
    context, page = open_page(browser, base_url, scheme="light")
    page.goto(base_url)
    page.wait_for_function("() => !!window.document$")
    page.focus("input[name='__palette']:checked")
    page.keyboard.press("Enter")
    assert shown_scheme(page)["scheme"] == "slate"
    page.keyboard.press("Enter")
    assert shown_scheme(page)["scheme"] == "default"
    assert page.url.rstrip("/") == base_url.rstrip("/"), "Enter submitted the palette form"
    context.close()


def test_page_follows_the_system_until_the_reader_chooses(browser, base_url):
    context, page = open_page(browser, base_url, scheme="light")
    page.goto(base_url)
    page.wait_for_function("() => !!window.document$")
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.body.getAttribute('data-md-color-scheme') === 'slate'")
    assert shown_scheme(page)["meta"] == ["dark"]
    page.locator(SWITCH).click()  # the reader chooses light
    assert shown_scheme(page)["scheme"] == "default"
    page.emulate_media(color_scheme="light")
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(200)
    assert shown_scheme(page)["scheme"] == "default", "a stored choice outranks the system"
    context.close()


# -- Markdown tables in a box of their own ---------------------------------------------------------

def test_markdown_tables_look_as_the_theme_draws_them(browser, base_url, site):
    """Each Markdown table sits in its box, and with JavaScript the theme still wraps it in its
    scroll container. With and without JavaScript, every table is drawn pixel for pixel as the same
    table without the box, at the same place: the spacing around it and the article's height are
    the theme's. Negative controls: a box that spaces its letters or shifts by a pixel draws differently, and without the
    rule that keeps the theme's spacing after a bare table, the page below it moves."""
    path = next(p for p in figure_pages(site) if '<div class="eg-table-box">' in (site / p / "index.html").read_text())
    url = direct(base_url + path)  # a page rewritten through a route (helpers.direct)

    # One context with JavaScript and one without; each drawing is a page of its own in one of them.
    contexts = {js: browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=js)
                for js in (True, False)}

    def drawn(js: bool, extra_css: str = "", unbox: bool = False) -> tuple[list[bytes], list]:
        page = contexts[js].new_page()
        def as_asked(route):  # the page without its boxes, or with a style of the control's (not by
            response = route_fetch(route)  # script: it must work without JavaScript)
            body = unboxed(response.text()) if unbox else response.text()
            route.fulfill(response=response, body=body.replace("</head>", f"<style>{extra_css}</style></head>", 1))
        page.route(url, as_asked)
        page.goto(url, wait_until="load")
        if js:
            page.wait_for_function("() => !!window.document$ && !document.querySelector('article > .eg-table-box > table')")
        tables = page.locator("article table:not(.eg-data table)")
        if not unbox:
            inside = ".eg-table-box > .md-typeset__scrollwrap > .md-typeset__table > table" if js else ".eg-table-box > table"
            assert page.locator(f"article > {inside}").count() == tables.count() > 0
        where = page.evaluate("""() => { const a = document.querySelector('article').getBoundingClientRect();
            return [a.height, ...[...document.querySelectorAll('article table:not(.eg-data table)')]
                .map(t => { const b = t.getBoundingClientRect(); return [b.left - a.left, b.top - a.top, b.width, b.height]; })]; }""")
        pictures = []
        for i in range(tables.count()):
            tables.nth(i).scroll_into_view_if_needed()
            pictures.append(page.screenshot(clip=tables.nth(i).bounding_box(), animations="disabled"))
        page.close()
        return pictures, where

    try:
        plain = {}
        for js in (True, False):
            boxed, plain[js] = drawn(js), drawn(js, unbox=True)
            assert boxed[1] == plain[js][1], js  # the same places and the same article height
            assert boxed[0] == plain[js][0], js  # the same pixels
        assert drawn(True, ".eg-table-box { letter-spacing: .01em }")[0] != plain[True][0]
        assert drawn(True, ".eg-table-box { padding-left: 1px }")[1] != plain[True][1]
        assert drawn(False, ".md-typeset > .eg-table-box + * { margin-top: 1em !important }")[1] != plain[False][1]
    finally:
        for context in contexts.values():
            context.close()
