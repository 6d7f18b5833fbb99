"""Choices of words checked across the assumed constants' ranges (explainer_gen/compute/assumptions.py).

Small pages, built in process as the build builds them, each with one choice whose words change,
or do not, across the all-reduce latency the catalogue assumes (6 to 23 µs) or across the
estimate's band. Where the words change and the Markdown does not say so, the build fails at the
choice's line; where it says so, the page shows where they change, and the values are found here
again by other arithmetic. Negative controls: with only the range's two ends evaluated, a choice
that changes twice in between passes unseen; with the band's scaling switched off, a choice that
rests on the estimate's size passes unseen.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
import re
import numpy as np
import pytest

from explainer_gen.compute import assumptions, pages, workers
from explainer_gen.compute.resolved import default_scenario, resolve
from models import estimate
from models.catalogue import load_catalogue, with_allreduce_at
from models.yamlsource import SourceError

CATALOGUE = load_catalogue()
LOW, HIGH = CATALOGUE.accelerator("h100-sxm").allreduce_range_us
SPECULATIVE = "docs/explainers/speculative-decoding.md"


def build(body: str, front: str = "title: T", path: str = "docs/t.md"):
    source = f"---\n{front}\n---\n\n# T\n\n{body}\n"
    return pages.build_page(source, path, CATALOGUE, lambda req: workers.ELSEWHERE_FIGURE, 10**9,
                            assumed=assumptions)


def shown(page) -> list[str]:
    return [n.default for n in page.numbers.values()]


# A choice that changes twice inside the range: "near" only within 3 µs of 14 µs, so between 11
# and 17 µs. The assumed 10 µs is outside that window, so the page reads "far".
TWICE = '{{ "near" if abs(allreduce_us() - 14) < 3 else "far"%s }}'


def test_a_choice_that_changes_across_the_range_fails_the_build_at_its_line():
    with pytest.raises(SourceError) as caught:
        build("Words.\n\n" + TWICE % "")
    assert caught.value.line == 9 and caught.value.path == "docs/t.md"
    message = caught.value.message
    assert "all-reduce latency" in message and f"{LOW:g} to {HIGH:g}" in message and "| assumes allreduce" in message
    assert "'far'" in message and "'near'" in message


def test_marked_it_shows_where_the_words_change_both_times():
    [text] = shown(build(TWICE % " | assumes allreduce"))
    assert text.startswith("far [an assumption:")
    found = [float(v) for v in re.findall(r"(\d+\.\d)\u00a0µs", text)]
    # The window's edges, 14 - 3 and 14 + 3, to the one decimal the page shows.
    assert found == pytest.approx([11.0, 17.0], abs=0.1)


def test_negative_control_only_the_ends_miss_a_double_change(monkeypatch):
    """At 6 and 23 µs alone the words are "far" both times: the points between are what see it."""
    monkeypatch.setattr(assumptions, "POINTS", (0.0, 1.0))
    assert shown(build(TWICE % "")) == ["far"]


def test_a_mark_on_words_that_hold_across_the_range_says_nothing():
    """Kept, since the words may change in a setting the check does not see from here."""
    assert shown(build('{{ "many" if allreduce_us() > 1 else "few" | assumes allreduce }}')) == ["many"]


def test_marks_are_checked_by_name():
    with pytest.raises(SourceError, match="no assumption 'allreduse'.*allreduce"):
        build('{{ "many" if allreduce_us() > 1 else "few" | assumes allreduse }}')


def test_a_simulation_is_not_rerun_across_ranges_and_must_say_so():
    choice = '{{ "high" if static_tps(8, 0.5) > 1 else "low"%s }}'
    with pytest.raises(SourceError, match="calls a simulation \\(static_tps\\).*at defaults"):
        build(choice % "")
    assert shown(build(choice % " | at defaults")) == ["high"]
    with pytest.raises(SourceError, match="is for a choice that calls a simulation"):
        build('{{ "a" if step(1) > 0 else "b" | at defaults }}')


def ratio() -> float:
    r = resolve(default_scenario(CATALOGUE), CATALOGUE)
    return float(r.forward(1.0).at(estimate.fitted().eff) / r.forward(1.0).seconds)


def factor_range() -> tuple[float, float]:
    """The factors on estimated times the bands allow, from the fit: the latency band, and the
    throughput band turned into times."""
    fit = estimate.fit(estimate.load())
    (lat_low, lat_high), (tp_low, tp_high) = fit.band["latency"], fit.band["throughput"]
    return min(lat_low, 1 / tp_high, 1.0), max(lat_high, 1 / tp_low, 1.0)


def test_a_choice_resting_on_the_estimates_size_is_checked_across_its_band():
    """Estimate over floor for a decode step is `ratio()` as fitted; across the band it moves by the
    band's factors, so a threshold halfway up to the band's top is crossed within it."""
    low, high = factor_range()
    threshold = ratio() * (1 + (high - 1) / 2)
    choice = '{{ "slow" if estimate(1) / step(1) > %r else "quick"%s }}'
    with pytest.raises(SourceError, match="the factor on the estimate's times"):
        build(choice % (threshold, ""))
    [text] = shown(build(choice % (threshold, " | assumes estimate")))
    assert text.startswith("quick [an assumption: this holds while the factor on the estimate's times is below")
    assert f"within the {low:.2f} to {high:.2f} times assumed" in text
    at = float(re.search(r"below (\d+\.\d\d)×", text).group(1))
    assert at == pytest.approx(threshold / ratio(), abs=0.006)
    # Beyond the band's top nothing changes, and nothing is said.
    assert shown(build(choice % (ratio() * high * 1.05, ""))) == ["quick"]


def test_negative_control_without_the_bands_scaling_the_estimate_is_unchecked(monkeypatch):
    monkeypatch.setattr(estimate, "across_band", lambda scale: contextlib.nullcontext())
    low, high = factor_range()
    threshold = ratio() * (1 + (high - 1) / 2)
    assert shown(build('{{ "slow" if estimate(1) / step(1) > %r else "quick" }}' % threshold)) == ["quick"]


# -- the draft's placement, the case --------------------------------------------------------

PLACEMENT = re.compile(r'^\{\{ "On one card the two placements.*$', re.M)


def placement_page(marked: bool) -> tuple[str, int]:
    """The speculative page's front matter and its placement sentence, with or without its mark."""
    text = open(SPECULATIVE).read()
    front = text.split("---\n")[1]
    line = PLACEMENT.search(text).group(0)
    assert line.endswith(" | assumes allreduce }}"), "the page marks the placement as resting on the latency"
    # The page's sliders named once, as the page names them, so that the short page uses them.
    line = "{{ a | .2f }} {{ k | d }}\n\n" + line
    return front, (line if marked else line.replace(" | assumes allreduce }}", " }}"))


