"""A Markdown page's structure as authors write it: front matter and the fences this package
renders (explainer figures and math), found by line so that every error can name its line."""
from __future__ import annotations

import re
from dataclasses import dataclass

from models.yamlsource import SourceError

FENCE_NAME = "explainer"
MATH_FENCE_NAME = "math"
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?[ \t]*\.?(?P<lang>[\w-]*)")


@dataclass(frozen=True)
class Fence:
    line: int       # 1-based line of the opening fence
    body: str       # dedented content
    body_line: int  # 1-based line of the first content line
    lang: str = FENCE_NAME


# Fences whose content this package renders, and so must check before MkDocs does.
CHECKED_FENCES = (FENCE_NAME, MATH_FENCE_NAME)


def scan_fences(lines: list[str]) -> tuple[list[Fence], set[int]]:
    """Explainer and math fences, and the 0-based indexes of every line inside any fence."""
    fences, inside, i = [], set(), 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, marker = m.group("indent"), m.group("fence")
        close = re.compile(rf"^{re.escape(indent)}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        inside.update(range(i, min(j + 1, len(lines))))
        lang = m.group("lang")
        if lang in CHECKED_FENCES:
            if j >= len(lines):
                raise SourceError("", i + 1, f"the {lang} fence opened here is never closed")
            body = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j])
            fences.append(Fence(i + 1, body, i + 2, lang))
        i = j + 1
    return fences, inside


def split_front_matter(source: str) -> tuple[str | None, int]:
    """The YAML front matter text (if any) and the number of lines it occupies with its fences."""
    lines = source.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), i + 1
    return None, 0
