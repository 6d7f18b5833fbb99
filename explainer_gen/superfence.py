"""The `explainer` custom fence for pymdownx.superfences.

The plugin checks and computes every figure before Markdown is rendered (that is where the
file and line are known); the formatter only hands back the HTML made for the fence.
"""
from __future__ import annotations

from pymdownx.superfences import SuperFencesException

# Fence body (stripped) -> HTML for it, in order, for the page being rendered now.
_active: dict[str, list[str]] = {}


def set_active(figures: dict[str, list[str]]) -> None:
    _active.clear()
    _active.update({body: list(html) for body, html in figures.items()})


def fence_format(source, language, class_name, options, md, **kwargs) -> str:
    queue = _active.get(source.strip())
    if not queue:
        raise SuperFencesException("explainer fence rendered outside the explainer plugin; "
                                   "add `explainer` to `plugins` in mkdocs.yml")
    return queue.pop(0)


FENCE = {"name": "explainer", "class": "explainer", "format": fence_format}
