"""Arithmetic an expression may use besides + - * / ** //. None of it reads the scenario."""
from __future__ import annotations

import numpy as np

from .registry import Topic

topic = Topic("arithmetic")

topic.add("min", np.minimum, depends=())
topic.add("max", np.maximum, depends=())
topic.add("abs", np.abs, depends=())


@topic.term("round", depends=())
def round_(x, decimals=0):
    """round(x, 1): to one decimal, so that 162.0 can show as 162 under .4g."""
    return np.round(x, decimals)
