"""Chart colours for Material's light (`default`) and dark (`slate`) schemes.

One source for both the browser (the loader reads these from the figure JSON) and the
static SVG, which always uses the light scheme because it is what prints.
"""
from __future__ import annotations


def _config(fg: str, muted: str, grid: str, category: list[str]) -> dict:
    axis = {"labelColor": muted, "titleColor": fg, "gridColor": grid, "domainColor": muted,
            "tickColor": muted, "labelFontSize": 12, "titleFontSize": 12}
    return {
        "background": "transparent",  # the page's own background shows through
        "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
        "axis": axis,
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": 12, "titleFontSize": 12},
        "title": {"color": fg, "subtitleColor": muted},
        "text": {"color": fg},
        "rule": {"color": muted},
        "view": {"stroke": grid},
        "range": {"category": category},
    }


# Line colours keep at least 3:1 contrast against each background.
LIGHT = _config("#1f2328", "#4b5563", "#d9dde3",
                ["#1f6feb", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#6b7280"])
DARK = _config("#e6e8ee", "#b6bcc8", "#3b4150",
               ["#7cb4ff", "#fb923c", "#4ade80", "#d8b4fe", "#f87171", "#67e8f9", "#fcd34d", "#9ca3af"])
THEMES = {"light": LIGHT, "dark": DARK}
