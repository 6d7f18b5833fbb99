"""The scenario switch never lands on a configuration that cannot run: choices that would not fit
are greyed out with their reason, and a shared link that asks for one gets the page's default."""
from __future__ import annotations

from helpers import wake_loader
from models import kvcache, load_catalogue
from models.precision import Precision

SPEC = "explainers/speculative-decoding/"


def test_greyed_choices_are_the_ones_that_do_not_fit(page, base_url):
    page.goto(base_url + SPEC)
    wake_loader(page)
    cat = load_catalogue()
    acc, target, draft = cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), cat.model("llama-3.2-1b")
    greyed = page.eval_on_selector_all("select[data-eg-switch=cards] option",
                                       "os => os.filter(o => o.disabled).map(o => +o.value)")
    expected = [n for n in (1, 4, 8) if not kvcache.fits(acc, target, n, 512, draft)]
    assert greyed == expected == [1]
    note = page.locator(".eg-switch-note").inner_text()
    assert "1 card: Llama 3 70B and its Llama 3.2 1B draft need 2 × NVIDIA H100 SXM at 512 tokens" in note
    # INT4 weights fit on one card (40 GB of weights), so the choice opens and the note goes.
    int4 = Precision.of("int4")
    assert kvcache.fits(acc, target, 1, 512, draft, precision=int4)
    page.select_option("select[data-eg-switch=weights]", "int4")
    page.wait_for_function("() => !document.querySelector(\"select[data-eg-switch=cards] option[value='1']\").disabled")
    # On one card, the formats that do not fit are the ones greyed out, and the note says why.
    page.select_option("select[data-eg-switch=cards]", "1")
    page.wait_for_function("() => document.querySelector(\"select[data-eg-switch=weights] option[value='bf16']\").disabled")
    greyed = page.eval_on_selector_all("select[data-eg-switch=weights] option",
                                       "os => os.filter(o => o.disabled).map(o => o.value)")
    assert greyed == [w for w in ("bf16", "fp8", "int4")
                      if not kvcache.fits(acc, target, 1, 512, draft, precision=Precision.of(w))] == ["bf16", "fp8"]
    note = page.locator(".eg-switch-note").inner_text()
    assert "FP8: Llama 3 70B and its Llama 3.2 1B draft in FP8 need 2 × NVIDIA H100 SXM at 512 tokens" in note
    # Displayed, not only present: the note takes room under the selects.
    assert page.locator(".eg-switch-note").bounding_box()["height"] > 10
    page.watch.assert_clean()


def test_a_link_to_what_cannot_run_opens_the_default(page, base_url):
    page.goto(base_url + SPEC + "?cards=1")
    page.wait_for_function("() => window.explainerGen && window.explainerGen.state()")
    assert page.locator("select[data-eg-switch=cards]").input_value() == "4"
    assert page.evaluate("() => window.explainerGen.state().scenario") == "h100-sxm.4.llama-3-70b.llama-3.2-1b.512.bf16.bf16"
    page.watch.assert_clean()
