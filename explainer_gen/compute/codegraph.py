"""Which code each result runs: the import graph of the models and the generator, read from source.

A cache key holds the hashes of the code its result runs, and of nothing else, so that a save of
`models/trees.py` recomputes what reads the tree model and leaves every other figure and number in
the cache. That code is found, not listed by hand:

- every module of `models/` and `explainer_gen/` is parsed (`ast`, as loaded: see core.py), and
  each import it makes, at module level or inside a function, relative or absolute, becomes an
  edge to the module it names (and to the packages around it, whose `__init__` runs first); an
  import for type checkers alone (`if TYPE_CHECKING:`) never runs and makes none;
- a module reads a data file of its package when its source names the file (a string such as
  "published.yaml"); the file's hash goes with the module's;
- a result's code is the closure of its entry modules: for a figure, the module that builds every
  figure (`FIGURE_ENTRY`) and its figure kind's module; for an inline number, the modules that
  parse and evaluate every number (`NUMBER_ENTRY`) and the modules that define the terms it calls.

A registry imports every member to register it (the vocabulary's package imports every topic); a
result does not run every member, so edges from a registry's package to its members are cut, and
each result adds the members it uses by name.
"""
from __future__ import annotations

import ast
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The modules every figure runs, and every inline number (their imports follow from the graph).
FIGURE_ENTRY = ("explainer_gen.compute.artifacts",)
NUMBER_ENTRY = ("explainer_gen.compute.numbers", "explainer_gen.compute.pages")
CHOICE_ENTRY = ("explainer_gen.compute.assumptions",)  # what a choice of words is checked across
STATE_ENTRY = ("explainer_gen.client.contract",)  # a page's state and a figure's files, which the browser reads
# A page's state: the contract, and the page's controls it reads (which choices are blocked, and why).
PAGE_STATE_ENTRY = STATE_ENTRY + ("explainer_gen.compute.pages",)
# A number's card file: the contract, and the HTML its templates are written in.
CARD_ENTRY = STATE_ENTRY + ("explainer_gen.render.how",)
MEASURED_ENTRY = ("models.estimate",)  # the published measurements, checked against the fitted estimate
# The data files a module may read: the suffixes cache.source_hashes watches (it decides when the
# code on disk is no longer the code loaded), so an edit of any of them loads the code again.
DATA_SUFFIXES = (".yaml",)
# The code that reads a module (this file), part of the key under which the machine's cache keeps
# each module's reading: a change to how imports are read never meets an old reading.
_READER = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Module:
    name: str                 # dotted: "models.trees", "explainer_gen.compute" (a package's __init__)
    path: str                 # relative to the folder that holds the packages: "models/trees.py"
    digest: str               # sha256 of the source
    imports: frozenset[str]   # modules it imports, anywhere in it, that are in the graph
    data: frozenset[str]      # data files of its package it names, as relative paths


