"""The accelerator and LLM catalogue: loaded from YAML, validated, typed."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .precision import ACTIVATION_BYTES, BF16_ALL, NumberFormat, Precision
from .yamlsource import SourceError, SourceMap, closest, line_of, load_yaml

CATALOGUE_PATH = Path(__file__).with_name("catalogue.yaml")

BYTES_PER_BF16 = ACTIVATION_BYTES


@dataclass(frozen=True)
class Accelerator:
    key: str
    name: str
    memory_gb: float
    bandwidth_tbps: float
    bf16_tflops: float
    fp8_tflops: float | None  # dense FP8 tensor throughput; null where the card has no FP8 units
    source: str  # the datasheet the numbers come from
    link_gbps: float  # peer-to-peer interconnect of one card, all its links, GB/s one way (vendors quote both directions added)
    link_source: str  # the vendor's figure as stated, and how the one-way rate follows from it
    allreduce_us: float  # fixed cost of one small all-reduce across the cards, microseconds
    allreduce_source: str  # where that cost comes from (no datasheet states one)
    # The range that assumed cost may lie in, microseconds (low, high): what the sources measured.
    # The build checks that no choice of words on a page changes across it unless the page says
    # where it does (explainer_gen/compute/assumptions.py).
    allreduce_range_us: tuple[float, float]
    # How the cards reach each other: "switch" (every card's links go to switches, so any group of
    # cards talks at the card's whole rate) or "mesh" (no switch: `mesh_links` point-to-point links,
    # one to each peer, so a group of N cards uses N - 1 of them).
    topology: str = "switch"
    mesh_links: int | None = None

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9

    @property
    def bandwidth(self) -> float:
        """HBM bandwidth in bytes per second."""
        return self.bandwidth_tbps * 1e12

    @property
    def flops(self) -> float:
        """Dense BF16 throughput in FLOP per second."""
        return self.bf16_tflops * 1e12

    def peak(self, fmt: NumberFormat) -> float:
        """FLOP/s of the products whose weights are in `fmt`: the FP8 peak for FP8 weights where the
        card has FP8 units; otherwise (BF16, weight-only INT4, FP8 on a card without it) the BF16 peak."""
        if fmt.arithmetic == "fp8" and self.fp8_tflops:
            return self.fp8_tflops * 1e12
        return self.flops

    def peer_bandwidth(self, cards):
        """Bytes per second one card sends to the rest of a group of `cards` cards (2 or more), one
        way, all its links together: the whole `link_gbps` behind a switch; over a full mesh, the
        N - 1 links that reach the group's other cards, each `link_gbps / mesh_links`."""
        cards = np.asarray(cards, dtype=float)
        if self.topology == "mesh":
            out = np.minimum(cards - 1.0, self.mesh_links) * self.link_gbps / self.mesh_links * 1e9
        else:
            out = self.link_gbps * 1e9 + 0.0 * cards
        return out if out.ndim else float(out)

    @property
    def allreduce_latency(self) -> float:
        """Fixed cost of one all-reduce, seconds."""
        return self.allreduce_us * 1e-6

    def allreduce_at(self, t: float) -> float:
        """The all-reduce latency `t` of the way across its assumed range (0 its low end, 1 its high),
        microseconds."""
        low, high = self.allreduce_range_us
        return low + t * (high - low)

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) above which a kernel is compute-bound."""
        return self.flops / self.bandwidth


@dataclass(frozen=True)
class LLM:
    key: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    params: int
    vocab: int  # rows of the input embedding (and of the output head)
    tied_embeddings: bool  # the output head is the input embedding itself (config: tie_word_embeddings)
    source: str  # the config and checkpoint the shapes and count come from
    # A mixture of experts (all three set, or none): every layer's MLP is `experts` experts, each a
    # gated MLP of width `expert_ffn` (three hidden x expert_ffn matrices), and a router sends each
    # token to `active_experts` of them (config: num_local_experts, num_experts_per_tok, intermediate_size).
    experts: int | None = None
    active_experts: int | None = None
    expert_ffn: int | None = None

    @property
    def expert_params(self) -> int:
        """The experts' weights, all layers: 0 for a dense model."""
        return self.layers * self.experts * 3 * self.hidden * self.expert_ffn if self.experts else 0

    def expert_share(self, tokens=1):
        """The share of a layer's experts that a pass over `tokens` positions reads, on average,
        when each position's router picks its `active_experts` uniformly: an expert is missed by
        one position with probability 1 - active/experts, by all of them with that to the power
        `tokens`. 1 for a dense model (its one MLP is always read). Real routers are not uniform
        and their choices correlate; the page that uses this says so."""
        tokens = np.asarray(tokens, dtype=float)
        if not self.experts:
            return np.ones_like(tokens) if tokens.ndim else 1.0
        out = 1.0 - (1.0 - self.active_experts / self.experts) ** tokens
        return out if out.ndim else float(out)

    @property
    def active_block_params(self) -> int:
        """The block weights one position multiplies: all of them in a dense model; in a mixture,
        all but the experts its router does not pick."""
        if not self.experts:
            return self.block_params
        return self.block_params - self.expert_params * (self.experts - self.active_experts) // self.experts

    @property
    def table_params(self) -> int:
        """The embedding table and, when untied, the output head: vocab x hidden each. Quantised
        checkpoints keep them in 16 bits (`models.precision`)."""
        return (1 if self.tied_embeddings else 2) * self.vocab * self.hidden

    @property
    def block_params(self) -> int:
        """The transformer blocks' weights: what a weight format (`Precision.weights`) applies to."""
        return self.params - self.table_params

    @property
    def head_params(self) -> int:
        """The output head the last product multiplies: its own matrix, or the tied embedding."""
        return self.vocab * self.hidden

    def weight_bytes(self, precision: Precision = BF16_ALL) -> float:
        """What the weights hold in memory."""
        return self.block_params * precision.weights.bytes + self.table_params * ACTIVATION_BYTES

    @property
    def step_params(self) -> int:
        """The weights a forward pass multiplies, per token: every one but the input embedding
        table when the output head is a matrix of its own, and in a mixture of experts only the
        experts the token is routed to. The embedding is only looked up, one row per token
        (`lookup_bytes`); a tied head is that same table, read whole and multiplied, so then
        nothing is left out."""
        return self.active_block_params + self.head_params

    def multiplied_bytes(self, tokens=1, precision: Precision = BF16_ALL):
        """The bytes of the weights a pass over `tokens` positions multiplies, each read once: all
        of them in a dense model; in a mixture, the experts' share that the positions reach
        (`expert_share`; every expert once `tokens` is infinite)."""
        unread = self.expert_params * (1.0 - self.expert_share(tokens))
        return (self.block_params - unread) * precision.weights.bytes + self.head_params * ACTIVATION_BYTES

    def read_bytes(self, tokens=1, precision: Precision = BF16_ALL):
        """The weight bytes a pass over `tokens` positions reads: the multiplied weights once, and
        each position's row of an untied input embedding (`weight_bytes` is what memory holds)."""
        return self.multiplied_bytes(tokens, precision) + self.lookup_bytes(tokens)

    def lookup_bytes(self, tokens=1):
        """The input-embedding rows a pass looks up (counted apart only when the head is untied)."""
        return (0 if self.tied_embeddings else self.hidden * ACTIVATION_BYTES) * tokens


