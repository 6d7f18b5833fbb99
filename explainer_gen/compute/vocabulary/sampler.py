"""The sampling figures' setting: the real speculative sampler the checks on the speculative-decoding
page run. None of it reads the scenario (the simulation involves no hardware).

A group of terms: `sampler.vocab`, `sampler.alpha(drift)`.
"""
from __future__ import annotations

import numpy as np

from models import sampling

from .registry import Returns, Topic

topic = Topic("sampler")


class sampler:
    """Sample sizes, vocabulary and lookahead of the sampling figures."""

    @topic.term(depends=(), returns=Returns("count", "tokens drawn per distribution and position"))
    def tokens() -> float:
        """Tokens drawn per distribution and slider position."""
        return float(sampling.FIGURE_TOKENS)

    @topic.term(depends=(), returns=Returns("count", "verify steps simulated per lookahead"))
    def steps() -> float:
        """Verify steps simulated per lookahead and slider position."""
        return float(sampling.FIGURE_STEPS)

    @topic.term(depends=(), returns=Returns("count", "vocabulary size of the sampling figures"))
    def vocab() -> float:
        return float(sampling.FIGURE_VOCAB)

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate of the drifted draft"))
    def alpha(drift=0.0):
        """The acceptance rate, sum of min(p, q), with the draft drifted by `drift` (0 to 1)."""
        return np.vectorize(lambda d: sampling.acceptance(sampling.figure_target(), sampling.figure_draft(d)))(drift)
