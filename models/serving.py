"""One server under traffic: continuous batching simulated pass by pass on roofline step times.

Requests arrive as a Poisson process. Each brings a prompt and asks for a number of output
tokens, both drawn from seeded log-normal distributions (`traffic`). The server runs one model
pass at a time (`roofline.pass_time`, priced on plain floats by `PassCost`) and schedules at
every pass, as Orca's iteration-level scheduling does, in one of two ways:

- "prefill-first": when a waiting request can be admitted, the next pass prefills the waiting
  prompts (up to `PREFILL_TOKENS` of them) and every running decode waits for it. Otherwise the
  pass is a decode step: every running request gets one token.
- "chunked" (Sarathi-Serve's chunked prefill): every pass carries all running decodes, and fills
  the rest of a budget of `chunk` positions with pieces of the waiting prompts, first come first
  served, so a decode never stops for a prompt.

The prefill pass of a prompt's last piece gives the request its first token; then it needs one
decode step per further token. Admission is first come, first served, and capped twice: by
`MAX_RUNNING` requests, and by the KV cache that fits (`kvcache.cache_budget`), each request
being charged its whole prompt and output up front, as if the server knew the length of every
answer; nothing is ever preempted or swapped. A `prefix` share of every prompt after the first
is already in the prefix cache: its prefill is skipped, but its keys and values are still read
by the pass that computes the rest of the prompt, and still charged to memory.

All times come from the roofline step time and are floors: no kernel launch, scheduling or
sampling costs; the all-reduces of `roofline.comm_s` are included.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from . import kvcache
from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision
from .roofline import Kernels

# The workload, fixed here so that every figure and number on a page agrees.
N_REQUESTS = 400
SEED = 2403
PROMPT_MEAN, PROMPT_SPREAD, PROMPT_RANGE = 1024, 0.8, (32, 4096)
OUTPUT_MEAN, OUTPUT_SPREAD, OUTPUT_RANGE = 128, 0.8, (1, 1024)
# vLLM's default cap on running sequences (`max_num_seqs`), and a prefill-first pass's cap on
# prompt tokens (its `max_num_batched_tokens` with an 8,192-token model length).
MAX_RUNNING = 256
PREFILL_TOKENS = 8192
SCHEDULERS = ("prefill-first", "chunked")


@dataclass(frozen=True)
class Traffic:
    """A seeded request stream at unit rate: arrival i comes at `unit_arrival[i] / rate`."""

    unit_arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray

    @property
    def n(self) -> int:
        return len(self.prompt)

    @cached_property
    def traced(self) -> int:
        """The request whose timeline a page draws: in the second half of the run, so that the
        server has settled, and the one whose prompt and output are both closest to typical."""
        half = np.arange(self.n // 2, self.n)
        far = (np.abs(np.log(self.prompt[half] / np.median(self.prompt)))
               + np.abs(np.log(self.output[half] / np.median(self.output))))
        return int(half[np.argmin(far)])


def _lengths(rng: np.random.Generator, n: int, mean: float, spread: float, bounds: tuple[int, int]) -> np.ndarray:
    """Log-normal lengths whose mean before clipping is `mean`: exp(s z - s^2 / 2) has mean 1."""
    z = rng.standard_normal(n)
    return np.clip(np.rint(mean * np.exp(spread * z - spread ** 2 / 2.0)), *bounds).astype(int)


@lru_cache(maxsize=8)
def traffic(n: int = N_REQUESTS, seed: int = SEED) -> Traffic:
    """The page's requests. Every rate, scheduler and prefix share serves this same stream
    (common random numbers), so curves differ by the setting, not by the draw."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0, n))
    prompt = _lengths(rng, n, PROMPT_MEAN, PROMPT_SPREAD, PROMPT_RANGE)
    output = _lengths(rng, n, OUTPUT_MEAN, OUTPUT_SPREAD, OUTPUT_RANGE)
    for a in (arrival, prompt, output):
        a.setflags(write=False)
    return Traffic(arrival, prompt, output)


