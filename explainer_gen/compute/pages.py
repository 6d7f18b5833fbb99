"""One Markdown page: its front matter controls, its figure fences, its inline numbers.

Everything an author can get wrong is checked here, before MkDocs writes a byte, and
reported as a SourceError with the file and line.
"""
from __future__ import annotations

import functools
import itertools
import re

import numpy as np
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from models.catalogue import Catalogue
from models.yamlsource import SourceError, SourceMap, closest, load_yaml

from .artifacts import FigureArtifacts, FigureRequest
from ..sources.controls import FIELD, SCENARIO_FIELDS, Scenario, Slider, check_scenario_value, expect_mapping, parse_scenario, parse_sliders
from .resolved import Watched, default_scenario, resolve, unfit_reason
from .figures import REGISTRY
from .timing import Timing
from .numbers import (SCENARIO_DEP, Across, Expr, NumberResult, compute_number, find_inline, fit_format, parse_expr, parse_format,
                      parse_marks, shape_of)
from .derivation import explain as derive_number, explain_over
from .memo import remembering
from .vocabulary import (bound_term, derive_arrays, derivers as term_derivers, returns as term_returns, scenario_free, simulated,
                         undescribed, vocabulary)
from ..sources.markdown import CHECKED_FENCES, FENCE_NAME, Fence, scan_fences, split_front_matter  # noqa: F401

FIGURE_KEYS = ("figure", "caption", "scenario", "sliders")
PAGE_KEYS = ("scenario", "switch", "sliders")


@dataclass
class PageControls:
    scenario: Scenario
    switch: dict[str, list[Any]]
    sliders: dict[str, Slider]
    lines: dict[str, int] = field(default_factory=dict)  # slider name -> its front-matter line
    # Switch combinations that cannot run (resolved.unfit_reason), by key: never computed or drawn.
    unfit: dict[str, str] = field(default_factory=dict)

    def identity(self) -> dict:
        """Everything about the controls that decides a number's values, for cache keys."""
        return {"scenario": vars(self.scenario), "switch": self.switch,
                "sliders": [vars(s) for s in self.sliders.values()], "unfit": self.unfit}

    def combinations(self) -> list[Scenario]:
        """Every switch combination in C order (outermost field first), runnable or not."""
        return [replace(self.scenario, **dict(zip(self.switch, values)))
                for values in itertools.product(*self.switch.values())] or [self.scenario]

    def variants(self) -> list[Scenario]:
        """The default scenario first, then every other combination that runs."""
        return [self.scenario] + [c for c in self.grid() if c != self.scenario]

    def grid(self) -> list[Scenario]:
        """The combinations that run, in C order: the scenarios the page is computed for."""
        return [c for c in self.combinations() if c.key not in self.unfit]

    def blocked(self, scenario: Scenario) -> dict[str, list[Any]]:
        """For each switch field, the choices that would not run if the reader picked them now."""
        return {f: [v for v in values if replace(scenario, **{f: v}).key in self.unfit]
                for f, values in self.switch.items()}

    def note(self, scenario: Scenario, catalogue: Catalogue) -> str:
        """What the switch says about its blocked choices, in the reader's words ("" if none)."""
        why = [f"{FIELD[f].name_of(v, catalogue)}: {self.unfit[replace(scenario, **{f: v}).key]}"
               for f, values in self.blocked(scenario).items() for v in values]
        return ("Greyed out, as they would not run: " + "; ".join(why) + ".") if why else ""


