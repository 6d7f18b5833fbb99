"""Issue 31: each figure's and number's cache key holds the code it runs, and nothing else.

For every module of `models/` and `explainer_gen/compute/`, and every data file the models read,
an edit must change the keys of exactly the results whose code reads it: then a stale result is
never served from the cache, and no unrelated result is recomputed. The expected set is derived
here from the compiled code, independently of compute/codegraph.py (which reads the source's
syntax tree): every IMPORT_NAME in a module's bytecode and in that of each function and class in
it. What both share is the contract, not the reading: the entry modules of a figure and of a
number (`FIGURE_ENTRY`, `NUMBER_ENTRY`), and that the vocabulary's package imports every topic
only to register it, so a number runs the topics whose terms it calls, not all of them.
"""
from __future__ import annotations

import dataclasses
import dis
import importlib.util
import io
import re
import sys
import tokenize
import types
from pathlib import Path

import pytest

from explainer_gen import core
from explainer_gen.compute import vocabulary
from explainer_gen.compute.codegraph import (CHOICE_ENTRY, FIGURE_ENTRY, MEASURED_ENTRY, NUMBER_ENTRY, PAGE_STATE_ENTRY,
                                             CodeGraph, CodeKeys, module_name)
from explainer_gen.compute.figures import REGISTRY
from explainer_gen.compute.numbers import find_inline
from explainer_gen.compute.timing import Timing
from explainer_gen.sources.markdown import scan_fences
from helpers import REPO

ROOTS = [REPO / "models", REPO / "explainer_gen"]
TERMS = vocabulary.REGISTRY.terms
# The module that registers each topic: a term runs it (it says what `max` is) and the module
# that defines the term's function.
REGISTERS = {mod.topic.name: mod.__name__ for mod in vars(vocabulary).values()
             if isinstance(mod, types.ModuleType) and hasattr(mod, "topic")}


def term_modules(name: str) -> set[str]:
    term = TERMS[name]
    return {REGISTERS[term.topic], term.fn.__module__}


# -- the graph, read from bytecode ----------------------------------------------------------------

