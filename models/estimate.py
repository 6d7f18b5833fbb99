"""How far a real server runs from the floor: an estimate fitted on published measurements.

`roofline` prices a pass at the datasheet's rates; a measured pass is slower. The estimate prices
the same kernels, one at a time, below their rooflines and adds what a pass pays besides them
(`roofline.Efficiency`):

    estimate = sum over kernels of join(bytes / (bandwidth x b), FLOPs / (peak x c_format))
               + collectives (bytes at link x the peer rate) + pass_s + layers x layer_s

where join is the floor's max when a kernel's reads hide its arithmetic or the reverse, and with
the fitted `overlap` k, (r^k + a^k)^(1/k): at k = 1, their sum. Seven terms in all: the bandwidth
share b, the GEMM shares of the 16-bit and FP8 peaks, the link share, two fixed costs and the
overlap. They are fitted on the measurements marked `training` in `measurements.yaml`, in log
space (every measurement counts by its ratio, not its size), with priors where a microbenchmark
measured a share on its own. The other measurements are held out. A term the data pushes to the
edge of its range (a share of 1, a fixed cost of 0, an overlap of 1) stays there, and the fit says
which (`Fitted.at_limit`).

The band is the spread of measured / estimate over the training measurements, from the least to
the greatest ratio (the 0th to the 100th percentile: with a dozen points, anything narrower would
be drawn from two or three of them), for latencies and throughputs apart. A held-out measurement
inside it is a success of the model; one outside, a limit, and the file says why.

The quantities, for any setup the catalogue holds (`Setup`), are the ones `python -m
models.estimate` prints and the measurements record: `prefill` (a prompt's pass, its first token
included, batch one), `decode` (one step of a batch, every request holding the same context) and
`throughput` (output tokens per second at the largest batch that fits, prefill included), and for
the measurements also serving runs at a request rate (`served`). The band is learned on A100 and
H100 runs of dense models in BF16 and FP8: elsewhere (another card, INT4 weights, a mixture of
experts) the command extrapolates.
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import math
import sys
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import kvcache, serving
from .catalogue import LLM, Accelerator, Catalogue, UnknownKey, load_catalogue
from .precision import KV_FORMATS, WEIGHT_FORMATS, Precision
from .prefill import prefill_step
from .roofline import FLOOR, Efficiency, StepTime, pass_time, step_time
from .yamlsource import SourceError, closest, line_of, load_yaml

MEASUREMENTS_PATH = Path(__file__).with_name("measurements.yaml")

UNITS = {"prefill": "s", "decode": "s", "throughput": "tokens/s", "serving-ttft": "s", "serving-itl": "s"}
KIND = {"prefill": "latency", "decode": "latency", "throughput": "throughput", "serving-ttft": "latency",
        "serving-itl": "latency"}
SPLITS = ("training", "held-out")
TERMS = tuple(f.name for f in fields(Efficiency) if f.name != "scale")  # what the fit sets
SHARES = ("bandwidth", "bf16", "fp8", "link")


# -- a setup and its three quantities --------------------------------------------------------------

@dataclass(frozen=True)
class Setup:
    """A model on `cards` cards of one accelerator, tensor-parallel, in given number formats."""

    acc: Accelerator
    model: LLM
    cards: int
    precision: Precision

    def check(self) -> None:
        """A setup the model cannot run is refused: heads that do not split over the cards, or
        weights that leave no room for a request's cache."""
        if not kvcache.tensor_parallel(self.model, self.cards):
            sizes = kvcache.tensor_parallel_sizes(self.model)
            raise ValueError(f"{self.model.name} does not split over {self.cards} cards; it splits over "
                             f"{', '.join(map(str, sizes))}")
        if not kvcache.fits(self.acc, self.model, self.cards, 1, precision=self.precision):
            raise ValueError(f"{self.model.name} in {self.precision.weights.name} does not fit on {self.cards} x "
                             f"{self.acc.name}")

    def prefill(self, tokens: float) -> StepTime:
        """The pass over a `tokens`-token prompt at batch one, which also makes its first token."""
        return prefill_step(self.acc, self.model, self.cards, float(tokens), self.precision)

    def decode(self, batch: float, context: float) -> StepTime:
        """One decode step of `batch` requests, each holding `context` tokens of cache."""
        return step_time(self.acc, self.model, self.cards, float(batch), float(context), precision=self.precision)

    def max_batch(self, input_tokens: float, output_tokens: float) -> int:
        """The most requests whose whole context (prompt and reply) fits at once (`kvcache.slots`)."""
        return int(kvcache.slots(self.acc, self.model, self.cards, input_tokens + output_tokens,
                                 precision=self.precision))

    def throughput(self, input_tokens: float, output_tokens: float, eff: Efficiency = FLOOR) -> tuple[float, int]:
        """(output tokens per second, batch) with continuous batching at the largest batch that fits.

        In steady state `batch` requests run at once and each is replaced as it ends. A request's
        reply is its prefill's first token and `output - 1` decodes, so over `output - 1` steps
        (one, when the reply is one token) every request ends and a new one is prefilled: each
        step carries `batch` decodes, whose caches hold `input + output / 2` tokens on average,
        and `batch x input / steps` prompt positions riding along (chunked prefill), which attend
        to half a prompt each and make one set of logits per prompt finished. The step is priced
        as one pass (`roofline.pass_time`'s kernels at `eff`)."""
        batch = self.max_batch(input_tokens, output_tokens)
        if batch < 1:
            raise ValueError(f"not one request of {input_tokens:g} + {output_tokens:g} tokens fits beside the weights")
        steps = max(output_tokens - 1.0, 1.0)
        decodes = batch if output_tokens > 1 else 0.0
        prompt = batch * input_tokens / steps
        tokens = decodes + prompt
        cached = decodes * (input_tokens + output_tokens / 2.0)
        attended = cached + prompt * input_tokens / 2.0
        logits = decodes + batch / steps
        st = pass_time(self.acc, self.model, self.cards, tokens, cached, attended, self.precision, logits)
        return batch * output_tokens / (steps * float(st.at(eff))), batch


