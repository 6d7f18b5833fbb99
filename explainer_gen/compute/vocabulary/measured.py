"""The published measurements and the estimate fitted on them (models.estimate): its terms, its
band, and how the measurements fall. None of them reads the scenario: the measurements are their
own setups, and the fit is the site's one fit.

The derivations (`_derive_*`): a measurement is a value of models/measurements.yaml with its
source; its floor and its estimate are closed forms over the kernels of the pass it prices, at the
datasheet's rates or at the fitted terms (a serving run's, a simulation); a fitted term is the fit
itself, a search, with the cost either side of it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from models import estimate, kvcache, roofline, serving
from models.roofline import FLOOR, Efficiency, StepTime
from models.units import BYTES, COUNT, NAMED, RATIO, TIME

from ..derivation import Derivation, Symbol, closed_form, search, simulation
from .papers import cite
from .registry import AS_PUBLISHED, Returns, Topic
from .roofline import FITTED, pass_form

topic = Topic("measured")

_RATE = NAMED["rate"]
_MEASUREMENTS = "models/measurements.yaml"


def _fitted() -> tuple[estimate.Measurements, estimate.Fitted]:
    data = estimate.load()
    return data, estimate.fit(data)


# -- a measurement, its setup and its source ----------------------------------------------------------

def _dim(m: estimate.Measurement):
    """A measurement's dimension: seconds, or tokens a second."""
    return TIME if estimate.UNITS[m.quantity] == "s" else _RATE


def _source(m: estimate.Measurement) -> str:
    """Where the measurement was published: the bibliography's entry and the table."""
    src = m.raw.get("source") or {}
    key = str(src.get("key", "")) if isinstance(src, dict) else str(src)
    where = src.get("where", "") if isinstance(src, dict) else ""
    return ", ".join(x for x in (cite(key) or key, where) if x)


def _setup_words(m: estimate.Measurement) -> str:
    s = m.setup
    cards = "one" if s.cards == 1 else f"{s.cards} x"
    return (f"{s.model.name} on {cards} {s.acc.name}, {s.precision.weights.name} weights and "
            f"{s.precision.kv.name} cache")


def _what(m: estimate.Measurement) -> str:
    """The quantity measured, in words."""
    a = m.args
    return {
        "prefill": lambda: f"time to the first token of a {a['tokens']:g}-token prompt",
        "decode": lambda: (f"one decode step of {a['batch']:g} request{'' if a['batch'] == 1 else 's'}, each holding "
                           f"{a['context']:g} tokens of cache"),
        "throughput": lambda: (f"output tokens a second at {a['input']:g}-token prompts and "
                               f"{a['output']:g}-token replies"),
        "serving-ttft": lambda: f"mean time to the first token, served at {a['rate']:g} requests a second",
        "serving-itl": lambda: f"mean time between tokens, served at {a['rate']:g} requests a second",
    }[m.quantity]()


def _measured(m: estimate.Measurement) -> Derivation:
    """The value as published, in SI units; a decode published as a rate is a step of batch / rate."""
    raw, unit = m.raw["value"], m.raw["unit"]
    quantity = f"measured {_what(m)}, {_setup_words(m)}"
    where = f"{_MEASUREMENTS}, {m.id}: value = {raw:g} {unit} ({m.raw.get('metric', '')}; {m.raw.get('engine', '')})"
    if m.quantity == "decode" and unit == "tokens/s":
        return closed_form(quantity, TIME, m.value, "b / r", (_source(m), where),
                           b=Symbol(m.args["batch"], COUNT, "requests in the batch"),
                           r=Symbol(float(raw), _RATE, "tokens a second, as published"))
    return Derivation("value", quantity, m.value, _dim(m), method=where, sources=(_source(m),))


# -- a pass priced at an efficiency, as a closed form --------------------------------------------------

def _pass_form(setup: estimate.Setup, st: StepTime, eff: Efficiency) -> tuple[str, dict[str, Symbol], list[str]]:
    """One pass's seconds at `eff` (`StepTime.at`) as the step model writes it (vocabulary/roofline
    `pass_form`, the one home of that closed form): at the floor, or the estimate at the fitted
    terms. Returns (formula, symbols, sources), for the forms built on it."""
    d = pass_form(setup.acc, setup.model, setup.cards, setup.precision, st, "seconds" if eff == FLOOR else "estimate",
                  None if eff == FLOOR else eff, carried=_CARRIED_ANY)
    return d.formula, dict(d.symbols), list(d.sources)