def bytecode_imports(path: Path, name: str) -> set[str]:
    """The modules a file's code may import: each IMPORT_NAME, resolved with its level against the
    module's package, and for `from x import y` also `x.y` (a submodule, if it is one); not those
    in an `if TYPE_CHECKING:` block, which jumps past them."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def walk(code: types.CodeType) -> None:
        ins = list(dis.get_instructions(code))
        skip_to = -1  # the end of an `if TYPE_CHECKING:` block, whose imports never run
        for i, x in enumerate(ins):
            if x.argval == "TYPE_CHECKING" and x.opname.startswith("LOAD_") and "IF_FALSE" in ins[i + 1].opname:
                skip_to = ins[i + 1].argval
            if x.opname == "IMPORT_NAME" and x.offset >= skip_to:
                level, fromlist = ins[i - 2].argval, ins[i - 1].argval
                target = importlib.util.resolve_name("." * level + (x.argval or ""), package) if level else x.argval
                out.add(target)
                out.update(f"{target}.{n}" for n in fromlist or () if n != "*")
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)
    walk(compile(path.read_bytes(), str(path), "exec"))
    return out


def expected_graph() -> dict[str, set[str]]:
    """Module -> the modules of the project it imports, and the packages around those."""
    files = {module_name(p.relative_to(REPO).as_posix()): p for root in ROOTS for p in root.rglob("*.py")
             if "__pycache__" not in p.parts}
    graph = {}
    for name, path in files.items():
        found = set()
        for target in bytecode_imports(path, name):
            parts = target.split(".")
            found.update(m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in files)
        graph[name] = found - {name}
    # The registry: the vocabulary's package imports every topic to register its terms.
    graph[vocabulary.__name__] -= {m for name in TERMS for m in term_modules(name)}
    return graph


def runs(graph: dict[str, set[str]], entries) -> set[str]:
    seen, todo = set(), [p for e in entries for p in _around(e) if p in graph]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def _around(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


# -- the results: every figure kind, and every inline number of the site -----------------------------

# The two results a build keeps besides figures and numbers: a page's state (whose numbers' own
# keys hold the code that computed them) and the check of the published measurements.
OTHER_RESULTS = {"page state": PAGE_STATE_ENTRY, "measurement check": MEASURED_ENTRY}


def results() -> dict[str, tuple[str, ...]]:
    """Result -> its entry modules: each figure kind, each inline number on the site's pages, and
    the other results a build keeps (`OTHER_RESULTS`)."""
    out = {f"figure {kind}": FIGURE_ENTRY + (type(obj).__module__,) for kind, obj in REGISTRY.items()}
    out.update(OTHER_RESULTS)
    for page in sorted((REPO / "docs").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        _, inside = scan_fences(lines)
        for item in find_inline(lines, inside):
            terms = sorted({m for n in names_in(item.expr) if n in TERMS for m in term_modules(n)})
            out[f"number {item.expr}"] = NUMBER_ENTRY + (CHOICE_ENTRY if chooses(item.expr) else ()) + tuple(terms)
    return out


def chooses(expr: str) -> bool:
    """Whether an expression picks between quoted phrases by a condition, read from its tokens: a
    string, then `if`. Such a choice of words is checked across the assumed constants' ranges, so
    it runs their module (explainer_gen/compute/assumptions.py)."""
    kinds = [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(expr).readline)]
    return any(a[0] == tokenize.STRING and b == (tokenize.NAME, "if") for a, b in zip(kinds, kinds[1:]))


def names_in(expr: str) -> set[str]:
    """Every name and dotted name in an expression, read from its tokens (strings are skipped):
    `chen.speedup(0)` gives chen and chen.speedup."""
    out, dotted = set(), []
    for tok in tokenize.generate_tokens(io.StringIO(expr).readline):
        if tok.type == tokenize.NAME and (not dotted or dotted[-1] == "."):
            dotted.append(tok.string)
        elif tok.type == tokenize.OP and tok.string == "." and dotted and dotted[-1] != ".":
            dotted.append(".")
            continue
        else:
            dotted = [tok.string] if tok.type == tokenize.NAME else []
        if dotted and dotted[-1] != ".":
            out.add("".join(dotted))
    return out


def keys(code: CodeKeys, found: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    other = {"page state": code.page_state, "measurement check": code.measurements}
    return {r: other[r]() if r in other else code.figure(r[len("figure "):]) if r.startswith("figure ")
            else code.number(names_in(r[len("number "):]) & TERMS.keys(), chooses(r[len("number "):])) for r in found}


def edited(graph: CodeGraph, path: str) -> CodeGraph:
    """The graph as if the file at `path` (a module or a data file) had been edited."""
    modules = {n: dataclasses.replace(m, digest="edited") if m.path == path else m for n, m in graph.modules.items()}
    data = {p: "edited" if p == path else d for p, d in graph.data.items()}
    return CodeGraph(modules, data)


EDITED = sorted([p.relative_to(REPO).as_posix() for p in (REPO / "models").glob("*.py")]
                + [p.relative_to(REPO).as_posix() for p in (REPO / "explainer_gen" / "compute").rglob("*.py")
                   if "__pycache__" not in p.parts]
                + [p.relative_to(REPO).as_posix() for p in (REPO / "models").glob("*.yaml")])


def mismatches(graph: CodeGraph) -> list[str]:
    """For each edited file, the results whose keys change and should not, or should and do not."""
    expected, found = expected_graph(), results()
    readers = {path: {m for m, mod in graph.modules.items() if mod.path == path or path in mod.data}
               for path in EDITED}
    before = keys(CodeKeys(graph, core.CODE.versions), found)
    out = []
    for path in EDITED:
        after = keys(CodeKeys(edited(graph, path), core.CODE.versions), found)
        changed = {r for r in found if after[r] != before[r]}
        should = {r for r, entries in found.items() if runs(expected, entries) & readers[path]}
        if changed != should:
            out.append(f"{path}: recomputes {sorted(changed - should)} needlessly, "
                       f"serves {sorted(should - changed)} stale")
    return out


@pytest.fixture(scope="module")
def graph() -> CodeGraph:
    return CodeGraph.scan(ROOTS)


def test_an_edit_changes_the_keys_of_exactly_the_results_whose_code_reads_it(graph):
    assert len(EDITED) > 40 and len(results()) > 100
    assert mismatches(graph) == []


def test_negative_control_a_key_that_leaves_out_one_import_fails(graph):
    """The tree figures' kind imports the tree model; a graph that lost that edge would serve the
    tree figures stale after a save of models/trees.py, and the check must say so."""
    kind = graph.modules["explainer_gen.compute.figures.trees"]
    assert "models.trees" in kind.imports
    broken = dataclasses.replace(graph, modules={**graph.modules, kind.name: dataclasses.replace(
        kind, imports=kind.imports - {"models.trees"})})
    found = mismatches(broken)
    assert any(m.startswith("models/trees.py:") and "figure tree-yield" in m for m in found), found


def test_an_import_for_type_checkers_alone_is_no_edge(graph):
    """models/sampling.py names trees.Tree for its annotations only, under `if TYPE_CHECKING:`;
    that import never runs, so the speculative page's sampler figures do not run the tree model."""
    source = (REPO / "models" / "sampling.py").read_text()
    assert re.search(r"^if TYPE_CHECKING:.*\n +from \.trees import", source, re.M)
    assert "models.trees" not in graph.modules["models.sampling"].imports
    assert "models.trees" not in expected_graph()["models.sampling"]


