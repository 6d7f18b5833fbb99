"""The serving simulation (models.serving): its pass prices, its bookkeeping, and its M/D/1 limit."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from models import roofline, serving
from models.catalogue import load_catalogue
from models.precision import Precision

pytestmark = pytest.mark.unit

CAT = load_catalogue()
H100, H200 = CAT.accelerator("h100-sxm"), CAT.accelerator("h200")
L70, L8 = CAT.model("llama-3-70b"), CAT.model("llama-3-8b")
BF16, FP8 = Precision.of("bf16", "bf16"), Precision.of("fp8", "fp8")
SETUPS = [(H100, L70, 4, BF16), (H200, L8, 1, BF16), (H100, L70, 8, FP8)]


@pytest.mark.parametrize("acc,model,cards,precision", SETUPS)
def test_pass_cost_is_pass_time(acc, model, cards, precision):
    """PassCost prices mixed passes as roofline.pass_time does, with GEMMs reads- and arithmetic-bound."""
    rng = np.random.default_rng(1)
    tokens = rng.integers(1, 4096, 200).astype(float)
    cached = rng.integers(0, 500_000, 200).astype(float)
    attended = cached * rng.uniform(0.5, 2.0, 200)
    logits = np.floor(tokens * rng.uniform(0, 1, 200))
    cost = serving.PassCost.of(acc, model, cards, precision)
    mine = np.array([cost.seconds(*x) for x in zip(tokens, cached, attended, logits)])
    theirs = roofline.pass_time(acc, model, cards, tokens, cached, attended, precision, logits).seconds
    # The same pieces, on floats and on arrays, differ only by rounding; any error in the formula
    # would be many orders larger.
    assert np.allclose(mine, theirs, rtol=1e-9, atol=0)
    bound = roofline.pass_time(acc, model, cards, tokens, cached, attended, precision, logits).compute_bound
    assert bound.any() and (~bound).any()  # both branches of the max were exercised


def test_step_time_is_pass_time_for_uniform_requests():
    st = roofline.step_time(H100, L70, 4, 8.0, context=1000.0, requests=2.0)
    pt = roofline.pass_time(H100, L70, 4, 8.0, cached=2000.0, attended=8000.0)
    assert st == pt


def test_only_positions_that_make_a_token_pay_for_the_output_head():
    """A prompt's earlier positions need no next-token distribution: a pass of 512 prompt
    positions of which one ends a prompt does the head's 2 x vocab x hidden FLOPs once, and reads
    the head's weights all the same."""
    every = roofline.pass_time(H100, L70, 1, 512.0, 0.0, 0.0)
    one = roofline.pass_time(H100, L70, 1, 512.0, 0.0, 0.0, logits=1.0)
    head_s = 2.0 * L70.head_params / H100.flops
    assert math.isclose(every.compute_s - one.compute_s, 511 * head_s, rel_tol=1e-9)
    assert one.memory_s == every.memory_s


@pytest.mark.parametrize("n,cached,steps", [(1, 500, 1), (3, 2000, 40), (64, 60_000, 300), (250, 10, 700),
                                            (180, 1_200_000, 50)])
def test_decode_stretch_is_the_sum_of_its_steps(n, cached, steps):
    """decode_steps in closed form equals pricing each step, including a stretch whose GEMMs are
    compute-bound (250 requests of Llama 3 8B on one H200, past its ridge of 989 / 4.8 = 206)
    while attention reads a growing cache."""
    for acc, model, cards, precision in SETUPS:
        cost = serving.PassCost.of(acc, model, cards, precision)
        each = sum(cost.seconds(n, cached + n * k, cached + n * k) for k in range(steps))
        assert math.isclose(cost.decode_steps(n, cached, steps), each, rel_tol=1e-11)


