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

import dataclasses
import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from . import kvcache
from .catalogue import LLM, Accelerator
from .precision import BF16_ALL, Precision
from .roofline import FLOOR, Efficiency, Kernels

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

    eff: Efficiency = FLOOR  # the kernels' shares and fixed costs: the floor, or an estimate's (models.estimate)

    @classmethod
    def of(cls, acc: Accelerator, model: LLM, cards: int, precision: Precision = BF16_ALL,
           eff: Efficiency = FLOOR) -> "PassCost":
        k = Kernels.of(acc, model, cards, precision)
        return cls(**{f.name: getattr(k, f.name) for f in dataclasses.fields(Kernels)}, eff=eff)

    def seconds(self, tokens: float, cached: float, attended: float, logits: float | None = None,
                eff: Efficiency | None = None) -> float:
        return Kernels.seconds(self, tokens, cached, attended, logits, self.eff if eff is None else eff)

    def _decode_line(self, n: int, cached: float) -> tuple[float, float]:
        """(first step's seconds, growth a step) of decode steps of `n` requests from `cached` tokens."""
        per_token = self._per_cached_token
        return self._uncached(n) + per_token * cached, per_token * n

    @cached_property
    def _per_cached_token(self) -> float:
        """A decode step's attention seconds for each token its requests hold in cache: the same
        at every step (a run asks for it hundreds of thousands of times), so made once."""
        # Decode attends to exactly what it reads.
        eff = self.eff
        per_token = (max(self.kv_cached, self.attention_attended) if eff is FLOOR
                     else eff.join(self.kv_cached / eff.bandwidth, self.attention_attended / eff.bf16, max))
        per_token *= eff.scale
        return per_token

    def _uncached(self, n: int) -> float:
        """A decode step of `n` requests without its attention: the same at every step of a run,
        so kept per `n` (a run asks for it hundreds of thousands of times)."""
        memo = self.__dict__.setdefault("_memo", {})
        if n not in memo:
            gemm, head, lookup, _, comm = self.times(n, 0.0, 0.0, n, max, self.eff)
            memo[n] = (gemm + head + lookup + comm + self.eff.fixed(self.layers)) * self.eff.scale
        return memo[n]

    def decode_steps(self, n: int, cached: float, steps: int) -> float:
        """Seconds of `steps` decode steps of `n` requests whose caches hold `cached` tokens in
        all at the first step and grow by one token a request each step."""
        return _line_sum(*self._decode_line(n, cached), 0, steps)

    def stretch(self, n: int, cached: float, most: int, seconds: float = math.inf) -> tuple[int, float]:
        """Decode steps of `n` requests from `cached` tokens: the fewest steps, at most `most`,
        that take at least `seconds`, and the time they take (`decode_steps`)."""
        return self._stretch(n, cached, most, seconds)[:2]

    def _stretch(self, n: int, cached: float, most: int, seconds: float) -> tuple[int, float, float, float]:
        """`stretch`, and the line its steps lie on (`_decode_line`), which the simulation needs too."""
        a, b = self._decode_line(n, cached)  # `decode_steps` of k steps is _line_sum(a, b, 0, k)
        whole = _line_sum(a, b, 0, most)
        if whole < seconds:
            return most, whole, a, b
        # The root of K a + b K (K - 1) / 2 = seconds, then the whole step count on either side of it.
        guess = seconds / a if b == 0 else (-(a - b / 2) + math.sqrt((a - b / 2) ** 2 + 2 * b * seconds)) / b
        k = min(max(math.ceil(guess - 1e-9), 1), most)
        while k > 1 and _line_sum(a, b, 0, k - 1) >= seconds:
            k -= 1
        while _line_sum(a, b, 0, k) < seconds:
            k += 1
        return k, _line_sum(a, b, 0, k), a, b


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
    # Every gap between two consecutive tokens of a request, in runs: row (first, growth, steps,
    # weight) stands for `weight` gaps of first + growth x s seconds for each s < steps. A run of
    # decode steps whose cache grows is one row; a step after a stall, one row of one step.
    gaps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 4)))

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token: queueing plus prefill."""
        return self.first - self.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token after the first, for requests that have more than one: each
        request's mean gap between its tokens (MLPerf's TPOT, whose p99 is over requests)."""
        many = self.output > 1
        return (self.finish[many] - self.first[many]) / (self.output[many] - 1)

    def tbt(self, q):
        """The q-quantile of the time between tokens (TBT): over every gap between two consecutive
        tokens of any request, each gap counted once (Sarathi-Serve's objective is its p99). The
        smallest gap that at least a share q of all gaps do not exceed (the inverted CDF). `q` may
        be a sequence: one quantile each."""
        return gap_quantile(self.gaps, q)

    def meets(self, ttft_s: float, tpot_s: float) -> np.ndarray:
        """Which requests met both objectives (a one-token answer has no time per token)."""
        per_token = np.zeros(len(self.output))
        many = self.output > 1
        per_token[many] = self.tpot
        return (self.ttft <= ttft_s) & (per_token <= tpot_s)


