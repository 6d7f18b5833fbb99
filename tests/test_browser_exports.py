"""A figure leaves the page (issue 38): each figure's "Download SVG", "Download PNG" and "Copy link",
in Chromium, on the roofline page, whose first figure a slider moves; and the page printed.

One load of the page checks the buttons of every figure; the first figure's files before it goes
live (its static picture, the Vega bundle held back so that it cannot go live), then after a
slider moved it (its live view); its link; the page printed; then the link, opened in a second
page, which copies its own link and saves its files in the dark scheme. The files are
compared with what the page shows: a saved SVG's drawing with the static picture the build wrote,
or, drawn by Chromium, with the live view's own pixels; a saved PNG with those pixels.
"""
from __future__ import annotations

import base64
import io
import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import numpy as np
import pytest

from explainer_gen.theme import FONT_FAMILY, FONT_FILES, PALETTE, paint_class
from helpers import BACKGROUND, DRAWING, SETTLED, direct

pytestmark = pytest.mark.hosts()  # on both hosts' builds (tests/conftest.py)

PAGE, SLUG = "explainers/roofline/", "roofline"
ANCHOR = "fig-roofline"
SLIDER, PARAM = "Decode batch (requests)", "batch"
BUTTONS = ("Download SVG", "Download PNG", "Copy link")
SCALE = 2  # a PNG's pixels per CSS pixel
SVG = "{http://www.w3.org/2000/svg}"
DESKTOP = {"width": 1280, "height": 900}

# -- what a file holds --------------------------------------------------------------------------------


def parts(text: str) -> tuple[ET.Element, str, str | None, list[ET.Element]]:
    """A saved SVG: its root, its <style>'s text, its background's fill and what it draws (the
    root's children after the <style> and the background a saved file puts first)."""
    root = ET.fromstring(text)
    children = list(root)
    style = children.pop(0).text or "" if children and children[0].tag == SVG + "style" else ""
    bg = None
    if children and children[0].tag == SVG + "rect" and children[0].get("width") == "100%":
        bg = children.pop(0).get("fill")
    return root, style, bg, children


def drawing(elements: list[ET.Element]) -> list[tuple]:
    """What elements draw, element by element, in order: tag, attributes and text."""
    out = []

    def walk(el):
        out.append((el.tag.removeprefix(SVG), tuple(sorted(el.attrib.items())), (el.text or "").strip()))
        for child in el:
            walk(child)
    for el in elements:
        walk(el)
    return out


def texts(elements: list[ET.Element]) -> list[str]:
    return sorted(t for tag, _, t in drawing(elements) if tag == "text" and t)


def built_picture(site: Path, anchor: str) -> str:
    """The figure's static picture as the build wrote it into the page (inline SVG)."""
    html = (site / PAGE / "index.html").read_text(encoding="utf-8")
    at = html.index(f'id="{anchor}"')
    start = html.index('<svg class="eg-static"', at)
    return html[start:html.index("</svg>", start) + len("</svg>")]


def embedded_fonts(style: str) -> dict[int, bytes]:
    """The chart font's files a saved SVG's style inlines, by weight."""
    found = re.findall(r'@font-face\{font-family:"([^"]+)";font-style:normal;font-weight:(\d+);'
                       r'src:url\(data:font/woff2;base64,([A-Za-z0-9+/=]+)\) format\("woff2"\)\}', style)
    assert {family for family, _, _ in found} == {FONT_FAMILY}, style[:200]
    return {int(w): base64.b64decode(data) for _, w, data in found}


def assert_light_paints(style: str, drawn: list[ET.Element]) -> None:
    """The style gives each palette class the drawing uses the light palette's colour."""
    rules = dict(re.findall(r"\.([fs]-[\w-]+)\{(?:fill|stroke):(#[0-9a-f]{6})\}", style))
    light = {paint_class(prop, role): PALETTE[role][0] for role in PALETTE for prop in ("fill", "stroke")}
    used = {c for _, attrs, _ in drawing(drawn) for k, v in attrs if k == "class" for c in v.split()} & set(light)
    assert used and {c: rules.get(c) for c in used} == {c: light[c] for c in used}


