"""Where the guesses come from: a draft model, heads on the target, a block on its features, or the prompt.

Every drafter here proposes a chain of k guesses per request and step; the target verifies them
in one pass over k + 1 positions (`speculative.verify_step_s`), the same for all of them. They
differ in what drafting costs on the cards, in time and in memory:

- a separate draft model (Leviathan et al. 2023; Chen et al. 2023): k passes of a small model
  with its own weights and its own KV cache;
- Medusa heads (Cai et al. 2024): k heads on the target's last hidden state, all run in one pass.
  Head i is a residual block W1 (hidden x hidden) and a matrix W2 (hidden x vocab) of its own, the
  paper's p = softmax(W2 (SiLU(W1 h) + h)); no attention, so no cache;
- EAGLE (Li et al. 2024): one decoder layer of the target's shape, fed the target's features
  through a fully connected layer of 2 hidden x hidden, run k times, each time through the
  target's own (shared) output head to pick the guess. It keeps a cache of one layer;
- multi-token prediction (DeepSeek-AI 2024): modules of the same make (a projection of 2 hidden x
  hidden, one block, the shared embedding and head), one module per guess, trained with the
  model. Per guess it costs what EAGLE costs; it holds k blocks and k layers of cache. DeepSeek-V3
  itself keeps one module (k = 1), and its blocks are mixtures with latent attention; here every
  module is a block of the target's own shape;
- prompt lookup: guesses copied from earlier text where its last tokens recur, found on the host.
  Nothing runs on the cards, and nothing is held.

Each drafting pass is priced by `roofline.step_time`, as a model of the shape it has (`pass_model`):
a block of one layer is an LLM of one layer; Medusa's k heads are one pass through k residual
blocks and k output matrices, an LLM with no attention whose output head is k vocabularies wide.
A block "of the target's shape" has the target's mean weights per layer (block weights over layers),
and a mixture's block routes each position to as many of its experts as the target's does.
Acceptance is not modelled here: each drafter's guesses are kept at the rate `a` the reader sets,
though in practice each reaches a different rate (the page says so).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kvcache, speculative
from .catalogue import LLM, Accelerator
from .kvcache import bytes_per_token
from .precision import ACTIVATION_BYTES, BF16_ALL, Precision
from .roofline import step_seconds

KINDS = ("model", "medusa", "eagle", "mtp", "lookup")


@dataclass(frozen=True)
class Drafter:
    kind: str
    name: str
    pass_model: LLM | None   # what one drafting pass multiplies and reads; None: nothing runs on the cards
    passes: int              # drafting passes per step
    held_block: int          # weights it adds to memory, in the blocks' format
    held_tables: int         # weights it adds to memory kept in 16 bits (its own output matrices)
    cache_layers: int        # layers of KV cache it keeps per token (each of `pass_model`'s shape)

    def held_bytes(self, precision: Precision = BF16_ALL) -> float:
        """Memory the drafter adds to the target's: its weights (shared ones not counted)."""
        return self.held_block * precision.weights.bytes + self.held_tables * ACTIVATION_BYTES

    def cache_bytes_per_token(self, precision: Precision = BF16_ALL) -> float:
        """KV cache the drafter keeps for every token of every request."""
        if self.pass_model is None or not self.cache_layers:
            return 0.0
        return bytes_per_token(self.pass_model, precision.kv.bytes) / self.pass_model.layers * self.cache_layers

    def draft_s(self, acc: Accelerator, cards, batch, context=0.0, precision: Precision = BF16_ALL):
        """Seconds a step spends drafting for `batch` requests: `passes` passes over the batch."""
        batch = np.asarray(batch, dtype=float)
        if self.pass_model is None:
            return np.zeros_like(batch) if batch.ndim else 0.0
        one = step_seconds(acc, self.pass_model, cards, batch, context, precision=precision)
        return self.passes * one


def layer_params(target: LLM) -> int:
    """Weights of one of the target's layers: its block weights shared out over its layers."""
    return target.block_params // target.layers