SERVING_SEED = 467  # the arrivals' draw: fixed, so that a measurement is priced the same every build


@lru_cache(maxsize=64, typed=True)
def served(setup: Setup, rate: float, input_tokens: float, output_tokens: float, requests: float,
           eff: Efficiency = FLOOR) -> serving.Run:
    """`requests` requests of fixed lengths arriving as a Poisson stream at `rate` a second, served
    by the serving simulation (prefill first: a prompt whole in its pass, decodes batched) with
    every pass priced at `eff`. Deterministic, so memoised, as `serving.simulate` is: a build
    places the same few measurements at the same terms well over a hundred times (each count of
    measurements in the band places them all). The returned Run is shared; treat it as read-only."""
    n = int(requests)
    rng = np.random.default_rng(SERVING_SEED)
    stream = serving.Traffic(np.cumsum(rng.exponential(1.0, n)), np.full(n, int(input_tokens)),
                             np.full(n, int(output_tokens)))
    cost = serving.PassCost.of(setup.acc, setup.model, setup.cards, setup.precision, eff)
    capacity = serving.cache_tokens(setup.acc, setup.model, setup.cards, setup.precision)
    return serving.run(stream, rate, "prefill-first", cost, capacity)


def mean_gap(run: serving.Run) -> float:
    """The mean time between consecutive tokens of a request, over every such gap of the run."""
    first, growth, steps, weight = run.gaps.T
    return float((weight * (steps * first + growth * steps * (steps - 1) / 2.0)).sum() / (weight * steps).sum())