def shipped_fonts(site: Path) -> dict[int, bytes]:
    return {weight: (site / "assets" / "explainer" / path).read_bytes() for path, (_, weight) in FONT_FILES.items()}


def paints(elements: list[ET.Element]) -> set[str]:
    """The literal colours elements paint with (none and transparent left out)."""
    return {v.lower() for tag, attrs, _ in drawing(elements) for k, v in attrs
            if k in ("fill", "stroke") and v.lower() not in ("none", "transparent")}


def rgb(css: str) -> tuple[int, ...]:
    """A colour as CSS writes it (#rrggbb or rgb(r, g, b)) as numbers."""
    if css.startswith("#"):
        return tuple(int(css[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB")).astype(np.int16)


# Pixels that differ by more than a quarter of the range in some channel, between two pictures of
# one size. Vega's canvas and its SVG drawn by Chromium, at one scale, from one scenegraph, differ
# only where anti-aliasing rounds otherwise (none such pixel was seen); one per mille of the
# pixels bounds that. The decode point moved to another batch differs by far more (the walk checks
# its own move; test_the_comparison_sees_a_moved_point_and_another_picture, a point of the size).
def differing(a: np.ndarray, b: np.ndarray) -> int:
    assert a.shape == b.shape, (a.shape, b.shape)
    return int((np.abs(a - b).max(axis=2) > 64).sum())


def same_picture(a: np.ndarray, b: np.ndarray) -> bool:
    return differing(a, b) <= a.shape[0] * a.shape[1] / 1000


# -- what the page shows, read in the browser ---------------------------------------------------------

# The live view's canvas as displayed: its pixels (at the screen's resolution) over the page's background.
CANVAS = """f => {
  const c = f.querySelector('.eg-view canvas'), out = document.createElement('canvas');
  out.width = c.width; out.height = c.height;
  const ctx = out.getContext('2d');
  ctx.fillStyle = getComputedStyle(document.body).backgroundColor;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(c, 0, 0);
  return out.toDataURL('image/png');
}"""

# An SVG drawn by Chromium as an image (which sees no font but its own) at a size in pixels.
RENDER = """async ([text, width, height]) => {
  const url = URL.createObjectURL(new Blob([text], {type: 'image/svg+xml'}));
  const img = new Image();
  img.src = url;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = width; c.height = height;
  c.getContext('2d').drawImage(img, 0, 0, width, height);
  URL.revokeObjectURL(url);
  return c.toDataURL('image/png');
}"""

LIVE = "f => window.explainerGen.figures().some(x => x.el === f)"

# The text items of the live view's scenegraph (what Vega draws on its canvas).
SCENE_TEXTS = """f => {
  const fig = window.explainerGen.figures().find(x => x.el === f), out = [];
  const walk = mark => {
    for (const it of mark.items || []) {
      if (mark.marktype === 'text' && String(it.text ?? '').trim()) out.push(String(it.text));
      for (const m of it.items || []) walk(m);
    }
  };
  walk(fig.result.view.scenegraph().root);
  return out.sort();
}"""

# Whether the element shows at least partly inside the window.
IN_VIEW = """el => { const r = el.getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth; }"""

BOX = "el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; }"


def data_png(url: str) -> np.ndarray:
    return pixels(base64.b64decode(url.split(",", 1)[1]))


def render(page, text: str, width: int, height: int) -> np.ndarray:
    return data_png(page.evaluate(RENDER, [text, width, height]))


def download(page, fig, name: str):
    """Click the figure's button `name` and return the file saved: (its name, its bytes)."""
    with page.expect_download() as got:
        fig.get_by_role("button", name=name, exact=True).click()
    d = got.value
    return d.suggested_filename, Path(d.path()).read_bytes()


def move(page, fig) -> float:
    """Move the figure's slider to its end with the keyboard, wait for the live view to draw that
    state, and return the value."""
    before = page.evaluate(DRAWING, ANCHOR)
    slider = fig.get_by_role("slider", name=SLIDER)
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function(f"prev => ({DRAWING})({ANCHOR!r}) !== prev", arg=before)
    page.evaluate(SETTLED, ANCHOR)
    return float(slider.input_value())


# -- the checks ---------------------------------------------------------------------------------------


# Where the figure's data table sits in it with the buttons and, were they taken out, without them.
KEPT_ROW = """f => {
  const d = f.querySelector('details.eg-data'), bar = f.querySelector('.eg-exports'), next = bar.nextSibling;
  const top = () => d.getBoundingClientRect().top - f.getBoundingClientRect().top;
  const shown = top();
  bar.remove();
  const before = top();
  f.insertBefore(bar, next);
  return [shown, before];
}"""


def check_buttons(page) -> None:
    """Every figure has the three buttons, named exactly so, in one group after its controls, in a
    row the page kept free for them from its first paint (their arrival moves nothing); they are
    reached by Tab from the figure's last control, with a visible focus ring."""
    figures = page.locator(".eg-figure[data-eg-figure]")
    assert figures.count() >= 2
    for fig in figures.all():
        names = fig.locator(".eg-exports").get_by_role("button").all_inner_texts()
        assert names == list(BUTTONS), (fig.get_attribute("id"), names)
        for name in BUTTONS:
            assert fig.get_by_role("button", name=name, exact=True).is_visible()
        shown, before = fig.evaluate(KEPT_ROW)
        assert abs(shown - before) < 1, (fig.get_attribute("id"), shown, before)
    fig = page.locator(f"#{ANCHOR}")
    fig.get_by_role("slider").last.focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
        return [e.tagName, e.textContent, s.outlineStyle, parseFloat(s.outlineWidth)]; }""")
    assert focused[:3] == ["BUTTON", BUTTONS[0], "solid"] and focused[3] >= 2, focused


def check_static_files(page, fig, site: Path) -> np.ndarray:
    """Before the figure goes live, its files are its static picture as built: the SVG draws what
    the build wrote, element for element, with the scheme's colour for each palette class and the
    chart font inlined; the PNG is that SVG at twice the picture's CSS size. Returns the PNG."""
    name, svg = download(page, fig, "Download SVG")
    assert name == f"{SLUG}-{ANCHOR}.svg"
    text = svg.decode("utf-8")
    root, style, bg, drawn = parts(text)
    built = ET.fromstring(unescape(built_picture(site, ANCHOR)))
    assert drawing(drawn) == drawing(list(built)), "the saved SVG draws the static picture"
    assert (root.get("viewBox"), root.get("width"), root.get("height")) == \
           (built.get("viewBox"), built.get("width"), built.get("height"))
    assert embedded_fonts(style) == shipped_fonts(site)
    assert_light_paints(style, drawn)
    assert rgb(bg) == tuple(page.evaluate(BACKGROUND))

    name, png = download(page, fig, "Download PNG")
    assert name == f"{SLUG}-{ANCHOR}.png"
    img = pixels(png)
    width, height = fig.locator("svg.eg-static:visible").evaluate(BOX)
    assert img.shape[:2] == (round(SCALE * height), round(SCALE * width))
    assert same_picture(img, render(page, text, img.shape[1], img.shape[0]))
    assert differing(img, np.broadcast_to(np.array(rgb(bg), np.int16), img.shape)) > 1000, "a blank PNG"
    assert page.evaluate(LIVE, fig.element_handle()) is False, "the figure stayed static"
    return img


def check_live_files(page, fig, site: Path) -> np.ndarray:
    """Once live, the files are its live view as displayed: the PNG has its canvas's pixels at twice
    its CSS size; the SVG, drawn by Chromium at that size (with only its own font), has them too,
    and its texts are the view's. Returns the view's pixels."""
    shown = data_png(fig.evaluate(CANVAS))
    width, height = fig.locator(".eg-view .marks").evaluate(BOX)
    name, png = download(page, fig, "Download PNG")
    assert name == f"{SLUG}-{ANCHOR}.png"
    img = pixels(png)
    assert img.shape[:2] == (round(SCALE * height), round(SCALE * width)) == shown.shape[:2]
    assert same_picture(img, shown)

    name, svg = download(page, fig, "Download SVG")
    assert name == f"{SLUG}-{ANCHOR}.svg"
    text = svg.decode("utf-8")
    root, style, bg, drawn = parts(text)
    assert embedded_fonts(style) == shipped_fonts(site)
    assert texts(drawn) == fig.evaluate(SCENE_TEXTS)
    assert same_picture(render(page, text, img.shape[1], img.shape[0]), shown)
    # Without its font, the SVG draws its labels otherwise: the font inlined is the one it uses.
    bare = re.sub(r"@font-face\{[^}]*\}", "", text)
    assert not same_picture(render(page, bare, img.shape[1], img.shape[0]), shown)
    return shown


def copied(page, context, base_url: str) -> str:
    """What the clipboard holds, read in a page of the loopback address (a secure context, as the
    named host's is not), the context allowed to read it."""
    reader = context.new_page()
    try:
        reader.goto(direct(base_url) + "404.html")
        return reader.evaluate("() => navigator.clipboard.readText()")
    finally:
        reader.close()


def check_link(url: str, base_url: str, value: float) -> None:
    """The page's address, with the slider's value in its query and the figure's anchor."""
    split = urlsplit(url)
    assert url.startswith(base_url + PAGE) and split.fragment == ANCHOR, url
    assert parse_qs(split.query) == {PARAM: [f"{value:g}"]}, url


def check_print(page, fig, shown: np.ndarray, font_style: str) -> None:
    """Printed, the page shows each figure's static picture, with its caption, and no buttons or
    controls; the moved figure's picture is its live view's state, in palette classes (the print
    palette paints them): drawn with the light palette, it has the view's pixels. A figure keeps to
    one page, and references print where their links lead."""
    page.emulate_media(media="print")
    try:
        picture = fig.locator("svg.eg-static:visible")
        page.wait_for_function("""([f, built]) => f.querySelector('svg.eg-static').innerHTML !== built""",
                               arg=[fig.element_handle(), page.evaluate("() => window.__builtPicture")])
        assert picture.is_visible() and fig.locator("figcaption").is_visible()
        assert not fig.locator(".eg-view").is_visible() and not fig.locator(".eg-exports").is_visible()
        assert page.locator(".eg-exports:visible").count() == 0
        assert fig.evaluate("f => getComputedStyle(f).breakInside") == "avoid"
        assert fig.evaluate("f => getComputedStyle(f.querySelector('figcaption')).breakAfter") == "avoid"
        outer = picture.evaluate("s => s.outerHTML")
        root = ET.fromstring(outer)
        assert not paints(list(root)), "the printed picture paints with the palette's classes only"
        light = "".join(f".{paint_class(p, role)}{{{p}:{v[0]}}}"
                        for role, v in PALETTE.items() for p in ("fill", "stroke"))
        standalone = re.sub(r"^<svg\b([^>]*)>", lambda m: f"<svg{m.group(1)}><style>{font_style}{light}</style>"
                            f'<rect width="100%" height="100%" fill="#ffffff"/>', outer, count=1)
        assert same_picture(render(page, standalone, shown.shape[1], shown.shape[0]), shown)
        after = page.evaluate("""() => [...document.querySelectorAll('.eg-references a')].map(a =>
            [a.getAttribute('href'), getComputedStyle(a, '::after').content])""")
        external = [(href, content) for href, content in after if href.startswith("http")]
        assert external and all(href in content for href, content in external), external[:3]
        assert all(content in ("none", "normal") for href, content in after if not href.startswith("http"))
        cite = page.locator("a.eg-cite-link").first
        assert cite.evaluate("a => getComputedStyle(a, '::after').content") in ("none", "normal")
    finally:
        page.emulate_media(media="screen")


def test_a_figure_leaves_the_page_as_it_is_shown(site, browser, base_url):
    from conftest import PageWatch

    context = browser.new_context(viewport=DESKTOP, device_scale_factor=SCALE, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=direct(base_url).rstrip("/"))
    page = context.new_page()
    watch = PageWatch(page, base_url.split("/")[2])
    held, released = [], []

    def hold(route):  # the bundle waits, until released: no figure can go live
        if released:
            route.continue_()
        else:
            held.append(route)
    page.route("**/vega-*.js", hold)
    try:
        page.goto(base_url + PAGE)
        fig = page.locator(f"#{ANCHOR}")
        page.evaluate("id => { window.__builtPicture = document.querySelector(`#${id} svg.eg-static`).innerHTML; }",
                      ANCHOR)
        check_buttons(page)
        check_static_files(page, fig, site)

        released.append(True)
        while held:
            held.pop().continue_()
        fig.hover()
        page.wait_for_function(LIVE, arg=fig.element_handle())
        before = data_png(fig.evaluate(CANVAS))
        value = move(page, fig)
        assert float(fig.get_by_role("slider", name=SLIDER).get_attribute("value")) != value
        shown = check_live_files(page, fig, site)
        assert not same_picture(before, shown), "the move changed what the figure shows"

        # Copy link, on the named host (plain HTTP: the text is selected and copied).
        fig.get_by_role("button", name="Copy link", exact=True).click()
        assert fig.locator(".eg-exports [role=status]").inner_text().strip() == "Link copied"
        url = copied(page, context, base_url)
        check_link(url, base_url, value)

        font_style = parts(download(page, fig, "Download SVG")[1].decode())[1]
        check_print(page, fig, shown, font_style)
        watch.assert_clean()

        # The link, opened (at the loopback address, a secure context): the figure in view, at
        # the state, drawn as the first page drew it.
        other = context.new_page()
        other_watch = PageWatch(other, urlsplit(direct(base_url)).netloc)
        other.goto(direct(url))
        ofig = other.locator(f"#{ANCHOR}")
        other.wait_for_function(LIVE, arg=ofig.element_handle())
        other.wait_for_function("(v) => window.explainerGen.state().sliders.batch === v", arg=value)
        assert float(ofig.get_by_role("slider", name=SLIDER).input_value()) == value
        assert ofig.evaluate(IN_VIEW)
        other.evaluate(SETTLED, ANCHOR)
        assert same_picture(data_png(ofig.evaluate(CANVAS)), shown)
        # Its own Copy link goes through the clipboard's API.
        assert other.evaluate("() => isSecureContext && !!navigator.clipboard")
        ofig.get_by_role("button", name="Copy link", exact=True).click()
        other.wait_for_function("f => f.querySelector('.eg-exports [role=status]').textContent.trim() === "
                                "'Link copied'", arg=ofig.element_handle())
        assert other.evaluate("() => navigator.clipboard.readText()") == direct(url)

        # In the dark scheme, the files are the dark view on the dark background.
        other.evaluate("id => { window.__lightView = document.querySelector(`#${id} .eg-view canvas`); }", ANCHOR)
        other.locator("label.md-header__button[for^='__palette']:visible").first.click()
        dark = {v[1].lower() for v in PALETTE.values()}
        # Drawn again in the dark scheme: a new canvas, once the view is live again.
        other.wait_for_function("""f => document.body.getAttribute('data-md-color-scheme') === 'slate'
            && window.explainerGen.figures().some(x => x.el === f)
            && f.querySelector('.eg-view canvas') !== window.__lightView""", arg=ofig.element_handle())
        _, svg = download(other, ofig, "Download SVG")
        _, _, bg, drawn = parts(svg.decode())
        assert paints(drawn) and paints(drawn) <= dark, paints(drawn) - dark
        assert rgb(bg) == tuple(other.evaluate(BACKGROUND))
        assert sum(rgb(bg)) < 3 * 128, "a dark background"
        _, png = download(other, ofig, "Download PNG")
        assert same_picture(pixels(png), data_png(ofig.evaluate(CANVAS)))
        other_watch.assert_clean()
    finally:
        context.close()


def test_the_comparison_sees_a_moved_point_and_another_picture():
    """Negative controls for the checks above: a drawing with one label changed is not the built
    picture; a picture whose decode point moved is not the same picture; an SVG with its font
    taken out names no font."""
    picture = '<svg xmlns="http://www.w3.org/2000/svg"><g><text x="1">1k</text><circle cx="5" cy="5" r="2"/></g></svg>'
    saved = ('<svg xmlns="http://www.w3.org/2000/svg"><style>x</style><rect width="100%" height="100%" fill="#fff"/>'
             '<g><text x="1">1k</text><circle cx="5" cy="5" r="2"/></g></svg>')
    assert drawing(parts(saved)[3]) == drawing(list(ET.fromstring(picture)))
    assert drawing(parts(saved.replace(">1k<", ">2k<"))[3]) != drawing(list(ET.fromstring(picture)))
    assert drawing(parts(saved.replace('cx="5"', 'cx="6"'))[3]) != drawing(list(ET.fromstring(picture)))
    a = np.full((762, 1376, 3), 255, np.int16)
    b = a.copy()
    b[100:130, 200:230] = (194, 65, 12)  # a point of 15 CSS px, drawn at twice the size
    c = a.copy()
    c[400:430, 900:930] = (194, 65, 12)
    assert same_picture(b, b) and not same_picture(b, c)
    with pytest.raises(AssertionError):
        embedded_fonts("text { font-family: x }")
    label = list(ET.fromstring('<svg xmlns="http://www.w3.org/2000/svg"><text class="f-muted">1k</text></svg>'))
    assert_light_paints(f".f-muted{{fill:{PALETTE['muted'][0]}}}", label)
    with pytest.raises(AssertionError):  # the dark scheme's colour
        assert_light_paints(f".f-muted{{fill:{PALETTE['muted'][1]}}}", label)


def test_without_javascript_the_static_picture_and_the_csv_are_the_downloads(site, browser, base_url):
    """Without JavaScript a figure has no buttons (they would do nothing); its data table links the
    static picture (SVG) and the CSV, each a file of the site."""
    context = browser.new_context(java_script_enabled=False, viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(base_url + PAGE)
        figures = page.locator(".eg-figure[data-eg-figure]")
        assert figures.count() >= 2
        assert page.get_by_role("button", name=re.compile("Download|Copy link")).count() == 0
        for fig in figures.all():
            fig.locator("details.eg-data > summary").click()
            links = {kind: fig.locator(f"a[download][href$='.{kind}']") for kind in ("svg", "csv")}
            for kind, link in links.items():
                assert link.count() == 1 and link.is_visible(), (fig.get_attribute("id"), kind)
                target = urlsplit(urljoin(base_url + PAGE, link.get_attribute("href"))).path
                assert (site / target.lstrip("/")).is_file(), target
            svg = (site / urlsplit(urljoin(base_url + PAGE, links["svg"].get_attribute("href"))).path.lstrip("/"))
            root, style, _, drawn = parts(svg.read_text(encoding="utf-8"))
            assert embedded_fonts(style) == shipped_fonts(site)
            assert_light_paints(style, drawn)
            assert texts(drawn) == texts(list(ET.fromstring(unescape(built_picture(site, fig.get_attribute("id"))))))
    finally:
        context.close()
