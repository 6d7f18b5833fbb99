"""A page's share card: the picture and the head tags a link preview reads (issue 38).

Each page gets Open Graph and Twitter card tags (`head_tags`) naming a 1200 x 630 PNG made at
build time, with no network: the page's title, set in the site's font and wrapped to fit, with
the site's name under it and, on a page with figures, its first figure's static picture in the
light scheme beside it (`card_svg`). vl-convert (resvg inside) draws the SVG to a PNG
(`card_png`), with the shipped font registered as for the charts. The title's characters must
all be in that font (`undrawable`, the charts' own check, theme.missing_glyphs).

The text is wrapped by the font's advance widths, read from the OpenType file itself
(`FontMetrics`: the cmap and hmtx tables; kerning, which mostly narrows, is left out), so the
build needs nothing beyond vl-convert and numpy (`smaller_png`). Links in the tags are
absolute, from the site's `site_url` (`absolute`).
"""
from __future__ import annotations

import functools
import hashlib
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from .. import theme
from .markup import esc

WIDTH, HEIGHT = 1200, 630
MARGIN = 64
GAP = 48                      # between the title's column and the figure
TEXT_COLUMN = 440             # the title's column beside a figure
TITLE_SIZES = (64, 56, 50, 44, 40, 36)  # px, the largest at which the title fits is used
NAME_SIZE = 26                # the site's name
LEADING = 1.18                # the title's line height, in font sizes
BAND = 12                     # the coloured band along the top
FONT_FILES = {"regular": theme.FONT_DIR / "explainer-sans-regular.otf",
              "semibold": theme.FONT_DIR / "explainer-sans-semibold.otf"}


class FontMetrics:
    """Advance widths of an OpenType font, from its `cmap` (formats 4 and 12) and `hmtx` tables."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        count = struct.unpack_from(">H", data, 4)[0]
        tables = {}
        for i in range(count):
            tag, _, offset, length = struct.unpack_from(">4sIII", data, 12 + 16 * i)
            tables[tag.decode("latin-1")] = (offset, length)
        self.units = struct.unpack_from(">H", data, tables["head"][0] + 18)[0]
        metrics = struct.unpack_from(">H", data, tables["hhea"][0] + 34)[0]
        hmtx = tables["hmtx"][0]
        self.advances = [struct.unpack_from(">H", data, hmtx + 4 * g)[0] for g in range(metrics)]
        self.glyphs = self._cmap(data, tables["cmap"][0])

    @staticmethod
    def _cmap(data: bytes, cmap: int) -> dict[int, int]:
        """Code point -> glyph, from the best Unicode subtable (format 12, else format 4)."""
        subtables = {}
        for i in range(struct.unpack_from(">H", data, cmap + 2)[0]):
            platform, encoding, offset = struct.unpack_from(">HHI", data, cmap + 4 + 8 * i)
            if (platform, encoding) in ((3, 1), (3, 10), (0, 3), (0, 4)):
                subtables[struct.unpack_from(">H", data, cmap + offset)[0]] = cmap + offset
        out: dict[int, int] = {}
        if 12 in subtables:
            at = subtables[12]
            for g in range(struct.unpack_from(">I", data, at + 12)[0]):
                start, end, glyph = struct.unpack_from(">III", data, at + 16 + 12 * g)
                out.update((c, glyph + c - start) for c in range(start, end + 1))
            return out
        at = subtables[4]
        segments = struct.unpack_from(">H", data, at + 6)[0] // 2
        ends = struct.unpack_from(f">{segments}H", data, at + 14)
        starts = struct.unpack_from(f">{segments}H", data, at + 16 + 2 * segments)
        deltas = struct.unpack_from(f">{segments}h", data, at + 16 + 4 * segments)
        ranges_at = at + 16 + 6 * segments
        ranges = struct.unpack_from(f">{segments}H", data, ranges_at)
        for s, (start, end, delta, rng) in enumerate(zip(starts, ends, deltas, ranges)):
            for c in range(start, min(end, 0xFFFE) + 1):
                if rng == 0:
                    glyph = (c + delta) & 0xFFFF
                else:
                    glyph = struct.unpack_from(">H", data, ranges_at + 2 * s + rng + 2 * (c - start))[0]
                    glyph = (glyph + delta) & 0xFFFF if glyph else 0
                if glyph:
                    out[c] = glyph
        return out

    def width(self, text: str, size: float) -> float:
        """`text`'s advance at `size` px, without kerning."""
        last = self.advances[-1]
        units = sum(self.advances[g] if g < len(self.advances) else last
                    for g in (self.glyphs.get(ord(c), 0) for c in text))
        return units * size / self.units


