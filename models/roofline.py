"""Roofline step time: one forward pass over N cards, tensor-parallel, one kernel at a time.

A pass computes `tokens` positions that belong to `requests` sequences, each of which already
holds `context` tokens of KV cache. It runs four classes of kernels, one after another, and each
is priced at its own roofline: the longer of the bytes it reads from HBM and the arithmetic it
does (Williams et al. 2009). Then the pass takes their sum, plus its communication:

- the block GEMMs multiply the transformer blocks' weights, each read once however many
  positions ride along, at 2 FLOPs per weight per position and the peak of the weights' format
  (FP8 where the card has it: `models.precision`). In a mixture of experts the experts are
  GEMMs of their own, reading only the experts the positions are routed to
  (`LLM.expert_share`) and multiplying each position by its `active_experts`;
- the output head multiplies its matrix for the `logits` positions that need a next-token
  distribution, at the 16-bit peak;
- the input embedding is looked up: one row per position of an untied table, read and never
  multiplied (`LLM.lookup_bytes`);
- attention reads every request's KV cache once, however many of its positions the pass
  computes (a verify pass's k + 1 positions share one read), and does 2 x heads x head_dim FLOPs
  per position, layer and cached token for the scores and as many for the weighted sum
  (`attention_flops_per_position`), at the 16-bit peak;
- the cards join their shares (Megatron-style tensor parallelism, Shoeybi et al. 2019): two
  all-reduces per layer, one of the looked-up embedding rows, and a gather of the head's
  vocabulary-split logits (`comm_s`).

Nothing overlaps. A kernel's reads cannot hide under another kernel's arithmetic: attention's
cache reads run in their own kernel, bandwidth-bound at any batch, while the block GEMMs turn
compute-bound at their ridge (`ridge_tokens`) whatever the context. An engine that fuses kernels
or overlaps the all-reduces with GEMMs can beat this floor by the part it hides; the pages say so.
Left out: the new keys and values a pass writes (one token's worth per position), activations
read and written between kernels, and kernel launch costs (`models.estimate` estimates those).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache, partial

import numpy as np

from .catalogue import LLM, Accelerator
from .kvcache import bytes_per_token as kv_bytes_per_token
from .precision import ACTIVATION_BYTES, BF16_ALL, Precision

# A weight a product multiplies does one multiply and one add for each position (token) it meets.
FLOP_PER_WEIGHT = 2.0


@dataclass(frozen=True)
class Efficiency:
    """How far each kernel class runs below its datasheet roofline, and what a pass pays besides
    its kernels: the terms of an estimate (`models.estimate` fits them on measurements). The
    default, every share 1 and no fixed cost, is the floor.

    A kernel's reads take bytes / (bandwidth x share); its products FLOPs / (peak x share), the
    share of the format they run in (the block GEMMs' format, 16 bits for the head and attention);
    the collectives' bytes move at `link` x the peer bandwidth, their fixed latencies unchanged.
    Each pass then pays `pass_s`, and `layer_s` for each of its layers: launches, synchronisation,
    sampling, the engine's own step, nothing a byte or a FLOP accounts for. Within a kernel, reads
    and arithmetic overlap fully at the floor (the longer of the two); `overlap` says how far a real
    kernel falls short of that near its ridge (`join`)."""

    bandwidth: float = 1.0  # share of the HBM bandwidth a kernel's reads attain
    bf16: float = 1.0       # share of the 16-bit tensor peak products attain
    fp8: float = 1.0        # share of the FP8 tensor peak
    link: float = 1.0       # share of the peer bandwidth the collectives' bytes attain
    pass_s: float = 0.0     # fixed seconds a pass
    layer_s: float = 0.0    # fixed seconds a layer, each pass
    overlap: float = math.inf  # how a kernel's reads and arithmetic combine: (r^k + a^k)^(1/k), max at infinity
    # A factor on every time priced at these terms, fixed costs included: 1 as fitted. An estimate's
    # band says the truth lies within a factor of it; checking a claim across that band sets this.
    scale: float = 1.0

    def join(self, reads, arithmetic, mx=np.maximum):
        """One kernel's seconds from its reads' and its arithmetic's: the longer of the two at the
        floor, where each hides the other entirely; with a finite `overlap` k, (r^k + a^k)^(1/k),
        longer than either, by most near the ridge where the two are equal (2^(1/k) there), and at
        k = 1 their sum: no overlap at all."""
        longer = mx(reads, arithmetic)
        if self.overlap == math.inf:
            return longer
        k = self.overlap  # scaled by the longer one, so that no power overflows
        # A float (numpy's float64 is one) is told from an array without np.ndim, which costs more
        # than the arithmetic: the serving simulation joins millions of kernels' parts this way.
        if isinstance(longer, float) or np.ndim(longer) == 0:
            return longer * ((reads / longer) ** k + (arithmetic / longer) ** k) ** (1.0 / k) if longer else longer
        safe = np.where(longer > 0, longer, 1.0)
        return longer * ((reads / safe) ** k + (arithmetic / safe) ** k) ** (1.0 / k)

    def __post_init__(self):
        if not all(0.0 < getattr(self, name) <= 1.0 for name in ("bandwidth", "bf16", "fp8", "link")):
            raise ValueError(f"shares of a roofline lie in (0, 1]: {self}")
        if not (self.pass_s >= 0.0 and self.layer_s >= 0.0 and self.overlap >= 1.0):  # NaN fails too
            raise ValueError(f"fixed costs are 0 or more and the overlap 1 or more: {self}")
        if not self.scale > 0.0:
            raise ValueError(f"the scale on an estimate's times is above 0: {self}")

    def compute(self, arithmetic: str) -> float:
        """The share of peak of products run in `arithmetic` ("bf16" or "fp8")."""
        return self.fp8 if arithmetic == "fp8" else self.bf16

    def fixed(self, layers):
        """Seconds a pass of a model of `layers` layers pays besides its kernels."""
        return self.pass_s + self.layer_s * layers


FLOOR = Efficiency()


@dataclass(frozen=True)
class StepTime:
    """Arrays broadcast over the inputs; times in seconds, per card.

    The kernels' times (`gemm_s`, `head_s`, `lookup_s`, `attention_s`) and `comm_s` add up to
    `seconds`. The totals of reading (`memory_s`) and of arithmetic (`compute_s`) are what the
    pass would take if all its kernels were one; the step is never shorter than either."""

    gemm_s: np.ndarray       # the block GEMMs (dense weights, then routed experts), each at its roofline
    head_s: np.ndarray       # the output head, at its roofline
    lookup_s: np.ndarray     # the input-embedding rows looked up (a read, no arithmetic)
    attention_s: np.ndarray  # attention: the KV-cache read or its arithmetic, whichever is longer
    comm_s: np.ndarray       # all-reduces and the logits gather across the cards (0 on one card)
    seconds: np.ndarray      # the step: the kernels one after another, plus the communication
    weights_s: np.ndarray    # reading the weights (and looked-up embedding rows) at full bandwidth
    kv_s: np.ndarray         # reading the requests' KV cache at full bandwidth
    memory_s: np.ndarray     # the two reads together
    compute_s: np.ndarray    # all the arithmetic at its peaks, attention included
    compute_bound: np.ndarray  # the block GEMMs take longer in arithmetic than in reads (past `ridge_tokens`)
    intensity: np.ndarray    # FLOP per byte read from HBM, over the whole pass
    utilisation: np.ndarray  # FLOP/s one card attains over the step, as a share of its peak in the weights' format
    # How it was priced: the kernels' pieces and what the pass carried (tokens, cached, attended,
    # logits), so that the same pass can be priced again below the roofline (`at`).
    pieces: "Kernels" = field(default=None, compare=False, repr=False)
    carried: tuple = field(default=(), compare=False, repr=False)

    def at(self, eff: Efficiency):
        """Seconds of the same pass with its kernels at `eff`'s shares, plus `eff`'s fixed costs."""
        return self.pieces.at(self.carried, eff)


def flops_per_token(model: LLM) -> float:
    """A multiply and an add for every weight the pass multiplies (not the embedding lookup)."""
    return FLOP_PER_WEIGHT * model.step_params


def attention_flops_per_position(model: LLM, context):
    """Attention FLOPs of one position over `context` cached tokens: for every layer, the scores
    Q K^T and the weighted sum of V each take 2 x heads x head_dim FLOPs per cached token
    (Hoffmann et al. 2022, Appendix F, "logits" and "attention reduce")."""
    return 4.0 * model.layers * model.heads * model.head_dim * np.asarray(context, dtype=float)


ALLREDUCES_PER_LAYER = 2  # Megatron-LM: one after attention, one after the MLP (forward pass)
# Besides the layers': the input embedding split by vocabulary across the cards sums its looked-up
# rows with one all-reduce, and the output head split the same way gathers its logits on one card
# (vLLM: VocabParallelEmbedding, LogitsProcessor).
EMBEDDING_ALLREDUCES = 1
LOGITS_BYTES = ACTIVATION_BYTES  # the head's logits leave it in the activations' 16-bit format


def allreduces(model: LLM) -> int:
    """All-reduces of a tensor-parallel forward pass: two per layer and the embedding's one."""
    return ALLREDUCES_PER_LAYER * model.layers + EMBEDDING_ALLREDUCES


def comm_s(acc: Accelerator, model: LLM, cards, tokens, logits=None):
    """Seconds a pass spends joining the cards' shares, each collective a fixed cost plus its bytes.

    Each all-reduce sums a `tokens` x hidden activation of 16-bit values across the cards. A ring
    (or its equivalent over a switch or a full mesh) sends 2 (N - 1) / N of the message from every
    card at the one-way rate the card has to its group (`Accelerator.peer_bandwidth`). The gather
    brings the other cards' shares of the `logits` positions' vocabulary-wide logits to one card,
    (N - 1) / N of them, at the same rate. One card sends nothing.
    """
    tokens = np.asarray(tokens, dtype=float)
    logits = tokens if logits is None else np.asarray(logits, dtype=float)
    return step_time(acc, model, cards, tokens, 0.0, requests=0.0, logits=logits).comm_s


@dataclass(frozen=True)
class Kernels:
    """One model's pass on given cards as the pieces each kernel class is priced from: seconds on
    one card per unit of what the pass carries (`tokens` positions, `cached` tokens of KV cache
    read, `attended` cached tokens attended to in all, `logits` positions through the head).

    `times` is the one place a pass is priced: `pass_time` calls it on arrays, and the serving
    simulation (`models.serving.PassCost`), which prices hundreds of thousands of passes one at
    a time, on plain floats with Python's own `max`.
    """

    dense_read: float        # the blocks' dense weights (all of a dense model's), read once
    dense_position: float    # their arithmetic per position
    expert_read: float       # every expert of every layer, read once
    expert_miss: float       # the chance that one position's router passes an expert by (0 when dense)
    expert_position: float   # the routed experts' arithmetic per position
    head_read: float         # the output head's matrix
    head_logit: float        # its arithmetic per position through it
    lookup_position: float   # one looked-up row of an untied input embedding
    kv_cached: float         # one cached token read by attention
    attention_attended: float  # attention's arithmetic per cached token attended to
    comm_pass: float         # the all-reduces' fixed costs
    comm_position: float     # their bytes per position
    gather_pass: float       # the logits gather's fixed cost, when any position makes logits
    gather_logit: float      # its bytes per position through the head
    layers: float            # the model's layers (an estimate's fixed cost is per layer)
    block_arithmetic: str    # the format the block GEMMs' products run in: "bf16" or "fp8"

    @classmethod
    def of(cls, acc: Accelerator, model: LLM, cards, precision: Precision = BF16_ALL) -> "Kernels":
        """The pieces on `cards` cards (an array of card counts gives arrays of pieces)."""
        # One count: the same pieces every time, kept (scalar passes are many, so a plain number
        # is told from an array without np.ndim, which costs as much as the lookup).
        if isinstance(cards, (int, float)) or np.ndim(cards) == 0:
            return _kernels_on(cls, acc, model, float(cards), precision)
        return cls._of(acc, model, cards, precision)

    @classmethod
    def _of(cls, acc: Accelerator, model: LLM, cards, precision: Precision) -> "Kernels":
        n = np.asarray(cards, dtype=float)
        w, bw, peak = precision.weights.bytes, n * acc.bandwidth, n * acc.peak(precision.weights)
        dense = model.block_params - model.expert_params  # attention projections, norms, router
        routed = model.active_block_params - dense         # the expert weights one position multiplies
        group = np.maximum(n, 2.0)  # one card talks to nobody: its collectives cost nothing below
        rate, talks = acc.peer_bandwidth(group), np.where(n > 1, 1.0, 0.0)
        fields = dict(
            dense_read=dense * w / bw, dense_position=FLOP_PER_WEIGHT * dense / peak,
            expert_read=model.expert_params * w / bw,
            expert_miss=1.0 - model.active_experts / model.experts if model.experts else 0.0,
            expert_position=FLOP_PER_WEIGHT * routed / peak,
            head_read=model.head_params * ACTIVATION_BYTES / bw, head_logit=FLOP_PER_WEIGHT * model.head_params / (n * acc.flops),
            lookup_position=model.lookup_bytes(1) / bw,
            kv_cached=kv_bytes_per_token(model, precision.kv.bytes) / bw,
            attention_attended=float(attention_flops_per_position(model, 1.0)) / (n * acc.flops),
            comm_pass=talks * allreduces(model) * acc.allreduce_latency,
            comm_position=talks * allreduces(model) * 2.0 * (group - 1.0) / group * model.hidden * ACTIVATION_BYTES / rate,
            gather_pass=talks * acc.allreduce_latency,
            gather_logit=talks * (group - 1.0) / group * model.vocab * LOGITS_BYTES / rate,
            layers=model.layers,
        )
        fields = {k: (float(v) if np.ndim(v) == 0 else v) for k, v in fields.items()}
        arithmetic = "fp8" if precision.weights.arithmetic == "fp8" and acc.fp8_tflops else "bf16"  # as `peak` reads it
        return cls(**fields, block_arithmetic=arithmetic)

    def reach(self, tokens):
        """The share of a mixture's experts that `tokens` positions are routed to (1 when dense)."""
        return 1.0 - self.expert_miss ** tokens if self.expert_miss else 1.0

    def reads(self, tokens, cached, logits):
        """(GEMMs, lookup, cache) seconds of reading; a mixture reads the experts its positions reach."""
        return (self.dense_read + self.expert_read * self.reach(tokens) + (logits > 0) * self.head_read,
                self.lookup_position * tokens, self.kv_cached * cached)

    def arithmetic(self, tokens, attended, logits):
        """Seconds of all the pass's products at their peaks: the blocks' (the weights' format), the
        head's for `logits` positions and attention's (16-bit)."""
        return ((self.dense_position + self.expert_position) * tokens + self.head_logit * logits
                + self.attention_attended * attended)

    def at(self, carried: tuple, eff: Efficiency):
        """Seconds of a pass over `carried` (tokens, cached, attended, logits) with every kernel at
        `eff`'s shares of its roofline, plus `eff`'s fixed costs: the estimate of a pass
        (`StepTime.at`, `pass_seconds`)."""
        return (sum(self.times(*carried, eff=eff)) + eff.fixed(self.layers)) * eff.scale

    def times(self, tokens, cached, attended, logits, mx=np.maximum, eff: Efficiency = FLOOR):
        """(block GEMMs, head, lookup, attention, communication) seconds of one pass, each kernel
        at `eff`'s shares of its roofline (the floor by default). `eff`'s fixed costs are not
        among them (`StepTime.at` adds them)."""
        bw, blocks, b16 = eff.bandwidth, eff.compute(self.block_arithmetic), eff.bf16
        # At the floor a kernel is the longer of its two parts: `mx` itself, with no call between
        # (the serving simulation prices hundreds of thousands of passes this way).
        join = mx if eff.overlap == math.inf else partial(eff.join, mx=mx)
        gemm = join(self.dense_read / bw, self.dense_position * tokens / blocks) + join(
            self.expert_read * self.reach(tokens) / bw, self.expert_position * tokens / blocks)
        head = (logits > 0) * join(self.head_read / bw, self.head_logit * logits / b16)  # no logits: no head GEMM
        attention = join(self.kv_cached * cached / bw, self.attention_attended * attended / b16)
        comm = (self.comm_pass + self.comm_position * tokens / eff.link
                + (logits > 0) * (self.gather_pass + self.gather_logit * logits / eff.link))
        return gemm, head, self.lookup_position * tokens / bw, attention, comm

    def seconds(self, tokens: float, cached: float, attended: float, logits: float | None = None,
                eff: Efficiency = FLOOR) -> float:
        """`times` added up, on plain floats, with `eff`'s fixed costs (none at the floor)."""
        out = sum(self.times(tokens, cached, attended, tokens if logits is None else logits, max, eff))
        return out if eff is FLOOR else (out + eff.fixed(self.layers)) * eff.scale


@lru_cache(maxsize=256)
def _kernels_on(cls, acc: Accelerator, model: LLM, cards: float, precision: Precision) -> Kernels:
    return cls._of(acc, model, cards, precision)


def step_time(acc: Accelerator, model: LLM, cards, tokens, context=0.0, requests=None,
              precision: Precision = BF16_ALL, logits=None) -> StepTime:
    """One pass over `tokens` positions of `requests` sequences (default: one position each, a
    decode step), each with `context` tokens already in its cache; `logits` of the positions go
    through the output head (default: all, as in decode and in a verify pass)."""
    return pass_time(acc, model, cards, *_decode_pass(tokens, context, requests), precision, logits)


def step_seconds(acc: Accelerator, model: LLM, cards, tokens, context=0.0, requests=None,
                 precision: Precision = BF16_ALL, logits=None, eff: Efficiency | None = None):
    """`step_time(...).seconds`, or with `eff` `step_time(...).at(eff)`: the same arithmetic on the
    same values, so the same floating-point result, without the rest of a StepTime. The models
    that search over batches (`models.speculative`, `models.trees`) price thousands of passes one
    at a time and read only their time, which costs less than half as much as the whole StepTime."""
    return pass_seconds(acc, model, cards, *_decode_pass(tokens, context, requests), precision, logits, eff)


def _decode_pass(tokens, context, requests):
    """`step_time`'s pass in `pass_time`'s terms: (tokens, cached, attended), each request reading
    its `context` once and each position attending to it."""
    tokens = np.asarray(tokens, dtype=float)
    context = np.asarray(context, dtype=float)
    requests = tokens if requests is None else np.asarray(requests, dtype=float)
    return tokens, requests * context, tokens * context


def _carried(tokens, cached, attended, logits) -> tuple:
    """What `pass_time` prices a pass on: float arrays of its positions, the cache they read and
    attend to, and the positions through the head (`logits`; default: all of them)."""
    tokens = np.asarray(tokens, dtype=float)
    cached, attended = np.asarray(cached, dtype=float), np.asarray(attended, dtype=float)
    return tokens, cached, attended, tokens if logits is None else np.asarray(logits, dtype=float)


def pass_seconds(acc: Accelerator, model: LLM, cards, tokens, cached, attended, precision: Precision = BF16_ALL,
                 logits=None, eff: Efficiency | None = None):
    """`pass_time(...).seconds`, or with `eff` `pass_time(...).at(eff)`, alone (`step_seconds`)."""
    carried = _carried(tokens, cached, attended, logits)
    k = Kernels.of(acc, model, cards, precision)
    if eff is None:
        gemm, head, lookup, attention, talk = k.times(*carried)
        return gemm + head + lookup + attention + talk  # as pass_time adds them
    return k.at(carried, eff)


def pass_time(acc: Accelerator, model: LLM, cards, tokens, cached, attended,
              precision: Precision = BF16_ALL, logits=None) -> StepTime:
    """One pass over `tokens` positions whose requests hold `cached` tokens of KV cache between
    them, each read once, while the positions attend to `attended` cached tokens in all.

    The general form of `step_time`, for a pass that mixes requests of different contexts: a
    server's step that carries decodes and chunks of prompts together (`models.serving`). Its
    attention is one kernel over all of them, priced on their totals. Only `logits` of the
    positions (default: all) go through the output head: a server needs the next-token
    distribution of a decode, and of a prompt's last position, and of no other prompt position.
    A pass with none runs no head GEMM, so reads none of its weights.
    """
    tokens, cached, attended, rows = _carried(tokens, cached, attended, logits)  # rows: positions through the head
    k = Kernels.of(acc, model, cards, precision)
    gemm, head, lookup, attention, talk = k.times(tokens, cached, attended, rows)
    seconds = gemm + head + lookup + attention + talk
    gemm_reads, lookup_reads, kv_s = k.reads(tokens, cached, rows)
    compute_s = k.arithmetic(tokens, attended, rows)
    # Every block GEMM class past its own knee: the dense weights', and a mixture's experts'.
    compute_bound = (k.dense_position * tokens > k.dense_read) & (
        (k.expert_position * tokens > k.expert_read * k.reach(tokens)) | (k.expert_read == 0))
    weights_s = gemm_reads + lookup_reads
    flops = (FLOP_PER_WEIGHT * model.active_block_params * tokens + FLOP_PER_WEIGHT * model.head_params * rows
             + attention_flops_per_position(model, attended))
    read = (weights_s + kv_s) * np.asarray(cards, dtype=float) * acc.bandwidth
    zero = 0.0 * seconds
    return StepTime(
        gemm_s=gemm + zero, head_s=head + zero, lookup_s=lookup + zero, attention_s=attention + zero,
        comm_s=talk + zero, seconds=seconds, weights_s=weights_s + zero, kv_s=kv_s + zero,
        memory_s=weights_s + kv_s + zero, compute_s=compute_s + zero,
        compute_bound=compute_bound | (0 * seconds > 0), intensity=flops / read + zero,
        utilisation=flops / np.asarray(cards, dtype=float) / (seconds * acc.peak(precision.weights)),
        pieces=k, carried=(tokens, cached, attended, rows),
    )


def ridge_tokens(acc: Accelerator, model: LLM, precision: Precision = BF16_ALL):
    """Positions a pass needs for its block GEMMs, the products with the transformer blocks'
    weights, to take longer in arithmetic than in reads: the GEMMs' ridge. Past it they are
    compute-bound.

    Their reads are fixed (every block weight once) and their arithmetic grows with the positions,
    so each class of them turns at the ratio of the two. It does not depend on the context: the
    cache is read by attention, a kernel of its own that no GEMM's arithmetic hides. Nor on how
    many positions go through the output head, a GEMM of its own (16-bit, with its own ridge at
    the card's 16-bit peak over its bandwidth). A mixture of experts has two classes: the dense
    weights (attention's projections, the router), multiplied by every position, and the experts,
    each multiplied by only the positions routed to it, so they turn later; the ridge is the later
    of the two. By then the positions reach every expert (Mixtral 8x7B: 99.98% from 30 positions),
    so the experts' reads are all of them.
    """
    k = Kernels.of(acc, model, 1, precision)
    dense = k.dense_read / k.dense_position
    return max(dense, k.expert_read / k.expert_position) if k.expert_read else dense