def _one_block(target: LLM, key: str, name: str) -> LLM:
    """A block of the target's shape behind a 2 hidden x hidden projection, reading the target's
    output head (and looking up its embedding) on every pass: an EAGLE layer or an MTP module."""
    block = layer_params(target) + 2 * target.hidden * target.hidden
    return LLM(key=key, name=name, layers=1, hidden=target.hidden, heads=target.heads, kv_heads=target.kv_heads,
               head_dim=target.head_dim, params=block + 2 * target.vocab * target.hidden, vocab=target.vocab,
               tied_embeddings=False, source=f"one block of {target.name}'s shape",
               experts=target.experts, active_experts=target.active_experts, expert_ffn=target.expert_ffn)


def separate(draft: LLM, k: int) -> Drafter:
    return Drafter("model", f"{draft.name} draft", draft, k, draft.block_params, draft.table_params, draft.layers)


def medusa(target: LLM, k: int) -> Drafter:
    """k heads, one pass: k residual blocks (hidden x hidden) and k output matrices (vocab x hidden)."""
    blocks, outputs = k * target.hidden * target.hidden, k * target.vocab * target.hidden
    heads = LLM(key="medusa", name=f"{k} Medusa heads", layers=1, hidden=target.hidden, heads=0, kv_heads=0,
                head_dim=target.head_dim, params=blocks + outputs, vocab=k * target.vocab, tied_embeddings=True,
                source="Cai et al. 2024, the heads' equation")
    return Drafter("medusa", "Medusa heads", heads, 1, blocks, outputs, 0)


def eagle(target: LLM, k: int) -> Drafter:
    layer = _one_block(target, "eagle", "EAGLE layer")
    return Drafter("eagle", "EAGLE layer", layer, k, layer.block_params, 0, 1)


def mtp(target: LLM, k: int) -> Drafter:
    module = _one_block(target, "mtp", "MTP module")
    return Drafter("mtp", "MTP modules", module, k, k * module.block_params, 0, k)


def lookup(k: int) -> Drafter:
    return Drafter("lookup", "prompt lookup", None, 0, 0, 0, 0)


def drafters(target: LLM, draft: LLM, k: int) -> dict[str, Drafter]:
    """Every kind, for a target, the separate draft model on offer, and k guesses a step."""
    return {"model": separate(draft, k), "medusa": medusa(target, k), "eagle": eagle(target, k),
            "mtp": mtp(target, k), "lookup": lookup(k)}


def step_s(acc: Accelerator, target: LLM, drafter: Drafter, cards, batch, k, context=0.0,
           precision: Precision = BF16_ALL):
    """Drafting, then the verify pass over k + 1 positions a request."""
    return (drafter.draft_s(acc, cards, batch, context, precision)
            + speculative.verify_step_s(acc, target, cards, batch, k, context, precision))


def speedup(acc: Accelerator, target: LLM, drafter: Drafter, cards, batch, a, k, context=0.0,
            precision: Precision = BF16_ALL):
    """Tokens per second with this drafter over plain decoding, same batch."""
    plain = speculative.plain_step_s(acc, target, cards, batch, context, precision)
    return speculative.expected_tokens(a, k) * plain / step_s(acc, target, drafter, cards, batch, k, context, precision)


def slots(acc: Accelerator, target: LLM, drafter: Drafter, cards, context, reserve: float = kvcache.RESERVE,
          precision: Precision = BF16_ALL):
    """Requests that fit at once with the drafter's weights and cache beside the target's
    (`kvcache.slots`, which prices a separate draft the same way)."""
    budget = kvcache.cache_budget(acc, target, cards, None, reserve, precision) - drafter.held_bytes(precision)
    per_request = (bytes_per_token(target, precision.kv.bytes) + drafter.cache_bytes_per_token(precision)) \
        * np.asarray(context, dtype=float)
    with np.errstate(divide="ignore"):
        return np.maximum(np.floor(budget / per_request), 0.0)