@dataclass(frozen=True)
class Catalogue:
    accelerators: dict[str, Accelerator]
    models: dict[str, LLM]
    path: str
    # The `defaults:` section as written (a SourceMap, with lines): site-wide choices such as the
    # scenario every page starts from. Its readers check it: explainer_gen.sources.controls'
    # read_default_scenario reads it, explainer_gen.compute.resolved's default_scenario checks it runs.
    defaults: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def accelerator(self, key: str) -> Accelerator:
        return _pick(self.accelerators, key, "accelerator")

    def model(self, key: str) -> LLM:
        return _pick(self.models, key, "model")


def with_allreduce_at(catalogue: "Catalogue", t: float) -> "Catalogue":
    """The catalogue with every card's all-reduce latency `t` of the way across its assumed range."""
    cards = {k: dataclasses.replace(a, allreduce_us=a.allreduce_at(t)) for k, a in catalogue.accelerators.items()}
    return dataclasses.replace(catalogue, accelerators=cards)


class UnknownKey(KeyError):
    def __init__(self, kind: str, key: str, choices: list[str]):
        self.kind, self.key, self.choices = kind, key, choices
        super().__init__(f"unknown {kind} {key!r}; {closest(key, choices)}")

    def __str__(self) -> str:
        return self.args[0]