def gap_quantile(gaps: np.ndarray, q):
    """`Run.tbt` on rows of (first, growth, steps, weight): every row written out one gap length
    at a time with its weight, sorted, and the smallest length whose cumulative weight reaches a
    share q of all; for every quantile in `q` together."""
    qs = np.atleast_1d(np.asarray(q, dtype=float))
    if not len(gaps):
        out = np.full(qs.shape, math.nan)
    else:
        first, growth, steps, weight = gaps.T
        count = steps.astype(np.int64)
        row = np.repeat(np.arange(len(gaps)), count)
        s = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        length = first[row] + growth[row] * s
        order = np.argsort(length, kind="stable")
        cum = np.cumsum(weight[row][order])
        out = length[order][np.minimum(np.searchsorted(cum, qs * cum[-1], side="left"), len(cum) - 1)]
    return float(out[0]) if np.ndim(q) == 0 else out


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
    cached0 = prefix_cached(stream.prompt, prefix).tolist()  # prompt tokens the prefix cache holds
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
    # Gaps between tokens: every decoding request that had a token at `tick` (the end of the last
    # decode step) has its next gap measured from there; one that joined since has its own start.
    tick, at_tick, joiners, gaps = 0.0, 0, [], []

    def ticked(end: float, first_step: float, growth: float, steps: int) -> None:
        """Decode steps of every decoding request ended: the first at `end`, then `steps` - 1 more,
        each `growth` longer than the one before it, starting from `first_step`."""
        nonlocal tick, at_tick, joiners
        if at_tick:
            gaps.append((end - tick, 0.0, 1, at_tick))
        for f in joiners:
            gaps.append((end - f, 0.0, 1, 1))
        if steps > 1:
            gaps.append((first_step + growth, growth, steps - 1, len(decoding)))
        joiners = []

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
            joiners.append(t)

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
                ticked(t, t - start, 0.0, 1)
                step += 1
                cached += len(decoding)
                if decoding[0][0] <= step:
                    finish_decodes()
                tick, at_tick = t, len(decoding)
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
        most, spent, first_step, growth = cost._stretch(len(decoding), cached, decoding[0][0] - step, until)
        ticked(t + first_step, first_step, growth, most)
        t += spent
        positions += len(decoding) * most
        cached += len(decoding) * most
        step += most
        if decoding[0][0] <= step:
            finish_decodes()
        tick, at_tick = t, len(decoding)

    a = np.asarray
    if stream.output[traced] > 1:
        trace.append(("decode", first[traced], finish[traced]))
    trace.insert(0, ("queue", arrive[traced], admitted[traced]))
    # The gaps' rows as one array: read straight from the flattened rows, which costs half of
    # np.array on a list of tuples (runs have thousands of rows), to the same float64 values.
    rows = np.fromiter(itertools.chain.from_iterable(gaps), dtype=float, count=4 * len(gaps)).reshape(-1, 4)
    return Run(arrival, a(admitted), a(first), a(finish), stream.output, tuple(trace), positions,
               peak_reserved, peak_running, rows)


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


# The latency objectives the page judges runs by: our choice, stated on the page. A first token
# within a second for 99 requests in 100, and then one of two limits on the tokens after it:
# - "tpot": each request's mean time per output token, its p99 over requests within 50 ms (20
#   tokens a second), the form MLPerf's objectives take;
# - "tbt": every gap between two consecutive tokens, its p99 over all gaps within 50 ms, the form
#   Sarathi-Serve's take. One long stall breaks it, however short the request's other gaps.
TTFT_OBJECTIVE = 1.0
TPOT_OBJECTIVE = 0.050
TBT_OBJECTIVE = 0.050
OBJECTIVES = {"tpot": TPOT_OBJECTIVE, "tbt": TBT_OBJECTIVE}
QUANTILE = 0.99
# The arrival rates a capacity is read between, requests per second: fine enough near the low
# capacities that a gap objective leaves prefill first.
CAPACITY_RATES = np.round(np.arange(0.5, 48.001, 0.5), 6)