def test_the_draft_placement_fails_until_the_page_states_where_it_changes():
    front, unmarked = placement_page(False)
    with pytest.raises(SourceError, match="split is the better placement.*all-reduce latency"):
        build(unmarked, front.strip(), SPECULATIVE)


def test_the_draft_placement_changes_where_the_passes_cost_the_same():
    """Where a split draft pass and a whole one take the same estimated time, found here on a grid of
    0.01 µs over the range by the models directly; the page's figure agrees to its one decimal."""
    front, marked = placement_page(True)
    [text] = [t for t in shown(build(marked, front.strip(), SPECULATIVE)) if "placement" in t]
    page_at = float(re.search(r"below (\d+\.\d)\u00a0µs", text).group(1))
    scenario = default_scenario(CATALOGUE)
    eff = estimate.fitted().eff
    grid = np.arange(LOW, HIGH + 1e-9, 0.01)

    def split_minus_whole(us: float) -> float:
        t = (us - LOW) / (HIGH - LOW)
        r = resolve(scenario, with_allreduce_at(CATALOGUE, t))
        return float(r.forward(1.0, which="draft").at(eff) - r.forward(1.0, which="draft", on=1).at(eff))
    signs = np.sign([split_minus_whole(us) for us in grid])
    crossing = grid[int(np.argmax(signs != signs[0]))]
    assert signs[0] < 0 < signs[-1], "split wins at the low end and loses at the high one"
    assert page_at == pytest.approx(crossing, abs=0.1)


# -- the rest of the check's paths ------------------------------------------------------------------

