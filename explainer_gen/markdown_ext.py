"""The Markdown extension through which a build reaches its pages, whichever host converts them.

`ExplainerExtension(site, page)` takes a collected `site.SiteBuild` and a function that says which
page the host is converting (its src_uri). For each page, then:

- a preprocessor puts the page's citations, glossary terms, inline numbers and controls into
  the Markdown, and hands the `explainer` fences their figure HTML through the Markdown
  instance (`md.explainer_fences`, read by superfence.fence_format);
- a postprocessor resolves the cross-references in the converted HTML.

Text that is no page of the build (a snippet, a docstring) passes through untouched.
"""
from __future__ import annotations

import weakref
from typing import Callable

from markdown import Extension, Markdown
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

from .site import SiteBuild


def _no_conversion():
    """What `ExplainerExtension.converting` is when no page is being converted."""
    return None


class _Page(Preprocessor):
    def __init__(self, md: Markdown, ext: "ExplainerExtension"):
        super().__init__(md)
        self.ext = ext

    def run(self, lines: list[str]) -> list[str]:
        site = self.ext.site()
        # A conversion inside a page's own (a docstring that mkdocstrings or markdown-exec
        # converts while the page is converted, with the page's context handed on) is no page.
        outer = self.ext.converting()
        src_uri = site.page(self.ext.page(self.md)) if outer is None or outer is self.md else None
        if src_uri is not None:
            self.ext.converting = weakref.ref(self.md)
        self.md.explainer_page = src_uri
        self.md.explainer_fences = {}
        self.md.explainer_tree_done = False
        if src_uri is None:
            return lines
        text, self.md.explainer_fences = site.render_markdown(src_uri, "\n".join(lines))
        return text.split("\n")


class _Refs(Postprocessor):
    def __init__(self, md: Markdown, ext: "ExplainerExtension"):
        super().__init__(md)
        self.ext = ext

    def run(self, text: str) -> str:
        # Python-Markdown's toc runs every postprocessor on each heading's inner HTML too, while
        # the tree is still being processed, to name the heading and make its id. Those fragments
        # are left alone: a glossary link there would put the card's text into the table of
        # contents and the heading's id. Only the whole body, after the last treeprocessor
        # (`_TreeDone`), gets its references.
        src_uri = getattr(self.md, "explainer_page", None)
        if src_uri is None or not getattr(self.md, "explainer_tree_done", False):
            return text
        self.ext.converting = _no_conversion  # the page's conversion ends here
        return self.ext.site().render_html(src_uri, text)


class _TreeDone(Treeprocessor):
    """Marks the end of tree processing: what the postprocessors see from now on is the body."""

    def run(self, root):
        self.md.explainer_tree_done = True


class _TableBoxes(Treeprocessor):
    """Puts each Markdown table among the page's own blocks in a box of its own, `<div class="eg-table-box">`.

    Material's bundle wraps every table without a class in its scroll container as the page starts,
    taking it out of the page and putting it back. Among the article's own children, that restyled
    every element of the article (about a thousand on the speculative page, 100 ms at phone speed).
    Inside a box, only the table is restyled. The box has no style of its own (explainer.css keeps
    the theme's spacing around it), so the table looks as it did. A table inside a note, a list or
    a details block is left as it is: there, the re-insertion restyles only that block. The tables
    the build writes (figure data) are HTML, in a box of their own already."""

    BOX = "eg-table-box"

    def run(self, root):
        if getattr(self.md, "explainer_page", None) is None:
            return
        for i, child in enumerate(list(root)):
            if child.tag == "table":
                box = root.makeelement("div", {"class": self.BOX})
                box.tail, child.tail = child.tail, None
                root.remove(child)
                box.append(child)
                root.insert(i, box)


class ExplainerExtension(Extension):
    """`site` returns the build (the current one, for hosts that rebuild); `page(md)` returns the
    src_uri of the page the host is converting with `md`, or None for text that is no page."""

    def __init__(self, site: Callable[[], SiteBuild], page: Callable[[Markdown], str | None]):
        super().__init__()
        self.site, self.page = site, page
        # The Markdown instance converting a page now (weakly held: one whose conversion failed
        # leaves nothing behind once it is gone), whatever other instances share this extension.
        self.converting = _no_conversion

    def extendMarkdown(self, md: Markdown) -> None:
        md.registerExtension(self)
        # Before whitespace is normalised (30) and superfences takes fences out (31.05, 25).
        md.preprocessors.register(_Page(md, self), "explainer_page", 35)
        # After everything else, on the final HTML of the page body (and not on the heading
        # fragments that toc renders while the tree is processed: see _Refs).
        md.treeprocessors.register(_TableBoxes(md), "explainer_table_boxes", 0)
        md.treeprocessors.register(_TreeDone(md), "explainer_tree_done", -1000)
        md.postprocessors.register(_Refs(md, self), "explainer_refs", 0)

    def reset(self) -> None:
        pass
