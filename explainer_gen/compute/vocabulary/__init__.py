"""The terms an author may call in an inline number, one module per topic, in one registry.

Every term declares where it is defined what it reads besides its arguments (`registry.py`):
the page's scenario, the catalogue, or nothing. Whether a number varies with the scenario switch
follows from those declarations, and a number that calls only scenario-free terms is evaluated
in the vocabulary bound without a scenario, so it cannot read one.

Every term broadcasts over numpy arrays, so one call covers a whole slider grid. Quantities are
in SI units (seconds, bytes, FLOP/s) unless the term declares a scale (`Returns`); the format's
unit converts, and must fit the number's dimension (numbers.py).
"""
from __future__ import annotations

from typing import Callable, Iterable

from models.catalogue import Catalogue

from ..resolved import Resolved
from . import arithmetic, batching, kv, measured, papers, realistic, roofline, sampler, scenario, serving, speculative, trees
from .registry import AS_ARGUMENTS, AS_PUBLISHED, DEPENDENCIES, TEXT, Registry, Returns, Term, TermError, Topic

TOPICS = (scenario.topic, roofline.topic, speculative.topic, batching.topic, kv.topic, papers.topic,
          realistic.topic, measured.topic, sampler.topic, serving.topic, trees.topic, arithmetic.topic)
REGISTRY = Registry(*TOPICS)

__all__ = ["AS_ARGUMENTS", "AS_PUBLISHED", "DEPENDENCIES", "REGISTRY", "Registry", "Returns", "TEXT", "Term", "TermError",
           "Topic", "bound_term", "derive_arrays", "derivers", "returns", "scenario_free", "simulated", "undescribed", "vocabulary"]


def vocabulary(r: Resolved | None, catalogue: Catalogue) -> dict[str, Callable]:
    """Name -> function for inline numbers under scenario `r`; with None, only the terms that
    read no scenario run (the others raise)."""
    return REGISTRY.bind(r, catalogue)


def bound_term(name: str, r: Resolved | None, catalogue: Catalogue) -> Callable:
    """`vocabulary(r, catalogue)[name]`, binding that one term alone (KeyError for no such term):
    for a caller that uses a few of the terms and would pay to bind them all."""
    return REGISTRY.terms[name].bind(r, catalogue)


def derivers(r: Resolved | None, catalogue: Catalogue) -> dict[str, Callable | None]:
    """Name -> the term's derive function bound to scenario `r` (None where it declares none)."""
    return REGISTRY.derivers(r, catalogue)


def derive_arrays() -> frozenset[str]:
    """The terms whose derive function also takes arrays (registry.Term.derives_arrays)."""
    return REGISTRY.derive_arrays()


def undescribed(names: Iterable[str]) -> list[str]:
    """Those of `names` that declare no derivation (min, max, abs and round need none: an
    expression shows them as written)."""
    return sorted(n for n in names if REGISTRY.terms[n].derive is None
                  and REGISTRY.terms[n].returns.dimension != AS_ARGUMENTS)


def returns() -> dict[str, Returns]:
    """Name -> what each term returns (registry.Returns): its quantity, dimension and scale."""
    return REGISTRY.returns()


def simulated(names: Iterable[str]) -> list[str]:
    """Those of `names` that run a simulation (a term declared `simulated`)."""
    return REGISTRY.simulated(names)


def scenario_free(names: Iterable[str]) -> bool:
    """Whether a number calling the terms `names` is the same under every scenario."""
    return REGISTRY.scenario_free(names)
