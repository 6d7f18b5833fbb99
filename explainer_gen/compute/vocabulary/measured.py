"""The published measurements and the estimate fitted on them (models.estimate): its terms, its
band, and how the measurements fall. None of them reads the scenario: the measurements are their
own setups, and the fit is the site's one fit.
"""
from __future__ import annotations

from models import estimate

from .registry import AS_PUBLISHED, Returns, Topic

topic = Topic("measured")


def _fitted() -> tuple[estimate.Measurements, estimate.Fitted]:
    data = estimate.load()
    return data, estimate.fit(data)


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "fitted term of the estimate"))
def fitted(term: str) -> float:
    """A fitted term of the estimate: a share ("bandwidth", "bf16", "fp8", "link"), a fixed cost in
    seconds ("pass_s", "layer_s") or the overlap of a kernel's reads and arithmetic ("overlap")."""
    if term not in estimate.TERMS:
        raise ValueError(f"no term {term!r}; the estimate's terms are {', '.join(estimate.TERMS)}")
    return float(getattr(_fitted()[1].eff, term))


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "centre of a fitted term's prior"))
def prior_centre(term: str) -> float:
    """The centre of a term's prior, from a microbenchmark (models/measurements.yaml)."""
    priors = _fitted()[0].priors
    if term not in priors:
        raise ValueError(f"no prior on {term!r}; priors: {', '.join(priors)}")
    return priors[term][0]


@topic.term(depends=(), returns=Returns("ratio", "edge of the measured / estimate band"))
def band_edge(kind: str, edge: str) -> float:
    """The band of measured / estimate over the training measurements of a kind ("latency" or
    "throughput"): its "low" or its "high" edge, a ratio."""
    band = _fitted()[1].band
    if kind not in band or edge not in ("low", "high"):
        raise ValueError(f"band_edge takes a kind ({', '.join(band)}) and an edge (low, high)")
    return float(band[kind][0 if edge == "low" else 1])


@topic.term(depends=(), returns=Returns("count", "measurements counted"))
def measurements(split: str = "all", kind: str = "all", band: str = "all"):
    """How many measurements: of a split ("training", "held-out"), a kind ("latency",
    "throughput") and a place in the band ("inside", "outside"); "all" for any."""
    for value, allowed in ((split, estimate.SPLITS), (kind, tuple(estimate.KIND.values())), (band, ("inside", "outside"))):
        if value != "all" and value not in allowed:
            raise ValueError(f"{value!r} is none of {', '.join(sorted(set(allowed)))} or 'all'")
    data, fitted_ = _fitted()
    n = 0
    for m in data.rows:
        inside = fitted_.place(m)[3]
        n += ((split in ("all", m.split)) and (kind in ("all", m.kind))
              and (band == "all" or (band == "inside") == inside))
    return n


def _measurement(key: str):
    data, fitted_ = _fitted()
    for m in data.rows:
        if m.id == key:
            return m, fitted_
    raise ValueError(f"no measurement {key!r} in models/measurements.yaml")


@topic.term(depends=(), returns=Returns("ratio", "measured over estimated"))
def measured_ratio(key: str):
    """Measured over estimated for the measurement of that `id` in models/measurements.yaml."""
    m, fitted_ = _measurement(key)
    return m.value / m.price(fitted_.eff)


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "measurement's value or setup argument"))
def measured_value(key: str, what: str = "measured"):
    """A measurement's "measured" value, its "floor" or its "estimate", in SI units; for a
    throughput, "batch": the most requests the estimate runs at once (memory's limit); or one of
    its setup's arguments as published ("tokens", "input", "output", "rate", "requests", ...)."""
    m, fitted_ = _measurement(key)
    if what in m.args:
        return m.args[what]
    if what == "batch":
        if m.quantity != "throughput":
            raise ValueError(f"{key} is a {m.quantity}, which runs no batch of its own")
        return m.setup.max_batch(m.args["input"], m.args["output"])
    if what == "estimate":
        # As the pages price every estimate (estimate.fitted()), so that a choice of words resting on
        # it is checked across the estimate's band; the ratios and band terms above describe the
        # fit itself, which no assumption moves.
        return m.price(estimate.fitted().eff)
    return {"measured": m.value, "floor": m.price()}[what]


@topic.term(depends=(), returns=Returns("ratio", "whether the fit pushed a term to its limit"))
def at_limit(term: str) -> int:
    """1 when the fit pushed a term to the edge of its range (a share of 1, a fixed cost of 0, an
    overlap of 1), where the data cannot tell it from the others; else 0."""
    if term not in estimate.TERMS:
        raise ValueError(f"no term {term!r}; the estimate's terms are {', '.join(estimate.TERMS)}")
    return int(term in _fitted()[1].at_limit)