def price(setup: Setup, quantity: str, args: dict, eff: Efficiency = FLOOR) -> float:
    """The quantity at `eff` (the floor by default), in SI units: seconds or tokens per second."""
    if quantity == "prefill":
        return float(setup.prefill(args["tokens"]).at(eff))
    if quantity == "decode":
        return float(setup.decode(args["batch"], args["context"]).at(eff))
    if quantity == "throughput":
        return setup.throughput(args["input"], args["output"], eff)[0]
    if quantity in ("serving-ttft", "serving-itl"):
        run = served(setup, args["rate"], args["input"], args["output"], args["requests"], eff)
        return float(run.ttft.mean()) if quantity == "serving-ttft" else mean_gap(run)
    raise ValueError(f"unknown quantity {quantity!r}; {closest(quantity, UNITS)}")


# -- measurements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measurement:
    """One published measurement: its setup as the catalogue expresses it, what was measured, the
    value in SI units, and where it stands (training or held out; expected inside the band or not)."""

    id: str
    line: int
    setup: Setup
    quantity: str
    args: dict
    value: float
    split: str
    in_band: bool
    reason: str
    raw: dict = field(compare=False, repr=False)

    @property
    def kind(self) -> str:
        return KIND[self.quantity]

    def price(self, eff: Efficiency = FLOOR) -> float:
        return price(self.setup, self.quantity, self.args, eff)


@dataclass(frozen=True)
class Measurements:
    path: str
    rows: tuple[Measurement, ...]
    band_limit: dict  # kind -> the widest band allowed, high / low
    band_limit_line: int
    priors: dict      # term -> (centre, sd of its log, source)

    def training(self) -> list[Measurement]:
        return [m for m in self.rows if m.split == "training"]

    def held_out(self) -> list[Measurement]:
        return [m for m in self.rows if m.split == "held-out"]


ARGS = {"prefill": ("tokens",), "decode": ("batch", "context"), "throughput": ("input", "output"),
        "serving-ttft": ("rate", "input", "output", "requests"), "serving-itl": ("rate", "input", "output", "requests")}
SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "tokens/s": 1.0}


def load(path: str | Path = MEASUREMENTS_PATH, catalogue: Catalogue | None = None) -> Measurements:
    """Read and check the measurements file; a mistake raises SourceError at its line."""
    catalogue = catalogue or load_catalogue()
    key = (str(path), Path(path).stat().st_mtime_ns, id(catalogue))
    if key not in _LOADED:
        _LOADED.clear()  # one file at a time is plenty; the catalogue is kept alive with it
        _LOADED[key] = (catalogue, _load(str(path), catalogue))
    return _LOADED[key][1]


_LOADED: dict = {}


def _load(path: str, catalogue: Catalogue) -> Measurements:
    data = load_yaml(Path(path).read_text(), path)
    if not isinstance(data, dict) or "measurements" not in data:
        raise SourceError(path, 1, "expected a mapping with 'measurements:', 'band_limit:' and 'priors:'")
    limits = data.get("band_limit") or {}
    if set(limits) != {"latency", "throughput"} or not all(isinstance(v, (int, float)) and v > 1 for v in limits.values()):
        raise SourceError(path, line_of(data, "band_limit"),
                          "band_limit needs 'latency' and 'throughput', each a ratio above 1 (high / low)")
    priors = {}
    for term, spec in (data.get("priors") or {}).items():
        where = line_of(data["priors"], term)
        if term not in TERMS:
            raise SourceError(path, where, f"no term {term!r}; {closest(term, TERMS)}")
        if not (isinstance(spec, dict) and {"centre", "log_sd", "source"} <= set(spec)
                and spec["centre"] > 0 and spec["log_sd"] > 0):
            raise SourceError(path, where, "a prior needs a positive 'centre', a positive 'log_sd' and a 'source'")
        priors[term] = (float(spec["centre"]), float(spec["log_sd"]), str(spec["source"]))
    rows, seen = [], set()
    for item in data["measurements"] or []:
        row = _row(path, item, catalogue)
        if row.id in seen:
            raise SourceError(path, row.line, f"a second measurement called {row.id!r}")
        seen.add(row.id)
        rows.append(row)
    return Measurements(path, tuple(rows), {k: float(v) for k, v in limits.items()}, line_of(data, "band_limit"),
                        priors)


