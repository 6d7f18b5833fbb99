"""Answering a pure function's repeated calls from memory (the vocabulary's terms are pure:
vocabulary/registry.py)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

# Arguments that are their own key but for their type: a check of the build's choices of words
# calls terms a hundred thousand times, nearly always with these, so they skip the general case.
_PLAIN = frozenset((float, int, str, bool, type(None)))
_MISSING = object()


def remembering(fn: Callable) -> Callable:
    """`fn`, answering a call it has answered before from memory: for terms, which are pure
    functions of what they are given (vocabulary/registry.py). Arguments that cannot be told
    apart by value are not remembered."""
    memory: dict = {}

    def key(v: Any):
        t = type(v)
        if t in _PLAIN:  # hashable: no need to try
            return (t, v)
        if isinstance(v, np.ndarray):
            return ("array", v.shape, v.dtype.str, v.tobytes())
        hash(v)
        return (t, v)  # 1, 1.0 and True are equal, but need not give the same answer

    def call(*args, **kwargs):
        try:
            k = (tuple(map(key, args)), tuple(sorted((n, key(v)) for n, v in kwargs.items())) if kwargs else ())
        except TypeError:
            return fn(*args, **kwargs)
        out = memory.get(k, _MISSING)
        if out is _MISSING:
            out = memory[k] = fn(*args, **kwargs)
        return out
    return call
