"""HTML that lands in pages. Every author- or data-supplied string passes through `esc`."""
from __future__ import annotations

import re
from typing import Callable, Iterable

from models.catalogue import Catalogue

from models.yamlsource import SourceError

from ..compute.artifacts import FigureArtifacts
from ..compute import layout
from ..compute.numbers import NumberResult, find_inline
from ..compute.pages import FigureOnPage, PageBuild
from ..sources.markdown import scan_fences
from ..sources.controls import FIELD, Slider
from . import how
from .markup import SEARCH_EXCLUDE, esc
from ..names import ATTR, CLASS



def figure_html(fig: FigureOnPage, url: Callable[[str], str], files: dict[str, str],
                link: Callable[[str], str] | None = None) -> str:
    """The figure: live view slot, static picture, data table and download links.

    `files` maps 'json' and 'csv' (and 'svg', the static picture's own file, where the build
    writes one) to site paths; `url` makes them page-relative for the data attributes the page's
    scripts read, `link` (by default `url`) for the download links' `href`s, which a host may
    rewrite (`site.Settings.links`). The static picture is inline, one for both schemes: it takes
    its colours from the page's CSS. Here its frame holds a placeholder, and so does the data
    table's box; `finished_parts` makes what fills them and `place` puts it in the
    finished page, so neither the picture's thousands of nodes nor the tables' rows (no text to
    search for) pass through Markdown and the search index.
    """
    link = link or url
    a = fig.artifacts
    # The static picture as a file of its own (`files["svg"]`, where the build writes one): with the
    # CSV, what a reader without JavaScript can save (the loader's buttons save the figure as shown).
    picture_link = (f'<a href="{esc(link(files["svg"]))}" download>Download the picture (SVG)</a> · '
                    if "svg" in files else "")
    cap_id = f"{fig.anchor}-caption"
    desc_id = f"{fig.anchor}-desc"
    return (
        f'<figure class="{CLASS.figure}" id="{esc(fig.anchor)}" aria-labelledby="{cap_id}" '
        f'{ATTR.figure}="{esc(url(files["json"]))}">'
        f'<figcaption id="{cap_id}">{esc(fig.request.caption)}</figcaption>'
        f'<div class="{CLASS.view}" role="group" aria-label="{esc("Interactive chart: " + fig.request.caption)}"'
        f' aria-describedby="{desc_id}"></div>'
        f'{picture_frame(a, fig.anchor)}'
        f'<p class="{CLASS.desc}" id="{desc_id}">{esc(a.alt)}</p>'
        f'{controls_html(fig.request.sliders.values(), fig.anchor)}'
        f'<details class="eg-data" {SEARCH_EXCLUDE}><summary>Data table</summary>'
        f'{placeholder("data", fig.anchor)}'
        f'<p class="eg-download">{picture_link}<a href="{esc(link(files["csv"]))}" download>'
        f'Download every slider position (CSV)</a></p>'
        f'</details></figure>'
    )


def table_html(t) -> str:
    """One data table: a caption, column headers, and each row headed by its first cell."""
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in t.headers)
    body = "".join("<tr>" + f'<th scope="row">{esc(r[0])}</th>' + "".join(f"<td>{esc(c)}</td>" for c in r[1:]) + "</tr>"
                   for r in t.rows)
    return (f'<div class="eg-table-wrap"><table><caption>{esc(t.caption)}</caption><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table></div>')


_SVG_ROOT = re.compile(r"<svg\b[^>]*>")
_IDS = re.compile(r'(\sid="|url\(#|href="#)([^"\)]+)')


def placeholder(part: str, anchor: str) -> str:
    """Where the finished page gets a figure's `part` (a picture's layout, "data"): see `finished_parts`."""
    return f"<!--eg-{part}:{anchor}-->"


def picture_frame(a: FigureArtifacts, anchor: str) -> str:
    """The static pictures' frames, each with a placeholder for its picture: one laid out for a
    desktop's column and one for a phone's (compute/layout.py), of which the page's CSS shows the
    one that suits the figure's width (layout.css).

    A frame's size follows from the column's width alone, so the browser can skip drawing a
    picture that is off screen (`content-visibility`) without anything moving. Each picture
    scales down with the column and never up.
    """
    frames = []
    for which, part, (width, height) in ((CLASS.wide, "picture", a.image_size),
                                          (CLASS.narrow, "picture-narrow", a.narrow_size)):
        frames.append(f'<div class="{CLASS.picture} {which}" style="aspect-ratio: {width} / {height}; '
                      f'max-width: {width}px">{placeholder(part, anchor)}</div>')
    return f'<div class="{CLASS.pictures}">{"".join(frames)}</div>'


def static_picture(svg: str, size: tuple[int, int], anchor: str, prefix: str) -> str:
    """One static SVG, inlined: one image (`role="img"`) named by the figure's description.

    Its ids get `prefix` (the figure's anchor, and the layout's for the narrow one), since several
    pictures share the page. It fills its frame, keeping its aspect ratio.
    """
    width, height = size
    root = (f'<svg class="{CLASS.static}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" preserveAspectRatio="xMinYMin meet" '
            f'role="img" aria-labelledby="{anchor}-desc" focusable="false">')
    svg = _IDS.sub(lambda m: m.group(1) + prefix + "-" + m.group(2), svg)
    return _SVG_ROOT.sub(lambda m: root, svg, count=1)