REQUIRED = ("id", "source", "accelerator", "cards", "model", "weights", "kv", "engine", "quantity", "metric",
            "value", "unit", "split", "in_band")


def _row(path: str, item, catalogue: Catalogue) -> Measurement:
    line = line_of(item)
    if not isinstance(item, dict):
        raise SourceError(path, line, "each measurement is a mapping")
    missing = [k for k in REQUIRED if k not in item]
    if missing:
        raise SourceError(path, line, f"measurement {item.get('id', '?')!r} lacks {', '.join(missing)}")

    def fail(key: str, message: str):
        raise SourceError(path, line_of(item, key), f"{item['id']}: {message}")

    try:
        acc = catalogue.accelerator(item["accelerator"])
    except UnknownKey as exc:
        fail("accelerator", f"no accelerator {exc.key!r} in the catalogue; {closest(exc.key, exc.choices)}")
    try:
        model = catalogue.model(item["model"])
    except UnknownKey as exc:
        fail("model", f"no model {exc.key!r} in the catalogue; {closest(exc.key, exc.choices)}")
    if item["weights"] not in WEIGHT_FORMATS:
        fail("weights", f"weights {item['weights']!r}; {closest(item['weights'], WEIGHT_FORMATS)}")
    if item["kv"] not in KV_FORMATS:
        fail("kv", f"kv {item['kv']!r}; {closest(item['kv'], KV_FORMATS)}")
    if isinstance(item["cards"], bool) or not isinstance(item["cards"], int) or item["cards"] < 1:
        fail("cards", f"cards must be a whole number of at least 1, not {item['cards']!r}")
    setup = Setup(acc, model, item["cards"], Precision.of(item["weights"], item["kv"]))
    try:
        setup.check()
    except ValueError as exc:
        fail("cards", str(exc))
    quantity = item["quantity"]
    if quantity not in UNITS:
        fail("quantity", f"quantity {quantity!r}; {closest(quantity, UNITS)}")
    args = {}
    for name in ARGS[quantity]:
        value = item.get(name)
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or value < 0 or (value == 0 and name != "context") or (name not in ("context", "rate") and value < 1)):
            fail(name if name in item else "quantity",
                 f"{quantity} needs '{name}', " + ("a rate above 0" if name == "rate" else "0 or more" if name == "context"
                                                  else "a count of at least 1"))
        args[name] = float(value)
    unit = item["unit"]
    allowed = [u for u in SCALE if (u == "tokens/s") == (UNITS[quantity] == "tokens/s") or quantity == "decode"]
    if unit not in allowed:
        fail("unit", f"a {quantity} is in {' or '.join(allowed)}, not {unit!r}")
    if not isinstance(item["value"], (int, float)) or item["value"] <= 0:
        fail("value", "value must be a positive number")
    # A decode published as a rate (output tokens per second over the batch) is a step of batch / rate.
    value = args["batch"] / item["value"] if quantity == "decode" and unit == "tokens/s" else item["value"] * SCALE[unit]
    if item["split"] not in SPLITS:
        fail("split", f"split {item['split']!r}; {closest(item['split'], SPLITS)}")
    if not isinstance(item["in_band"], bool):
        fail("in_band", "in_band is true or false")
    if not item["in_band"] and not item.get("reason"):
        fail("in_band", "a measurement expected outside the band says why ('reason')")
    if not item["in_band"] and item["split"] == "training":
        fail("in_band", "a training measurement is inside the band by construction (the band spans them all)")
    return Measurement(str(item["id"]), line, setup, quantity, args, float(value),
                       item["split"], item["in_band"], str(item.get("reason", "")), item)