def module_name(rel: str) -> str:
    """'models/trees.py' -> 'models.trees'; 'explainer_gen/compute/__init__.py' -> 'explainer_gen.compute'."""
    parts = rel[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parents(name: str) -> list[str]:
    """The packages whose __init__ runs before `name`: 'a.b.c' -> ['a', 'a.b']."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): a block that never runs."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _running(tree: ast.AST):
    """Every node of `tree` but those inside an `if TYPE_CHECKING:` block (its `else` runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if _type_checking(node):
            todo.append(node.test)
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def _imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Every module name an import in `tree` may load, resolved against module `name`; imports
    for type checkers alone (`if TYPE_CHECKING:`) never run, and do not count."""
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _running(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            out.add(stem)
            # `from package import module` loads the submodule.
            out.update(f"{stem}.{alias.name}" for alias in node.names if alias.name != "*")
    return out


def _named_files(tree: ast.AST) -> set[str]:
    """The base names of data files the source names in a string."""
    return {Path(node.value).name for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.endswith(DATA_SUFFIXES) and "\n" not in node.value}


@dataclass
class CodeGraph:
    modules: dict[str, Module]
    data: dict[str, str] = field(default_factory=dict)        # data file path -> sha256
    cut: dict[str, frozenset[str]] = field(default_factory=dict)  # registry package -> members

    @classmethod
    def scan(cls, roots: list[Path], texts: dict[str, bytes] | None = None, memo=None) -> "CodeGraph":
        """The graph of every module under `roots` (package folders). `texts` maps a relative path
        to its bytes as loaded; files not in it are read from disk. `memo`, a DiskCache (the
        machine's, client/bundle.py), keeps what each source says it imports and names, by its
        module name, its hash and the Python version: parsing every module takes about 0.3 s,
        which every process that loads the generator would pay again."""
        texts = dict(texts or {})
        files: dict[str, Path] = {}
        for root in roots:
            for path in sorted(root.rglob("*")):
                if "__pycache__" in path.parts or not path.is_file():
                    continue
                rel = path.relative_to(root.parent).as_posix()
                files[rel] = path
        read = lambda rel: texts[rel] if rel in texts else files[rel].read_bytes()  # noqa: E731
        sources = {rel: read(rel) for rel in files if rel.endswith(".py")}
        data = {rel: hashlib.sha256(read(rel)).hexdigest() for rel in files if rel.endswith(DATA_SUFFIXES)}
        names = {module_name(rel): rel for rel in sources}
        modules = {}
        for name, rel in names.items():
            digest = hashlib.sha256(sources[rel]).hexdigest()
            key = hashlib.sha256(f"{rel}|{digest}|{sys.version_info[:2]}|{_READER}".encode()).hexdigest()
            said = memo.get("code-imports", key) if memo is not None else None
            if said is not None:
                targets, basenames = json.loads(said)
            else:
                tree = ast.parse(sources[rel], filename=rel)
                targets = sorted(_imported(tree, name, rel.endswith("__init__.py")))
                basenames = sorted(_named_files(tree))
                if memo is not None:
                    memo.put("code-imports", key, json.dumps([targets, basenames]))
            found = set()
            for target in targets:
                if target in names:
                    found.add(target)
                found.update(p for p in _parents(target) if p in names)
            folder = rel.rpartition("/")[0]
            named = {f"{folder}/{base}" for base in basenames} & set(data)
            modules[name] = Module(name, rel, digest, frozenset(found - {name}), frozenset(named))
        return cls(modules, data)

    def digests(self) -> dict[str, str]:
        """sha256 by relative path of every module and every YAML file read (core.py compares them
        with the hashes taken as the code was loaded)."""
        return {**{m.path: m.digest for m in self.modules.values()}, **self.data}

    def cutting(self, registry: str, members: set[str]) -> "CodeGraph":
        """The graph with the edges from package `registry` to its `members` cut."""
        return CodeGraph(self.modules, self.data, {**self.cut, registry: frozenset(members)})

    def closure(self, entries) -> set[str]:
        """The modules `entries` run: themselves, the packages around them, and all they import."""
        todo = [e for entry in entries for e in (*_parents(entry), entry) if e in self.modules]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self.modules[name].imports - self.cut.get(name, frozenset()))
        return seen



class CodeKeys:
    """The code part of each result's cache key, from the graph of the code this process loaded:
    `figure(kind)` and `number(calls)` give (code, data), the hashes of the code the result runs and
    of the data files that code reads. `fingerprint` hashes the code every figure and number runs,
    together with what puts a page's state together (`STATE_ENTRY`), for what all of a page's
    results share and for a worker to check that it loaded the build's code."""

    def __init__(self, graph: CodeGraph, versions: list[str]):
        from types import ModuleType

        from . import vocabulary
        from .figures import REGISTRY
        from .vocabulary.registry import Topic

        self.kinds = REGISTRY
        # A term runs the module that registers it (where `max` is numpy's maximum, that module
        # says so) and the module that defines its function, when that is ours.
        registers = {mod.topic.name: mod.__name__ for mod in vars(vocabulary).values()
                     if isinstance(mod, ModuleType) and isinstance(getattr(mod, "topic", None), Topic)}
        self.term_modules = {name: tuple(sorted({registers[term.topic], term.fn.__module__} & set(graph.modules)))
                             for name, term in vocabulary.REGISTRY.terms.items()}
        members = {m for mods in self.term_modules.values() for m in mods}
        self.graph = graph.cutting(vocabulary.__name__, members)
        self.versions = list(versions)
        self._memo: dict[tuple[str, ...], tuple[str, str]] = {}
        every = (FIGURE_ENTRY + NUMBER_ENTRY + STATE_ENTRY + tuple(sorted({type(k).__module__ for k in self.kinds.values()}))
                 + tuple(sorted(members)))
        self.fingerprint = hashlib.sha256("".join(self._keys(every)).encode()).hexdigest()

    def modules_of_figure(self, kind: str) -> tuple[str, ...]:
        """The entry modules of a figure of `kind`: those that build every figure, and its kind's."""
        found = self.kinds.get(kind)
        return FIGURE_ENTRY + ((type(found).__module__,) if found is not None else ())

    def modules_of_number(self, calls, chooses: bool = False) -> tuple[str, ...]:
        """The entry modules of an inline number: those that evaluate every number, for each term
        it calls (numbers.Expr.calls) the modules that register and define it, and for a choice of
        words (`chooses`) the assumptions it is checked across."""
        return (NUMBER_ENTRY + (CHOICE_ENTRY if chooses else ())
                + tuple(sorted({m for n in calls for m in self.term_modules.get(n, ())})))

    def figure(self, kind: str) -> tuple[str, str]:
        return self._keys(self.modules_of_figure(kind))

    def number(self, calls, chooses: bool = False) -> tuple[str, str]:
        return self._keys(self.modules_of_number(calls, chooses))

    def state(self) -> tuple[str, str]:
        """The code that writes what the browser reads (a page's state, a figure's files)."""
        return self._keys(STATE_ENTRY)

    def page_state(self) -> tuple[str, str]:
        """The code that puts a page's state together from its controls and numbers (whose own keys
        hold the code that computed them)."""
        return self._keys(PAGE_STATE_ENTRY)

    def cards(self) -> tuple[str, str]:
        """The code that writes a number's card file from what its card shows at every state."""
        return self._keys(CARD_ENTRY)

    def measurements(self) -> tuple[str, str]:
        """The code that checks the published measurements against the fitted estimate."""
        return self._keys(MEASURED_ENTRY)

    def _keys(self, entries: tuple[str, ...]) -> tuple[str, str]:
        if entries not in self._memo:
            # A module outside the graph (a figure kind from another package's entry point) is
            # hashed from its own file, and what it imports of the graph is followed from there.
            outside = sorted(e for e in entries if e not in self.graph.modules)
            mods = sorted(self.graph.closure(entries + tuple(m for e in outside for m in self._imports_of(e))))
            code = [(self.graph.modules[m].path, self.graph.modules[m].digest) for m in mods]
            code += [(e, _file_digest(e)) for e in outside]
            data = sorted({(d, self.graph.data[d]) for m in mods for d in self.graph.modules[m].data})
            self._memo[entries] = (hashlib.sha256(json.dumps([code, self.versions]).encode()).hexdigest(),
                                   hashlib.sha256(json.dumps(data).encode()).hexdigest())
        return self._memo[entries]


    def _imports_of(self, module: str) -> set[str]:
        """The modules of the graph that a loaded module outside it imports."""
        path, source = _source(module)
        try:
            tree = ast.parse(source) if source is not None else None
        except SyntaxError:
            tree = None
        if tree is None:
            return set()
        return {t for t in _imported(tree, module, Path(path).name == "__init__.py")
                for t in (*_parents(t), t) if t in self.graph.modules}


def _source(module: str) -> tuple[str | None, bytes | None]:
    """A loaded module's source file and its bytes (None for either when it has none)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        return path, Path(path).read_bytes() if path else None
    except OSError:
        return path, None


def _file_digest(module: str) -> str:
    """sha256 of a loaded module's source file ('' when it has none)."""
    source = _source(module)[1]
    return hashlib.sha256(source).hexdigest() if source is not None else ""
