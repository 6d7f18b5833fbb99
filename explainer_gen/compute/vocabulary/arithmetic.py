"""Arithmetic an expression may use besides + - * / ** //. None of it reads the scenario."""
from __future__ import annotations

import numpy as np

from .registry import AS_ARGUMENTS, Returns, Topic

topic = Topic("arithmetic")

topic.add("min", np.minimum, depends=(), returns=Returns(AS_ARGUMENTS, "smaller of its arguments"))
topic.add("max", np.maximum, depends=(), returns=Returns(AS_ARGUMENTS, "larger of its arguments"))
topic.add("abs", np.abs, depends=(), returns=Returns(AS_ARGUMENTS, "absolute value of its argument"))


@topic.term("round", depends=(), returns=Returns(AS_ARGUMENTS, "its argument, rounded"))
def round_(x, decimals=0):
    """round(x, 1): to one decimal, so that 162.0 can show as 162 under .4g."""
    return np.round(x, decimals)
