"""The charts' look: one palette of named colours for both schemes, and the font charts use.

Every colour a chart draws is a role in `PALETTE`, with a value for Material's light
(`default`) and dark (`slate`) schemes. Charts are specified and compiled once, in the light
values, which double as the roles' names: `static_svg_colours` turns them into classes of
the static picture, which paint with the roles' CSS variables, and the loader swaps them for
the page's current values in the live view. The variables and the classes' rules come from
`palette_css`, so this module is the only place a colour is written down.

Chart text is set in Explainer Sans, a cut of Inter shipped under `assets/fonts/`:
vl-convert measures labels with it at build time and browsers draw them with it.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from .names import CLASS

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
# The page's background in Material's light scheme, on which the share cards draw a figure
# (render/share.py); the pictures themselves are transparent.
LIGHT_BACKGROUND = "#ffffff"
# Colours in a rendered picture that are not roles and need no scheme: leave them be.
NEUTRAL = {"none", "transparent", "currentcolor"}


def colour(role: str) -> str:
    """The colour for `role`, as a chart spec should name it."""
    return _LIGHT[role]


# Text sizes in a chart's own pixels: axis and legend labels and titles, and a note set in the plot
# (a text mark; Vega's own default, written down here so that the phone's layout can count on it).
LABEL_PX = 12
NOTE_PX = 11


def _config() -> dict:
    fg, muted, grid = colour("fg"), colour("muted"), colour("grid")
    axis = {"labelColor": muted, "titleColor": fg, "gridColor": grid, "domainColor": muted,
            "tickColor": muted, "labelFontSize": LABEL_PX, "titleFontSize": LABEL_PX, "titleFontWeight": BOLD}
    return {
        # No ARIA attributes or default descriptions per mark: the live view is drawn on a canvas
        # and the static picture is one image, each named and described by the figure's own text.
        # Vega would otherwise format a description for every item on every slider move.
        "aria": False,
        "background": "transparent",  # the page's own background shows through
        "font": FONT_STACK,
        "axis": axis,
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": LABEL_PX, "titleFontSize": LABEL_PX,
                   "titleFontWeight": BOLD, "symbolBaseStrokeColor": muted, "symbolBaseFillColor": "transparent",
                   "labelLimit": 280},
        "title": {"color": fg, "subtitleColor": muted, "fontWeight": BOLD},
        "header": {"labelColor": fg, "titleColor": fg, "titleFontWeight": BOLD},
        "text": {"color": fg, "fontSize": NOTE_PX},
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
        # The static pictures' paints (static_svg_colours): the light value stays the fallback.
        " ".join(f".{CLASS.static} .{paint_class(prop, r)} {{ {prop}: var({css_var(r)}, {v[0]}); }}"
                 for r, v in PALETTE.items() for prop in ("fill", "stroke")),
        *(f'@font-face {{ font-family: "{FONT_FAMILY}"; font-style: normal; font-weight: {w}; '
          f'font-display: swap; src: url("{path}") format("woff2"); }}'
          for path, (_, w) in FONT_FILES.items()),
        "",
    ])


def light_paints() -> str:
    """CSS giving a static picture's palette classes (static_svg_colours) the light scheme's colours:
    what a picture carries when it leaves the page (a saved file, a share card)."""
    return "".join(f".{paint_class(prop, role)}{{{prop}:{light}}}"
                   for role, (light, _) in PALETTE.items() for prop in ("fill", "stroke"))


def standalone_svg(svg: str) -> str:
    """A static picture (`static_svg_colours`' classes) as a file that stands alone, as the page's
    light scheme shows it: a <style> with the light palette's colour for each class and the chart
    font's files inlined (so a reader without the font sees the same text), on a white background."""
    import base64

    fonts = "".join(f'@font-face{{font-family:"{FONT_FAMILY}";font-style:normal;font-weight:{weight};'
                    f'src:url(data:font/woff2;base64,{base64.b64encode(Path(path).read_bytes()).decode("ascii")}) '
                    f'format("woff2")}}' for path, weight in FONT_FILES.values())
    head = f'<style>{fonts}{light_paints()}</style><rect width="100%" height="100%" fill="{LIGHT_BACKGROUND}"/>'
    return re.sub(r"<svg\b[^>]*>", lambda m: m.group(0) + head, svg, count=1)


def page_palette() -> dict[str, str]:
    """Light value -> CSS variable, for the loader to recolour a compiled spec."""
    return {light: css_var(role) for role, light in _LIGHT.items()}


_TAG = re.compile(r"<([a-zA-Z][\w:-]*)((?:\s+[\w:-]+=\"[^\"]*\")*)\s*(/?)>")
_ATTR = re.compile(r'\s+([\w:-]+)="([^"]*)"')
_BY_LIGHT = {light.lower(): role for role, light in _LIGHT.items()}
# Vega's SVG speaks to screen readers and pointers, mark by mark. Inside the page's
# <svg role="img"> (render/blocks.static_picture), named by the figure's description, its children are
# presentational and the picture takes no pointer events of its own: these mean nothing there.
_MEANINGLESS = {"role", "aria-roledescription", "aria-label", "aria-hidden", "pointer-events"}
# Attributes holding coordinates, rounded to _DECIMALS: a twentieth of a pixel at most, at the
# picture's full width, which no screen shows.
_GEOMETRY = {"d", "transform", "x", "y", "x1", "y1", "x2", "y2", "width", "height", "cx", "cy", "r", "dx", "dy"}
_DECIMALS = 1
_NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# Inherited properties that text shares: set once on the picture's outer group when all agree.
_TEXT_SHARED = ("font-family", "font-size")
# Attributes at their initial value: dropped (but not from a <tspan>, whose x and y place a line
# of a text broken over lines), for an inherited one only where no group sets it.
_DEFAULTS = {"opacity": "1", "x": "0", "y": "0", "x1": "0", "y1": "0", "x2": "0", "y2": "0"}
_INHERITED_DEFAULTS = {"stroke-width": "1", "fill-opacity": "1", "stroke-opacity": "1", "text-anchor": "start"}
_EMPTY_GROUP = re.compile(r"<g(?:\s+[\w:-]+=\"[^\"]*\")*\s*>\s*</g>")
_GROUP_TAG = re.compile(r"<g(?:\s[^<>]*)?>|</g>")


def paint_class(prop: str, role: str) -> str:
    """The class that paints `prop` (fill or stroke) in `role`'s colour; palette_css defines it."""
    return f"{prop[0]}-{role}"


def _short(value: str) -> str:
    def number(m: re.Match) -> str:
        text = m.group(0)
        if "." not in text and "e" not in text.lower():
            return text
        out = f"{round(float(text), _DECIMALS):.{_DECIMALS}f}".rstrip("0").rstrip(".")
        return "0" if out == "-0" else out
    return _NUMBER.sub(number, value)


def static_svg_colours(svg: str) -> str:
    """The rendered picture as the page inlines it: every fill and stroke a palette class
    (`f-ROLE`, `s-ROLE`; palette_css gives them the scheme's colour), and nothing that draws
    nothing or says nothing.

    A colour that is no role is a mistake in a figure kind (it would not follow the scheme):
    ValueError. Dropped: the attributes in _MEANINGLESS, class names other than Vega's `role-*`
    (which name the part a group draws: role-axis-label, ...), attributes at their default,
    hidden and empty elements; coordinates are rounded to _DECIMALS. The root <svg> tag is kept
    as it is (render/blocks.static_picture replaces it).
    """
    tags = list(_TAG.finditer(svg))
    inherited_set = {name for m in tags if m.group(1) == "g" for name, _ in _ATTR.findall(m.group(2))}
    droppable = {k: v for k, v in _INHERITED_DEFAULTS.items() if k not in inherited_set}
    texts = [dict(_ATTR.findall(m.group(2))) for m in tags if m.group(1) == "text"]
    shared = {name: texts[0][name] for name in _TEXT_SHARED
              if texts and name in texts[0] and all(t.get(name) == texts[0][name] for t in texts)}
    state = {"root": True, "outer": True}

    def tag(m: re.Match) -> str:
        name, attrs, closed = m.group(1), _ATTR.findall(m.group(2)), m.group(3)
        if name == "svg" and state["root"]:
            state["root"] = False
            return m.group(0)
        out, classes = [], []
        for key, value in attrs:
            # A <tspan>'s x="0" starts a new line at the text's own x: not the default there.
            if key in _MEANINGLESS or (_DEFAULTS.get(key) == value and name != "tspan") or droppable.get(key) == value:
                continue
            if key == "transform" and value.replace(" ", "") in ("translate(0,0)", "translate(0)"):
                continue
            if name == "text" and key in shared:
                continue
            if key == "class":
                classes += [c for c in value.split() if c.startswith("role-")]
                continue
            if key in ("fill", "stroke"):
                if value.lower() in NEUTRAL:
                    out.append((key, value))
                    continue
                role = _BY_LIGHT.get(value.lower())
                if role is None:
                    raise ValueError(f"colour {value!r} is not in the chart palette "
                                     f"(explainer_gen/theme.py); use theme.colour() with one of {', '.join(PALETTE)}")
                classes.append(paint_class(key, role))
                continue
            out.append((key, _short(value) if key in _GEOMETRY else value))
        if name == "g" and state["outer"]:
            state["outer"] = False
            out += list(shared.items())
        if classes:
            out.insert(0, ("class", " ".join(classes)))
        keys = dict(out)
        if closed and (keys.get("display") == "none" or (
                name == "path" and keys.get("d", "").replace(" ", "") in ("", "M0,0h0v0h0Z")
                and not any(c[:2] in ("f-", "s-") for c in classes)
                and keys.get("fill", "none") in ("none", "transparent") and keys.get("stroke", "none") in ("none", "transparent"))):
            return ""  # draws nothing
        return "<" + name + "".join(f' {k}="{v}"' for k, v in out) + ("/>" if closed else ">")

    out = _TAG.sub(tag, svg)
    while True:
        slimmer = _EMPTY_GROUP.sub("", out)
        if slimmer == out:
            return _merge_leaves(_unwrap_bare_groups(out))
        out = slimmer


# Runs of sibling shapes (self-closing <path> and <line>) that are painted alike, such as grid
# lines, ticks, points or bars of one series, are drawn as one <path>: each shape's outline,
# moved by its translate(), becomes a subpath. Strokes are the same either way; fills are too,
# as every shape Vega draws winds the same way, so overlapping shapes of one colour fill their
# union under the nonzero rule. Shapes with an opacity below 1 stay apart (a translucent overlap
# would darken), as do shapes with any transform other than a translation.
_LEAF_RUN = re.compile(r"(?:<(?:path|line)(?:\s+[\w:-]+=\"[^\"]*\")*\s*/>){2,}")
_LEAF = re.compile(r"<(path|line)((?:\s+[\w:-]+=\"[^\"]*\")*)\s*/>")
_TRANSLATE = re.compile(r"^translate\(\s*(" + _NUMBER.pattern + r")(?:[\s,]+(" + _NUMBER.pattern + r"))?\s*\)$")
_PATH_TOKEN = re.compile(r"([MmLlHhVvCcSsQqTtAaZz])|(" + _NUMBER.pattern + r")")
_PATH_ARITY = {"M": 2, "L": 2, "T": 2, "H": 1, "V": 1, "C": 6, "S": 4, "Q": 4, "A": 7, "Z": 0}
_SHAPE = {"d", "transform", "x1", "y1", "x2", "y2"}


def _outline(name: str, attrs: dict[str, str]) -> str | None:
    """The shape's outline as path data in its parent's frame, or None if it cannot be merged."""
    tx = ty = 0.0
    if "transform" in attrs:
        m = _TRANSLATE.match(attrs["transform"].strip())
        if not m:
            return None
        tx, ty = float(m.group(1)), float(m.group(2) or 0)
    if name == "line":
        x1, y1, x2, y2 = (float(attrs.get(k, "0")) for k in ("x1", "y1", "x2", "y2"))
        return f"M{_num(tx + x1)},{_num(ty + y1)}L{_num(tx + x2)},{_num(ty + y2)}"
    commands: list[tuple[str, list[str]]] = []  # (letter, its parameter groups)
    command, params, absolute = None, [], False
    for letter, number in _PATH_TOKEN.findall(attrs.get("d", "")):
        if letter:
            if params:
                return None  # parameters left over: not a path this reads
            first = not commands
            if first and letter not in "Mm":
                return None
            absolute = letter.isupper() or first  # a path's first moveto is absolute either way
            command = None if letter in "Zz" else letter
            commands.append(("M" if first else letter, []))
            continue
        if command is None:
            return None
        params.append(float(number))
        arity = _PATH_ARITY[command.upper()]
        if len(params) < arity:
            continue
        if absolute:
            up = command.upper()
            if up == "H":
                params[0] += tx
            elif up == "V":
                params[0] += ty
            elif up == "A":
                params[5] += tx
                params[6] += ty
            else:
                for i in range(0, arity, 2):
                    params[i] += tx
                    params[i + 1] += ty
        commands[-1][1].append(",".join(_num(v) for v in params))
        params = []
        if command == "m":  # pairs after a relative moveto are relative linetos
            command, absolute = "l", False
            commands.append(("l", []))
    if params or not commands:
        return None
    return "".join(letter + " ".join(groups) for letter, groups in commands if groups or letter in "Zz")


def _num(v: float) -> str:
    return _short(repr(float(v)))


def _merge_leaves(svg: str) -> str:
    def run(m: re.Match) -> str:
        shapes = []
        for leaf in _LEAF.finditer(m.group(0)):
            attrs = dict(_ATTR.findall(leaf.group(2)))
            paint = tuple(sorted((k, v) for k, v in attrs.items() if k not in _SHAPE))
            translucent = any(k.endswith("opacity") and float(v) < 1 for k, v in attrs.items())
            outline = None if translucent else _outline(leaf.group(1), attrs)
            shapes.append((paint, outline, leaf.group(0)))
        out, i = [], 0
        while i < len(shapes):
            paint, outline, text = shapes[i]
            j = i + 1
            if outline is not None:
                while j < len(shapes) and shapes[j][0] == paint and shapes[j][1] is not None:
                    j += 1
            if j - i == 1:
                out.append(text)
            else:
                d = "".join(shape[1] for shape in shapes[i:j])
                out.append("<path" + "".join(f' {k}="{v}"' for k, v in paint) + f' d="{d}"/>')
            i = j
        return "".join(out)
    return _LEAF_RUN.sub(run, svg)


def _unwrap_bare_groups(svg: str) -> str:
    """Every <g> without attributes taken out, its children kept: it changes nothing drawn."""
    parts, stack, last = [], [], 0
    for m in _GROUP_TAG.finditer(svg):
        parts.append(svg[last:m.start()])
        last = m.end()
        if m.group(0).endswith("/>"):
            continue  # an empty group: nothing to draw
        if m.group(0) == "</g>":
            if not stack.pop():
                parts.append(m.group(0))
        else:
            bare = m.group(0) == "<g>"
            stack.append(bare)
            if not bare:
                parts.append(m.group(0))
    parts.append(svg[last:])
    return "".join(parts)


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