def test_what_a_save_of_each_model_recomputes(graph):
    """The issue's three cases, on the site's figures: a save of the tree model recomputes the
    draft-trees page's figures; of the serving model, the serving page's and the measurements'
    figure, whose serving runs it prices; of the roofline, all."""
    code = CodeKeys(graph, core.CODE.versions)

    def recomputed(path, graph=graph):
        before, after = (CodeKeys(g, core.CODE.versions) for g in (graph, edited(graph, path)))
        return {k for k in REGISTRY if after.figure(k) != before.figure(k)}
    def kinds_in(module):  # the cases: a model's save recomputes the figures its page's kinds draw
        return {k for k, kind in REGISTRY.items() if type(kind).__module__ == f"explainer_gen.compute.figures.{module}"}
    # Which kinds run a model is read from each kind module's own imports (its bytecode), so a new
    # kind needs no edit here: `importing`, those whose module imports one of `modules` itself;
    # `reaching`, those whose code reaches one through any module (the bytecode graph).
    def importing(*modules):
        return {k for k, kind in REGISTRY.items()
                if set(modules) & bytecode_imports(Path(sys.modules[type(kind).__module__].__file__),
                                                   type(kind).__module__)}
    expected = expected_graph()
    def reaching(module):
        return {k for k, kind in REGISTRY.items() if module in runs(expected, FIGURE_ENTRY + (type(kind).__module__,))}
    # The tree model: the draft-trees page's kinds (figures/trees.py), which import it, and no others.
    tree_kinds = importing("models.trees")
    assert recomputed("models/trees.py") == tree_kinds
    assert {"tree-yield", "tree-speedup", "draft-speedup", "moe-verify"} <= kinds_in("trees") <= tree_kinds < set(REGISTRY)
    # The estimate (models/estimate.py) prices its serving runs with the serving simulation, so the
    # kinds that draw the estimate recompute too: the measurements' figure, the step-time bands, and
    # the kinds that draw published measurements over their curves (figures/overlay.py).
    estimate_kinds = importing("models.serving", "models.estimate", "explainer_gen.compute.figures.overlay")
    assert recomputed("models/serving.py") == estimate_kinds
    assert kinds_in("serving") | kinds_in("measured") | {"step-time"} <= estimate_kinds
    assert {"prefill-vs-decode", "batch-throughput"} <= importing("explainer_gen.compute.figures.overlay")
    assert {"serve-goodput", "serve-timeline", "serve-ttft", "serve-tpot", "serve-tbt"} <= kinds_in("serving")
    # The roofline, which the other models build on: every kind that reaches it, the tree and the
    # serving ones among them.
    roofline_kinds = reaching("models.roofline")
    assert recomputed("models/roofline.py") == roofline_kinds
    assert tree_kinds | estimate_kinds <= roofline_kinds
    # Negative controls: a graph that lost the tree kinds' edge to the tree model recomputes too
    # little after its save, one that gave another kind's module that edge too much; both fail the
    # comparison above.
    trees, other = (graph.modules[f"explainer_gen.compute.figures.{m}"] for m in ("trees", "roofline"))
    assert "models.trees" in trees.imports and "models.trees" not in other.imports
    lost = dataclasses.replace(graph, modules={**graph.modules, trees.name: dataclasses.replace(
        trees, imports=trees.imports - {"models.trees"})})
    gained = dataclasses.replace(graph, modules={**graph.modules, other.name: dataclasses.replace(
        other, imports=other.imports | {"models.trees"})})
    assert recomputed("models/trees.py", lost) != tree_kinds
    assert recomputed("models/trees.py", gained) > tree_kinds
    # A number that calls only roofline terms is left alone by a save of the tree model.
    assert code.number(["step"]) == CodeKeys(edited(graph, "models/trees.py"), core.CODE.versions).number(["step"])