@dataclass(frozen=True)
class PassCost(Kernels):
    """`roofline.pass_time` for one model on given cards, priced on plain floats: the same
    `roofline.Kernels`, whose `seconds` adds up each kernel class at its own roofline,

    seconds = max(weights read, GEMM arithmetic) per GEMM class + max(head read, head arithmetic)
              + looked-up rows + max(cache read, attention arithmetic) + communication,

    where `logits` counts the positions that go through the output head: every decode, and the
    last position of each prompt that a pass finishes. The simulation prices hundreds of
    thousands of passes, one at a time, and plain Python arithmetic is what makes that
    affordable; tests check that `seconds` agrees with `pass_time`.

    A run of decode steps has a closed form: every step carries the same `n` positions, so all
    but attention cost the same each step, and attention reads and attends to the same cache,
    which grows by `n` tokens a step, so it is one line (`decode_steps`).
    """

    @classmethod
    def of(cls, acc: Accelerator, model: LLM, cards: int, precision: Precision = BF16_ALL) -> "PassCost":
        return cls(**vars(Kernels.of(acc, model, cards, precision)))

    def _decode_line(self, n: int, cached: float) -> tuple[float, float]:
        """(first step's seconds, growth a step) of decode steps of `n` requests from `cached` tokens."""
        gemm, head, lookup, _, comm = self.times(n, 0.0, 0.0, n, max)
        per_token = max(self.kv_cached, self.attention_attended)  # decode attends to exactly what it reads
        return gemm + head + lookup + comm + per_token * cached, per_token * n

    def decode_steps(self, n: int, cached: float, steps: int) -> float:
        """Seconds of `steps` decode steps of `n` requests whose caches hold `cached` tokens in
        all at the first step and grow by one token a request each step."""
        return _line_sum(*self._decode_line(n, cached), 0, steps)

    def stretch(self, n: int, cached: float, most: int, seconds: float = math.inf) -> tuple[int, float]:
        """Decode steps of `n` requests from `cached` tokens: the fewest steps, at most `most`,
        that take at least `seconds`, and the time they take (`decode_steps`)."""
        whole = self.decode_steps(n, cached, most)
        if whole < seconds:
            return most, whole
        # The root of K a + b K (K - 1) / 2 = seconds, then the whole step count on either side of it.
        a, b = self._decode_line(n, cached)
        guess = seconds / a if b == 0 else (-(a - b / 2) + math.sqrt((a - b / 2) ** 2 + 2 * b * seconds)) / b
        k = min(max(math.ceil(guess - 1e-9), 1), most)
        while k > 1 and self.decode_steps(n, cached, k - 1) >= seconds:
            k -= 1
        while self.decode_steps(n, cached, k) < seconds:
            k += 1
        return k, self.decode_steps(n, cached, k)


def _line_sum(a: float, b: float, i: int, j: int) -> float:
    """Sum of a + b k over k = i .. j - 1."""
    m = j - i
    return m * a + b * (i + j - 1) * m / 2.0


@dataclass(frozen=True)
class Run:
    """One simulated run. Times in seconds; one entry per request, in arrival order."""

    arrival: np.ndarray
    admitted: np.ndarray      # start of the first pass that worked on its prompt, when its cache is reserved
    first: np.ndarray         # its first token: the end of the pass that finished its prompt
    finish: np.ndarray        # its last token
    output: np.ndarray
    trace: tuple[tuple[str, float, float], ...]  # the traced request: ("queue" | "prefill" | "decode" | "stall", start, end)
    positions: int            # positions computed over all passes: prompt tokens not cached, then one per decode
    peak_reserved: int        # the most KV tokens promised at once
    peak_running: int         # the most requests admitted at once

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token: queueing plus prefill."""
        return self.first - self.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token after the first, for requests that have more than one."""
        many = self.output > 1
        return (self.finish[many] - self.first[many]) / (self.output[many] - 1)

    def meets(self, ttft_s: float, tpot_s: float) -> np.ndarray:
        """Which requests met both objectives (a one-token answer has no time per token)."""
        per_token = np.zeros(len(self.output))
        many = self.output > 1
        per_token[many] = self.tpot
        return (self.ttft <= ttft_s) & (per_token <= tpot_s)


