"""Page-level sliders (front matter `explainer: sliders:`) that no figure shows.

Issue 12, bug 3: a slider declared in front matter and used only in prose got no control, so the
build passed and the number never moved. Now such a slider gets its own control block with the
page root (beside the scenario switch, after the title), in the figure sliders' markup; a page
slider that neither a figure nor an inline number uses fails the build at its front-matter line.
"""
from __future__ import annotations

import re
import shutil

from explainer_gen.compute.figures import REGISTRY
from helpers import REPO, article, mkdocs_build, serve, wake_loader
from models.speculative import expected_tokens

LABEL = "Draft acceptance"
LOOKAHEAD = 4
# (min, max, step, default) of the prose-only slider `p`.
P_MIN, P_MAX, P_STEP, P_DEFAULT = 0.5, 0.9, 0.1, 0.6

PROSE_ONLY = f"""---
explainer:
  sliders:
    p: {{label: {LABEL}, min: {P_MIN}, max: {P_MAX}, step: {P_STEP}, default: {P_DEFAULT}, dimension: ratio}}
---

# Prose only

A lookahead of {LOOKAHEAD} yields <span id="yield">{{{{ E(p, {LOOKAHEAD}) | .3f }}}}</span> tokens per pass.
"""

UNUSED = """---
explainer:
  sliders:
    p: {label: Used, min: 0.5, max: 0.9, step: 0.1, default: 0.6, dimension: ratio}
    q: {label: Unused, min: 1, max: 8, step: 1, default: 4}
---

# One slider too many

It yields {{ E(p, 4) | .2f }} tokens.
"""
UNUSED_LINE = 5  # the line of `q:` in UNUSED

# `a` is shown by the figure (and by nothing else); `p` only by the prose.
WITH_FIGURE = f"""---
explainer:
  sliders:
    a: {{label: Acceptance rate, min: 0.05, max: 0.95, step: 0.05, default: 0.8}}
    p: {{label: {LABEL}, min: {P_MIN}, max: {P_MAX}, step: {P_STEP}, default: {P_DEFAULT}, dimension: ratio}}
---

# With a figure

It yields {{{{ E(p, {LOOKAHEAD}) | .3f }}}} tokens.

```explainer
figure: speedup-vs-batch
```
"""


def build(tmp_path, markdown: str):
    """A scratch site of one page, `docs/index.md`, built with --strict into tmp_path/site."""
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO / "models" / "catalogue.yaml", root / "catalogue.yaml")
    (root / "mkdocs.yml").write_text(
        "site_name: page sliders\ntheme: {name: material, font: false}\n"
        "plugins: [{explainer: {catalogue: catalogue.yaml}}]\nmarkdown_extensions: [pymdownx.superfences, md_in_html]\n")
    (root / "docs" / "index.md").write_text(markdown)
    return mkdocs_build(tmp_path / "site", root / "mkdocs.yml"), tmp_path / "site"


def test_a_slider_used_only_in_prose_gets_a_control_that_moves_the_number(tmp_path, browser):
    result, site = build(tmp_path, PROSE_ONLY)
    assert result.returncode == 0, result.stderr
    # What the model gives at the default position and one step to the right.
    default_text = f"{expected_tokens(P_DEFAULT, LOOKAHEAD):.3f}"
    moved_value = round(P_DEFAULT + P_STEP, 1)
    moved_text = f"{expected_tokens(moved_value, LOOKAHEAD):.3f}"
    assert moved_text != default_text
    with serve(site) as url:
        page = browser.new_page()
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        wake_loader(page)
        slider = page.get_by_label(LABEL, exact=True)
        assert slider.count() == 1
        assert slider.is_visible()
        assert slider.get_attribute("type") == "range"
        assert page.locator("#yield").inner_text() == default_text
        # The control sits with the page root: after the title, before the prose.
        order = page.evaluate("""() => {
            const h1 = document.querySelector('article h1'), input = document.querySelector('input[data-eg-param=p]'),
                  prose = document.querySelector('#yield');
            return [h1.compareDocumentPosition(input) & Node.DOCUMENT_POSITION_FOLLOWING,
                    input.compareDocumentPosition(prose) & Node.DOCUMENT_POSITION_FOLLOWING].map(Boolean);
        }""")
        assert order == [True, True]
        slider.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("t => document.querySelector('#yield').textContent === t", arg=moved_text, timeout=5000)
        assert page.locator("#yield").inner_text() == moved_text
        output = slider.locator("xpath=following-sibling::output")
        assert output.inner_text() == f"{moved_value:.1f}"
        # The position goes to the URL, like a figure slider's.
        page.wait_for_function("() => location.search.includes('p=')", timeout=5000)
        assert f"p={moved_value:g}" in page.evaluate("() => location.search")
        page.close()
        # Without JavaScript the control would move nothing, so it is not shown, like a figure's.
        context = browser.new_context(java_script_enabled=False)
        still = context.new_page()
        still.goto(url)
        assert still.locator("input[data-eg-param=p]").count() == 1
        assert not still.locator("input[data-eg-param=p]").is_visible()
        assert not still.locator(".eg-page-sliders").is_visible()
        assert still.locator("#yield").inner_text() == default_text
        context.close()
    assert errors == []


def test_a_declared_but_unused_page_slider_fails_the_build_at_its_line(tmp_path):
    assert UNUSED.split("\n")[UNUSED_LINE - 1].strip().startswith("q:")
    result, site = build(tmp_path, UNUSED)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"docs/index.md:{UNUSED_LINE}:" in out, out
    assert "slider 'q' is declared but nothing on the page uses it" in out, out
    assert "Traceback" not in out, out
    assert not (site / "index.html").exists()


def test_a_slider_a_figure_shows_gets_no_second_control(tmp_path):
    assert "a" in REGISTRY["speedup-vs-batch"].sliders and "p" not in REGISTRY["speedup-vs-batch"].sliders
    result, site = build(tmp_path, WITH_FIGURE)
    assert result.returncode == 0, result.stderr
    html = article((site / "index.html").read_text())
    inputs = re.findall(r'<input type="range"[^>]*data-eg-param="(\w+)"', html)
    assert sorted(inputs) == ["a", "p"], inputs  # one control each
    figure = re.search(r'<figure class="eg-figure".*?</figure>', html, re.S).group(0)
    assert 'data-eg-param="a"' in figure and 'data-eg-param="p"' not in figure
    assert f">{LABEL}</label>" in html
