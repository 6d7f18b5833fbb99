"""Make the chart font that the site ships: Inter, cut down to the characters charts use.

    python tools/make_chart_font.py /usr/share/fonts/opentype/inter   # from Debian's fonts-inter

Run by a maintainer when the character set changes, not by builds: the results are committed
under explainer_gen/assets/fonts/. vl-convert measures chart text with the .otf files, and
readers' browsers draw it with the .woff2 files cut from the same outlines, so a label is
drawn by the font that measured it on every machine. The family is renamed so that a
different version of Inter installed on the build machine or a reader's can never stand in.
Needs fonttools and brotli (pip install fonttools brotli), and explainer_gen (the project's
.venv), whose theme names the family and the folder.
"""
from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

from explainer_gen.theme import FONT_DIR as OUT, FONT_FAMILY as FAMILY  # the family the charts and pages name
WEIGHTS = {"Regular": 400, "SemiBold": 600}
# Printable ASCII, Latin-1, dashes, quotes, ellipsis, thin and narrow spaces, arrows, and the
# math signs that d3-format and our labels write (minus, times, approx., inequalities).
CHARACTERS = ([*range(0x20, 0x7F), *range(0xA0, 0x100), *range(0x2009, 0x200B), *range(0x2010, 0x2027),
               0x202F, *range(0x2030, 0x203B), *range(0x2190, 0x2194), 0x2212, 0x2248, 0x2260, 0x2264, 0x2265,
               0x221E, *range(0x0391, 0x03AA), *range(0x03B1, 0x03CA), 0x2211, 0x221A, 0x2202])


def make(source: Path, style: str) -> None:
    font = TTFont(source / f"Inter-{style}.otf")
    options = subset.Options()
    options.layout_features = ["kern", "tnum", "liga", "calt"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    sub = subset.Subsetter(options)
    sub.populate(unicodes=CHARACTERS)
    sub.subset(font)
    names = font["name"]
    for record in names.names:
        if record.nameID in (1, 16):
            record.string = FAMILY
        elif record.nameID in (4,):
            record.string = f"{FAMILY} {style}"
        elif record.nameID in (6,):
            record.string = f"{FAMILY.replace(' ', '')}-{style}"
        elif record.nameID in (2, 17):
            record.string = style if record.nameID == 17 else ("Regular" if style == "Regular" else "Bold")
    if "CFF " in font:
        font["CFF "].cff.fontNames = [f"{FAMILY.replace(' ', '')}-{style}"]
    font["OS/2"].usWeightClass = WEIGHTS[style]
    if style == "Regular":  # the build checks chart text against this list (theme.missing_glyphs)
        (OUT / "characters.txt").write_text("".join(sorted(chr(c) for c in font.getBestCmap())) + "\n",
                                            encoding="utf-8")
    stem = OUT / f"explainer-sans-{style.lower()}"
    font.flavor = None
    font.save(f"{stem}.otf")
    font.flavor = "woff2"
    font.save(f"{stem}.woff2")


if __name__ == "__main__":
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/fonts/opentype/inter")
    OUT.mkdir(parents=True, exist_ok=True)
    for style in WEIGHTS:
        make(src, style)
    print("\n".join(f"{p.name} {p.stat().st_size:,} bytes" for p in sorted(OUT.glob("explainer-sans-*"))))
