"""Sliders that more than one figure kind or vocabulary topic shares: their one home.

A slider named the same on several figures of a page moves them together, so the kinds that share
one must declare the very same slider; and a term that reads a slider's default (the serving
page's chunk size, say) must read the figures' own. Each lives here, and the kinds and terms
import it from here rather than from one another.
"""
from __future__ import annotations

from ..sources.controls import Slider

# The roofline, step-time and prefill-vs-decode figures: one prompt slider and one batch slider,
# so that moving either on the roofline page moves every figure that shows it.
PHASE_SLIDERS = {
    "prompt": Slider("prompt", "Prompt length (tokens)", 128, 8192, 128, 2048, "count"),
    "batch": Slider("batch", "Decode batch (requests)", 1, 513, 8, 1, "count"),
}

# The serving figures, and the serving terms' defaults. RATE's positions are also the arrival rates
# the latency and goodput figures draw along their x axis.
RATE = Slider("rate", "Arrival rate (requests per second)", 4, 32, 4, 16, "rate")
CHUNK = Slider("chunk", "Chunk size (positions per pass)", 512, 2048, 512, 512, "count")
PREFIX = Slider("prefix", "Share of each prompt already cached", 0.0, 0.6, 0.3, 0.0, "ratio")

# The speculative-decoding figures (speed-up, tokens, trees): one acceptance rate and one lookahead,
# so that moving either on a page moves every figure that shows it.
ACCEPTANCE = Slider("a", "Acceptance rate", 0.05, 0.95, 0.05, 0.8, "ratio")
LOOKAHEAD = Slider("k", "Lookahead", 1, 8, 1, 4, "count")

# The sampling figures: how far the draft's distribution drifts from the target's.
DRIFT = Slider("drift", "Draft drift from the target", 0.0, 1.0, 0.1, 0.5, "ratio")