@functools.lru_cache(maxsize=None)
def metrics(weight: str) -> FontMetrics:
    return FontMetrics(FONT_FILES[weight])


def undrawable(text: str) -> str:
    """The characters of `text` the site's font lacks, in order of first use (as chart text is
    checked: theme.missing_glyphs)."""
    return theme.missing_glyphs(f"<text>{esc(text)}</text>")


def wrap(text: str, width: float, size: float, font: FontMetrics) -> list[str]:
    """`text` in lines no wider than `width` at `size` px, broken between words (inside a word only
    when the word alone is wider)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.width(candidate, size) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for c in word:  # a word wider than the column: broken where it must be
            if line and font.width(line + c, size) > width:
                lines.append(line)
                line = ""
            line += c
    return lines + ([line] if line else [])


def fit_title(title: str, width: float, height: float) -> tuple[float, list[str]]:
    """The largest of TITLE_SIZES at which `title`, wrapped to `width`, fits `height`; the
    smallest, cut to the lines that fit with an ellipsis, when none does."""
    font = metrics("semibold")
    for size in TITLE_SIZES:
        lines = wrap(title, width, size, font)
        if len(lines) * size * LEADING <= height:
            return size, lines
    size = TITLE_SIZES[-1]
    lines = wrap(title, width, size, font)
    keep = max(1, int(height // (size * LEADING)))
    if len(lines) > keep:
        last = lines[keep - 1]
        while last and font.width(last + "…", size) > width:
            last = last[:-1].rstrip()
        lines = lines[:keep - 1] + [last + "…"]
    return size, lines


@dataclass(frozen=True)
class Figure:
    """A figure's static picture as the page inlines it (classes for colours), and its size."""

    svg: str
    width: int
    height: int


_ROOT = re.compile(r"<svg\b[^>]*>")


def light_picture(fig: Figure, x: float, y: float, width: float, height: float) -> str:
    """The figure's picture, scaled to fit the box (x, y, width, height) and centred in it, in the
    light scheme: its palette classes (theme.static_svg_colours) given the roles' light values."""
    scale = min(width / fig.width, height / fig.height)
    w, h = fig.width * scale, fig.height * scale
    style = theme.light_paints()
    root = (f'<svg x="{x + (width - w) / 2:.1f}" y="{y + (height - h) / 2:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'viewBox="0 0 {fig.width} {fig.height}" preserveAspectRatio="xMidYMid meet">'
            f"<style>{style}</style>")
    return _ROOT.sub(lambda m: root, fig.svg, count=1)


def card_svg(title: str, site_name: str, figure: Figure | None = None) -> str:
    """The card as SVG (WIDTH x HEIGHT): the title (and the site's name under it) in a column
    beside the figure's picture, or across the whole card when there is no figure."""
    fg, muted, accent = theme.colour("fg"), theme.colour("muted"), theme.colour("series-1")
    column = TEXT_COLUMN if figure is not None else WIDTH - 2 * MARGIN
    name_y = HEIGHT - MARGIN
    top = MARGIN + BAND
    size, lines = fit_title(title, column, name_y - NAME_SIZE * 2 - top) if title else (TITLE_SIZES[0], [])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="{theme.LIGHT_BACKGROUND}"/>',
             f'<rect width="{WIDTH}" height="{BAND}" fill="{accent}"/>']
    family = f'font-family="{esc(theme.FONT_STACK)}"'
    for i, line in enumerate(lines):
        baseline = top + size * (0.95 + i * LEADING)
        parts.append(f'<text x="{MARGIN}" y="{baseline:.1f}" {family} font-size="{size}" '
                     f'font-weight="{theme.BOLD}" fill="{fg}">{esc(line)}</text>')
    if site_name:
        parts.append(f'<text x="{MARGIN}" y="{name_y}" {family} font-size="{NAME_SIZE}" font-weight="400" '
                     f'fill="{muted}">{esc(site_name)}</text>')
    if figure is not None:
        left = MARGIN + TEXT_COLUMN + GAP
        parts.append(light_picture(figure, left, top, WIDTH - MARGIN - left, HEIGHT - MARGIN - top))
    parts.append("</svg>")
    return "".join(parts)


