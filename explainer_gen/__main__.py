"""`python -m explainer_gen explain PAGE.md:LINE [--set name=value ...]` (compute/explain.py)."""
from __future__ import annotations

import sys

COMMANDS = ("explain",)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m explainer_gen {{{','.join(COMMANDS)}}} ...; explain PAGE.md:LINE "
              "[--set name=value ...] says how each computed number on that line is made", file=sys.stderr)
        return 2
    from .compute.explain import main as explain
    return explain(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