def _pick(table: dict, key: str, kind: str):
    try:
        return table[key]
    except (KeyError, TypeError):
        raise UnknownKey(kind, key, list(table)) from None


def _rows(data: Any, section: str, cls: type, path: str) -> dict[str, Any]:
    """Validate one section of the catalogue into typed, uniquely keyed rows."""
    if not isinstance(data, dict) or not isinstance(data.get(section), list):
        raise SourceError(path, line_of(data), f"missing list {section!r}")
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    optional = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    rows: dict[str, Any] = {}
    for raw in data[section]:
        if not isinstance(raw, SourceMap):
            raise SourceError(path, line_of(data, section), f"each {section} entry must be a mapping")
        missing = [f for f in fields if f not in raw and f not in optional]
        if missing:
            raise SourceError(path, raw.line, f"{section} entry misses field(s): {', '.join(missing)}")
        unknown = [k for k in raw if k not in fields]
        if unknown:
            raise SourceError(path, raw.line_of(unknown[0]),
                              f"unknown field {unknown[0]!r}; {closest(unknown[0], list(fields))}")
        values = {}
        for name, kind in fields.items():
            if name not in raw:
                continue  # an optional field left out: its default
            value = raw[name]
            if kind == "str":
                if not isinstance(value, str) or not value:
                    raise SourceError(path, raw.line_of(name), f"{name} must be a non-empty string")
            elif kind in ("float | None", "int | None") and value is None:
                pass  # an optional number, left out on purpose (no FP8 units on the A100)
            elif kind == "tuple[float, float]":
                if (not isinstance(value, list) or len(value) != 2
                        or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0
                               for v in value) or value[0] > value[1]):
                    raise SourceError(path, raw.line_of(name), f"{name} must be a range [low, high] of two positive "
                                      f"numbers, low first, got {value!r}")
                value = (float(value[0]), float(value[1]))
            elif kind == "bool":
                if not isinstance(value, bool):
                    raise SourceError(path, raw.line_of(name), f"{name} must be true or false, got {value!r}")
            else:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise SourceError(path, raw.line_of(name), f"{name} must be a number, got {value!r}")
                if not math.isfinite(value) or value <= 0:
                    raise SourceError(path, raw.line_of(name), f"{name} must be positive, got {value!r}")
                if kind in ("int", "int | None") and value != int(value):
                    raise SourceError(path, raw.line_of(name), f"{name} must be an integer, got {value!r}")
            values[name] = value
        if values["key"] in rows:
            raise SourceError(path, raw.line_of("key"), f"duplicate {section} key {values['key']!r}")
        if cls is LLM and values["hidden"] != values["heads"] * values["head_dim"]:
            raise SourceError(path, raw.line_of("hidden"), f"hidden {values['hidden']} is not heads × head_dim "
                              f"({values['heads']} × {values['head_dim']}); check the model's config")
        if cls is LLM and (2 - values["tied_embeddings"]) * values["vocab"] * values["hidden"] >= values["params"]:
            tables = "the embedding table" if values["tied_embeddings"] else "an input embedding and an untied head"
            raise SourceError(path, raw.line_of("vocab"), f"{tables} of vocab × hidden ({values['vocab']} × "
                              f"{values['hidden']}) would hold all of the {values['params']} parameters; check vocab, "
                              f"hidden and params against the model's config")
        if cls is LLM:
            _check_experts(values, raw, path)
        if cls is Accelerator:
            _check_topology(values, raw, path)
            low, high = values["allreduce_range_us"]
            if not low <= values["allreduce_us"] <= high:
                raise SourceError(path, raw.line_of("allreduce_range_us"), f"allreduce_us {values['allreduce_us']} lies "
                                  f"outside its range {list(values['allreduce_range_us'])}: the value assumed is one "
                                  f"the range allows")
        rows[values["key"]] = cls(**values)
    return rows


