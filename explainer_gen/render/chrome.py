"""The theme's chrome around a finished page, changed so that starting the page restyles it once.

Material's bundle (and Zensical's, which has the same components) runs at the end of the body,
and as it starts it changed the page in ways that each restyled every element of it. On a long
explainer page at phone speed that made up most of the main thread's blocking time (issue 11):

- the no-js/js swap and the focus-visible mark on <html>;
- instant navigation writing each stylesheet's URL back in resolved form;
- the palette component inserting a color-scheme meta tag, filling it in, and setting and
  clearing a transition guard on <body>.

`Chrome.apply` moves all of this to where the document is still small. `assets/start.js` goes at
the end of <head>. `assets/palette.js` replaces the palette component: it is inlined after the
header's palette form, in place of the theme's own inline palette script, whose work it includes.
The form loses its `data-md-component="palette"`, so the bundle mounts no palette of its own.
A page whose theme shows none of these keeps what it has. Chrome.apply also names Material's
search dialog, which screen readers would otherwise announce blank.

The palette form also waits, hidden, for the rest of the header (issue 39). The header is a row
whose title takes the room the other parts leave, and the form comes before the search. A first
frame drawn while the page was still arriving (the browser draws what it has parsed) showed the
switch at the right edge, and the search, parsed next, pushed it left: a layout shift on every
page. Hidden, the form has no box to move; a script at the header's end shows it, which takes room
from the title and moves nothing. Without JavaScript the form shows nothing anyway (the theme
hides its buttons until its script runs).
(The fourth cost, Material re-inserting each Markdown table to wrap it, is met by the
Markdown extension, which gives each table a box of its own: markdown_ext.py.)

The bundle itself is deferred (`DEFER`, issue 39), so its start-up is a task of its own, after
the page is parsed, rather than part of the parser's. The page's components mount in a task after
that: start.js hands the first page its `document$` emits (at DOMContentLoaded, which Chromium
dispatches in the bundle's task) on to a task of its own. Lighthouse's total blocking time on the
speculative decoding page fell from a median of 338 to 202 ms (6 runs each, interleaved), on
roofline from 240 to 172.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from ..cache import PACKAGE_ROOT

PALETTE_FORM = '<form class="md-header__option" data-md-component="palette">'
OUR_FORM = '<form class="md-header__option" data-eg-palette>'
# Ours in a header, hidden until REVEAL, at the header's end, has run (see the module's docstring).
# (Not by `hidden`: the theme's `display: flex` for the class outranks the browser's own rule for it.)
WAITING_FORM = '<form class="md-header__option" data-eg-palette style="display: none">'
REVEAL = '<script>document.querySelector("form[data-eg-palette]").removeAttribute("style")</script>'
HEADER_END = "</header>"
# The palette form, then the theme's inline script that applies the stored palette (if present).
_FORM = re.compile(re.escape(PALETTE_FORM) + r"(?P<inputs>.*?)</form>"
                   r"(?P<gap>\s*)(?P<script><script>[^<]*__md_get\(\"__palette\"\)[^<]*</script>)?", re.S)
_HTML_TAG = re.compile(r'<html\b[^>]*\bclass="no-js"[^>]*>')
_BUNDLE = re.compile(r'<script src="[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js"')
# The bundle runs once the document is parsed, not where its tag is read (issue 39). Read at the end
# of the body, it ran in the same task as the parsing before it, and as it starts it reads the
# scroll position, which lays out everything parsed so far: the page's whole first style and layout
# and the bundle's start-up made one long task. Deferred, it runs after the page is parsed, still
# before DOMContentLoaded, in a task of its own; the page's components mount after that, in a task
# of their own too (start.js).
# The loader, deferred as well and earlier in the document, runs first and waits for the bundle's
# document$ (assets/loader/lifecycle.js).
DEFER = " defer"
# Should the bundle fail to load, <html> is as the theme leaves it for a reader without JavaScript.
RESTORE = ' onerror="document.documentElement.classList.replace(\'js\', \'no-js\')"'
# Material's search overlay is a dialog without a name; screen readers announce it blank.
# (Zensical's has its name already.)
_SEARCH = '<div class="md-search" data-md-component="search" role="dialog">'
NAMED_SEARCH = '<div class="md-search" data-md-component="search" role="dialog" aria-label="Search">'


def _inline(source: str) -> str:
    """A script as it is inlined: without its comment lines and indentation."""
    lines = (line.strip() for line in source.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


@dataclass(frozen=True)
class Chrome:
    start: str
    palette: str

    @classmethod
    def read(cls) -> "Chrome":
        """The scripts as they are on disk now (read each build, so `mkdocs serve` sees edits)."""
        return cls(*(_inline((PACKAGE_ROOT / "assets" / name).read_text(encoding="utf-8"))
                     for name in ("start.js", "palette.js")))

    def apply(self, page_html: str) -> str:
        """The page with its start-up moved ahead of its content (see the module's docstring), and
        the search dialog named."""
        page_html = page_html.replace(_SEARCH, NAMED_SEARCH, 1)
        if _HTML_TAG.search(page_html) and "</head>" in page_html and self.start not in page_html:
            page_html = page_html.replace("</head>", f"<script>{self.start}</script></head>", 1)
            page_html = _BUNDLE.sub(lambda m: m[0] + DEFER + RESTORE, page_html, count=1)
        m = _FORM.search(page_html)
        if not m:
            return page_html
        end = page_html.find(HEADER_END, m.end())
        form = f"{WAITING_FORM if end >= 0 else OUR_FORM}{m['inputs']}</form>{m['gap']}<script>{self.palette}</script>"
        if end < 0:
            return page_html[:m.start()] + form + page_html[m.end():]
        return page_html[:m.start()] + form + page_html[m.end():end] + REVEAL + page_html[end:]


__all__ = ["Chrome", "PALETTE_FORM", "OUR_FORM", "WAITING_FORM", "REVEAL"]