def cache_tokens(acc: Accelerator, model: LLM, cards: int, precision: Precision = BF16_ALL) -> int:
    """Tokens of KV cache that fit beside the weights (`kvcache.cache_budget`)."""
    budget = kvcache.cache_budget(acc, model, cards, precision=precision)
    return int(max(budget, 0.0) // kvcache.cache_bytes_per_token(model, None, precision.kv.bytes))


def run(stream: Traffic, rate: float, scheduler: str, cost: PassCost, capacity: int, chunk: int = 512,
        prefix: float = 0.0, max_running: int = MAX_RUNNING, prefill_tokens: int = PREFILL_TOKENS,
        reserve: int | None = None) -> Run:
    """Serve `stream` at `rate` requests per second; `capacity` is the KV cache in tokens.

    Each admitted request holds cache for its prompt and its whole answer; with `reserve`, for
    its prompt and `reserve` output tokens, whatever its answer's length (as servers did before
    paged attention, reserving the longest answer allowed)."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {SCHEDULERS}, got {scheduler!r}")
    n = stream.n
    arrival = stream.unit_arrival / rate
    prompt = stream.prompt.tolist()
    output = stream.output.tolist()
    need = [p + (o if reserve is None else max(o, reserve)) for p, o in zip(prompt, output)]
    if max(need) > capacity:
        raise ValueError(f"a request needs more KV cache than the {capacity:,} tokens that fit")
    cached0 = [0] + [int(prefix * p) for p in prompt[1:]]  # prompt tokens the prefix cache holds
    arrive = arrival.tolist()
    admitted, first, finish = [0.0] * n, [0.0] * n, [0.0] * n
    traced, trace = stream.traced, []

    def note(kind: str, start: float, end: float) -> None:
        """Add to the traced request's timeline, joining a piece to the one it continues."""
        if trace and trace[-1][0] == kind and trace[-1][2] == start:
            start = trace.pop()[1]
        trace.append((kind, start, end))

    t = 0.0
    nxt = 0                      # next request to arrive
    waiting: deque[int] = deque()
    filling: deque[list[int]] = deque()  # admitted, prompt not done: [request, prompt tokens in cache]
    reserved = 0                 # KV tokens promised to admitted requests
    running = 0                  # admitted requests, prompt or decode
    decoding: list[tuple[int, int]] = []  # heap of (decode step of its last token, request)
    joined: dict[int, int] = {}  # decode step at which each decoding request joined
    step = 0                     # decode steps so far
    cached = 0                   # KV tokens the decoding requests hold between them
    done = 0
    positions = 0
    peak_reserved = peak_running = 0

    def start_decoding(i: int) -> None:
        nonlocal cached, running, reserved, done
        first[i] = t
        if output[i] == 1:
            finish[i] = t
            running -= 1
            reserved -= need[i]
            done += 1
        else:
            heapq.heappush(decoding, (step + output[i] - 1, i))
            joined[i] = step
            cached += prompt[i]

    def finish_decodes() -> None:
        nonlocal cached, running, reserved, done
        while decoding and decoding[0][0] <= step:
            _, i = heapq.heappop(decoding)
            finish[i] = t
            cached -= prompt[i] + step - joined.pop(i)
            running -= 1
            reserved -= need[i]
            done += 1

    def admissible() -> bool:
        i = waiting[0]
        return running < max_running and reserved + need[i] <= capacity

    while done < n:
        while nxt < n and arrive[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if not (waiting or filling or decoding):
            t = arrive[nxt]
            continue
        if scheduler == "prefill-first" and waiting and admissible():
            batch: list[int] = []
            work = 0
            while waiting and admissible() and (not batch or work + prompt[waiting[0]] - cached0[waiting[0]] <= prefill_tokens):
                i = waiting.popleft()
                batch.append(i)
                work += prompt[i] - cached0[i]
                running += 1
                reserved += need[i]
                admitted[i] = t
            peak_reserved, peak_running = max(peak_reserved, reserved), max(peak_running, running)
            read = sum(cached0[i] for i in batch)
            attended = sum((prompt[i] - cached0[i]) * (cached0[i] + (prompt[i] - cached0[i]) / 2.0) for i in batch)
            start = t
            t += cost.seconds(work, read, attended, len(batch))  # each prompt's last position makes a token
            positions += work
            if traced in joined:
                note("stall", start, t)
            if traced in batch:
                note("prefill", start, t)
            for i in batch:
                start_decoding(i)
            continue
        if scheduler == "chunked" and (filling or (waiting and admissible())) and len(decoding) < chunk:
            # Admission happens here, as a request gets its first piece: its cache is reserved
            # when the server starts writing it, and not before.
            budget = chunk - len(decoding)
            tokens, read, attended = len(decoding), cached, float(cached)
            logits = len(decoding)
            pieces = []
            k = 0
            while budget > 0:
                if k == len(filling):
                    if not (waiting and admissible()):
                        break
                    i = waiting.popleft()
                    filling.append([i, cached0[i]])
                    running += 1
                    reserved += need[i]
                    admitted[i] = t
                entry = filling[k]
                k += 1
                i, have = entry
                take = min(budget, prompt[i] - have)
                pieces.append((entry, take))
                logits += have + take == prompt[i]  # the piece that ends a prompt makes its first token
                tokens += take
                read += have
                attended += take * (have + take / 2.0)
                budget -= take
            peak_reserved, peak_running = max(peak_reserved, reserved), max(peak_running, running)
            start = t
            t += cost.seconds(tokens, read, attended, logits)
            positions += tokens
            if decoding:
                step += 1
                cached += len(decoding)
                if decoding[0][0] <= step:
                    finish_decodes()
            for entry, take in pieces:
                entry[1] += take
                if entry[0] == traced:
                    note("prefill", start, t)
            while filling and filling[0][1] == prompt[filling[0][0]]:
                start_decoding(filling.popleft()[0])
            continue
        # Decode steps only, until the next request finishes or, if the queue is empty and so a
        # newcomer could start at once, until the next arrival.
        if not decoding:
            raise RuntimeError("no request can run, and none is running")  # admission guarantees one fits
        until = arrive[nxt] - t if nxt < n and not waiting and not filling else math.inf
        most, spent = cost.stretch(len(decoding), cached, decoding[0][0] - step, until)
        t += spent
        positions += len(decoding) * most
        cached += len(decoding) * most
        step += most
        if decoding[0][0] <= step:
            finish_decodes()

    a = np.asarray
    if stream.output[traced] > 1:
        trace.append(("decode", first[traced], finish[traced]))
    trace.insert(0, ("queue", arrive[traced], admitted[traced]))
    return Run(arrival, a(admitted), a(first), a(finish), stream.output, tuple(trace), positions,
               peak_reserved, peak_running)


def simulate(scheduler: str, rate: float, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
             precision: Precision = BF16_ALL, n: int = N_REQUESTS, seed: int = SEED) -> Run:
    """The page's stream through one server. Deterministic, so memoised: figures and prose ask
    for the same runs. The returned Run is shared; treat it as read-only."""
    return _simulate(*_key(scheduler, rate, chunk, prefix), acc, model, int(cards), precision, n, seed)


def _key(scheduler: str, rate: float, chunk: int, prefix: float) -> tuple:
    """A setting as the memos key it: prefill-first has no chunk, so one run serves every chunk."""
    return scheduler, float(rate), int(chunk) if scheduler == "chunked" else 0, round(float(prefix), 6)


@lru_cache(maxsize=4096)
def _simulate(scheduler, rate, chunk, prefix, acc, model, cards, precision, n, seed) -> Run:
    cost = PassCost.of(acc, model, cards, precision)
    return run(traffic(n, seed), rate, scheduler, cost, cache_tokens(acc, model, cards, precision), chunk, prefix)


# The latency objective the page judges runs by: our choice, stated on the page. A first token
# within a second, and then tokens at 20 a second or faster, for 99 requests in 100.
TTFT_OBJECTIVE = 1.0
TPOT_OBJECTIVE = 0.050
QUANTILE = 0.99


@dataclass(frozen=True)
class Summary:
    """What a page shows of one run: latencies in seconds, rates in requests per second."""

    ttft_median: float
    ttft_p99: float
    tpot_median: float
    tpot_p99: float
    goodput: float      # requests per second that met both objectives
    meets: bool         # both p99s within the objective

    @classmethod
    def of(cls, run: Run, rate: float, ttft_s: float = TTFT_OBJECTIVE, tpot_s: float = TPOT_OBJECTIVE) -> "Summary":
        ttft, tpot = run.ttft, run.tpot
        t99, p99 = float(np.quantile(ttft, QUANTILE)), float(np.quantile(tpot, QUANTILE))
        return cls(float(np.median(ttft)), t99, float(np.median(tpot)), p99,
                   rate * float(run.meets(ttft_s, tpot_s).mean()), t99 <= ttft_s and p99 <= tpot_s)


def capacity(rates, ttft_p99, tpot_p99, ttft_s: float = TTFT_OBJECTIVE, tpot_s: float = TPOT_OBJECTIVE) -> float:
    """The highest arrival rate at which both p99s stay within the objective, read between the
    simulated rates by linear interpolation of the p99s. 0 if even the lowest rate fails; the
    highest rate if none does. Rates must increase."""
    rates, ttft_p99, tpot_p99 = (np.asarray(x, dtype=float) for x in (rates, ttft_p99, tpot_p99))
    ok = (ttft_p99 <= ttft_s) & (tpot_p99 <= tpot_s)
    if not ok[0]:
        return 0.0
    if ok.all():
        return float(rates[-1])
    j = int(np.argmin(ok))   # the first rate that fails; the one before it passes
    edge = rates[j]
    for p99, limit in ((ttft_p99, ttft_s), (tpot_p99, tpot_s)):
        if p99[j] > limit:
            share = (limit - p99[j - 1]) / (p99[j] - p99[j - 1])
            edge = min(edge, rates[j - 1] + share * (rates[j] - rates[j - 1]))
    return float(edge)


def summary(scheduler: str, rate: float, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
            precision: Precision = BF16_ALL, seed: int = SEED, n: int = N_REQUESTS) -> Summary:
    """`Summary.of` the page's run at one setting (memoised under the same key as the run)."""
    return _summary(*_key(scheduler, rate, chunk, prefix), acc, model, int(cards), precision, n, seed)


@lru_cache(maxsize=8192)
def _summary(scheduler, rate, chunk, prefix, acc, model, cards, precision, n, seed) -> Summary:
    return Summary.of(_simulate(scheduler, rate, chunk, prefix, acc, model, cards, precision, n, seed), rate)


def sweep(scheduler: str, rates, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
          precision: Precision = BF16_ALL) -> list[Summary]:
    """One summary per arrival rate."""
    return [summary(scheduler, float(r), chunk, prefix, acc, model, cards, precision) for r in rates]


def capacity_of(scheduler: str, rates, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                precision: Precision = BF16_ALL) -> float:
    """`capacity` over a sweep of the page's runs."""
    runs = sweep(scheduler, rates, chunk, prefix, acc, model, cards, precision)
    return capacity(rates, [s.ttft_p99 for s in runs], [s.tpot_p99 for s in runs])


def capacity_near(p99_at, rates, start: int) -> float:
    """`capacity`, evaluating p99s only where needed: `p99_at(i)` gives (TTFT p99, TPOT p99) at
    `rates[i]`. From `start`, a guess at the first rate that fails, walk down while the rate below
    also fails, or up while this one passes, and interpolate across the edge found. Runs far from
    the edge are never made, which is what makes long or repeated runs affordable."""
    def ok(i):
        ttft, tpot = p99_at(i)
        return ttft <= TTFT_OBJECTIVE and tpot <= TPOT_OBJECTIVE

    j = min(max(start, 0), len(rates) - 1)
    if ok(j):
        while j + 1 < len(rates) and ok(j + 1):
            j += 1
        if j + 1 == len(rates):
            return float(rates[-1])
        j += 1
    else:
        while j > 0 and not ok(j - 1):
            j -= 1
        if j == 0:
            return 0.0
    pair = [p99_at(j - 1), p99_at(j)]
    return capacity(rates[j - 1:j + 1], [x[0] for x in pair], [x[1] for x in pair])


def _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision) -> int:
    runs = sweep(scheduler, rates, chunk, prefix, acc, model, cards, precision)
    fails = [i for i, r in enumerate(runs) if not r.meets]
    return fails[0] if fails else len(rates) - 1


def _p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, seed=SEED, n=N_REQUESTS):
    """`capacity_near`'s p99_at for one setting, draw and run length."""
    def p99_at(i):
        s = summary(scheduler, float(rates[i]), chunk, prefix, acc, model, cards, precision, seed, n)
        return s.ttft_p99, s.tpot_p99
    return p99_at