@dataclass(frozen=True)
class Summary:
    """What a page shows of one run: latencies in seconds, rates in requests per second."""

    ttft_median: float
    ttft_p99: float
    tpot_median: float
    tpot_p99: float
    goodput: float      # requests per second that met both objectives (TTFT and TPOT)
    tbt_median: float = math.nan  # time between tokens, over every gap (`Run.tbt`): the inverted CDF,
    tbt_p99: float = math.nan     # where the TTFT and TPOT quantiles interpolate (`np.quantile`)

    @classmethod
    def of(cls, run: Run, rate: float, ttft_s: float = TTFT_OBJECTIVE, tpot_s: float = TPOT_OBJECTIVE) -> "Summary":
        ttft, tpot = run.ttft, run.tpot
        t99, p99 = float(np.quantile(ttft, QUANTILE)), float(np.quantile(tpot, QUANTILE))
        return cls(float(np.median(ttft)), t99, float(np.median(tpot)), p99,
                   rate * float(run.meets(ttft_s, tpot_s).mean()),
                   *(float(x) for x in run.tbt([0.5, QUANTILE])))


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
                precision: Precision = BF16_ALL, metric: str = "tpot") -> float:
    """`capacity` over a sweep of the page's short runs, under the TTFT and `metric` objectives."""
    runs = sweep(scheduler, rates, chunk, prefix, acc, model, cards, precision)
    return capacity(rates, [s.ttft_p99 for s in runs], [getattr(s, f"{metric}_p99") for s in runs],
                    TTFT_OBJECTIVE, OBJECTIVES[metric])


def capacity_near(p99_at, rates, start: int, metric: str = "tpot") -> float:
    """`capacity`, evaluating p99s only where needed: `p99_at(i)` gives (TTFT p99, the `metric`'s
    p99) at `rates[i]`. From `start`, a guess at the first rate that fails, find a passing rate next
    to a failing one, and interpolate across that edge. Runs far from the edge are never made, which
    is what makes long or repeated runs affordable. Where the p99s do not rise steadily with the
    rate, the edge found is one of the places where they cross the objective."""
    limit = OBJECTIVES[metric]

    def ok(i):
        ttft, later = p99_at(i)
        return ttft <= TTFT_OBJECTIVE and later <= limit

    # Bracket the edge by steps that double, then halve the bracket: a passing rate `lo` and the
    # failing one `hi` next to it, in about twice the log of the distance from `start` in runs.
    last = len(rates) - 1
    j = min(max(start, 0), last)
    step = 1
    if ok(j):
        lo = j
        while True:
            if lo == last:
                return float(rates[-1])
            hi = min(lo + step, last)
            if not ok(hi):
                break
            lo, step = hi, 2 * step
    else:
        hi = j
        while True:
            if hi == 0:
                return 0.0
            lo = max(hi - step, 0)
            if ok(lo):
                break
            hi, step = lo, 2 * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    j = hi
    pair = [p99_at(j - 1), p99_at(j)]
    return capacity(rates[j - 1:j + 1], [x[0] for x in pair], [x[1] for x in pair], TTFT_OBJECTIVE, limit)


def _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision) -> int:
    """Where a capacity search over `rates` starts: the first rate at or past `sustainable_rate`,
    which no run long enough can meet."""
    bound = sustainable_rate(scheduler, chunk, prefix, acc, model, cards, precision)
    return min(int(np.searchsorted(rates, bound)), len(rates) - 1)


def _p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, seed=SEED, n=N_REQUESTS, metric="tpot"):
    """`capacity_near`'s p99_at for one setting, draw, run length and objective."""
    def p99_at(i):
        s = summary(scheduler, float(rates[i]), chunk, prefix, acc, model, cards, precision, seed, n)
        return s.ttft_p99, getattr(s, f"{metric}_p99")
    return p99_at


# Runs long enough to be steady: doubling their length moves the p99s at the capacity they give
# by less than the spread between draws of the traffic (tests/test_serving_steady.py).
LONG_REQUESTS = 3000


def steady_capacity(scheduler: str, rates, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                    precision: Precision = BF16_ALL, n: int = LONG_REQUESTS, metric: str = "tpot") -> float:
    """Capacity read from runs of `n` requests instead of the page's `N_REQUESTS`, under the TTFT and
    `metric` objectives. A p99 over a short run is usually lower than over a long one, which meets
    more of the rare moments when arrivals bunch up, so this is the figure for a steady stream of
    traffic. Never above `sustainable_rate`: a rate the server cannot keep up with fails a long
    enough run whatever its p99s were on the way, so where a run (a short one) would show more,
    the bound is the answer (`short_capacity` says when it was)."""
    return min(_crossing(scheduler, rates, chunk, prefix, acc, model, cards, precision, n, metric),
               sustainable_rate(scheduler, chunk, prefix, acc, model, cards, precision))