def parse_controls(meta: Any, path: str, catalogue: Catalogue) -> PageControls:
    raw = meta.get("explainer") if isinstance(meta, dict) else None
    if raw is None:
        return PageControls(default_scenario(catalogue), {}, {})  # the site's default is checked to run
    line = meta.line_of("explainer") if isinstance(meta, SourceMap) else 1
    raw = expect_mapping(raw, path, line, "the page's explainer settings", PAGE_KEYS)
    scenario = parse_scenario(raw.get("scenario"), path, raw.line_of("scenario"), default_scenario(catalogue), catalogue)
    switch: dict[str, list[Any]] = {}
    if raw.get("switch") is not None:
        sw = expect_mapping(raw["switch"], path, raw.line_of("switch"), "switch", SCENARIO_FIELDS)
        for key, values in sw.items():
            if not isinstance(values, list) or not values:
                raise SourceError(path, sw.line_of(key), f"switch {key} must be a non-empty list of choices")
            switch[key] = [check_scenario_value(key, v, catalogue, path, sw.line_of(key)) for v in values]
            if getattr(scenario, key) not in switch[key]:
                raise SourceError(path, sw.line_of(key), f"switch {key} must include the page's default "
                                  f"{getattr(scenario, key)!r}")
    sliders = parse_sliders(raw.get("sliders"), path, raw.line_of("sliders"), {})
    lines = {name: raw["sliders"].line_of(name) for name in sliders}  # a mapping: parse_sliders checked it
    controls = PageControls(scenario, switch, sliders, lines)
    # The draft runs, and takes memory, on a page whose reader can choose it.
    with_draft = "draft" in switch
    for s in controls.combinations():
        why = unfit_reason(resolve(s, catalogue), with_draft)
        if why:
            controls.unfit[s.key] = why
    if scenario.key in controls.unfit:
        where = raw.line_of("scenario") if "scenario" in raw else line
        raise SourceError(path, where, f"the page's scenario cannot run: {controls.unfit[scenario.key]}; "
                          "choose more cards, a larger accelerator or a shorter context")
    return controls


@dataclass
class FigureOnPage:
    fence: Fence
    anchor: str
    request: FigureRequest
    artifacts: FigureArtifacts
    scenario_map: dict[str, str]  # page scenario key -> this figure's data key


@dataclass
class PageBuild:
    path: str
    controls: PageControls
    figures: list[FigureOnPage] = field(default_factory=list)
    numbers: dict[tuple[str, str], NumberResult] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        """Whether the page needs the loader: a figure, or a number that can change."""
        return bool(self.figures) or any(n.deps for n in self.numbers.values())

    def figure_data_bytes(self) -> int:
        """Gzip bytes of figure data the page loads by default."""
        return sum(f.artifacts.sizes[f.artifacts.default] for f in self.figures)

    def shown_by_figures(self) -> set[str]:
        """The sliders that some figure on the page draws a control for."""
        return {name for fig in self.figures for name in fig.request.sliders}

    def every_slider(self) -> dict[str, Slider]:
        """Every slider of the page by name: the page's own, then those only a figure has. The
        loader snaps and indexes every slider position by these (a figure that redraws a slider
        of the page's with another range still has its positions indexed by the page's)."""
        out = dict(self.controls.sliders)
        for fig in self.figures:
            for name, s in fig.request.sliders.items():
                out.setdefault(name, s)
        return out

    def page_sliders(self) -> list[Slider]:
        """The page's sliders that no figure shows but a number moves with: the page root draws
        their controls, or nothing on the page could move them."""
        shown = self.shown_by_figures()
        moving = {dep for n in self.numbers.values() for dep in n.deps}
        return [s for name, s in self.controls.sliders.items() if name not in shown and name in moving]


def parse_figure(fence: Fence, path: str, controls: PageControls, catalogue: Catalogue) -> tuple[FigureRequest, dict[str, str]]:
    raw = load_yaml(fence.body, path, fence.body_line)
    raw = expect_mapping(raw, path, fence.line, f"the {FENCE_NAME} fence", FIGURE_KEYS)
    if "figure" not in raw:
        raise SourceError(path, raw.line, f"the {FENCE_NAME} fence needs a 'figure' key; "
                          f"valid figures: {', '.join(sorted(REGISTRY))}")
    name = raw["figure"]
    if name not in REGISTRY:
        raise SourceError(path, raw.line_of("figure"), f"unknown figure {name!r}; {closest(str(name), sorted(REGISTRY))}")
    kind = REGISTRY[name]
    caption = raw.get("caption", kind.title)
    if not isinstance(caption, str):
        raise SourceError(path, raw.line_of("caption"), f"caption must be text, got {caption!r}")
    # A figure's sliders start from its kind's defaults, then the page's, then the fence's own.
    base = {n: controls.sliders.get(n, s) for n, s in kind.sliders.items()}
    sliders = parse_sliders(raw.get("sliders"), path, raw.line_of("sliders"), base, allowed=tuple(kind.sliders))
    pinned = parse_scenario(raw.get("scenario"), path, raw.line_of("scenario"), default_scenario(catalogue), catalogue)
    # Fields the kind does not read stay at the page's default, so the figure is computed once for
    # every choice of those it reads; the fence's own scenario pins fields outright.
    pinned_fields = {**{f: getattr(controls.scenario, f) for f in SCENARIO_FIELDS if f not in kind.reads},
                     **{k: getattr(pinned, k) for k in (raw.get("scenario") or {})}}
    own = [replace(s, **pinned_fields) for s in controls.variants()]
    variants = list(dict.fromkeys(own))
    scenario_map = {page.key: replace(page, **pinned_fields).key for page in controls.grid()}
    request = FigureRequest(name, sliders, tuple(variants), caption, path, fence.line)
    return request, scenario_map