def test_above_is_said_when_the_words_hold_above_the_change():
    [text] = shown(build('{{ "many" if allreduce_us() > 8 else "few" | assumes allreduce }}'))
    assert text.startswith("many [an assumption: this holds while the all-reduce latency is above")
    assert float(re.search(r"above (\d+\.\d)\u00a0µs", text).group(1)) == pytest.approx(8.0, abs=0.1)


SWITCHED = """title: T
explainer:
  switch:
    accelerator: [h100-sxm, mi300x]"""


def test_a_setting_of_the_switch_other_than_the_first_is_checked_too():
    """The words change only on the MI300X, at the sliders' defaults, and the error says where."""
    choice = '{{ "near" if abs(allreduce_us() - 14) < 3 and name() == "%s" else "far" }}' % (
        CATALOGUE.accelerator("mi300x").name)
    with pytest.raises(SourceError, match="under scenario mi300x"):
        build(choice, SWITCHED)


def test_a_mark_names_every_assumption_its_words_rest_on():
    """Two names in one mark: the words that change across the latency say where; the estimate's
    band moves nothing here, so it adds nothing. Marked for the estimate alone, it fails."""
    [text] = shown(build('{{ "many" if allreduce_us() > 8 else "few" | assumes allreduce, estimate }}'))
    assert text.count("[an assumption:") == 1 and "all-reduce latency is above" in text
    with pytest.raises(SourceError, match="all-reduce latency"):
        build('{{ "many" if allreduce_us() > 8 else "few" | assumes estimate }}')


def test_the_estimate_in_a_measurements_words_moves_with_the_band():
    """`measured_value(key, "estimate")` prices at the pages' estimate, so a choice comparing a
    measurement with it is checked across the band; the fit's own ratios are not moved."""
    low, high = factor_range()
    key = "gptfast-decode-a100-bf16-llama-3-8b-1gpu"
    m = next(x for x in estimate.load().rows if x.id == key)
    share = m.value / m.price(estimate.fitted().eff)
    assert low < share < high, "this measurement lies where the band can move the estimate past it"
    choice = ('{{ "under" if measured_value("%s") < measured_value("%s", "estimate") else "over" }}' % (key, key))
    with pytest.raises(SourceError, match="the factor on the estimate's times"):
        build(choice)
    assert shown(build('{{ "under" if measured_ratio("%s") < 1 else "over" }}' % key)) == ["under"]


def test_the_band_scales_every_priced_time():
    """Inside `across_band(f)` a step priced at the estimate, a serving pass and a throughput all
    move by f (the throughput by 1/f): the scale reaches each way the models price time."""
    from models import serving
    from models.precision import Precision
    setup = estimate.Setup(CATALOGUE.accelerator("h100-sxm"), CATALOGUE.model("llama-3-70b"), 4,
                           Precision.of("bf16", "bf16"))
    def priced():
        eff = estimate.fitted().eff
        cost = serving.PassCost.of(setup.acc, setup.model, setup.cards, setup.precision, eff)
        return np.array([float(setup.decode(8, 512).at(eff)), cost.seconds(8.0, 8 * 512.0, 8 * 512.0),
                         cost._decode_line(8, 4096.0)[0], 1 / setup.throughput(128, 128, eff)[0]])
    base = priced()
    with estimate.across_band(1.2):
        assert priced() == pytest.approx(base * 1.2, rel=1e-9)


def test_a_range_that_leaves_out_the_value_assumed_fails_at_its_line(tmp_path):
    acc = next(a for a in CATALOGUE.accelerators.values())
    low, high = acc.allreduce_range_us
    written = f"allreduce_range_us: [{low:g}, {high:g}]"
    # The same range, starting above the value the catalogue assumes.
    narrowed = f"allreduce_range_us: [{(acc.allreduce_us + high) / 2:g}, {high:g}]"
    text = Path(CATALOGUE.path).read_text()
    first = text.index(written)
    broken = text[:first] + narrowed + text[first + len(written):]
    (tmp_path / "catalogue.yaml").write_text(broken)
    with pytest.raises(SourceError) as caught:
        load_catalogue(tmp_path / "catalogue.yaml")
    assert caught.value.line == broken[:broken.index(narrowed)].count("\n") + 1
    assert "outside its range" in caught.value.message