# -- the fit -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fitted:
    """The fitted terms, the band per kind (low and high ratios of measured to estimate), and
    each training measurement's residual, ln(measured / estimate)."""

    eff: Efficiency
    band: dict            # kind -> (low, high)
    residuals: dict       # measurement id -> ln(measured / estimate), training only
    iterations: int
    at_limit: tuple = ()  # terms the data pushed to the edge of their range, where they stay

    def bounds(self, kind: str, estimate: float) -> tuple[float, float]:
        """The band around an estimate: never excluding the estimate itself."""
        low, high = self.band[kind]
        return estimate * min(low, 1.0), estimate * max(high, 1.0)

    def place(self, m: "Measurement") -> tuple[float, float, float, bool]:
        """(estimate, low, high, inside) of one measurement: the one rule for whether a value lies in
        the band, its edges included (to a relative 1e-9, so that the training measurement the band
        ends at counts as inside)."""
        estimate = m.price(self.eff)
        low, high = self.bounds(m.kind, estimate)
        return estimate, low, high, low * (1 - 1e-9) <= m.value <= high * (1 + 1e-9)


LIMIT = 30.0  # the internal parameters' range: a share within 1e-13 of 0 or 1, a cost within e^-30 of 0


def _terms(z: np.ndarray) -> Efficiency:
    """Shares through a logistic (0 to 1), fixed costs through exp (positive), the overlap
    through 1 + exp (above 1: a kernel at least as fast as its reads and arithmetic one after the other)."""
    values = {}
    for name, x in zip(TERMS, np.clip(z, -LIMIT, LIMIT)):
        values[name] = (1.0 / (1.0 + math.exp(-x)) if name in SHARES else
                        1.0 + math.exp(x) if name == "overlap" else math.exp(x))
    return Efficiency(**values)


def _z(eff: Efficiency) -> np.ndarray:
    out = []
    for name in TERMS:
        v = getattr(eff, name)
        out.append(math.log(v / (1.0 - v)) if name in SHARES else math.log(v - 1.0) if name == "overlap" else math.log(v))
    return np.array(out)


START = Efficiency(bandwidth=0.8, bf16=0.6, fp8=0.6, link=0.5, pass_s=1e-3, layer_s=2e-5, overlap=4.0)


def _residuals(z: np.ndarray, rows: list[Measurement], priors: dict) -> np.ndarray:
    eff = _terms(z)
    r = []
    for m in rows:
        priced = m.price(eff)
        r.append(math.log(m.value / priced) if math.isfinite(priced) and priced > 0 else 1e6)
    for name, (centre, sd, _) in priors.items():
        r.append((math.log(getattr(eff, name)) - math.log(centre)) / sd)
    return np.array(r)


def fit(data: Measurements) -> Fitted:
    """Levenberg-Marquardt on the log ratios and the priors, from `START`; the band from the
    training ratios at the optimum."""
    if _FITTED.get("data") is not data:
        _FITTED.update(data=data, fitted=_fit(data))
    return _FITTED["fitted"]


_FITTED: dict = {}


