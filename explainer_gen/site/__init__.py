"""One build of the site, whichever host runs it.

A build has three steps, and a host (through host.py) only has to call them:

1. `collect(pages)` (site/collect.py): read every page, check everything an author can get wrong
   (raising SourceError with the file and line), compute every figure and number, and return the
   files to add to the site (figure JSON, CSV, page state, the Vega bundle, fonts, CSS, the feed).
   Nothing is written, so a mistake leaves the previous site as it was. What it collects is a
   read-only model of the site (`SiteModel`, site/model.py).
2. The Markdown extension (`markdown_ext.ExplainerExtension`) renders each page from that model
   (site/render.py): figure fences, inline numbers, citations, glossary terms and the page's
   controls.
3. `finish_page(src_uri, html)`: the finished HTML page gets its static pictures (kept out of
   Markdown and the search index), the chart font's preload, and the theme's start-up moved
   ahead of its content (render/chrome.py).

What a build keeps is in its store (site/store.py): `Memory` (decoded cache entries, which a
long-lived process such as `mkdocs serve` hands from one build to the next), the disk cache, and
the keys of every result; and in `timing`.
"""
from __future__ import annotations

from ..compute.codegraph import CodeKeys
from ..compute.pages import PageBuild
from ..compute.timing import Timing
from ..render.chrome import Chrome
from .collect import Collector
from .model import ASSETS, CSS_PATH, Generated, PageSource, Settings, SiteModel, relative_url
from .render import Renderer
from .store import Memory, Store


class SiteBuild:
    """One build: its store, its collect step, and the renderer of what it collected. `code` gives
    the hashes of the code each result runs (core.CODE, compute/codegraph.py)."""

    def __init__(self, settings: Settings, code: CodeKeys, memory: Memory | None = None):
        self.settings = settings
        self.timing = Timing()
        self.store = Store(settings, code, memory, self.timing)
        self.collector = Collector(self.store)
        self.chrome = Chrome.read()  # a build's own copy: `mkdocs serve` sees edited scripts
        self.model: SiteModel | None = None
        self.renderer: Renderer | None = None

    @property
    def root(self):
        return self.settings.root

    @property
    def sources(self):
        """src_uri -> each page as found (empty before `collect`)."""
        return self.model.sources if self.model is not None else {}

    def collect(self, pages: list[PageSource], nav: list[str] = (), site_name: str = "",
                site_url: str | None = None) -> dict[str, Generated]:
        """Check and compute every page; the site files to add. SourceError on any author mistake."""
        self.model = self.collector.collect(pages, nav, site_name, site_url)
        self.renderer = Renderer(self.model, self.settings.links, self.chrome, self.store.memory)
        return dict(self.model.files)

    def compute_page(self, p: PageSource, share: int | None = None) -> PageBuild:
        """One page (or a worker's share of it) computed through the store (Collector.compute_page)."""
        return self.collector.compute_page(p, share)

    def tidy_cache(self, keep_days: float) -> str:
        return self.store.tidy(keep_days)

    # -- 2. render (called by the Markdown extension) and 3. finish -------------------------------
    def page(self, src_uri: str | None) -> str | None:
        return self.renderer.page(src_uri) if self.renderer is not None else None

    def render_markdown(self, src_uri: str, markdown: str) -> tuple[str, dict[str, list[str]]]:
        return self.renderer.render_markdown(src_uri, markdown)

    def render_html(self, src_uri: str, html: str) -> str:
        return self.renderer.render_html(src_uri, html)

    def conversion_key(self, src_uri: str, markdown: str) -> str:
        return self.renderer.conversion_key(src_uri, markdown)

    def finish_page(self, src_uri: str, output: str) -> str:
        return self.renderer.finish_page(src_uri, output)


__all__ = ["SiteBuild", "SiteModel", "Settings", "PageSource", "Memory", "Store", "Generated", "relative_url",
           "ASSETS", "CSS_PATH"]
