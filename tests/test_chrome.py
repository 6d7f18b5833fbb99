"""render/chrome.py on the theme's markup, without a browser (tests/test_startup.py runs the result).

The markup below is what Material's partials/palette.html, partials/javascripts/palette.html and
base.html write (Zensical's templates write the same)."""
from __future__ import annotations

from explainer_gen.cache import PACKAGE_ROOT
from explainer_gen.render.chrome import NAMED_SEARCH, OUR_FORM, PALETTE_FORM, REVEAL, WAITING_FORM, Chrome

THEME_SCRIPT = ('<script>var palette=__md_get("__palette");if(palette&&palette.color){for(var[key,value]'
                'of Object.entries(palette.color))document.body.setAttribute("data-md-color-"+key,value)}</script>')
FORM = (f'{PALETTE_FORM}\n  <input class="md-option" data-md-color-media="(prefers-color-scheme: light)" '
        'type="radio" name="__palette" id="__palette_0">\n  <label class="md-header__button md-icon" '
        'for="__palette_1" hidden></label>\n</form>')
SEARCH = '<div class="md-search" data-md-component="search" role="dialog">'
PAGE = (f'<!doctype html><html lang="en" class="no-js"><head><title>t</title></head><body dir="ltr">'
        f'<header class="md-header" data-md-component="header">{FORM}\n    {THEME_SCRIPT}</header>'
        f'{SEARCH}</div><article>text</article></body></html>')
CHROME = Chrome.read()


def test_start_goes_last_in_head_and_the_palette_replaces_the_themes():
    out = CHROME.apply(PAGE)
    start, palette = f"<script>{CHROME.start}</script>", f"<script>{CHROME.palette}</script>"
    assert out.count(start) == 1 and out.index(start) < out.index("</head>") < out.index(start) + len(start) + 1
    assert PALETTE_FORM not in out and out.count(WAITING_FORM) == 1
    assert THEME_SCRIPT not in out and out.count(palette) == 1
    # Our palette follows the form (it reads its inputs as the page is parsed); the form is shown
    # by the script at the header's very end, once all of the header is there; the rest is as it was.
    assert out.index(palette) > out.index("</form>")
    assert out.count(REVEAL) == 1 and out.index(REVEAL) + len(REVEAL) == out.index("</header>")
    assert NAMED_SEARCH in out and SEARCH not in out  # the search dialog has a name for screen readers
    assert (out.replace(start, "").replace(palette, THEME_SCRIPT).replace(WAITING_FORM, PALETTE_FORM)
            .replace(REVEAL, "").replace(NAMED_SEARCH, SEARCH)) == PAGE


def test_apply_is_idempotent_and_leaves_other_pages_alone():
    once = CHROME.apply(PAGE)
    assert CHROME.apply(once) == once
    plain = '<html lang="en"><head></head><body><p>no theme chrome</p></body></html>'
    assert CHROME.apply(plain) == plain
    # A palette form without the theme's inline script (a theme that has none) still gets ours.
    bare = PAGE.replace(THEME_SCRIPT, "")
    assert f"{WAITING_FORM}" in CHROME.apply(bare) and f"<script>{CHROME.palette}</script>" in CHROME.apply(bare)
    # A form outside any header is shown from the start: nothing would show it.
    headless = PAGE.replace("<header", "<div").replace("</header>", "</div>")
    assert OUR_FORM in CHROME.apply(headless) and REVEAL not in CHROME.apply(headless)


def test_inlined_scripts_keep_every_line_of_code():
    for name, text in (("start.js", CHROME.start), ("palette.js", CHROME.palette)):
        source = (PACKAGE_ROOT / "assets" / name).read_text()
        code = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("//")]
        assert text.splitlines() == code
        assert "</script" not in text  # it can sit inside a <script> element
        assert text.count("(") == text.count(")") and text.count("{") == text.count("}")