def test_the_graph_is_the_code_that_was_loaded():
    """core.CODE was read from the files whose hashes core.SOURCES took as the code loaded."""
    assert core.SOURCES is not None and core.CODE is not None
    scanned = CodeGraph.scan(ROOTS).digests()
    assert {p: core.SOURCES.get(p) for p in scanned} == scanned


def test_the_summary_line():
    t = Timing()
    assert t.summary() == ("0 figures computed (0 new, 0 code changed, 0 inputs changed), 0 read from the cache; "
                           "0 numbers computed, 0 read from the cache")
    # k2 is placed twice (the same request on two pages): computed for one, read by the other.
    t.placed = {("a.md", 3): "k1", ("a.md", 9): "k2", ("b.md", 1): "k3", ("c.md", 4): "k2"}
    t.computed = {"k2": ["a.md", 9, "code changed"]}
    t.numbers_used, t.numbers_computed = {"n1", "n2"}, {"n2", "n-elsewhere"}
    assert t.summary() == ("1 figure computed (0 new, 1 code changed, 0 inputs changed), 3 read from the cache; "
                           "1 number computed, 1 read from the cache")
    assert t.computed_figures() == ["computed the figure at a.md:9 (code changed)"]


def test_the_machine_cache_of_each_modules_reading_gives_the_same_graph(tmp_path, graph):
    """What each module imports and names, kept by its hash (no process parses it again), reads
    back as the same graph; an edited module is read anew."""
    from explainer_gen.cache import DiskCache

    memo = DiskCache(tmp_path)
    assert CodeGraph.scan(ROOTS, memo=memo) == graph == CodeGraph.scan(ROOTS, memo=memo)
    assert memo.hits == len(graph.modules)
    path = "models/serving.py"
    text = (REPO / path).read_bytes() + b"\nfrom . import trees\n"
    assert "models.trees" in CodeGraph.scan(ROOTS, texts={path: text}, memo=memo).modules["models.serving"].imports


def test_a_kind_from_another_package_runs_what_it_imports(tmp_path, monkeypatch, graph):
    """A figure kind an entry point brings lies outside the graph: its own file is hashed, and the
    models it imports are followed, so a save of one of them recomputes its figures."""
    import sys

    module = tmp_path / "outside_kind.py"
    module.write_text("from models import trees\n\n\ndef draw():\n    return trees\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "outside_kind", raising=False)
    __import__("outside_kind")
    entries = FIGURE_ENTRY + ("outside_kind",)
    code = CodeKeys(graph, core.CODE.versions)
    assert code._keys(entries) != CodeKeys(edited(graph, "models/trees.py"), core.CODE.versions)._keys(entries)
    assert code._keys(entries) == CodeKeys(edited(graph, "models/serving.py"), core.CODE.versions)._keys(entries)
    module.write_text(module.read_text() + "# an edit\n")
    assert CodeKeys(graph, core.CODE.versions)._keys(entries) != code._keys(entries)


def test_a_term_runs_the_module_that_registers_it(graph):
    """`max` is numpy's maximum, registered in the arithmetic topic: an edit there (say, to
    np.minimum) changes what {{ max(...) }} gives, so it changes the number's key."""
    code = CodeKeys(graph, core.CODE.versions)
    assert TERMS["max"].fn.__module__ == "numpy"
    after = CodeKeys(edited(graph, "explainer_gen/compute/vocabulary/arithmetic.py"), core.CODE.versions)
    assert code.number(["max"]) != after.number(["max"])
    assert code.number(["step"]) == after.number(["step"])
