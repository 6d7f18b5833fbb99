"""The build reaches pages through a Markdown extension, with no MkDocs in between (issue 12).

A host that only runs `markdown_extensions` (Zensical ignores `plugins:`) collects the pages with
`site.SiteBuild` and converts each with `markdown_ext.ExplainerExtension`. This test does that
with Python-Markdown alone and checks what a reader would get: the figure, the inline numbers
computed by the model, the citation resolved, and text that is no page left untouched.
"""
from __future__ import annotations


import markdown
import pytest

from explainer_gen import core
from explainer_gen.compute.pages import split_front_matter
from explainer_gen.site import PageSource, SiteBuild, relative_url
from helpers import hand_build, markdown_with, scratch_docs
from models import load_catalogue, roofline

PAGE = """---
title: Step
---

# One step

A decode step of {{ name('target') }} takes {{ step(1) | .1f ms }} [@leviathan2023].

```explainer
figure: speedup-vs-batch
```
"""


@pytest.fixture
def site(tmp_path):
    docs = scratch_docs(tmp_path, {"step.md": PAGE})
    build = hand_build(tmp_path, docs)
    files = build.collect([PageSource("step.md", "docs/step.md", "step/", PAGE)])
    return build, files


def convert(build: SiteBuild, text: str, page: str | None) -> tuple[str, markdown.Markdown]:
    """`text` converted as the host converting the page `page` (its src_uri; None: no page) would."""
    md = markdown_with(core.host.ExplainerExtension(lambda: build, lambda md: page))
    return md.convert(text), md


def test_a_page_converted_by_markdown_alone_gets_its_figure_numbers_and_citations(site):
    build, files = site
    front, offset = split_front_matter(PAGE)
    html, md = convert(build, "\n".join(PAGE.split("\n")[offset:]), "step.md")
    assert md.explainer_page == "step.md"
    cat = load_catalogue()
    step_ms = float(roofline.step_time(cat.accelerator("h100-sxm"), cat.model("llama-3-70b"), 4, 1).seconds) * 1e3
    assert f"{step_ms:.1f}\u00a0ms" in html
    assert "Llama 3 70B" in html
    assert 'class="eg-figure' in html and "data-eg-figure=" in html
    assert "{{" not in html and "```" not in html
    assert "[@leviathan2023]" not in html and "eg-cite" in html
    # The files the page links to are among those the build hands the host.
    json_url = next(u for u in files if u.startswith("assets/explainer/fig/") and u.endswith(".json"))
    assert relative_url(json_url, "step/") in html


def test_a_pages_own_text_is_no_page_unless_the_host_names_it(site):
    """The page is the one the host names, never found from the text: the page's own body,
    converted for no page, stays as Markdown makes it."""
    build, _ = site
    front, offset = split_front_matter(PAGE)
    prose = "\n".join(PAGE.split("\n")[offset:]).split("```explainer")[0]  # (a fence outside a page fails)
    html, md = convert(build, prose, None)
    assert md.explainer_page is None
    assert "{{ step(1) | .1f ms }}" in html and "[@leviathan2023]" in html and "eg-cite" not in html


def test_a_conversion_inside_a_pages_own_is_no_page(site):
    """A text converted while a page is (a docstring that mkdocstrings renders, say, with the host
    still naming the page) is left as it is; the page around it gets its numbers and figure."""
    from markdown.treeprocessors import Treeprocessor

    build, _ = site
    ext = core.host.ExplainerExtension(lambda: build, lambda md: "step.md")
    inner = []

    class Docstring(Treeprocessor):
        def run(self, root):
            other = markdown.Markdown(extensions=[ext])
            inner.append((other.convert("A docstring with {{ step(1) | .1f ms }}."), other.explainer_page))

    class Nested(markdown.Extension):
        def extendMarkdown(self, md):
            md.treeprocessors.register(Docstring(md), "docstring", 5)

    front, offset = split_front_matter(PAGE)
    outer = markdown_with(ext, Nested())
    html = outer.convert("\n".join(PAGE.split("\n")[offset:]))
    assert inner == [("<p>A docstring with {{ step(1) | .1f ms }}.</p>", None)]
    assert outer.explainer_page == "step.md" and "{{" not in html and 'class="eg-figure' in html
    # Once the page is done, the next conversion is a page again.
    again = markdown_with(ext)
    again.convert("\n".join(PAGE.split("\n")[offset:]))
    assert again.explainer_page == "step.md"


@pytest.mark.parametrize("page", [None, "elsewhere.md"])
def test_text_that_is_no_page_passes_through(site, page):
    """Text the host converts for no page (a snippet, a docstring), or for a page the build does
    not have, is left as Markdown makes it: the page is the one the host names, never guessed."""
    build, _ = site
    html, md = convert(build, "Just *a* note with {{ braces }}.", page)
    assert md.explainer_page is None
    assert html == "<p>Just <em>a</em> note with {{ braces }}.</p>"


@pytest.mark.parametrize("target, page, want", [
    ("assets/x.json", "step/", "../assets/x.json"),
    ("assets/x.json", "", "assets/x.json"),
    ("assets/x.json", "a/b/", "../../assets/x.json"),
    ("a/c/", "a/b/", "../c/"),
    ("assets/x.json", "a/page.html", "../assets/x.json"),
])
def test_relative_urls_match_mkdocs(target, page, want):
    from mkdocs.utils import get_relative_url

    assert relative_url(target, page) == want == get_relative_url(target, page)


TABLES = """# Tables

Before.

| a | b |
|---|---|
| 1 | 2 |

After, with a tail.

!!! note
    | c |
    |---|
    | 3 |

- | d |
  |---|
  | 4 |

<div class="eg-table-wrap"><table><tr><td>raw</td></tr></table></div>
"""


def test_each_markdown_table_gets_a_box_of_its_own(tmp_path):
    """Material's bundle takes each table out of the page and puts it back inside its scroll
    container; in a box, that restyles only the table (render/chrome.py). Each table among the
    page's own blocks gets a box, text around it stays where it was, and tables inside other
    blocks (a note, a list) and HTML tables are left alone."""
    docs = scratch_docs(tmp_path, {"t.md": TABLES})
    build = hand_build(tmp_path, docs)
    build.collect([PageSource("t.md", "docs/t.md", "t/", TABLES)])
    md = markdown.Markdown(extensions=[core.host.ExplainerExtension(lambda: build, lambda md: "t.md"), "tables",
                                       "admonition", "md_in_html"])
    html = md.convert(TABLES)
    assert html.count('<div class="eg-table-box"><table>') == 1 and html.count("eg-table-box") == 1, html
    assert html.count("<table>") == 4
    assert html.index("Before.") < html.index("eg-table-box") < html.index("After, with a tail.")
    assert '<div class="eg-table-wrap"><table><tr><td>raw</td></tr></table></div>' in html
    # Text that is no page of the build is left as Markdown made it.
    other = markdown.Markdown(extensions=[core.host.ExplainerExtension(lambda: build, lambda md: None),
                                          "tables"]).convert("| x |\n|---|\n| 1 |")
    assert "eg-table-box" not in other