def _fit(data: Measurements) -> Fitted:
    rows = data.training()
    if len(rows) <= len(TERMS):
        raise SourceError(data.path, data.band_limit_line,
                          f"{len(rows)} training measurements for {len(TERMS)} terms: the fit needs more")
    z, lam, it = _z(START), 1e-2, 0
    r = _residuals(z, rows, data.priors)
    cost = float(r @ r)
    for it in range(1, 200):
        jac = np.empty((r.size, z.size))
        for j in range(z.size):
            step = np.zeros_like(z)
            step[j] = 1e-6
            jac[:, j] = (_residuals(z + step, rows, data.priors) - r) / 1e-6
        a, g = jac.T @ jac, jac.T @ r
        improved = False
        while lam < 1e12:
            delta = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            delta *= min(1.0, 5.0 / max(np.max(np.abs(delta)), 1e-300))  # no step longer than 5
            moved = np.clip(z + delta, -LIMIT, LIMIT)
            trial = _residuals(moved, rows, data.priors)
            if float(trial @ trial) < cost:
                delta = moved - z
                z, r, cost, lam, improved = moved, trial, float(trial @ trial), max(lam / 3.0, 1e-9), True
                break
            lam *= 4.0
        if not improved or np.max(np.abs(delta)) < 1e-7:
            break
    eff = _terms(z)
    ratios: dict[str, list[float]] = {"latency": [], "throughput": []}
    residuals = {}
    for m in rows:
        ratio = m.value / m.price(eff)
        ratios[m.kind].append(ratio)
        residuals[m.id] = math.log(ratio)
    band = {kind: ((min(v), max(v)) if v else (1.0, 1.0)) for kind, v in ratios.items()}
    edge = {name: (getattr(eff, name) > 1.0 - 1e-6 if name in SHARES else getattr(eff, name) < 1.0 + 1e-6
                   if name == "overlap" else getattr(eff, name) < 1e-9) for name in TERMS}
    at_limit = tuple(name for name in TERMS if edge[name])
    return Fitted(eff, band, residuals, it, at_limit)


def check(data: Measurements, fitted: Fitted | None = None) -> list[SourceError]:
    """Every way the file and the model disagree: a band wider than its limit, and a measurement
    inside the band that the file expects outside it, or outside that it expects inside."""
    fitted = fitted or fit(data)
    errors = []
    for kind, (low, high) in fitted.band.items():
        if high / low > data.band_limit[kind]:
            errors.append(SourceError(data.path, data.band_limit_line,
                                      f"the {kind} band is {low:.2f}x to {high:.2f}x of the estimate, "
                                      f"{high / low:.2f}x wide, over its limit of {data.band_limit[kind]:g}x"))
    for m in data.rows:
        estimate, low, high, inside = fitted.place(m)
        if inside != m.in_band:
            says = "inside" if inside else "outside"
            errors.append(SourceError(data.path, line_of(m.raw, "in_band"),
                                      f"{m.id}: measured {m.value:.4g} is {says} the band "
                                      f"{low:.4g} to {high:.4g} (estimate {estimate:.4g}), but in_band says "
                                      f"{str(m.in_band).lower()}"))
    return errors


def fitted() -> Fitted:
    """The fit on the project's measurements file, as the pages and the command use it; inside
    `across_band(f)`, with every time it prices multiplied by `f`."""
    out = fit(load())
    scale = _BAND_SCALE.get()
    return out if scale == 1.0 else replace(out, eff=replace(out.eff, scale=scale))


_BAND_SCALE: contextvars.ContextVar[float] = contextvars.ContextVar("estimate_band_scale", default=1.0)


@contextlib.contextmanager
def across_band(scale: float):
    """Within the block, `fitted()` prices every time `scale` times the estimate: a point of the
    band in which the measurements say the truth lies (`Fitted.band`). A claim resting on the
    estimate is checked across the band this way (explainer_gen/compute/assumptions.py)."""
    token = _BAND_SCALE.set(float(scale))
    try:
        yield
    finally:
        _BAND_SCALE.reset(token)


# -- the command ---------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        self.exit(2, f"{self.prog}: {message}\n")