def test_a_stretch_past_the_ridge_still_pays_for_its_cache():
    """400 requests on 4 H100s, past the GEMMs' ridge of 295: the GEMMs are compute-bound from the
    first step, yet every step reads the cache in attention's own kernel, which no GEMM arithmetic
    hides, so each step is longer than the last by 400 new tokens' cache read (by hand: 400 x
    327,680 bytes over 4 x 3.35 TB/s), over all 3000 steps; the closed form is their sum."""
    cost = serving.PassCost.of(H100, L70, 4, BF16)
    n, cached = 400, 0
    assert roofline.pass_time(H100, L70, 4, n, 0.0, 0.0, BF16).compute_bound
    growth = n * 2 * 80 * 8 * 128 * 2 / (4 * 3.35e12)
    steps = [cost.seconds(n, n * k, n * k) for k in range(3000)]
    assert np.allclose(np.diff(steps), growth, rtol=1e-6, atol=0)
    assert math.isclose(cost.decode_steps(n, cached, 3000), sum(steps), rel_tol=1e-11)


def test_a_stretch_stops_at_the_fewest_steps():
    cost = serving.PassCost.of(H100, L70, 4, BF16)
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, cached, most = int(rng.integers(1, 300)), float(rng.integers(0, 400_000)), int(rng.integers(1, 2000))
        seconds = float(rng.uniform(0.001, 1.2)) * cost.decode_steps(n, cached, most)
        k, spent = cost.stretch(n, cached, most, seconds)
        assert cost.decode_steps(n, cached, k) >= seconds or k == most
        assert k == 1 or cost.decode_steps(n, cached, k - 1) < seconds
        # ... and the time it reports is those steps' time.
        assert math.isclose(spent, cost.decode_steps(n, cached, k), rel_tol=1e-11)
    assert cost.stretch(5, 1000, 40) == (40, pytest.approx(cost.decode_steps(5, 1000, 40), rel=1e-11))
    # Past the ridge, with a growing cache (cf. the test above), too.
    crossing = cost.decode_steps(400, 0, 3000)
    k, spent = cost.stretch(400, 0, 3000, 0.6 * crossing)
    assert cost.decode_steps(400, 0, k - 1) < 0.6 * crossing <= spent


# ---- bookkeeping -------------------------------------------------------------------------------

COST = serving.PassCost.of(H100, L70, 4, BF16)
STREAM = serving.traffic()


def _overcommit(run: serving.Run, stream: serving.Traffic, capacity: int) -> int:
    """The most KV tokens promised at once beyond `capacity` (0 if never), rebuilt from the run's
    admission and finish times: a request holds prompt + output from admission to its last token."""
    need = stream.prompt + stream.output
    worst = 0
    for t in np.unique(run.admitted):
        held = need[(run.admitted <= t) & (run.finish > t)].sum()
        worst = max(worst, int(held) - capacity)
    return worst