# Runs long enough to meet the rarer pile-ups that set a steady stream's p99.
LONG_REQUESTS = 5000


def steady_capacity(scheduler: str, rates, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                    precision: Precision = BF16_ALL, n: int = LONG_REQUESTS) -> float:
    """Capacity read from runs of `n` requests instead of the page's `N_REQUESTS`. A p99 over a
    short run is usually lower than over a long one, which meets more of the rare moments when
    arrivals bunch up, so this is the figure for a steady stream of traffic."""
    rates = np.asarray(rates, dtype=float)
    start = _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision)
    return capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, SEED, n), rates, start)


# Other seeds, for the statistical error a page states: the same setting, a fresh draw each.
ERROR_SEEDS = tuple(range(SEED + 1, SEED + 9))


def seed_spread(scheduler: str, rate: float, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                precision: Precision = BF16_ALL, field: str = "ttft_p99") -> float:
    """How much one `Summary` field moves between draws of the traffic: the standard deviation of
    its value over `ERROR_SEEDS`, relative to their mean. It is the error of one run of
    `N_REQUESTS` requests, the size of every run a page draws."""
    values = np.array([getattr(summary(scheduler, rate, chunk, prefix, acc, model, cards, precision, seed), field)
                       for seed in ERROR_SEEDS])
    return float(values.std(ddof=1) / values.mean())


def capacity_spread(scheduler: str, rates, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                    precision: Precision = BF16_ALL) -> float:
    """`seed_spread` for the capacity: its relative standard deviation over `ERROR_SEEDS`."""
    rates = np.asarray(rates, dtype=float)
    start = _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision)

    values = np.array([capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, seed),
                                     rates, start) for seed in ERROR_SEEDS])
    return float(values.std(ddof=1) / values.mean())


def prefill_alone(cost: PassCost, prompt: int, chunk: int | None = None) -> float:
    """Seconds to prefill one `prompt`-token prompt on an idle server: in one pass, or in pieces
    of `chunk` positions, each pass reading all the weights again."""
    pieces = [prompt] if chunk is None else [min(chunk, prompt - start) for start in range(0, prompt, chunk)]
    total, have = 0.0, 0
    for take in pieces:
        total += cost.seconds(take, have, take * (have + take / 2.0), 1 if have + take == prompt else 0)
        have += take
    return total