# What any priced pass carries: a prefill's positions are its prompt, a decode's one per request.
_CARRIED_ANY = {"t": "positions in the pass", "c": "cached tokens read", "a": "cached tokens attended to",
                "l": "positions through the output head"}


def _throughput_pass(setup: estimate.Setup, input_tokens: float, output_tokens: float):
    """The steady-state step `Setup.throughput` prices: (batch, steps, the pass). Its accounting
    is that method's, line for line; the closed form built on it is held to the term's value."""
    batch = setup.max_batch(input_tokens, output_tokens)
    steps = max(output_tokens - 1.0, 1.0)
    decodes = batch if output_tokens > 1 else 0.0
    prompt = batch * input_tokens / steps
    cached = decodes * (input_tokens + output_tokens / 2.0)
    st = roofline.pass_time(setup.acc, setup.model, setup.cards, decodes + prompt, cached,
                            cached + prompt * input_tokens / 2.0, setup.precision, decodes + batch / steps)
    return batch, steps, st


def _batch(m: estimate.Measurement) -> Derivation:
    """The most requests whose whole context fits beside the weights (`kvcache.slots`)."""
    s, a = m.setup, m.args
    model, kv = s.model, s.precision.kv
    result = float(s.max_batch(a["input"], a["output"]))
    return closed_form(
        f"most requests at once in the estimate (memory's limit), {_setup_words(m)}, each holding its "
        f"{a['input'] + a['output']:g}-token context: whole requests, rounded down", COUNT, result,
        "(n * M * (1 - r) - W) // (2 * L * h * d * v * (i + o))",
        (s.acc.source, f"{model.name}: {model.source}", "models/kvcache.py: slots, RESERVE"),
        n=Symbol(float(s.cards), COUNT, "cards"), M=Symbol(s.acc.memory_bytes, BYTES, f"HBM of one {s.acc.name}"),
        r=Symbol(kvcache.RESERVE, RATIO, "share of memory held back for activations and the runtime (assumed)"),
        W=Symbol(model.weight_bytes(s.precision), BYTES, f"weights in memory, {s.precision.weights.name}"),
        L=Symbol(float(model.layers), COUNT, "layers"), h=Symbol(float(model.kv_heads), COUNT, "KV heads"),
        d=Symbol(float(model.head_dim), COUNT, "dimensions of one head"),
        v=Symbol(kv.bytes, BYTES / COUNT, f"bytes of one cached value, {kv.name}"),
        i=Symbol(m.args["input"], COUNT, "prompt tokens"), o=Symbol(m.args["output"], COUNT, "reply tokens"))


