"""Display math rendered to MathML at build time: no script, no CDN, read by screen readers."""
from __future__ import annotations

import html

from latex2mathml.converter import convert
from pymdownx.superfences import SuperFencesException


def math_format(source, language, class_name, options, md, **kwargs) -> str:
    try:
        mathml = convert(source.strip(), display="block")
    except Exception as exc:  # latex2mathml raises many exception types for bad input
        raise SuperFencesException(f"math fence could not be converted: {exc}: {source!r}") from exc
    return f'<div class="eg-math" role="math" aria-label="{html.escape(source.strip())}">{mathml}</div>'


FENCE = {"name": "math", "class": "math", "format": math_format}
