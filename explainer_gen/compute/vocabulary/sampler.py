"""The sampling figures' setting: the real speculative sampler the checks on the speculative-decoding
page run. None of it reads the scenario (the simulation involves no hardware).

A group of terms: `sampler.vocab`, `sampler.alpha(drift)`.
"""
from __future__ import annotations

import numpy as np

from models import sampling

from .registry import Topic

topic = Topic("sampler")


class sampler:
    """Sample sizes, vocabulary and lookahead of the sampling figures."""

    @topic.term(depends=())
    def tokens() -> float:
        """Tokens drawn per distribution and slider position."""
        return float(sampling.FIGURE_TOKENS)

    @topic.term(depends=())
    def steps() -> float:
        """Verify steps simulated per lookahead and slider position."""
        return float(sampling.FIGURE_STEPS)

    @topic.term(depends=())
    def vocab() -> float:
        return float(sampling.FIGURE_VOCAB)

    @topic.term(depends=())
    def alpha(drift=0.0):
        """The acceptance rate, sum of min(p, q), with the draft drifted by `drift` (0 to 1)."""
        return np.vectorize(lambda d: sampling.acceptance(sampling.figure_target(), sampling.figure_draft(d)))(drift)