@dataclass(frozen=True)
class PageText:
    """A page's source as read: its controls, its lines, its fences, and the lines no inline
    number is looked for on (fences and the front matter)."""

    controls: PageControls
    lines: list[str]
    fences: list[Fence]
    inside: frozenset[int]


def read_page(source: str, path: str, catalogue: Catalogue) -> PageText:
    """The one way a page's source is read, by the build and by `explain` alike."""
    front, offset = split_front_matter(source)
    meta = load_yaml(front, path, 2) if front is not None else {}
    if front is not None and meta is not None and not isinstance(meta, dict):
        raise SourceError(path, 2, "front matter must be a YAML mapping")
    controls = parse_controls(meta or {}, path, catalogue)
    lines = source.split("\n")
    try:
        fences, inside = scan_fences(lines)
    except SourceError as exc:
        raise SourceError(path, exc.line, exc.message) from None
    return PageText(controls, lines, fences, frozenset(inside | set(range(offset))))


def page_numbers(text: PageText, path: str, functions: set[str] | None = None, returns: dict[str, Any] | None = None,
                 assumptions: tuple[str, ...] | None = None):
    """Each inline number of the page in order, checked as a build checks it: (its occurrence, its
    parsed expression, its shape, its format fitted to that shape, its marks). Every mistake is a
    SourceError at the number's line. `functions` and `returns`: the terms an expression may call
    and what each returns (default: the vocabulary's); `assumptions`: the names a mark may give
    (None: no marks are read)."""
    returns = term_returns() if returns is None else returns
    functions = set(returns) if functions is None else functions
    sliders = text.controls.sliders
    for item in find_inline(text.lines, set(text.inside), path):
        expr: Expr = parse_expr(item.expr, functions, sliders, path, item.line)
        missing = undescribed(expr.calls)
        if missing:
            raise SourceError(path, item.line, f"inline number {{{{ {item.expr} }}}} calls {', '.join(missing)}, which "
                              "declares no derivation: give the term derive= where it is defined (compute/derivation.py), "
                              "so that the page can say how the number is made")
        fmt_text, marks = parse_marks(item.fmt, path, item.line, assumptions)
        shape = shape_of(expr, returns, sliders, item.expr, path, item.line)
        yield item, expr, shape, fit_format(parse_format(fmt_text, path, item.line), shape, item, path), marks


def distinct_numbers(text: PageText, path: str, *args):
    """page_numbers, each number once (a number written again at another place of the page is the
    same number), led by its id: `n0`, `n1`, ... in page order. Its link, its card file and its
    entry are named by it."""
    seen: set = set()
    for item, *rest in page_numbers(text, path, *args):
        if item.key not in seen:
            seen.add(item.key)
            yield f"n{len(seen) - 1}", item, *rest


def figure_anchor(kind: str, n: int) -> str:
    """The id of a page's `n`-th figure of `kind` (counted from 1): `fig-<kind>`, then `fig-<kind>-2`, ...
    Links, shared URLs and the page's scripts name figures by it."""
    return f"fig-{kind}" + (f"-{n}" if n > 1 else "")