def _priced(m: estimate.Measurement, eff: Efficiency, label: str) -> Derivation:
    """The measurement's quantity priced at `eff` (`Measurement.price`): the floor at FLOOR, the
    estimate at the fitted terms."""
    quantity = f"{label}: {_what(m)}, {_setup_words(m)}"
    at = "the datasheets' rates (the floor)" if eff == FLOOR else "the fitted terms (models/estimate.py)"
    s, a = m.setup, m.args
    if m.quantity in ("serving-ttft", "serving-itl"):
        run = estimate.served(s, a["rate"], a["input"], a["output"], a["requests"], eff)
        capacity = serving.cache_tokens(s.acc, s.model, s.cards, s.precision)
        if m.quantity == "serving-ttft":
            result = float(run.ttft.mean())
            what = "the mean time to first token over the requests"
            p10, p50, p90 = (float(x) for x in np.percentile(run.ttft, [10, 50, 90]))
            spread = (f"the requests' times to first token run from {p10 * 1e3:.1f} ms (10th percentile) through "
                      f"{p50 * 1e3:.1f} ms (median) to {p90 * 1e3:.1f} ms (90th)")
        else:
            result = estimate.mean_gap(run)
            what = "the mean time between consecutive tokens of a request, over every such gap"
            p50, p99, top = (float(x) for x in run.tbt([0.5, 0.99, 1.0]))
            spread = (f"half the gaps are under {p50 * 1e3:.1f} ms, 99% under {p99 * 1e3:.1f} ms, and the longest is "
                      f"{top * 1e3:.1f} ms")
        method = (f"{a['requests']:g} requests of {a['input']:g} prompt and {a['output']:g} reply tokens, arriving "
                  f"as a Poisson stream at {a['rate']:g} a second (seed {estimate.SERVING_SEED}), served by the "
                  f"serving simulation (models/serving.py, scheduler prefill-first: each prompt whole in its "
                  f"pass, decodes batched; {capacity:,} tokens of cache), every pass priced at {at}: {what}. "
                  f"Spread: {spread}")
        return simulation(quantity, TIME, result, method, _source(m), s.acc.source, f"{s.model.name}: {s.model.source}")
    if m.quantity == "prefill":
        st = s.prefill(a["tokens"])
        formula, sym, sources = _pass_form(s, st, eff)
        d = closed_form(quantity, TIME, float(st.at(eff)), formula, tuple(sources), **sym)
    elif m.quantity == "decode":
        st = s.decode(a["batch"], a["context"])
        formula, sym, sources = _pass_form(s, st, eff)
        d = closed_form(quantity, TIME, float(st.at(eff)), formula, tuple(sources), **sym)
    else:  # throughput
        batch, steps, st = _throughput_pass(s, a["input"], a["output"])
        formula, sym, sources = _pass_form(s, st, eff)
        clash = {"b", "o", "s"} & sym.keys()
        if clash:  # the pass's own symbols would be overwritten by the throughput's
            raise ValueError(f"the pass's symbols {sorted(clash)} clash with the throughput form's")
        sym = {"b": Symbol(float(batch), COUNT, "requests at once: the most that fit (below)"),
               "o": Symbol(a["output"], COUNT, "reply tokens of each request"),
               "s": Symbol(steps, COUNT, "steps over which every request ends and one is prefilled: reply - 1"),
               **sym}
        sym["t"] = Symbol(sym["t"].value, COUNT, "positions in a step: the batch's decodes and its share of prompts")
        d = closed_form(quantity, _RATE, s.throughput(a["input"], a["output"], eff)[0], f"b * o / (s * ({formula}))",
                        tuple(sources), **sym)
        d = dataclasses.replace(d, parts=(_batch(m),))
    setup = f"{_MEASUREMENTS}, {m.id}: the setup priced"
    fitted_ = () if eff == FLOOR or FITTED in d.sources else (FITTED,)
    return dataclasses.replace(d, sources=(*d.sources, setup, *fitted_))


# -- the fit ----------------------------------------------------------------------------------------

_TERM_DIMS = {"pass_s": TIME, "layer_s": TIME}
_TERM_WORDS = {"bandwidth": "share of the datasheet's bandwidth reads attain",
               "bf16": "share of the 16-bit peak GEMMs attain", "fp8": "share of the FP8 peak GEMMs attain",
               "link": "share of the peer rate the collectives attain", "pass_s": "fixed cost of a pass",
               "layer_s": "fixed cost of a layer, each pass", "overlap": "overlap K of a kernel's reads and arithmetic"}


def _shown(term: str, v: float) -> str:
    """A term's value to four figures: a fixed cost in µs (in s below a nanosecond, where the fit leaves
    one at its edge), a share or the overlap as it is."""
    if term in _TERM_DIMS:
        return f"{v * 1e6:.4g} µs" if v >= 1e-9 else f"{v:.2g} s"
    return f"{v:.4g}"


def _cost(data: estimate.Measurements, eff: Efficiency) -> float:
    """The fit's objective at `eff`: the sum of squares of its residuals (models.estimate._residuals)."""
    r = estimate._residuals(estimate._z(eff), data.training(), data.priors)
    return float(r @ r)


