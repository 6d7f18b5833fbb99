"""The `explainer` custom fence for pymdownx.superfences.

The build checks and computes every figure before Markdown is rendered (that is where the
file and line are known); the formatter only hands back the HTML made for the fence, which the
Markdown extension (markdown_ext.py) leaves on the Markdown instance.
"""
from __future__ import annotations

from pymdownx.superfences import SuperFencesException


def fence_format(source, language, class_name, options, md, **kwargs) -> str:
    """The HTML the build made for this fence, which the Markdown extension left on `md`."""
    queue = getattr(md, "explainer_fences", {}).get(source.strip())
    if not queue:
        raise SuperFencesException("explainer fence rendered outside an explainer build; add `explainer` to "
                                   "`plugins` in mkdocs.yml")
    return queue.pop(0)


FENCE = {"name": "explainer", "class": "explainer", "format": fence_format}