TOPOLOGIES = ("switch", "mesh")


def _check_topology(values: dict, raw: SourceMap, path: str) -> None:
    """A card's topology is a switch or a full mesh, and a mesh says how many links it has."""
    topology = values.get("topology", "switch")
    if topology not in TOPOLOGIES:
        raise SourceError(path, raw.line_of("topology"), f"topology must be one of {', '.join(TOPOLOGIES)}, "
                          f"got {topology!r}; {closest(topology, list(TOPOLOGIES))}")
    if (topology == "mesh") != (values.get("mesh_links") is not None):
        where = "mesh_links" if "mesh_links" in raw else "topology" if "topology" in raw else "key"
        raise SourceError(path, raw.line_of(where), "a mesh needs mesh_links, its point-to-point links a card, "
                          "and only a mesh has them")


MOE_FIELDS = ("experts", "active_experts", "expert_ffn")


def _check_experts(values: dict, raw: SourceMap, path: str) -> None:
    """A mixture of experts names all three of its fields, routes to fewer experts than it has,
    and leaves the blocks something besides experts (attention, norms, router)."""
    given = [f for f in MOE_FIELDS if values.get(f) is not None]
    if not given:
        return
    if len(given) < len(MOE_FIELDS):
        missing = [f for f in MOE_FIELDS if f not in given]
        raise SourceError(path, raw.line_of(given[0]), f"a mixture of experts needs {', '.join(MOE_FIELDS)}; "
                          f"missing {', '.join(missing)}")
    if values["active_experts"] > values["experts"]:
        raise SourceError(path, raw.line_of("active_experts"), f"active_experts {values['active_experts']} is more "
                          f"than the {values['experts']} experts a layer has")
    experts = values["layers"] * values["experts"] * 3 * values["hidden"] * values["expert_ffn"]
    tables = (2 - values["tied_embeddings"]) * values["vocab"] * values["hidden"]
    if experts >= values["params"] - tables:
        raise SourceError(path, raw.line_of("expert_ffn"), f"{values['layers']} layers of {values['experts']} experts of "
                          f"3 × {values['hidden']} × {values['expert_ffn']} weights would be {experts} parameters, "
                          f"all of the {values['params'] - tables} outside the embeddings; check the config")


def parse_catalogue(text: str, path: str) -> Catalogue:
    data = load_yaml(text, path)
    return Catalogue(
        accelerators=_rows(data, "accelerators", Accelerator, path),
        models=_rows(data, "models", LLM, path),
        path=path,
        defaults=_defaults(data, path),
    )


def _defaults(data: Any, path: str) -> dict:
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SourceError(path, line_of(data, "defaults"), "defaults must be a mapping, such as `scenario: {...}`")
    return defaults


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int) -> Catalogue:
    return parse_catalogue(Path(path).read_text(encoding="utf-8"), path)


def load_catalogue(path: str | Path = CATALOGUE_PATH) -> Catalogue:
    """Load and validate a catalogue file; reloads when the file changes."""
    p = Path(path)
    return _load_cached(str(p), p.stat().st_mtime_ns)