def _derive_fitted(term: str):
    fitted(term)  # refuses a term the estimate lacks
    data, fit = _fitted()
    v = float(getattr(fit.eff, term))
    limit = term in fit.at_limit
    if limit:  # the edge of the term's range, and a point inside it
        inside = {"overlap": 1.01, "pass_s": 1e-6, "layer_s": 1e-6}.get(term, 0.99)
        points = [(inside, "inside its range"), (v, "at its limit, where the fit left it")]
    else:
        hi = v * 1.01 if term not in estimate.SHARES else min(v * 1.01, (v + 1.0) / 2.0)
        points = [(v * 0.99, "1% below"), (v, "as fitted"), (hi, "above")]
    costs = [_cost(data, dataclasses.replace(fit.eff, **{term: x})) for x, _ in points]
    evaluations = "; ".join(f"{_shown(term, x)} ({why}), {c:.6f}" for (x, why), c in zip(points, costs))
    least = costs[1] <= min(costs)
    prior = data.priors.get(term)
    method = (f"Levenberg-Marquardt fit (models/estimate.py: fit) of the estimate's {len(estimate.TERMS)} terms to the "
              f"{len(data.training())} training measurements of {_MEASUREMENTS}, each counting by ln(measured / "
              f"estimate), with log-normal priors on {', '.join(data.priors)}"
              + (f" ({term}'s centred on {prior[0]:g}, log sd {prior[1]:g})" if prior else f" (none on {term})")
              + f"; stopped after {fit.iterations} iterations. The sum of squares with {term} at {evaluations}"
              + (": the data push it to its edge." if limit else
                 ": least at the fitted value." if least else ": not least at the fitted value of these three."))
    return search(f"fitted {_TERM_WORDS[term]}", _TERM_DIMS.get(term, RATIO), v, method,
                  *((prior[2],) if prior else ()), _MEASUREMENTS)


def _derive_prior_centre(term: str):
    prior_centre(term)  # refuses a term with no prior
    centre, sd, source = _fitted()[0].priors[term]
    return Derivation("value", f"centre of the prior on the {_TERM_WORDS[term]}", centre, _TERM_DIMS.get(term, RATIO),
                      method=f"{_MEASUREMENTS}, priors: {term}: centre {centre:g}, log_sd {sd:g}", sources=(source,))


def _ratio_form(m: estimate.Measurement, eff: Efficiency, quantity: str, method: str = "") -> Derivation:
    """Measured over the estimate at `eff`, with each's own derivation below."""
    measured, priced = _measured(m), _priced(m, eff, "estimate at the fitted terms")
    d = closed_form(quantity, RATIO, m.value / m.price(eff), "v / e", (_source(m),),
                    v=Symbol(m.value, _dim(m), f"measured, {m.id}"),
                    e=Symbol(priced.result, _dim(m), "estimate at the fitted terms"))
    return dataclasses.replace(d, method=method, parts=(measured, priced))


def _derive_band_edge(kind: str, edge: str):
    value_ = band_edge(kind, edge)  # refuses a kind or an edge the band lacks
    data, fit = _fitted()
    ratios = sorted(((m.value / m.price(fit.eff), m) for m in data.training() if m.kind == kind),
                    key=lambda x: x[0], reverse=edge == "high")
    (ratio, m), nxt = ratios[0], ratios[1] if len(ratios) > 1 else None
    method = (f"the {'least' if edge == 'low' else 'greatest'} of measured / estimate over the {len(ratios)} training "
              f"{kind} measurements ({m.id})" + (f"; the next, {nxt[0]:.3f} ({nxt[1].id})" if nxt else ""))
    d = _ratio_form(m, fit.eff, f"{edge} edge of the {kind} band: measured over estimated", method)
    return dataclasses.replace(d, result=value_)


def _derive_measurements(split: str = "all", kind: str = "all", band: str = "all"):
    n = measurements(split, kind, band)
    data, fit = _fitted()
    rows = [m for m in data.rows if split in ("all", m.split) and kind in ("all", m.kind)
            and (band == "all" or (band == "inside") == fit.place(m)[3])]
    by = {}
    for m in rows:
        by[m.quantity] = by.get(m.quantity, 0) + 1
    quantities = ", ".join(q for q, k in estimate.KIND.items() if k == kind)
    which = ", ".join(x for x in (
        f"split {split}" if split != "all" else "", f"kind {kind} ({quantities})" if kind != "all" else "",
        f"{band} the band around their estimate (models/estimate.py: Fitted.place)" if band != "all" else "") if x)
    method = (f"counted in {_MEASUREMENTS}: {n} of its {len(data.rows)} measurements"
              + (f", those of {which}" if which else "")
              + (": " + ", ".join(f"{q} {c}" for q, c in by.items()) if by else ""))
    short = ", ".join(x for x in (split if split != "all" else "", {"latency": "latencies", "throughput": "throughputs"}
                                  .get(kind, ""), f"{band} the band" if band != "all" else "") if x)
    return Derivation("value", "measurements counted" + (f": {short}" if short else ""), float(n), COUNT,
                      method=method, sources=(_MEASUREMENTS,))


