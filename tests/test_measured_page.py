"""The page "How far the floor is from a real server" as built: its counts, band and ratios are the
fit's, recounted here from each measurement's value and price, and its figure and nav are in place."""
from __future__ import annotations

import re

from helpers import article, numbers_in
from models import estimate

DATA = estimate.load()
FIT = estimate.fit(DATA)


def _ratio(m) -> float:
    return m.value / m.price(FIT.eff)


def _inside(m) -> bool:
    low, high = FIT.band[m.kind]
    return min(low, 1.0) - 1e-9 <= _ratio(m) <= max(high, 1.0) + 1e-9  # the band never leaves out 1


def test_the_page_counts_what_the_measurements_say(site):
    html = (site / "explainers/measured/index.html").read_text()
    shown = numbers_in(article(html))
    held = DATA.held_out()
    expected = [str(len(DATA.rows)), str(len(DATA.training())), str(len(held))]
    for kind in ("latency", "throughput"):
        of_kind = [m for m in held if m.kind == kind]
        expected += [str(sum(_inside(m) for m in of_kind)), str(len(of_kind))]
        low, high = FIT.band[kind]
        expected += [f"{low:.2f}×", f"{high:.2f}×"]
    for key in ("trtllm-0.17-throughput-h200-fp8-8b-tp1-128-128", "trtllm-0.17-throughput-a100-fp16-8b-tp1-2048-2048",
                "gptfast-decode-a100-bf16-llama-2-7b-1gpu"):
        m = next(x for x in DATA.rows if x.id == key)
        expected.append(f"{_ratio(m):.2f}×")
        assert not _inside(m), key  # the page calls these the model's worst: they lie outside the band
    missing = [e for e in expected if e not in shown]
    assert not missing, (missing, shown)
    # The figure, its description's count of held-out measurements inside, and the nav entry.
    assert 'data-eg-figure' in html and "measured-vs-estimate" in html
    inside = sum(_inside(m) for m in held)
    assert re.search(rf"{inside} of the {len(held)} held-out measurements lie inside their band", html)
    assert 'href="../measured/"' in (site / "explainers/roofline/index.html").read_text()
