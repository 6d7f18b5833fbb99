"""`python -m explainer_gen explain PAGE.md:LINE [--set name=value ...]`: each inline number on a
page's line, as shown, with its quantity, its derivation at that state and its sources.

The state is the page's default, with any slider or switch field set by `--set`. A mistake (a
file that is not there, a line with no number, a name that is neither a slider nor a switch
field, a value off a slider's grid or not among a switch's choices) prints one line naming the
valid choices and exits 2.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from models import load_catalogue
from models.yamlsource import SourceError, closest

from .derivation import explain as derive_number
from .numbers import evaluate
from .pages import page_numbers, read_page
from .resolved import resolve
from .vocabulary import REGISTRY, vocabulary


class Refused(Exception):
    """A request the command cannot answer: its message is the one line it prints."""


def _state(controls, settings: list[str]):
    scenario, values = controls.scenario, {n: s.default for n, s in controls.sliders.items()}
    for setting in settings:
        name, eq, raw = setting.partition("=")
        name, raw = name.strip(), raw.strip()
        if not eq:
            raise Refused(f"--set {setting!r}: write name=value")
        if name in controls.sliders:
            s = controls.sliders[name]
            try:
                v = float(raw)
            except ValueError:
                raise Refused(f"--set {name}={raw}: not a number; {name} runs {s.min:g} to {s.max:g} in steps of {s.step:g}") from None
            grid = s.values()
            if not np.isclose(grid, v, atol=1e-9 * max(1.0, abs(v))).any():
                raise Refused(f"--set {name}={raw}: off the slider's grid; {name} runs {s.min:g} to {s.max:g} "
                              f"in steps of {s.step:g}")
            values[name] = float(grid[int(np.argmin(abs(grid - v)))])
        elif name in controls.switch:
            choices = [str(c) for c in controls.switch[name]]
            if raw not in choices:
                raise Refused(f"--set {name}={raw}: not a choice of the switch; {name} is one of {', '.join(choices)}")
            chosen = controls.switch[name][choices.index(raw)]
            scenario = replace(scenario, **{name: chosen})
        else:
            names = [*controls.sliders, *controls.switch]
            raise Refused(f"--set {name}: not a slider or switch field of this page; "
                          + (f"valid: {', '.join(names)}" if names else "it has none"))
    if scenario.key in controls.unfit:  # judged once every setting is made: a pair may run where one alone would not
        chosen = ", ".join(f"{f}={getattr(scenario, f)}" for f in controls.switch)
        raise Refused(f"{chosen} would not run: {controls.unfit[scenario.key]}")
    return scenario, values


def explain_line(path: str, line: int, settings: list[str] = (), catalogue=None) -> str:
    """The text `explain` prints for the numbers on `path`'s line `line`."""
    file = Path(path)
    if not file.is_file():
        pages = sorted(p.as_posix() for p in Path("docs").rglob("*.md")) if Path("docs").is_dir() else []
        raise Refused(f"{path}: no such file; " + (closest(path, pages) if pages else "run it from the project's folder"))
    catalogue = catalogue or load_catalogue()
    text = read_page(file.read_text(encoding="utf-8"), path, catalogue)
    controls = text.controls
    numbers = list(page_numbers(text, path))
    here = [n for n in numbers if n[0].line == line]
    if not here:
        with_numbers = sorted({n[0].line for n in numbers})
        near = min(with_numbers, key=lambda n: abs(n - line)) if with_numbers else None
        raise Refused(f"{path}:{line}: no computed number on this line"
                      + (f"; the nearest is on line {near}" if near else "; the page has none"))
    scenario, values = _state(controls, list(settings))
    r = resolve(scenario, catalogue)
    env = {**vocabulary(r, catalogue), **values}
    returns = REGISTRY.returns()
    derivers = REGISTRY.derivers(r, catalogue)
    out = [f"{path}:{line} at {scenario.key}" + "".join(f", {n}={v:g}" for n, v in values.items())]
    for item, expr, shape, fmt, _ in here:
        with np.errstate(all="ignore"):
            raw = evaluate(expr, env)
        as_shown = str(raw) if isinstance(raw, str) or np.asarray(raw).dtype.kind in "US" else fmt(float(np.asarray(raw)))
        out.append("")
        out.append(f"{{{{ {item.expr}{' | ' + item.fmt if item.fmt else ''} }}}} shows {as_shown}")
        if shape.kind != "number":
            out.append("  a name or a phrase, not a number" if shape.kind == "text"
                       else "  its dimension is as its source publishes it")
        d = derive_number(item.expr, env, returns, derivers, controls.sliders,
                          shape.dim if shape.kind == "number" else None, shape.scale)
        out.extend("  " + x for x in d.lines())
    return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (no usage block before it), exiting 2."""

    def error(self, message: str):
        raise Refused(f"{message}; write PAGE.md:LINE [--set NAME=VALUE ...]")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m explainer_gen explain",
                                     description="How each computed number on a page's line is made.")
    parser.add_argument("where", help="PAGE.md:LINE")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a slider's value or a switch field's choice (repeatable)")
    try:
        args = parser.parse_args(argv)
    except Refused as exc:
        print(f"explain: {exc}", file=sys.stderr)
        return 2
    path, _, line = args.where.rpartition(":")
    if not path or not line.isdigit():
        print(f"explain: {args.where!r}: write PAGE.md:LINE, as in docs/explainers/roofline.md:42", file=sys.stderr)
        return 2
    try:
        print(explain_line(path, int(line), args.set))
    except (Refused, SourceError) as exc:
        print(f"explain: {exc}", file=sys.stderr)
        return 2
    return 0