@pytest.mark.parametrize("scheduler", serving.SCHEDULERS)
def test_memory_binds_and_is_never_overcommitted(scheduler):
    """With room for about six requests' cache, admission waits for memory; at no moment do the
    running requests hold more than fits. Negative control: the same check, told half the room,
    finds the overcommitment, so it can fail."""
    room = int(6 * (STREAM.prompt + STREAM.output).mean())
    run = serving.run(STREAM, 16.0, scheduler, COST, room, 512, 0.0)
    assert _overcommit(run, STREAM, room) == 0
    assert run.peak_reserved == _overcommit(run, STREAM, 0) <= room  # its own count agrees with the rebuilt one
    assert _overcommit(run, STREAM, room // 2) > 0
    roomy = serving.run(STREAM, 16.0, scheduler, COST, serving.cache_tokens(H100, L70, 4, BF16), 512, 0.0)
    assert np.median(run.ttft) > 2 * np.median(roomy.ttft)  # the memory cap is what made requests wait


@pytest.mark.parametrize("scheduler", serving.SCHEDULERS)
@pytest.mark.parametrize("prefix", [0.0, 0.6])
def test_every_position_is_computed_once(scheduler, prefix):
    """Positions priced = prompt tokens outside the prefix cache + one per token after the first:
    nothing counted twice, nothing left out; the first request finds the cache empty."""
    run = serving.run(STREAM, 12.0, scheduler, COST, 10**7, 1024, prefix)
    cached = np.concatenate([[0], (prefix * STREAM.prompt[1:]).astype(int)])
    assert run.positions == int((STREAM.prompt - cached).sum() + (STREAM.output - 1).sum())


@pytest.mark.parametrize("scheduler", serving.SCHEDULERS)
def test_times_are_causal_and_no_faster_than_the_floor(scheduler):
    run = serving.run(STREAM, 20.0, scheduler, COST, 10**7, 512, 0.3)
    assert (run.admitted >= run.arrival).all() and (run.first > run.admitted).all()
    assert (run.finish >= run.first).all()
    # No later token comes faster than a decode step of one request at the shortest context.
    assert run.tpot.min() >= COST.seconds(1, STREAM.prompt.min(), STREAM.prompt.min()) * (1 - 1e-12)


def test_the_trace_is_the_traced_requests_own_path():
    run = serving.run(STREAM, 16.0, "prefill-first", COST, 10**7, 512, 0.0)
    i = STREAM.traced
    kinds = [k for k, _, _ in run.trace]
    assert kinds[0] == "queue" and kinds[-1] == "decode" and "prefill" in kinds
    assert run.trace[0][1] == run.arrival[i] and run.trace[-1][2] == run.finish[i]
    stalls = [(a, b) for k, a, b in run.trace if k == "stall"]
    assert stalls and all(run.first[i] <= a < b <= run.finish[i] for a, b in stalls)


# ---- the M/D/1 limit ---------------------------------------------------------------------------

def _md1(rho: float, cost: serving.PassCost, n: int = 250_000, prompt: int = 1024, batches: int = 20):
    """Mean wait of the simulation in its M/D/1 limit, the closed form, and the tolerance.

    One-token answers (a request is only its prefill), every prompt `prompt` tokens, one prompt
    a pass, no memory limit: the server is one queue with Poisson arrivals and a fixed service
    time D, the prefill pass priced by the true cost. Pollaczek-Khinchine gives the mean wait in
    the queue, rho D / (2 (1 - rho)).

    Tolerance: waits of neighbouring requests are correlated, so the standard error of their mean
    comes from batch means: after dropping the first 5% of requests (the queue starts empty), the
    rest are cut into `batches` consecutive batches of about 12,000 requests. The queue forgets its
    past over a relaxation time of the order of (1 - sqrt(rho))^-2 services, as an M/M/1 queue
    does: about 90 at rho = 0.8. Batches over a hundred times longer have close to independent
    means. The tolerance is the two-sided 99.99% quantile of Student's
    t with batches - 1 = 19 degrees of freedom, 4.88, times that standard error. A correct
    simulation then fails one run in 10,000.
    """
    d = serving.PassCost.of(H100, L70, 4, BF16).seconds(prompt, 0, prompt * prompt / 2.0, 1)  # logits of its last position
    rng = np.random.default_rng(1234)
    stream = serving.Traffic(np.cumsum(rng.exponential(1.0, n)), np.full(n, prompt), np.ones(n, dtype=int))
    run = serving.run(stream, rho / d, "prefill-first", cost, 10**9, prefill_tokens=prompt)
    wait = (run.admitted - run.arrival)[n // 20:]
    means = np.array([b.mean() for b in np.array_split(wait, batches)])
    tol = 4.88 * means.std(ddof=1) / math.sqrt(batches)
    return wait.mean(), rho * d / (2 * (1 - rho)), tol, d


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_wait(rho):
    mean, expected, tol, d = _md1(rho, COST)
    assert tol < 0.1 * expected, "the run is too short for the tolerance to mean anything"
    assert abs(mean - expected) <= tol, (mean, expected, tol)
    # The service really is D: the pass that prefills one prompt.
    run = serving.run(serving.Traffic(np.array([1.0]), np.array([1024]), np.array([1])), 1.0, "prefill-first",
                      COST, 10**9, prefill_tokens=1024)
    assert math.isclose(run.first[0] - run.admitted[0], d)


def test_md1_check_catches_a_server_three_percent_slow():
    """Negative control: price every pass 3% dearer than the D the closed form is given. At
    rho = 0.8 that is rho = 0.824 and a service 3% longer in truth, and so a mean wait 21%
    longer; the check must fail."""
    slow = dataclasses.replace(COST, **{f.name: getattr(COST, f.name) * 1.03 for f in dataclasses.fields(COST)
                                        if f.name not in ("layers", "block_arithmetic", "eff")})  # not prices
    mean, expected, tol, _ = _md1(0.8, slow)
    assert abs(mean - expected) > tol


# ---- what the papers report, in direction ------------------------------------------------------

def _summary(scheduler, rate, chunk=512, prefix=0.0):
    return serving.summary(scheduler, rate, chunk, prefix, H100, L70, 4, BF16)


def test_chunked_prefill_trades_a_little_first_token_for_a_much_shorter_tail():
    """Sarathi-Serve's claim, in direction: prompts in chunks stop stalling decodes, so the p99
    time per output token drops under load, at a small cost to the first token at light load."""
    assert _summary("chunked", 16).tpot_p99 < 0.5 * _summary("prefill-first", 16).tpot_p99
    assert _summary("chunked", 4).ttft_median > _summary("prefill-first", 4).ttft_median
    assert _summary("chunked", 4).ttft_median < 1.3 * _summary("prefill-first", 4).ttft_median
    rates = np.arange(4.0, 33.0, 4.0)
    assert (serving.capacity_of("chunked", rates, 512, 0.0, H100, L70, 4, BF16)
            > serving.capacity_of("prefill-first", rates, 512, 0.0, H100, L70, 4, BF16))


@pytest.mark.parametrize("scheduler", serving.SCHEDULERS)
def test_a_cached_prefix_shortens_the_first_token(scheduler):
    """RadixAttention and automatic prefix caching skip the cached part's prefill: the first token
    comes sooner the larger the cached share, at every load."""
    for rate in (4.0, 16.0):
        ttft = [_summary(scheduler, rate, 512, p).ttft_median for p in (0.0, 0.3, 0.6)]
        assert ttft[0] > ttft[1] > ttft[2]


def test_latency_grows_with_load():
    for scheduler in serving.SCHEDULERS:
        p99 = [_summary(scheduler, r).ttft_p99 for r in (4.0, 12.0, 20.0, 28.0)]
        assert p99 == sorted(p99)


def test_goodput_never_exceeds_the_arrival_rate():
    for scheduler in serving.SCHEDULERS:
        for rate in (4.0, 16.0, 32.0):
            s = _summary(scheduler, rate)
            assert 0 <= s.goodput <= rate


def test_capacity_reads_between_rates():
    rates = [4, 8, 12]
    # TTFT p99 crosses 1 s a quarter of the way from 8 to 12; TPOT never binds.
    assert math.isclose(serving.capacity(rates, [0.2, 0.9, 1.3], [0.01] * 3), 9.0)
    # Both cross; the earlier crossing wins (TPOT's, halfway from 4 to 8).
    assert math.isclose(serving.capacity(rates, [0.2, 0.9, 1.3], [0.04, 0.06, 0.08]), 6.0)
    assert serving.capacity(rates, [2.0, 3.0, 4.0], [0.01] * 3) == 0.0
    assert serving.capacity(rates, [0.1, 0.2, 0.3], [0.01] * 3) == 12.0


def test_reserving_the_longest_answer_costs_throughput_where_memory_binds():
    """vLLM's claim, in direction and rough size: a server that reserves cache for the longest
    answer allowed, instead of for what each answer turns out to need, fits fewer requests and
    makes fewer tokens per second. Kwon et al. report 2-4x at the same latency over such
    servers, a gain that also includes the fragmentation this model does not have; here, with
    memory tight (Llama 3 70B on 2 H100s, room for a few requests), every request arriving at
    once, the gap must be real (over 1.25x) and no larger than their upper figure."""
    from models import papers

    cost = serving.PassCost.of(H100, L70, 2, BF16)
    room = serving.cache_tokens(H100, L70, 2, BF16)
    for scheduler in serving.SCHEDULERS:
        tps = [STREAM.output.sum() / serving.run(STREAM, 1000.0, scheduler, cost, room, reserve=r).finish.max()
               for r in (None, serving.OUTPUT_RANGE[1])]
        assert 1.25 < tps[0] / tps[1] <= papers.published()["kwon2023"]["throughput_gain_high"]
    # Where memory does not bind, reserving more changes nothing much: the effect is memory's.
    roomy = serving.cache_tokens(H100, L70, 4, BF16)
    cost4 = serving.PassCost.of(H100, L70, 4, BF16)
    tps = [STREAM.output.sum() / serving.run(STREAM, 1000.0, "chunked", cost4, roomy, reserve=r).finish.max()
           for r in (None, serving.OUTPUT_RANGE[1])]
    assert tps[0] / tps[1] < 1.05


# ---- a pass-by-pass reference --------------------------------------------------------------------

def _reference(stream: serving.Traffic, rate: float, scheduler: str, cost: serving.PassCost, capacity: int,
               chunk: int, prefix: float, max_running: int, prefill_tokens: int) -> dict:
    """The same server written the slow, obvious way: one pass at a time, each request's own
    context and token count kept and advanced, no closed-form stretches, no heaps."""
    n = stream.n
    arrive = (stream.unit_arrival / rate).tolist()
    p, o = stream.prompt.tolist(), stream.output.tolist()
    skip = [0] + [int(prefix * x) for x in p[1:]]
    admitted, first, finish = [None] * n, [None] * n, [None] * n
    t, nxt, reserved = 0.0, 0, 0
    waiting, filling, decoding = [], [], {}  # decoding: request -> [context, tokens made]
    last, gaps = {}, []  # each decoding request's latest token time; every gap between two tokens

    def fits(i):
        return len(filling) + len(decoding) + (len(batch) if scheduler == "prefill-first" else 0) < max_running \
            and reserved + p[i] + o[i] <= capacity

    def first_token(i, at):
        first[i] = at
        if o[i] == 1:
            finish[i] = at
            return -(p[i] + o[i])
        decoding[i] = [p[i], 1]
        last[i] = at
        return 0

    def decode_all(at):
        freed = 0
        for i in list(decoding):
            decoding[i][0] += 1
            decoding[i][1] += 1
            gaps.append(at - last[i])
            last[i] = at
            if decoding[i][1] == o[i]:
                del decoding[i]
                finish[i] = at
                freed += p[i] + o[i]
        return freed

    while any(f is None for f in finish):
        arrived = [i for i in range(nxt, n) if arrive[i] <= t]
        waiting += arrived
        nxt += len(arrived)
        if not waiting and not filling and not decoding:  # idle: skip to the next arrival
            t = arrive[nxt]
            continue
        batch = []
        if scheduler == "prefill-first" and waiting and fits(waiting[0]):
            work = 0
            while waiting and fits(waiting[0]) and (not batch or work + p[waiting[0]] - skip[waiting[0]] <= prefill_tokens):
                i = waiting.pop(0)
                batch.append(i)
                reserved += p[i] + o[i]
                admitted[i] = t
                work += p[i] - skip[i]
            t += cost.seconds(work, sum(skip[i] for i in batch),
                              sum((p[i] - skip[i]) * (skip[i] + (p[i] - skip[i]) / 2) for i in batch), len(batch))
            for i in batch:
                reserved += first_token(i, t)
            continue
        if scheduler == "chunked" and len(decoding) < chunk and (filling or (waiting and fits(waiting[0]))):
            room = chunk - len(decoding)
            ctx = sum(c for c, _ in decoding.values())
            tokens, read, attended, logits, plan = len(decoding), ctx, float(ctx), len(decoding), []
            k = 0
            while room:
                if k == len(filling):
                    if not (waiting and fits(waiting[0])):
                        break
                    i = waiting.pop(0)
                    filling.append([i, skip[i]])
                    reserved += p[i] + o[i]
                    admitted[i] = t
                i, have = filling[k]
                take = min(room, p[i] - have)
                plan.append((k, take))
                tokens, read, attended = tokens + take, read + have, attended + take * (have + take / 2)
                logits += have + take == p[i]
                room -= take
                k += 1
            t += cost.seconds(tokens, read, attended, logits)
            reserved -= decode_all(t)
            for k, take in plan:
                filling[k][1] += take
            while filling and filling[0][1] == p[filling[0][0]]:
                reserved += first_token(filling.pop(0)[0], t)
            continue
        ctx = sum(c for c, _ in decoding.values())
        t += cost.seconds(len(decoding), ctx, ctx)
        reserved -= decode_all(t)
    return {"admitted": np.array(admitted), "first": np.array(first), "finish": np.array(finish),
            "gaps": np.sort(np.array(gaps, dtype=float))}


def _expanded(run: serving.Run) -> np.ndarray:
    """A run's gap rows written out one gap at a time, sorted."""
    return np.sort(np.concatenate([np.full(int(w), f + g * s) for f, g, k, w in run.gaps for s in range(int(k))]
                                  or [np.zeros(0)]))


def _small_stream(rng: np.random.Generator, n: int) -> serving.Traffic:
    return serving.Traffic(np.cumsum(rng.exponential(1.0, n)), rng.integers(1, 3000, n), rng.integers(1, 300, n))


def test_the_simulation_agrees_with_a_pass_by_pass_reference():
    """Random small streams, both schedulers, tight and loose limits: every request's admission,
    first token and finish match the slow reference to rounding, which checks the closed-form
    decode stretches, the heap of finishing requests and the admission bookkeeping at once."""
    rng = np.random.default_rng(2024)
    costs = [serving.PassCost.of(*setup) for setup in SETUPS[:2]]
    for case in range(60):
        stream = _small_stream(rng, int(rng.integers(5, 60)))
        cost = costs[case % 2]
        scheduler = serving.SCHEDULERS[case % 3 % 2]
        need = int((stream.prompt + stream.output).max())
        capacity = int(need * rng.choice([1.0, 2.5, 100.0]))
        chunk, prefix = int(rng.choice([1, 7, 256, 512, 4096])), float(rng.choice([0.0, 0.3, 0.95]))
        limits = dict(max_running=int(rng.choice([1, 3, 256])), prefill_tokens=int(rng.choice([1, 2000, 8192])))
        rate = float(rng.choice([0.5, 10.0, 200.0]))
        got = serving.run(stream, rate, scheduler, cost, capacity, chunk, prefix, **limits)
        want = _reference(stream, rate, scheduler, cost, capacity, chunk, prefix, **limits)
        for field in ("admitted", "first", "finish"):
            assert np.allclose(getattr(got, field), want[field].astype(float), rtol=1e-9, atol=1e-12), (case, field)
        # Every gap between two tokens, stalls included, is the reference's, one for one.
        gaps = _expanded(got)
        assert len(gaps) == len(want["gaps"]) == int((stream.output - 1).sum()), case
        assert np.allclose(gaps, want["gaps"], rtol=1e-9, atol=1e-12), case
        if len(gaps):
            q = float(rng.choice([0.5, 0.9, 0.99]))
            assert got.tbt(q) == pytest.approx(float(np.quantile(want["gaps"], q, method="inverted_cdf")), rel=1e-9)


def test_the_gap_check_tells_gaps_from_a_requests_mean_gap():
    """Negative control for the gap comparison above: spreading each request's mean gap (its time
    per output token) over its tokens, which hides a stall in the average, does not give the
    reference's gaps once prefill-first pauses decodes."""
    rng = np.random.default_rng(11)
    stream = _small_stream(rng, 40)
    cost = serving.PassCost.of(*SETUPS[0])
    want = _reference(stream, 20.0, "prefill-first", cost, 10**7, 512, 0.0, serving.MAX_RUNNING,
                      serving.PREFILL_TOKENS)
    got = serving.run(stream, 20.0, "prefill-first", cost, 10**7, 512, 0.0)
    many = stream.output > 1
    spread = np.sort(np.repeat(got.tpot, stream.output[many] - 1))
    assert len(spread) == len(want["gaps"])
    assert not np.allclose(spread, want["gaps"], rtol=1e-6)

def test_the_reference_would_catch_a_wrong_step_count():
    """Negative control: a stream whose answers are one token longer than the simulation was
    given finishes later in the reference; the comparison above can fail."""
    rng = np.random.default_rng(5)
    stream = _small_stream(rng, 30)
    longer = serving.Traffic(stream.unit_arrival, stream.prompt, stream.output + 1)
    cost = serving.PassCost.of(*SETUPS[0])
    got = serving.run(stream, 5.0, "chunked", cost, 10**7, 512, 0.0)
    want = _reference(longer, 5.0, "chunked", cost, 10**7, 512, 0.0, serving.MAX_RUNNING, serving.PREFILL_TOKENS)
    assert not np.allclose(got.finish, want["finish"].astype(float), rtol=1e-9)


def test_capacity_near_reads_the_same_edge_as_the_full_sweep():
    """Walking from any starting guess finds the capacity the full sweep reads, and makes no run
    it does not need (here, from a good guess, two or three)."""
    rates = np.arange(4.0, 33.0, 4.0)
    ttft = np.array([0.2, 0.3, 0.5, 0.8, 1.3, 3.0, 5.0, 7.0])
    tpot = np.full(8, 0.02)
    full = serving.capacity(rates, ttft, tpot)
    for start in range(8):
        asked = []
        got = serving.capacity_near(lambda i: asked.append(i) or (ttft[i], tpot[i]), rates, start)
        assert math.isclose(got, full)
        # Steps that double to bracket the edge, then halving: about twice the log of the distance.
        assert len(set(asked)) <= 2 * math.ceil(math.log2(abs(start - 4) + 1)) + 3
    assert serving.capacity_near(lambda i: (5.0, 0.02), rates, 3) == 0.0
    assert serving.capacity_near(lambda i: (0.1, 0.02), rates, 3) == 32.0


def test_a_steady_stream_has_less_capacity_than_a_short_run_shows():
    """Long runs meet rarer bunches of arrivals, so their p99s are higher: the steady capacity is
    lower, for both schedulers, by less than half (the page states by how much)."""
    rates = np.arange(4.0, 33.0, 4.0)
    for scheduler, chunk in (("prefill-first", 0), ("chunked", 512)):
        short = serving.capacity_of(scheduler, rates, chunk, 0.0, H100, L70, 4, BF16)
        steady = serving.steady_capacity(scheduler, rates, chunk, 0.0, H100, L70, 4, BF16)
        assert 0.5 * short < steady < short


@pytest.mark.parametrize("chunk", [None, 100, 512, 4096])
def test_prefill_alone_is_what_the_server_takes_for_one_request(chunk):
    """The page's cost of a prompt on an idle server is the time to first token of a lone
    request in the simulation, in one pass or in pieces."""
    lone = serving.Traffic(np.array([1.0]), np.array([712]), np.array([1]))
    run = serving.run(lone, 1.0, "prefill-first" if chunk is None else "chunked", COST, 10**7, chunk or 512)
    assert math.isclose(run.first[0] - run.admitted[0], serving.prefill_alone(COST, 712, chunk), rel_tol=1e-12)
    if chunk and chunk < 712:
        assert serving.prefill_alone(COST, 712, chunk) > serving.prefill_alone(COST, 712)  # splitting costs