def _count(text: str) -> int:
    """A whole number of at least 1 (cards, tokens, requests)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def _context(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, not {text}")
    return value


def parser(catalogue: Catalogue) -> argparse.ArgumentParser:
    defaults = catalogue.defaults.get("scenario", {})
    p = _Parser(prog="python -m models.estimate",
                description="The floor, the fitted estimate and its band for any setup the catalogue holds.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--accelerator", required=True, choices=sorted(catalogue.accelerators))
    p.add_argument("--cards", required=True, type=_count)
    p.add_argument("--model", required=True, choices=sorted(catalogue.models))
    p.add_argument("--weights", choices=sorted(WEIGHT_FORMATS), default=defaults.get("weights", "bf16"))
    p.add_argument("--kv", choices=sorted(KV_FORMATS), default=defaults.get("kv", "bf16"))
    sub = p.add_subparsers(dest="quantity", required=True, metavar="{prefill,decode,throughput}",
                           parser_class=_Parser)
    json_flag = dict(action="store_true", dest="json_after", help="print one JSON object")
    s = sub.add_parser("prefill", help="time to first token of one request at batch 1, s")
    s.add_argument("--tokens", required=True, type=_count)
    s.add_argument("--json", **json_flag)
    s = sub.add_parser("decode", help="one decode step of B requests each holding C tokens, s")
    s.add_argument("--batch", required=True, type=_count)
    s.add_argument("--context", required=True, type=_context)
    s.add_argument("--json", **json_flag)
    s = sub.add_parser("throughput", help="output tokens/s at the largest batch that fits, prefill included")
    s.add_argument("--input", required=True, type=_count)
    s.add_argument("--output", required=True, type=_count)
    s.add_argument("--json", **json_flag)
    return p


def answer(setup: Setup, quantity: str, args: dict, fitted_: Fitted) -> dict:
    """What the command prints, as a dict: the floor, the estimate and its band, in SI units."""
    floor = price(setup, quantity, args, FLOOR)
    estimate = price(setup, quantity, args, fitted_.eff)
    low, high = fitted_.bounds(KIND[quantity], estimate)
    out = {"quantity": quantity, "unit": UNITS[quantity], "floor": floor, "estimate": estimate, "low": low,
           "high": high}
    if quantity == "throughput":
        out["batch"] = setup.max_batch(args["input"], args["output"])
    return out


def _line(out: dict) -> str:
    if out["unit"] == "s":
        f = lambda s: f"{s * 1e3:,.2f} ms"  # noqa: E731
    else:
        f = lambda s: f"{s:,.0f} tokens/s"  # noqa: E731
    what = {"prefill": "time to first token", "decode": "decode step", "throughput": "throughput"}[out["quantity"]]
    tail = f" at batch {out['batch']:,}" if "batch" in out else ""
    return (f"{what}{tail}: floor {f(out['floor'])}, estimate {f(out['estimate'])} "
            f"(band {f(out['low'])} to {f(out['high'])})")


def main(argv: list[str] | None = None) -> int:
    try:
        catalogue = load_catalogue()
    except SourceError as exc:
        print(f"python -m models.estimate: {exc}", file=sys.stderr)
        return 2
    p = parser(catalogue)
    ns = p.parse_args(argv)
    setup = Setup(catalogue.accelerator(ns.accelerator), catalogue.model(ns.model), ns.cards,
                  Precision.of(ns.weights, ns.kv))
    try:
        setup.check()
        args = {name: getattr(ns, name) for name in ARGS[ns.quantity]}
        if ns.quantity == "decode" and not kvcache.slots(setup.acc, setup.model, setup.cards, ns.context,
                                                         precision=setup.precision) >= ns.batch:
            raise ValueError(f"{ns.batch:g} requests of {ns.context:g} tokens do not fit beside the weights; "
                             f"at most {int(kvcache.slots(setup.acc, setup.model, setup.cards, ns.context, precision=setup.precision)):,} do")
        if ns.quantity == "prefill" and not kvcache.fits(setup.acc, setup.model, setup.cards, ns.tokens,
                                                         precision=setup.precision):
            raise ValueError(f"a prompt of {ns.tokens:g} tokens does not fit beside the weights")
        out = answer(setup, ns.quantity, args, fitted())
    except (ValueError, SourceError) as exc:
        print(f"{p.prog}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out) if (ns.json or ns.json_after) else _line(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
