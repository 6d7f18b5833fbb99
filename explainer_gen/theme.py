"""The charts' look: one palette of named colours for both schemes, and the font charts use.

Every colour a chart draws is a role in `PALETTE`, with a value for Material's light
(`default`) and dark (`slate`) schemes. Charts are specified and compiled once, in the light
values, which double as the roles' names: `static_svg_colours` turns them into CSS
variables in the static picture, and the loader swaps them for the page's current values
in the live view. The CSS variables themselves come from `palette_css`, so this module is
the only place a colour is written down.

Chart text is set in Explainer Sans, a cut of Inter shipped under `assets/fonts/`:
vl-convert measures labels with it at build time and browsers draw them with it.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

FONT_FAMILY = "Explainer Sans"
FONT_STACK = f"{FONT_FAMILY}, system-ui, sans-serif"
FONT_DIR = Path(__file__).resolve().parent / "assets" / "fonts"
BOLD = 600  # the heavier of the two weights shipped
# Site path (under the plugin's assets) -> (file, weight), for the browser's @font-face.
FONT_FILES = {f"fonts/explainer-sans-{name}.woff2": (FONT_DIR / f"explainer-sans-{name}.woff2", weight)
              for name, weight in (("regular", 400), ("semibold", BOLD))}

# role -> (light, dark). Lines and marks keep at least 3:1 contrast against each background;
# light values must be distinct, since they name the roles in compiled specs and pictures.
PALETTE: dict[str, tuple[str, str]] = {
    "fg": ("#1f2328", "#e6e8ee"),          # titles, legend text, emphasised marks
    "muted": ("#4b5563", "#b6bcc8"),       # axis labels, ticks, reference marks
    "grid": ("#d9dde3", "#3b4150"),        # grid lines and the plot frame
    "series-1": ("#1f6feb", "#7cb4ff"),
    "series-2": ("#c2410c", "#fb923c"),
    "series-3": ("#15803d", "#4ade80"),
    "series-4": ("#7e22ce", "#d8b4fe"),
    "series-5": ("#b91c1c", "#f87171"),
    "series-6": ("#0e7490", "#67e8f9"),
    "series-7": ("#a16207", "#fcd34d"),
    "series-8": ("#6b7280", "#9ca3af"),
}
_LIGHT = {role: light for role, (light, _) in PALETTE.items()}
assert len(set(_LIGHT.values())) == len(_LIGHT), "two roles share a light colour"
# Colours in a rendered picture that are not roles and need no scheme: leave them be.
NEUTRAL = {"none", "transparent", "currentcolor"}


def colour(role: str) -> str:
    """The colour for `role`, as a chart spec should name it."""
    return _LIGHT[role]


def _config() -> dict:
    fg, muted, grid = colour("fg"), colour("muted"), colour("grid")
    axis = {"labelColor": muted, "titleColor": fg, "gridColor": grid, "domainColor": muted,
            "tickColor": muted, "labelFontSize": 12, "titleFontSize": 12, "titleFontWeight": BOLD}
    return {
        "background": "transparent",  # the page's own background shows through
        "font": FONT_STACK,
        "axis": axis,
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": 12, "titleFontSize": 12,
                   "titleFontWeight": BOLD, "symbolBaseStrokeColor": muted, "symbolBaseFillColor": "transparent",
                   "labelLimit": 280},
        "title": {"color": fg, "subtitleColor": muted, "fontWeight": BOLD},
        "header": {"labelColor": fg, "titleColor": fg, "titleFontWeight": BOLD},
        "text": {"color": fg},
        "rule": {"color": muted},
        "view": {"stroke": grid},
        "mark": {"color": colour("series-1")},
        "range": {"category": [colour(f"series-{i}") for i in range(1, 9)]},
    }


CONFIG = _config()


def css_var(role: str) -> str:
    return f"--eg-chart-{role}"


def palette_css() -> str:
    """The roles as CSS variables: light by default, dark under Material's slate, light in print."""
    def block(selector: str, index: int) -> str:
        return selector + " { " + " ".join(f"{css_var(r)}: {v[index]};" for r, v in PALETTE.items()) + " }"
    return "\n".join([
        "/* Chart colours, generated from explainer_gen/theme.py. */",
        block(":root", 0),
        block('[data-md-color-scheme="slate"]', 1),
        "@media print { " + block(':root, [data-md-color-scheme="slate"]', 0) + " }",
        *(f'@font-face {{ font-family: "{FONT_FAMILY}"; font-style: normal; font-weight: {w}; '
          f'font-display: swap; src: url("{path}") format("woff2"); }}'
          for path, (_, w) in FONT_FILES.items()),
        "",
    ])


def page_palette() -> dict[str, str]:
    """Light value -> CSS variable, for the loader to recolour a compiled spec."""
    return {light: css_var(role) for role, light in _LIGHT.items()}


_PAINT = re.compile(r'\s(fill|stroke)="([^"]*)"')
_TAG = re.compile(r"<[a-zA-Z][^<>]*?>")
_BY_LIGHT = {light.lower(): role for role, light in _LIGHT.items()}


def static_svg_colours(svg: str) -> str:
    """Paint every fill and stroke of a rendered picture from the palette's CSS variables.

    The light value stays as the fallback. A colour that is no role is a mistake in a
    figure kind (it would not follow the scheme): ValueError.
    """
    def tag(m: re.Match) -> str:
        text = m.group(0)
        paints = _PAINT.findall(text)
        if not paints:
            return text
        style = []
        for prop, value in paints:
            if value.lower() in NEUTRAL:
                style.append(f"{prop}:{value}")
                continue
            role = _BY_LIGHT.get(value.lower())
            if role is None:
                raise ValueError(f"colour {value!r} is not in the chart palette "
                                 f"(explainer_gen/theme.py); use theme.colour() with one of {', '.join(PALETTE)}")
            style.append(f"{prop}:var({css_var(role)}, {value})")
        text = _PAINT.sub("", text)
        if ' style="' in text:
            return text.replace(' style="', f' style="{";".join(style)};', 1)
        end = -2 if text.endswith("/>") else -1
        return f'{text[:end]} style="{";".join(style)}"{text[end:]}'
    return _TAG.sub(tag, svg)


_CHARACTERS = set((FONT_DIR / "characters.txt").read_text(encoding="utf-8").strip())
_TEXT = re.compile(r"<text\b[^>]*>([^<]*)</text>")


def missing_glyphs(svg: str) -> str:
    """Characters of the picture's text that the chart font lacks (a reader's browser would
    draw them in another font, at another width), in order of first use."""
    used = "".join(html.unescape(t) for t in _TEXT.findall(svg))
    return "".join(dict.fromkeys(c for c in used if c not in _CHARACTERS and not c.isspace()))


_registered = False


def register_fonts() -> None:
    """Let vl-convert measure and draw with the shipped font; once per process."""
    global _registered
    if not _registered:
        import vl_convert as vlc
        vlc.register_font_directory(str(FONT_DIR))
        _registered = True