def card_png(svg: str) -> bytes:
    """The card drawn by vl-convert (resvg), at its own size, with the site's font, and stored
    smaller (`smaller_png`)."""
    import vl_convert as vlc

    theme.register_fonts()
    return smaller_png(vlc.svg_to_png(svg, scale=1.0))


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def smaller_png(png: bytes) -> bytes:
    """The same pixels in a third to a seventh of the bytes. resvg writes 8-bit RGBA, each row
    filtered by its left neighbour (Sub), compressed for speed. A card is opaque, so: a palette
    when it has at most 256 colours (a card without a figure), else RGB, Sub filtered (no filter
    with a palette), at zlib's default level (its best saves 4% more in twice the time). Anything
    but resvg's usual output comes back as it is."""
    import numpy as np

    chunks, at = [], 8
    while at + 8 <= len(png):
        length, tag = struct.unpack_from(">I4s", png, at)
        chunks.append((tag, png[at + 8:at + 8 + length]))
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if (depth, colour, interlace) != (8, 6, 0):
        return png
    rows = np.frombuffer(zlib.decompress(b"".join(d for tag, d in chunks if tag == b"IDAT")), np.uint8)
    rows = rows.reshape(height, width * 4 + 1)
    filters, pixels = rows[:, 0], rows[:, 1:].reshape(height, width, 4)
    if not np.isin(filters, (0, 1)).all():
        return png
    pixels = np.where((filters == 1)[:, None, None], np.cumsum(pixels, axis=1, dtype=np.uint8), pixels)
    if (pixels[..., 3] != 255).any():
        return png
    rgb = pixels[..., :3]
    packed = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    colours, index = np.unique(packed, return_inverse=True)
    if len(colours) <= 256:
        palette = np.stack([colours >> 16, colours >> 8, colours], axis=1).astype(np.uint8)
        header, extra = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0), _chunk(b"PLTE", palette.tobytes())
        data = np.concatenate([np.zeros((height, 1), np.uint8), index.reshape(height, width).astype(np.uint8)], 1)
    else:
        header, extra = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0), b""
        flat = rgb.reshape(height, width * 3)
        sub = np.concatenate([flat[:, :3], flat[:, 3:] - flat[:, :-3]], axis=1)  # uint8: modulo 256
        data = np.concatenate([np.ones((height, 1), np.uint8), sub], axis=1)
    return (png[:8] + _chunk(b"IHDR", header) + extra + _chunk(b"IDAT", zlib.compress(data.tobytes(), 6))
            + _chunk(b"IEND", b""))


def absolute(site_url: str, path: str) -> str:
    """A path from the site's root as an absolute URL under `site_url` (which may have a path of
    its own: https://owner.github.io/repo/)."""
    return urljoin(site_url if site_url.endswith("/") else site_url + "/", path.lstrip("/"))


@dataclass(frozen=True)
class Card:
    """What a page's share card says: its title, URL and image (paths from the site's root), the
    image's description, and the page's kind (Open Graph's `website` for the home page, else
    `article`)."""

    title: str
    url: str
    image: str
    alt: str
    kind: str


def head_tags(card: Card, site_url: str, description: str) -> str:
    """The Open Graph and Twitter card tags for the page; `description` is the page's own meta
    description, as its HTML already holds it (escaped)."""
    meta = [("og:title", esc(card.title)), ("og:description", description), ("og:type", card.kind),
            ("og:url", esc(absolute(site_url, card.url))), ("og:image", esc(absolute(site_url, card.image))),
            ("og:image:width", str(WIDTH)), ("og:image:height", str(HEIGHT)), ("og:image:alt", esc(card.alt))]
    return ("".join(f'<meta property="{name}" content="{value}">' for name, value in meta)
            + '<meta name="twitter:card" content="summary_large_image">')


def png_name(png: bytes) -> str:
    """The card's file name: its bytes' hash, so a changed card is a new URL (previews cache by URL)."""
    return hashlib.sha256(png).hexdigest()[:16] + ".png"


__all__ = ["Card", "Figure", "FontMetrics", "WIDTH", "HEIGHT", "absolute", "card_png", "card_svg", "head_tags",
           "png_name", "undrawable", "wrap"]