def finished_parts(figures) -> dict[str, str]:
    """What the finished page puts at each of its figures' placeholders: the static picture, and
    the data tables (the figure's table and those it adds: `TableView.also`)."""
    parts = {}
    for fig in figures:
        a = fig.artifacts
        parts[placeholder("picture", fig.anchor)] = static_picture(a.svg, a.image_size, fig.anchor, fig.anchor)
        parts[placeholder("picture-narrow", fig.anchor)] = static_picture(a.narrow_svg, a.narrow_size, fig.anchor,
                                                                      f"{fig.anchor}-{layout.NARROW_PREFIX}")
        parts[placeholder("data", fig.anchor)] = "".join(table_html(each) for each in [a.table, *a.table.also])
    return parts


def place(page_html: str, parts: dict[str, str]) -> str:
    """The finished page with each placeholder replaced by its part (`finished_parts`)."""
    for mark, html in parts.items():
        page_html = page_html.replace(mark, html, 1)
    return page_html


def page_root_html(page: PageBuild, page_json_url: str, bundle_url: str, loader_url: str,
                   catalogue: Catalogue) -> str:
    """Page-level state holder, the scenario switch and the loader script.

    Each switch field's label and its choices' names come from the scenario table (controls.py).
    """
    selects = []
    controls = page.controls
    blocked = controls.blocked(controls.scenario)  # choices that would not run from the default
    for name, values in controls.switch.items():
        default = getattr(controls.scenario, name)
        options = "".join(
            f'<option value="{esc(v)}"{" selected" if v == default else ""}{" disabled" if v in blocked[name] else ""}>'
            f'{esc(FIELD[name].name_of(v, catalogue))}</option>'
            for v in values)
        selects.append(f'<label class="eg-select"><span>{esc(FIELD[name].label)}</span>'
                       f'<select name="{esc(name)}" {ATTR.switch}="{esc(name)}" {ATTR.default}="{esc(default)}"'
                       f' aria-describedby="{NOTE_ID}">{options}</select></label>')
    # Why some choices are greyed out; the loader rewrites it for the scenario the reader is in.
    note = f'<p class="{CLASS.switch_note}" id="{NOTE_ID}">{esc(controls.note(controls.scenario, catalogue))}</p>'
    switch = (f'<form class="eg-scenario" aria-label="Scenario">{"".join(selects)}{note}</form>'
              if selects else "")
    # The page's sliders that no figure shows (used by the prose alone) get their controls here.
    sliders = controls_html(page.page_sliders(), "eg-page", group=PAGE_SLIDERS_LABEL)
    # Controls are in place from the first paint, so revealing them shifts nothing; without
    # JavaScript they would do nothing, so then they are not shown at all.
    return (f'<div class="{CLASS.page}" {ATTR.page}="{esc(page_json_url)}" {ATTR.bundle}="{esc(bundle_url)}" {SEARCH_EXCLUDE}>'
            f'<noscript><style>.{CLASS.controls}, .eg-scenario {{ display: none; }}</style></noscript>'
            f'{switch}{sliders}<div class="{CLASS.announce}" role="status" aria-live="polite" aria-atomic="true"></div>'
            f'</div>\n<script src="{esc(loader_url)}" defer></script>\n')


PAGE_SLIDERS_LABEL = "Sliders for the numbers on this page"
NOTE_ID = "eg-switch-note"  # the switch note's id, which the selects name as their description


def controls_html(sliders: Iterable[Slider], id_prefix: str, group: str = "") -> str:
    """Sliders as plain range inputs, which the loader wires to the charts, the numbers and the URL.

    The one home of slider markup: a figure's sliders (`id_prefix` its anchor), and the page's
    own, for sliders no figure shows (`group` names that block, which the page root holds).
    They are in the HTML rather than drawn by Vega so that they exist, with their labels,
    before the chart library has loaded, and so that moving one can load it.
    """
    items = []
    for s in sliders:
        input_id = f"{id_prefix}-{s.name}"
        value = f"{s.default:.{s.decimals}f}"
        items.append(
            f'<div class="eg-slider"><label for="{esc(input_id)}">{esc(s.label)}</label>'
            f'<input type="range" id="{esc(input_id)}" {ATTR.param}="{esc(s.name)}" min="{s.min:g}" max="{s.max:g}" '
            f'step="{s.step:g}" value="{value}">'
            f'<output for="{esc(input_id)}">{value}</output></div>')
    if not items:
        return ""
    attrs = (f'class="{CLASS.controls} eg-page-sliders" role="group" aria-label="{esc(group)}"' if group
             else f'class="{CLASS.controls}"') + f" {SEARCH_EXCLUDE}"
    return f'<div {attrs}>{"".join(items)}</div>'


def number_span(result: NumberResult) -> str:
    """An inline number as the page holds it: its text as built, and, where it changes with the
    sliders or the switch, the id by which the loader finds its other texts."""
    attrs = f' {ATTR.num}="{esc(result.id)}"' if result.deps else ""
    span = f'<span class="eg-num"{attrs}>{esc(result.default)}</span>'
    if not result.how:  # a phrase: read, not derived
        return span
    return f'<a class="{CLASS.how}" href="#{esc(how.entry_id(result.id))}">{span}</a>'


def substitute_numbers(markdown: str, page: PageBuild, path: str) -> str:
    """Replace each inline number in `markdown` (as MkDocs hands it over) with its span."""
    lines = markdown.split("\n")
    _, inside = scan_fences(lines)
    out = lines[:]
    for item in reversed(list(find_inline(lines, inside))):
        result = page.numbers.get(item.key)
        if result is None:  # another plugin added it after our checks ran
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} was not in the source file")
        i = item.line - 1
        out[i] = out[i][:item.start] + number_span(result) + out[i][item.end:]
    return "\n".join(out)
