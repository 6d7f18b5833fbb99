"""The batching and KV-cache models: reference figures, invariants and determinism."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from models import batching, kvcache, roofline

# The batching page's figure precomputes these positions (explainer_gen/compute/figures/schedule.py);
# the test walks the same grid without importing the figure code.
BATCHES = range(4, 33, 4)
SPREADS = np.round(np.arange(0.0, 1.0001, 0.1), 1)



@pytest.fixture(scope="module")
def h100(cat):
    return cat.accelerator("h100-sxm")


@pytest.fixture(scope="module")
def llama70(cat):
    return cat.model("llama-3-70b")


# -- KV cache ------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, expected", [("llama-3-70b", 327_680), ("llama-3-8b", 131_072), ("llama-3.2-1b", 32_768)])
def test_bytes_per_token_match_the_reference(cat, key, expected):
    # Figures from the shared reference, computed there by hand from the published configs.
    assert kvcache.bytes_per_token(cat.model(key)) == expected


def test_slots_are_the_budget_over_the_context(h100, llama70):
    # Written out from the definition, in plain Python arithmetic.
    budget = 4 * 80e9 * (1 - 0.10) - 70_553_706_496 * 2
    for context in (1024, 8192, 32768):
        assert kvcache.slots(h100, llama70, 4, context) == int(budget // (327_680 * context))
    assert kvcache.slots(h100, llama70, 4, 8192) == 54


def test_slots_with_a_draft_pay_for_its_weights_and_cache(cat, h100, llama70):
    draft = cat.model("llama-3.2-1b")
    budget = 4 * 80e9 * 0.9 - 2 * (llama70.params + draft.params)
    assert kvcache.slots(h100, llama70, 4, 8192, draft) == int(budget // ((327_680 + 32_768) * 8192))
    cost = kvcache.draft_cost(h100, llama70, draft, 4, np.array([1024, 8192, 131072]))
    assert (cost >= 0).all() and cost[0] > cost[1] >= cost[2]


def test_slots_fall_as_context_grows_and_rise_with_cards(h100, llama70):
    ctx = 2.0 ** np.arange(10, 18)
    s = kvcache.slots(h100, llama70, 4, ctx)
    assert (np.diff(s) <= 0).all()
    # Doubling the context at most halves the slots (floor rounding aside).
    assert (s[1:] <= s[:-1] / 2 + 1).all()
    by_cards = kvcache.slots(h100, llama70, np.arange(1, 9), 8192)
    assert (np.diff(by_cards) > 0).all()


def test_a_model_that_does_not_fit_has_no_slots(cat, h100):
    big = cat.model("llama-3.1-405b")
    assert big.weight_bytes() > 8 * h100.memory_bytes
    assert (kvcache.slots(h100, big, np.arange(1, 9), 4096) == 0).all()
    assert kvcache.cache_budget(h100, big, 4) < 0


def test_reserve_is_a_parameter(h100, llama70):
    assert kvcache.slots(h100, llama70, 4, 8192, reserve=0.0) > kvcache.slots(h100, llama70, 4, 8192)


# -- batching simulation -------------------------------------------------------------------------

def test_request_set_is_deterministic_for_a_seed():
    a, b = batching.output_lengths(0.7), batching.output_lengths(0.7)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, batching.output_lengths(0.7, seed=batching.SEED + 1))
    assert (batching.output_lengths(0.0) == batching.MEAN_TOKENS).all()
    spread = batching.output_lengths(1.0)
    assert spread.min() >= 1 and spread.max() <= batching.MAX_TOKENS and spread.std() > 0


def test_runs_are_deterministic(h100, llama70):
    for sched in ("static", "continuous"):
        # Two fresh runs, past the memo that would hand back the same object.
        one = batching.simulate.__wrapped__(sched, 12, 0.8, h100, llama70, 4)
        two = batching.simulate.__wrapped__(sched, 12, 0.8, h100, llama70, 4)
        assert one is not two
        assert np.array_equal(one.start, two.start) and np.array_equal(one.slot, two.slot)
        assert one.tokens_per_s == two.tokens_per_s


@pytest.mark.parametrize("batch", BATCHES)
def test_both_schedulers_emit_the_same_tokens(h100, llama70, batch):
    for spread in SPREADS:
        lengths = batching.output_lengths(float(spread))
        static = batching.simulate("static", batch, float(spread), h100, llama70, 4)
        cont = batching.simulate("continuous", batch, float(spread), h100, llama70, 4)
        # Tokens counted step by step (active requests per step) equal the requests' lengths.
        assert static.tokens == cont.tokens == int(lengths.sum())


@pytest.mark.parametrize("batch", BATCHES)
def test_continuous_throughput_is_never_below_static(h100, llama70, batch):
    for spread in SPREADS:
        static = batching.simulate("static", batch, float(spread), h100, llama70, 4)
        cont = batching.simulate("continuous", batch, float(spread), h100, llama70, 4)
        assert cont.tokens_per_s >= static.tokens_per_s * (1 - 1e-12), (batch, spread)


def _check_slots(run, batch, lengths):
    assert (run.active <= batch).all() and (run.active >= 1).all()
    assert np.array_equal(run.end - run.start, lengths)
    for s in np.unique(run.slot):
        mine = np.flatnonzero(run.slot == s)
        order = mine[np.argsort(run.start[mine])]
        # A slot serves one request at a time: each starts no earlier than the slot is released.
        assert (run.start[order][1:] >= run.release[order][:-1]).all()


def test_schedules_respect_their_rules(h100, llama70):
    lengths = batching.output_lengths(0.9)
    for batch in (4, 8, 20):
        static = batching.static(lengths, batch, h100, llama70, 4)
        cont = batching.continuous(lengths, batch, h100, llama70, 4)
        _check_slots(static, batch, lengths)
        _check_slots(cont, batch, lengths)
        # Static: a group starts exactly when the previous group's longest request ends.
        groups = [lengths[i:i + batch] for i in range(0, len(lengths), batch)]
        assert sorted(set(static.start.tolist())) == np.concatenate([[0], np.cumsum([g.max() for g in groups])[:-1]]).tolist()
        # Continuous: no slot ever idles while requests wait.
        waiting_steps = cont.start.max()
        assert (cont.active[:waiting_steps] == batch).all()


def test_step_times_come_from_the_roofline(h100, llama70):
    run = batching.simulate("continuous", 8, 0.5, h100, llama70, 4, 512)
    # Each step reads every running request's cache: its 512-token prompt and what it has made.
    steps = np.arange(len(run.active))
    made = np.array([sum(s - b for b, e in zip(run.start, run.end) if b <= s < e) for s in steps])
    expected = roofline.step_time(h100, llama70, 4, run.active, 512 + made / run.active).seconds
    assert np.allclose(run.step_s, expected)
    assert run.seconds == pytest.approx(expected.sum())


def test_static_wastes_slots_when_lengths_vary(h100, llama70):
    even = batching.simulate("static", 8, 0.0, h100, llama70, 4)
    uneven = batching.simulate("static", 8, 1.0, h100, llama70, 4)
    assert even.occupancy == pytest.approx(1.0)
    assert uneven.occupancy < 0.5


def test_sibling_models_import_no_mkdocs_or_altair():
    code = ("import sys, models.batching, models.kvcache;"
            "bad=[m for m in sys.modules if m.split('.')[0] in ('mkdocs','altair','vl_convert','explainer_gen')];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
