"""Answering a pure function's repeated calls from memory (the vocabulary's terms are pure:
vocabulary/registry.py)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np


def remembering(fn: Callable) -> Callable:
    """`fn`, answering a call it has answered before from memory: for terms, which are pure
    functions of what they are given (vocabulary/registry.py). Arguments that cannot be told
    apart by value are not remembered."""
    memory: dict = {}

    def key(v: Any):
        if isinstance(v, np.ndarray):
            return ("array", v.shape, v.dtype.str, v.tobytes())
        hash(v)
        return (type(v), v)  # 1, 1.0 and True are equal, but need not give the same answer

    def call(*args, **kwargs):
        try:
            k = (tuple(key(a) for a in args), tuple(sorted((n, key(v)) for n, v in kwargs.items())))
        except TypeError:
            return fn(*args, **kwargs)
        if k not in memory:
            memory[k] = fn(*args, **kwargs)
        return memory[k]
    return call