class _RememberingTerms(dict):
    """`vocabulary(r, catalogue)`, with `extra` beside it, whose terms are bound and wrapped in
    `remembering` as an expression first asks for them, not all at once: a page's choices of words
    are checked under thousands of varied vocabularies (`varied_env`, one for each point of each
    assumption's range and each scenario), and call a few of the ~140 terms in each, so binding and
    wrapping every term up front cost more than the calls themselves. Only lookups by name
    (`env[name]`, which is all `numbers.evaluate` does) reach a term not yet asked for."""

    def __init__(self, r: Any, catalogue: Catalogue, extra: dict):
        super().__init__(extra)
        self._r, self._catalogue = r, catalogue

    def __missing__(self, name: str) -> Callable:
        fn = self[name] = remembering(bound_term(name, self._r, self._catalogue))  # KeyError: no such term
        return fn


def _no_memory(identity: dict, make: Callable[[], NumberResult]) -> NumberResult:
    return make()


def build_page(source: str, path: str, catalogue: Catalogue,
               make_figure: Callable[[FigureRequest], FigureArtifacts], budget_bytes: int,
               remember: Callable[[dict, Callable[[], NumberResult]], NumberResult] = _no_memory,
               timing: Timing | None = None, assumed: Any = None,
               fence_checks: Mapping[str, Callable[[Fence, str], None]] = {}) -> PageBuild:
    """Check and compute one page. `remember(identity, make)` may serve numbers from a cache;
    `timing` counts the time its numbers spend in the models; with `assumed` (the module
    `compute.assumptions`), every choice of words is checked across the assumed constants' ranges;
    a fence of a language in `fence_checks` (the maths, which the render layer reads) is handed to
    its check with the page's path, which raises SourceError at its line."""
    text = read_page(source, path, catalogue)
    controls, fences = text.controls, text.fences
    page = PageBuild(path, controls)

    for fence in fences:
        if fence.lang in fence_checks:
            fence_checks[fence.lang](fence, path)
    anchors: dict[str, int] = {}
    for fence in (f for f in fences if f.lang == FENCE_NAME):
        request, scenario_map = parse_figure(fence, path, controls, catalogue)
        n = anchors[request.kind] = anchors.get(request.kind, 0) + 1
        anchor = figure_anchor(request.kind, n)
        page.figures.append(FigureOnPage(fence, anchor, request, make_figure(request), scenario_map))
        size = page.figure_data_bytes()
        if size > budget_bytes:
            raise SourceError(path, fence.line, f"figure data on this page would be {size / 1000:.1f} KB gzip, "
                              f"over the budget of {budget_bytes / 1000:.0f} KB; use fewer slider positions "
                              "or scenario choices")

    def env_of(scenario: Scenario, cat: Catalogue) -> dict:
        """The scenario's vocabulary, bound to the scenario resolved in `cat`."""
        env = vocabulary(Watched.of(resolve(scenario, cat)), cat)
        env["__scenario__"], env["__fields__"] = scenario.key, scenario
        return env

    grid = controls.grid()

    @functools.cache
    def envs() -> list[dict]:
        """Each scenario's bound vocabulary, made on the first number that is not cached."""
        return [env_of(scenario, catalogue) for scenario in grid]

    @functools.cache
    def varied_env(key: str, t: float, s: int) -> dict:
        """The vocabulary of scenario `s` (-1: none) with assumption `key` at `t` of its range,
        its terms' answers kept for every choice of words that asks the same (`remembering`):
        the choices of a page call the same few terms at the same points."""
        cat = assumed.ASSUMPTIONS[key].vary(catalogue, t)
        if s < 0:
            return _RememberingTerms(None, cat, {})
        scenario = grid[s]
        return _RememberingTerms(Watched.of(resolve(scenario, cat)), cat,
                                 {"__scenario__": scenario.key, "__fields__": scenario})
    unscoped = vocabulary(None, catalogue)  # bound without a scenario: only scenario-free terms run
    functions = {k for k in unscoped if not k.startswith("__")}
    default_env = grid.index(controls.scenario)
    named: set[str] = set()  # the sliders inline numbers name
    returns = term_returns()
    defaults = {n: s.default for n, s in controls.sliders.items()}

    def how_made(item, expr: Expr, shape, scenario: Scenario | None, path: str) -> dict:
        """The default state's derivation (compute/derivation.py), as the page shows it: the
        number's terms under the default scenario (none for a number that reads none) at the
        sliders' defaults."""
        r = None if scenario is None else resolve(scenario, catalogue)
        env = {**vocabulary(r, catalogue), **defaults}
        with (timing or Timing()).in_models(), np.errstate(all="ignore"):
            d = derive_number(item.expr, env, returns, term_derivers(r, catalogue), controls.sliders,
                              shape.dim if shape.kind == "number" else None, shape.scale)
        return d.to_json()

    @functools.cache
    def derivers_at(s: int) -> dict:
        """Scenario `s`'s terms' derive functions, bound as `envs()` binds its terms (watched)."""
        return term_derivers(Watched.of(resolve(grid[s], catalogue)), catalogue)
    arrays = derive_arrays()

    def cards_made(item, expr: Expr, shape, free: bool, path: str) -> dict:
        """What the number's card shows at every state of the page (derivation.explain_over): under
        every scenario (none for a number that reads none), at every position of its sliders."""
        scenarios = ([(unscoped, term_derivers(None, catalogue), None)] if free
                     else [(env, derivers_at(s), grid[s]) for s, env in enumerate(envs())])
        try:
            with (timing or Timing()).in_models():
                return explain_over(item.expr, scenarios, [controls.sliders[n] for n in expr.names], returns,
                                    controls.sliders, shape.dim if shape.kind == "number" else None, shape.scale,
                                    SCENARIO_DEP, arrays)
        except (TypeError, ValueError, ArithmeticError, KeyError) as exc:
            raise SourceError(path, item.line, f"the derivation of {{{{ {item.expr} }}}} failed at a state the page "
                              f"offers: {type(exc).__name__}: {exc}") from None

    for number_id, item, expr, shape, fmt, marks in distinct_numbers(text, path, functions, returns,
                                                                      tuple(assumed.ASSUMPTIONS) if assumed else None):
        named.update(expr.names)
        # The terms it calls go with it: the cache key holds their code (site/store.Store.number_key),
        # and a choice of words's holds the assumptions' too, since it is checked across them.
        identity = {"expr": item.expr, "fmt": item.fmt, "id": number_id, "controls": controls.identity(),
                    "calls": sorted(expr.calls), "chooses": expr.chooses_words}
        # A number whose terms all declare no scenario needs one evaluation, and is given none to read.
        free = scenario_free(expr.calls)

        def varied(a, t: float, s: int, free: bool = free) -> tuple[dict, Any]:
            return varied_env(a.key, t, -1 if free else s), a.within(t)
        across = Across(assumed, varied, catalogue, tuple(simulated(expr.calls))) if assumed else None

        def computed(item=item, number_id=number_id, expr=expr, fmt=fmt, free=free, across=across, marks=marks,
                     shape=shape) -> NumberResult:
            result = compute_number(item, number_id, expr, fmt, controls.sliders, [unscoped] if free else envs(),
                                    path, 0 if free else default_env, timing, marks, across)
            if shape.kind != "text" and (expr.calls or expr.names):  # a computed number, not a phrase or a literal
                result.how = how_made(item, expr, shape, None if free else grid[default_env], path)
                result.cards = cards_made(item, expr, shape, free, path)
                result.has_cards = True
            return result
        page.numbers[item.key] = remember(identity, computed)
    check_sliders_used(page, named)
    return page


def check_sliders_used(page: PageBuild, named: set[str]) -> None:
    """A page slider that no figure shows and no inline number names is an author's mistake:
    nothing would show it, and nothing would move with it."""
    shown = page.shown_by_figures()
    for name in page.controls.sliders:
        if name in shown or name in named:
            continue
        kinds = sorted(k for k, kind in REGISTRY.items() if name in kind.sliders)
        raise SourceError(page.path, page.controls.lines.get(name, 1),
                          f"slider {name!r} is declared but nothing on the page uses it; name it in an inline "
                          f"number such as {{{{ {name} }}}}"
                          + (f", show it with a figure that has it ({', '.join(kinds)})" if kinds else "")
                          + ", or remove it")