def short_capacity(scheduler: str, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                   precision: Precision = BF16_ALL, metric: str = "tpot", rates=CAPACITY_RATES) -> tuple[float, bool]:
    """The capacity runs of `N_REQUESTS` show over a sweep of `rates` (`capacity_of`; the figures
    pass the rates they draw, whose runs they have made already), and whether it was cut to
    `sustainable_rate`: a short run can end before a queue it cannot clear grows long, so on its
    own it may show more than any server holds."""
    raw = capacity_of(scheduler, rates, chunk, prefix, acc, model, cards, precision, metric)
    bound = sustainable_rate(scheduler, chunk, prefix, acc, model, cards, precision)
    return min(raw, bound), raw > bound


def _crossing(scheduler, rates, chunk, prefix, acc, model, cards, precision, n, metric) -> float:
    """Where the p99s of runs of `n` requests cross the objective (`capacity_near`)."""
    rates = np.asarray(rates, dtype=float)
    start = _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision)
    if n > N_REQUESTS:  # start the long runs where the short ones cross: near the edge, below the bound
        short = capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, SEED, N_REQUESTS,
                                    metric), rates, start, metric)
        start = min(int(np.searchsorted(rates, short)), start)
    return capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, SEED, n, metric),
                         rates, start, metric)


def prefix_cached(prompt: np.ndarray, prefix: float) -> np.ndarray:
    """Tokens of each prompt already in the prefix cache: a `prefix` share of every prompt after
    the first, rounded down; none of the first, which nobody computed before it."""
    cached = np.floor(prefix * np.asarray(prompt)).astype(int)
    cached[:1] = 0
    return cached


def work_per_request(chunk: int, prefix: float, n: int = N_REQUESTS, seed: int = SEED) -> tuple[float, float]:
    """(prompt positions a request needs computed, decode positions it needs), on average over the
    stream: its prompt less the cached share, and one position for each output token after the first."""
    stream = traffic(n, seed)
    return float((stream.prompt - prefix_cached(stream.prompt, prefix)).mean()), float((stream.output - 1).mean())


def sustainable_rate(scheduler: str, chunk: int, prefix: float, acc: Accelerator, model: LLM, cards: int,
                     precision: Precision = BF16_ALL, n: int = N_REQUESTS, seed: int = SEED) -> float:
    """Requests per second no run of the scheduler can keep up with past, however long, priced by
    the step model: the work a request brings over the fastest rate a pass can do it at.

    A pass over p positions takes at least `PassCost.seconds(p, 0, 0, 0)` (no cache to read, no
    logits), so no position costs less than that over p, and fuller passes are cheaper per
    position. Chunked prefill fills a pass with at most `chunk` positions, prompt and decode alike.
    Prefill first runs a prompt pass of at most `PREFILL_TOKENS` positions, and decode passes of at
    most `MAX_RUNNING`, one position a running request. The bound is an upper one: real passes
    also read caches, make logits and run below full."""
    cost = PassCost.of(acc, model, cards, precision)
    prompt, decode = work_per_request(chunk, prefix, n, seed)

    def per_position(p: int) -> float:
        return cost.seconds(p, 0.0, 0.0, 0) / p

    if scheduler == "chunked":
        seconds = (prompt + decode) * per_position(chunk)
    else:
        seconds = prompt * per_position(PREFILL_TOKENS) + decode * per_position(MAX_RUNNING)
    return 1.0 / seconds


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
                    precision: Precision = BF16_ALL, metric: str = "tpot") -> float:
    """`seed_spread` for the short runs' capacity: its relative standard deviation over `ERROR_SEEDS`."""
    rates = np.asarray(rates, dtype=float)
    start = _first_failure(scheduler, rates, chunk, prefix, acc, model, cards, precision)

    # Every draw's search starts where the page's own draw crossed: near its edge.
    near = capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, metric=metric),
                         rates, start, metric)
    start = min(int(np.searchsorted(rates, near)), len(rates) - 1)
    values = np.array([capacity_near(_p99s(scheduler, rates, chunk, prefix, acc, model, cards, precision, seed,
                                           metric=metric), rates, start, metric) for seed in ERROR_SEEDS])
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
