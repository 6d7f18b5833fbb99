"""Static against continuous batching, simulated step by step on roofline step times.

Decoding runs in iterations: each pass of the model gives every running request one token.
A static scheduler fills its B slots, then keeps them until the longest request of the group
finishes; slots whose request ended early sit idle. A continuous (iteration-level) scheduler
hands a freed slot to the next waiting request at the very next iteration.

Both schedulers get the same requests, all waiting at time zero, served in the same order. A
pass costs `roofline.step_time` over the requests that are actually running, each reading its
KV cache: its prompt of `context` tokens plus what it has generated so far. The only
difference between the two is how full the slots are kept. Prefill is left out.
"""
from __future__ import annotations

import heapq
from functools import lru_cache
from dataclasses import dataclass

import numpy as np

from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision
from .roofline import step_time

# The request set every page and figure uses: fixed here so that prose and figures agree.
N_REQUESTS = 64
MEAN_TOKENS = 64
MAX_TOKENS = 256  # servers cap output length; the cap also keeps one outlier from owning the run
SEED = 2022


def output_lengths(spread: float, n: int = N_REQUESTS, mean: float = MEAN_TOKENS, seed: int = SEED,
                   cap: int = MAX_TOKENS) -> np.ndarray:
    """Output lengths (tokens) of `n` seeded requests, log-normal with the given log spread.

    The same standard-normal draws are scaled for every spread, so moving the spread stretches
    one request set rather than drawing a new one; exp(s z - s^2 / 2) keeps the mean near `mean`
    (the cap trims it a little). Spread 0 gives every request the same length.
    """
    z = np.random.default_rng(seed).standard_normal(n)
    lengths = np.rint(mean * np.exp(spread * z - spread ** 2 / 2.0))
    return np.clip(lengths, 1, cap).astype(int)


@dataclass(frozen=True)
class Run:
    """One scheduler's run over a request set. Steps are model passes; times in seconds."""

    slot: np.ndarray        # slot each request ran in
    start: np.ndarray       # first step of each request
    end: np.ndarray         # step after its last token
    release: np.ndarray     # step at which its slot was free again (end, or its group's end)
    active: np.ndarray      # running requests in each step
    step_s: np.ndarray      # duration of each step
    clock: np.ndarray       # time at each step boundary: clock[s] is when step s starts

    @property
    def tokens(self) -> int:
        """Tokens emitted: one per running request per step."""
        return int(self.active.sum())

    @property
    def seconds(self) -> float:
        return float(self.clock[-1])

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    def start_s(self) -> np.ndarray:
        return self.clock[self.start]

    def end_s(self) -> np.ndarray:
        return self.clock[self.end]

    def release_s(self) -> np.ndarray:
        return self.clock[self.release]

    @property
    def occupancy(self) -> float:
        """Share of slot-time spent running a request, over the whole run."""
        return float((self.active * self.step_s).sum() / (self.slots_held * self.seconds))

    @property
    def slots_held(self) -> int:
        return int(self.slot.max()) + 1


def _timed(acc: Accelerator, model: LLM, cards, context, slot, start, end, release,
           precision: Precision = BF16_ALL) -> Run:
    """Count running requests per step and price each step on the roofline."""
    steps = int(end.max())
    # +1 where a request starts, -1 where it ends; the running sum is the active count.
    delta = np.bincount(start, minlength=steps + 1) - np.bincount(end, minlength=steps + 1)
    active = np.cumsum(delta)[:steps]
    # The cache a step reads: every running request's prompt, plus the s - start tokens it has
    # made by step s; the running sum of the starts of running requests gives the second part.
    started = (np.bincount(start, weights=start, minlength=steps + 1)
               - np.bincount(end, weights=start, minlength=steps + 1))
    made = np.arange(steps) * active - np.cumsum(started)[:steps]
    running = np.maximum(active, 1)
    step_s = step_time(acc, model, cards, running, context + made / running, precision=precision).seconds
    clock = np.concatenate([[0.0], np.cumsum(step_s)])
    return Run(slot, start, end, release, active, step_s, clock)


def static(lengths: np.ndarray, batch: int, acc: Accelerator, model: LLM, cards, context=0,
           precision: Precision = BF16_ALL) -> Run:
    """Groups of `batch` requests in order; a group starts when the previous one has all finished."""
    lengths = np.asarray(lengths, dtype=int)
    group = np.arange(len(lengths)) // batch
    longest = np.maximum.reduceat(lengths, np.arange(0, len(lengths), batch))
    group_start = np.concatenate([[0], np.cumsum(longest)[:-1]])
    start = group_start[group]
    end = start + lengths
    release = (group_start + longest)[group]
    return _timed(acc, model, cards, context, np.arange(len(lengths)) % batch, start, end, release, precision)


def continuous(lengths: np.ndarray, batch: int, acc: Accelerator, model: LLM, cards, context=0,
               precision: Precision = BF16_ALL) -> Run:
    """Each request, in order, takes the slot that frees first (the lowest slot on a tie).

    Inherently sequential (each choice depends on the ones before); a heap keeps it O(n log B).
    """
    lengths = np.asarray(lengths, dtype=int)
    free = [(0, s) for s in range(min(batch, len(lengths)))]
    slot, start = np.empty(len(lengths), dtype=int), np.empty(len(lengths), dtype=int)
    for i, n in enumerate(lengths):
        t, s = heapq.heappop(free)
        slot[i], start[i] = s, t
        heapq.heappush(free, (t + int(n), s))
    end = start + lengths
    return _timed(acc, model, cards, context, slot, start, end, end, precision)


SCHEDULERS = {"static": static, "continuous": continuous}


@lru_cache(maxsize=4096)
def simulate(scheduler: str, batch: int, spread: float, acc: Accelerator, model: LLM, cards, context=0,
             n: int = N_REQUESTS, mean: float = MEAN_TOKENS, seed: int = SEED,
             precision: Precision = BF16_ALL) -> Run:
    """Run the seeded request set at `spread` through one scheduler with `batch` slots, every
    request starting from a prompt of `context` tokens already in its cache.

    Deterministic, so memoised: a page's figure and its prose ask for the same runs.
    The returned Run is shared; treat it as read-only.
    """
    return SCHEDULERS[scheduler](output_lengths(spread, n, mean, seed), int(batch), acc, model, cards, context,
                                 precision)


def tokens_per_s(scheduler: str, batch, spread, acc: Accelerator, model: LLM, cards, context=0, **kw) -> np.ndarray:
    """Throughput of one scheduler, broadcast over arrays of batch sizes and spreads."""
    batch, spread = np.broadcast_arrays(np.asarray(batch, dtype=float), np.asarray(spread, dtype=float))
    out = np.empty(batch.shape)
    for idx in np.ndindex(batch.shape):
        out[idx] = simulate(scheduler, int(batch[idx]), float(spread[idx]), acc, model, cards, context, **kw).tokens_per_s
    return out