def _derive_measured_ratio(key: str):
    m, fit = _measurement(key)
    return _ratio_form(m, fit.eff, f"measured over estimated: {_what(m)}, {_setup_words(m)}")


def _derive_measured_value(key: str, what: str = "measured"):
    result = measured_value(key, what)
    m, _ = _measurement(key)
    if what in m.args:
        dim = _RATE if what == "rate" else COUNT
        words = {"rate": "requests a second", "tokens": "prompt tokens", "input": "prompt tokens",
                 "output": "reply tokens", "requests": "requests", "batch": "requests in the batch",
                 "context": "tokens each request holds"}.get(what, what)
        return Derivation("value", f"{words} of the measurement's setup, {m.id}", float(result), dim,
                          method=f"{_MEASUREMENTS}, {m.id}: {what} = {m.raw.get(what, result):g}",
                          sources=(_source(m),))
    if what == "batch":
        return _batch(m)
    if what == "measured":
        return _measured(m)
    if what == "floor":
        return _priced(m, FLOOR, "floor")
    return _priced(m, estimate.fitted().eff, "estimate at the fitted terms")


def _derive_at_limit(term: str):
    result = at_limit(term)
    fit = _fitted()[1]
    v = float(getattr(fit.eff, term))
    return Derivation(
        "value", f"whether the fit pushed the {_TERM_WORDS[term]} to the edge of its range", float(result), RATIO,
        method=f"models/estimate.py: the fit marks the terms it leaves at the edge of their range (a share of 1, an "
               f"overlap of 1, a fixed cost of 0): {', '.join(fit.at_limit) or 'none'}. {term} ended at "
               f"{_shown(term, v)}, " + ("at its edge: 1" if result else "inside its range: 0"),
        sources=(_MEASUREMENTS,), parts=(_derive_fitted(term),))


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "fitted term of the estimate"),
            derive=_derive_fitted)
def fitted(term: str) -> float:
    """A fitted term of the estimate: a share ("bandwidth", "bf16", "fp8", "link"), a fixed cost in
    seconds ("pass_s", "layer_s") or the overlap of a kernel's reads and arithmetic ("overlap")."""
    if term not in estimate.TERMS:
        raise ValueError(f"no term {term!r}; the estimate's terms are {', '.join(estimate.TERMS)}")
    return float(getattr(_fitted()[1].eff, term))


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "centre of a fitted term's prior"),
            derive=_derive_prior_centre)
def prior_centre(term: str) -> float:
    """The centre of a term's prior, from a microbenchmark (models/measurements.yaml)."""
    priors = _fitted()[0].priors
    if term not in priors:
        raise ValueError(f"no prior on {term!r}; priors: {', '.join(priors)}")
    return priors[term][0]


@topic.term(depends=(), returns=Returns("ratio", "edge of the measured / estimate band"),
            derive=_derive_band_edge)
def band_edge(kind: str, edge: str) -> float:
    """The band of measured / estimate over the training measurements of a kind ("latency" or
    "throughput"): its "low" or its "high" edge, a ratio."""
    band = _fitted()[1].band
    if kind not in band or edge not in ("low", "high"):
        raise ValueError(f"band_edge takes a kind ({', '.join(band)}) and an edge (low, high)")
    return float(band[kind][0 if edge == "low" else 1])


@topic.term(depends=(), returns=Returns("count", "measurements counted"),
            derive=_derive_measurements)
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


@topic.term(depends=(), returns=Returns("ratio", "measured over estimated"),
            derive=_derive_measured_ratio)
def measured_ratio(key: str):
    """Measured over estimated for the measurement of that `id` in models/measurements.yaml."""
    m, fitted_ = _measurement(key)
    return m.value / m.price(fitted_.eff)


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "measurement's value or setup argument"),
            derive=_derive_measured_value)
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


@topic.term(depends=(), returns=Returns("ratio", "whether the fit pushed a term to its limit"),
            derive=_derive_at_limit)
def at_limit(term: str) -> int:
    """1 when the fit pushed a term to the edge of its range (a share of 1, a fixed cost of 0, an
    overlap of 1), where the data cannot tell it from the others; else 0."""
    if term not in estimate.TERMS:
        raise ValueError(f"no term {term!r}; the estimate's terms are {', '.join(estimate.TERMS)}")
    return int(term in _fitted()[1].at_limit)
