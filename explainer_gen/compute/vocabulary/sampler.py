"""The sampling figures' setting: the real speculative sampler the checks on the speculative-decoding
page run. None of it reads the scenario (the simulation involves no hardware).

A group of terms: `sampler.vocab`, `sampler.alpha(drift)`.

The sample sizes and the vocabulary are settings of the simulation (models/sampling.py), derived as
the values the module sets; the acceptance rate is a closed form over the two distributions.
"""
from __future__ import annotations

import numpy as np

from models import sampling
from models.units import COUNT, RATIO

from ..derivation import Derivation, Symbol, closed_form
from .papers import cite
from .registry import Returns, Topic

topic = Topic("sampler")


_SAMPLE = ("a setting of the sampling figures, a sample size chosen to keep the whole grid of slider positions "
           "to a few tens of milliseconds (models/sampling.py)")


def _setting(quantity: str, name: str, what: str, source: str = _SAMPLE) -> Derivation:
    """A setting of the figures' simulation, as models/sampling.py sets it."""
    return Derivation("value", quantity, float(getattr(sampling, name)), COUNT,
                      method=f"models/sampling.py: {name} = {getattr(sampling, name):,}, {what}", sources=(source,))


def _derive_tokens():
    return _setting("tokens drawn per distribution and slider position", "FIGURE_TOKENS",
                    f"drawn by plain and by speculative sampling (lookahead {sampling.FIGURE_LOOKAHEAD}) at "
                    f"every slider position, with seed {sampling.FIGURE_SEED}")


def _derive_steps():
    return _setting("verify steps simulated per lookahead and slider position", "FIGURE_STEPS",
                    f"run at each lookahead of {', '.join(map(str, sampling.FIGURE_LOOKAHEADS))} and every slider "
                    f"position, with seed {sampling.FIGURE_SEED}")


def _derive_vocab():
    return _setting("vocabulary size of the sampling figures", "FIGURE_VOCAB",
                    "tokens the target and the draft spread their probability over",
                    "a setting of the sampling figures: a small vocabulary (models/sampling.py)")


def _derive_alpha(drift=0.0):
    """sum over tokens of min(p, q), with q = (1 - d) p + d r: `sampling.acceptance` of the target
    and the drifted draft (`sampling.figure_draft`), token by token."""
    d = float(np.asarray(drift))
    p, r = sampling.figure_target(), sampling.figure_far_draft()
    symbols = {"d": Symbol(d, RATIO, "drift of the draft, 0 (the target itself) to 1 (the far draft)")}
    for i, (pi, ri) in enumerate(zip(p, r), 1):
        symbols[f"p{i}"] = Symbol(float(pi), RATIO, f"target's probability of token {i}")
    for i, ri in enumerate(r, 1):
        symbols[f"r{i}"] = Symbol(float(ri), RATIO, f"far draft's probability of token {i}")
    formula = " + ".join(f"min(p{i}, (1 - d) * p{i} + d * r{i})" for i in range(1, len(p) + 1))
    return closed_form(
        f"acceptance rate of the draft drifted by {d:g}: the chance a guess is kept, sum of min(p, q) over the "
        f"{len(p)} tokens, with the draft q = (1 - d) p + d r", RATIO, float(sampler.alpha(drift)), formula,
        (f"models/sampling.py: the target p is a Zipf law of exponent {sampling.FIGURE_ZIPF:g} (figure_target); "
         f"the far draft r the same law of exponent {sampling.FIGURE_FAR_ZIPF:g}, reversed (figure_far_draft); "
         "a guess x is kept with probability min(1, p(x) / q(x)) (acceptance)",
         cite("leviathan2023")),
        **symbols)


class sampler:
    """Sample sizes, vocabulary and lookahead of the sampling figures."""

    @topic.term(depends=(), returns=Returns("count", "tokens drawn per distribution and position"),
                derive=_derive_tokens)
    def tokens() -> float:
        """Tokens drawn per distribution and slider position."""
        return float(sampling.FIGURE_TOKENS)

    @topic.term(depends=(), returns=Returns("count", "verify steps simulated per lookahead"), derive=_derive_steps)
    def steps() -> float:
        """Verify steps simulated per lookahead and slider position."""
        return float(sampling.FIGURE_STEPS)

    @topic.term(depends=(), returns=Returns("count", "vocabulary size of the sampling figures"), derive=_derive_vocab)
    def vocab() -> float:
        return float(sampling.FIGURE_VOCAB)

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate of the drifted draft"), derive=_derive_alpha)
    def alpha(drift=0.0):
        """The acceptance rate, sum of min(p, q), with the draft drifted by `drift` (0 to 1)."""
        return np.vectorize(lambda d: sampling.acceptance(sampling.figure_target(), sampling.figure_draft(d)))(drift)
