"""A build's pages written from its collected model: the Markdown extension asks for each page's
Markdown and HTML (`render_markdown`, `render_html`), and the host hands back each finished page
(`finish_page`).

A renderer takes the site as collected (`SiteModel`, which it only reads) and the link policy of
its host (`Settings.links`: links relative to the page's URL, or to its Markdown file's folder).
It keeps nothing of its own but, given a `Memory`, each page's linked HTML (`render_html`).
"""
from __future__ import annotations

import posixpath
import re

from .. import theme
from ..cache import digest
from ..names import CLASS
from ..render import how, refs, share
from ..render.blocks import figure_html, finished_parts, page_root_html, place, substitute_numbers
from ..render.chrome import Chrome
from ..render.markup import esc
from .model import ASSETS, PageSource, SiteModel, relative_url
from .store import Memory

# The page's description as the theme wrote it (the page's own, else the site's).
_DESCRIPTION = re.compile(r'<meta name="description" content="([^"]*)"')


class Renderer:
    """`memory` (site/store.Memory), when given, keeps each page's HTML with its cross-references
    linked from one build to the next (`render_html`)."""

    def __init__(self, model: SiteModel, links: str, chrome: Chrome, memory: Memory | None = None):
        self.model, self.links, self.chrome, self.memory = model, links, chrome, memory
        # What linking a page's glossary terms reads besides its HTML: the terms, the glossary's
        # page, every page's URL and the link policy.
        glossary = model.refs.glossary
        self._refs_key = digest([vars(t) for t in glossary.terms] if glossary else [], model.refs.glossary_page,
                                dict(model.urls), links)

    def page(self, src_uri: str | None) -> str | None:
        """`src_uri` if it names a page of this build (the page the host says it converts), else
        None: text that is no page (a snippet, a docstring) is left as it is."""
        return src_uri if src_uri in self.model.sources else None

    def render_markdown(self, src_uri: str, markdown: str) -> tuple[str, dict[str, list[str]]]:
        """The page's Markdown with citations, glossary terms, numbers and its controls in place,
        and the HTML of each explainer fence by its body (in order). SourceError with file and line."""
        model = self.model
        source = model.sources[src_uri]
        url = lambda path: relative_url(path, source.url)  # noqa: E731
        link = self._link(source)
        build = model.pages.get(src_uri)
        derivations = how.section(build.numbers.values()) if build is not None else ""
        markdown = refs.page_markdown(model.refs, src_uri, markdown, model.urls, link, source.path, derivations)
        if build is None:
            return markdown, {}
        markdown = substitute_numbers(markdown, build, source.path)
        fences: dict[str, list[str]] = {}
        for fig in build.figures:
            files = model.figure_files[fig.anchor + "@" + src_uri]
            fences.setdefault(fig.fence.body.strip(), []).append(figure_html(fig, url, files, link))
        if build.live:
            root = page_root_html(build, url(model.page_json[src_uri]), url(model.bundle_path), link(model.loader_path),
                                  model.catalogue)
            markdown = _after_title(markdown, root)
        return markdown, fences

    def conversion_key(self, src_uri: str, markdown: str) -> str:
        """What this build makes of a page's Markdown before and after a host converts it, hashed:
        the Markdown as the extension hands it on with its fences' HTML (`render_markdown`), and
        what linking its cross-references reads (`render_html`). A host that converts the same
        Markdown with the same settings again, under `mkdocs serve`, may reuse what it got."""
        page = self.page(src_uri)
        return digest(src_uri, self.render_markdown(page, markdown) if page else markdown, self._refs_key)

    def render_html(self, src_uri: str, html: str) -> str:
        """The page's converted HTML with its cross-references resolved, and its blocks that hold a
        card marked (refs.mark_card_blocks). The same HTML with the same cross-references is linked
        once in a process: a prose save under `mkdocs serve` links only the page saved (the first
        use of each term is found anew on every page otherwise)."""
        return self._kept("page-html", digest(src_uri, html, self._refs_key), lambda: refs.mark_card_blocks(
            refs.page_html(self.model.refs, src_uri, html, self.model.urls, self._link(self.model.sources[src_uri]))))

    def _kept(self, namespace: str, key: str, make):
        """`make()`, kept by `key` in this process's memory (when given) for the next build."""
        made = self.memory.get(namespace, key) if self.memory is not None else None
        if made is None:
            made = make()
            if self.memory is not None:
                self.memory.put(namespace, key, made)
        return made

    def _link(self, source: PageSource):
        """Site path -> the `href` or `src` to write into `source`'s page (see `links`)."""
        base = source.url if self.links == "page" else posixpath.dirname(source.src_uri) + "/"
        return lambda path: relative_url(path, "" if base == "/" else base)

    def finish_page(self, src_uri: str, output: str) -> str:
        """The finished HTML page (theme and all): static pictures placed, the chart font preloaded,
        the theme's start-up moved ahead of the content (render/chrome.py), and the tags of the
        page's share card (site/cards.py) in its head. The same page from the theme, with the same
        figures, numbers, card and scripts, is finished once in a process (`mkdocs serve`)."""
        source = self.model.sources.get(src_uri)
        card = self.model.cards.get(src_uri) if source is not None else None
        info = self.model.refs.pages.get(src_uri)
        key = digest(src_uri, output, self.model.page_keys.get(src_uri, ""), vars(self.chrome),
                     vars(card) if card is not None else None, self.model.site_url,
                     source.url if source is not None else None, info.description if info is not None else None)
        return self._kept("finished-page", key, lambda: self._finish(source, src_uri, output, card))

    def _finish(self, source: PageSource | None, src_uri: str, output: str, card) -> str:
        build = self.model.pages.get(src_uri) if source is not None else None
        # What the page's figures put in it, static pictures and data tables (render/blocks.py), and
        # its numbers' derivations (render/how.py).
        parts = {**finished_parts(build.figures), how.PLACEHOLDER: how.entries(build.numbers.values())} if build else {}
        output = self.chrome.apply(place(output, parts))
        if source is not None and f'class="{CLASS.static}"' in output:
            # The chart font, early: static pictures are laid out for it.
            fonts = "".join(f'<link rel="preload" href="{relative_url(f"{ASSETS}/{path}", source.url)}" '
                            'as="font" type="font/woff2" crossorigin>' for path in theme.FONT_FILES)
            output = output.replace("</head>", fonts + "</head>", 1)
        if card is not None:
            # The share card's tags (render/share.py), describing the page as its meta description does.
            described = _DESCRIPTION.search(output.split("</head>", 1)[0])
            description = described[1] if described else esc(self.model.refs.pages[src_uri].description or card.title)
            output = output.replace("</head>", share.head_tags(card, self.model.site_url, description) + "</head>", 1)
        return output


def _after_title(markdown: str, block: str) -> str:
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return "\n".join(lines[:i + 1] + ["", block] + lines[i + 1:])
        if line.strip():
            break
    return block + "\n" + markdown
