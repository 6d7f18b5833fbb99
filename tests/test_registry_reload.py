"""After `mkdocs serve` loads the generator again (core.fresh), the old copy is garbage: its two
registries, the figure kinds' (compute/figures/base.py REGISTRY) and the vocabulary's
(compute/vocabulary REGISTRY), and every old module are unreachable, and exactly one registry of
each kind is alive. The registries are module globals, one per loaded generator: this is what
keeps that from meaning two at once.

How "unreachable" is seen, in a fresh interpreter (a reload there touches no other test):

- The vocabulary's REGISTRY is a `Registry` instance, so a `weakref` to it dies with it.
- The figure kinds' REGISTRY is a plain dict, which cannot be weakref'd. A dict holds its values,
  so a weakref to one of its kinds (a FigureKind instance), dead, proves the dict dead; likewise
  one to the old `FigureKind` class, which the old base module's globals hold. A weakref to the
  old module object alone would not do: the globals (and REGISTRY in them) outlive the module
  object whenever a function or class of the module is held (holding the old REGISTRY keeps the old
  base module's globals, not its module object). There is one to every old module as well, which
  must die too.
- Counting: every dict from names to figure kinds, and every `Registry` instance, among
  `gc.get_objects()` after `gc.collect()` (module globals form cycles, which only the collector
  frees). The old and new classes share their names, so this counts old copies too: one of each.
- No module loaded anew holds an old module (a `from . import host` that read the old package's
  attribute would run the old code and keep the old generator alive: the leak core.fresh fixes).

The negative control keeps a strong reference to both old registries, as a leak would, and the
same check reports them."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO, env

SCRIPT = r'''
import gc, json, sys, types, weakref

from explainer_gen import core

BASE, VOCABULARY = "explainer_gen.compute.figures.base", "explainer_gen.compute.vocabulary"


def ours(name):
    return name in ("models", "explainer_gen") or name.startswith(("models.", "explainer_gen."))


def is_kind(obj):
    return any(c.__qualname__ == "FigureKind" and c.__module__ == BASE for c in type(obj).__mro__)


def registries():
    """The live figure-kind registries (dicts of name -> kind) and vocabulary registries."""
    gc.collect()
    objects = gc.get_objects()
    figures = [o for o in objects if type(o) is dict and o and all(type(k) is str and is_kind(v) for k, v in o.items())]
    terms = [o for o in objects if type(o).__name__ == "Registry" and type(o).__module__ == VOCABULARY + ".registry"]
    return figures, terms


def problems(old):
    """What of the old generator is still alive, or doubled, in words; [] when nothing is."""
    out = []
    figures, terms = registries()
    if len(figures) != 1:
        out.append(f"{len(figures)} figure-kind registries are alive")
    if len(terms) != 1:
        out.append(f"{len(terms)} vocabulary registries are alive")
    if old["kind"]() is not None or old["FigureKind"]() is not None:
        out.append("the old figure-kind registry is alive")
    if old["vocabulary"]() is not None:
        out.append("the old vocabulary registry is alive")
    out += [f"old module {name} is alive" for name, ref in old["modules"].items()
            if ref() is not None and sys.modules.get(name) is not ref()]
    stale = {id(ref()) for ref in old["modules"].values() if ref() is not None}
    out += [f"{name}.{attr} is the old module {value.__name__}" for name, module in list(sys.modules.items())
            if ours(name) for attr, value in vars(module).items()
            if isinstance(value, types.ModuleType) and id(value) in stale and sys.modules.get(value.__name__) is not value]
    return out


def load_again():
    """core.fresh as after a save; the old generator's registries and modules, weakly."""
    base, vocabulary = sys.modules[BASE], sys.modules[VOCABULARY]
    old = {"kind": weakref.ref(next(iter(base.REGISTRY.values()))), "FigureKind": weakref.ref(base.FigureKind),
           "vocabulary": weakref.ref(vocabulary.REGISTRY),
           "modules": {n: weakref.ref(m) for n, m in sys.modules.items() if ours(n)}}
    leak = [base.REGISTRY, vocabulary.REGISTRY]  # what a leak would hold
    loaded = sys.modules["explainer_gen.core"]
    loaded.is_current = lambda: False  # as if a file had been saved
    new, reloaded = loaded.fresh()
    assert reloaded and new is not loaded and sys.modules[BASE] is not base
    return old, leak


before = [len(r) for r in registries()]
del core
old, leak = load_again()
leaked = problems(old)  # the negative control: a strong reference to both old registries
del leak
print(json.dumps({"before": before, "leaked": leaked, "after": problems(old),
                  "kept": sorted(n for n, r in old["modules"].items() if r() is not None)}))
'''


def test_a_reload_leaves_one_registry_of_each_kind_and_nothing_of_the_old_generator():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, env=env())
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["before"] == [1, 1]  # the count finds the registries: one of each, before the reload
    # Negative control: while something holds the old registries, the check says so, both of them.
    assert {"2 figure-kind registries are alive", "2 vocabulary registries are alive",
            "the old figure-kind registry is alive", "the old vocabulary registry is alive"} <= set(found["leaked"])
    assert any(p.startswith("old module ") for p in found["leaked"])  # and what they hold
    # Once nothing holds them: one registry of each, and of the old modules only those never reloaded.
    assert found["after"] == []
    assert set(found["kept"]) <= {"explainer_gen", "explainer_gen.plugin", "explainer_gen.config"}
