"""Display math rendered to MathML at build time: no script, no CDN, read by screen readers."""
from __future__ import annotations

import html

from latex2mathml.converter import convert
from pymdownx.superfences import SuperFencesException


def to_mathml(source: str) -> str:
    """MathML for a LaTeX formula; ValueError, naming the formula, if it cannot be read."""
    try:
        return convert(source.strip(), display="block")
    except Exception as exc:  # latex2mathml raises many exception types for bad input
        detail = str(exc) or type(exc).__name__
        raise ValueError(f"math fence {source.strip()!r} is not valid LaTeX ({detail})") from None


def math_format(source, language, class_name, options, md, **kwargs) -> str:
    # The plugin checked every math fence with file and line already; this is the render.
    try:
        mathml = to_mathml(source)
    except ValueError as exc:
        raise SuperFencesException(str(exc)) from None
    return f'<div class="eg-math" role="math" aria-label="{html.escape(source.strip())}">{mathml}</div>'


FENCE = {"name": "math", "class": "math", "format": math_format}
