"""Number formats: the bytes a weight or a cached key or value takes, and the peak its products run at.

A `Precision` names two formats: one for the weights of the transformer blocks, one for the KV
cache. Everything else stays in 16 bits, as quantised checkpoints and serving engines keep it:

- the input embedding and the output head (AWQ, GPTQ and FP8 checkpoints leave both unquantised;
  `LLM.table_params`), and the activations, so the all-reduces between cards carry 16-bit values;
- attention's arithmetic: an FP8 cache is widened to 16 bits before its products.

The block weights' format sets the peak their products run at: FP8 weights with FP8 activations
use the card's FP8 tensor peak where it has one (`Accelerator.peak`); INT4 weights are unpacked to
16 bits first (weight-only), so they cut bytes but not arithmetic time.
"""
from __future__ import annotations

from dataclasses import dataclass

ACTIVATION_BYTES = 2  # 16-bit activations, embedding and output head, whatever the weights' format


@dataclass(frozen=True)
class NumberFormat:
    key: str
    name: str
    bits: float        # per value stored, scales and zero points included
    arithmetic: str    # the tensor peak products with these weights run at: "bf16" or "fp8"
    source: str

    @property
    def bytes(self) -> float:
        return self.bits / 8.0


BF16 = NumberFormat("bf16", "BF16", 16, "bf16", "bfloat16: 1 sign, 8 exponent and 7 fraction bits")
FP8 = NumberFormat("fp8", "FP8", 8, "fp8",
                   "FP8 E4M3 (Micikevicius et al. 2022, arXiv 2209.05433): 8 bits a value; one scale per "
                   "tensor, too few to count")
# AWQ as AutoAWQ packs it: 4-bit weights in groups of 128 inputs, each group with a 16-bit scale
# and a 4-bit zero point, so 4 + (16 + 4) / 128 bits a weight.
INT4_GROUP = 128
INT4 = NumberFormat("int4", "INT4 weight-only", 4 + (16 + 4) / INT4_GROUP, "bf16",
                    "AWQ (Lin et al., MLSys 2024, arXiv 2306.00978), groups of 128 weights with a 16-bit scale "
                    "and a 4-bit zero point each; unpacked to 16 bits for the products")

WEIGHT_FORMATS = {f.key: f for f in (BF16, FP8, INT4)}
KV_FORMATS = {f.key: f for f in (BF16, FP8)}


@dataclass(frozen=True)
class Precision:
    """The block weights' format and the KV cache's: all 16-bit unless told otherwise."""

    weights: NumberFormat = BF16
    kv: NumberFormat = BF16

    @classmethod
    def of(cls, weights: str = "bf16", kv: str = "bf16") -> "Precision":
        return cls(WEIGHT_FORMATS[weights], KV_FORMATS[kv])


BF16_ALL = Precision()
