"""One build of the site, whichever host runs it: the store that owns everything a build computes.

A build has three steps, and a host (the MkDocs plugin today) only has to call them:

1. `collect(pages)`: read every page, check everything an author can get wrong (raising
   SourceError with the file and line), compute every figure and number, and return the files
   to add to the site (figure JSON, CSV, page state, the Vega bundle, fonts, CSS, the feed).
   Nothing is written, so a mistake leaves the previous site as it was.
2. The Markdown extension (`markdown_ext.ExplainerExtension`, given this object) renders each
   page: figure fences, inline numbers, citations, glossary terms and the page's controls.
3. `finish_page(src_uri, html)`: the finished HTML page gets its static pictures (kept out of
   Markdown and the search index), the chart font's preload, and the theme's start-up moved
   ahead of its content (render/chrome.py).

What a build keeps is here and nowhere else: `memory` (decoded cache entries, which a
long-lived process such as `mkdocs serve` hands from one build to the next), the disk cache,
the pages computed, and `timing`.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from models import estimate
from models.catalogue import Catalogue, load_catalogue
from models.yamlsource import SourceError

from .client import contract
from . import theme
from .compute.artifacts import FigureArtifacts, build_figure, dumps
from .client.bundle import javascript_bundle, short_hash
from .client.loader import loader_script
from .compute.cache import PACKAGE_ROOT, DiskCache, digest
from .compute.codegraph import CodeKeys
from .sources.crossref import CrossRefs, Source
from .render.feed import ATOM_PATH
from .render.blocks import figure_html, page_root_html, place_pictures, static_picture, substitute_numbers
from .render.chrome import Chrome
from .render.names import CLASS
from .compute.numbers import NumberResult
from .compute.pages import FENCE_NAME, PageBuild, build_page, split_front_matter
from .compute.timing import Timing
from .compute import assumptions, workers

ASSETS = "assets/explainer"
CSS_PATH = f"{ASSETS}/explainer.css"


@dataclass(frozen=True)
class PageSource:
    """A Markdown page as the host found it."""

    src_uri: str   # its path under the docs folder
    path: str      # its path as errors show it (relative to the project)
    url: str       # its URL, relative to the site root ("explainers/roofline/")
    text: str      # the whole file, front matter included


# A generated file: its text or bytes, or the path of a file to copy.
Generated = str | bytes | Path


class Memory:
    """Decoded cache entries by (namespace, key), kept between builds in one process. Keys hash
    everything that decides a value (code, catalogue, request), so an entry is never stale."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], object] = {}

    def get(self, namespace: str, key: str):
        return self._items.get((namespace, key))

    def put(self, namespace: str, key: str, value) -> None:
        if len(self._items) > self.LIMIT:
            self._items.clear()
        self._items[namespace, key] = value

    def drop(self, namespace: str, key: str) -> None:
        self._items.pop((namespace, key), None)

    @property
    def empty(self) -> bool:
        return not self._items


def relative_url(target: str, page_url: str) -> str:
    """`target` (a path from the site root) as a link from the page at `page_url`."""
    base = page_url.rsplit("/", 1)[0] if "." in page_url.rsplit("/", 1)[-1] else page_url
    here = [p for p in base.split("/") if p not in ("", ".")]
    there = [p for p in target.split("/") if p not in ("", ".")]
    common = 0
    for a, b in zip(here, there):
        if a != b:
            break
        common += 1
    rel = "/".join([".."] * (len(here) - common) + there[common:]) or "."
    return rel + "/" if target.endswith("/") else rel


class SiteBuild:
    """The store of one build. `code` gives the hashes of the code each result runs (core.CODE,
    compute/codegraph.py)."""

    def __init__(self, *, root: Path, docs_dir: Path, catalogue_path: Path, cache_dir: Path | None,
                 data_budget_kb: int, code: CodeKeys, memory: Memory | None = None, workers: int = 1,
                 links: str = "page"):
        self.root, self.docs_dir, self.catalogue_path = root, docs_dir, Path(catalogue_path)
        # What the `href` and `src` the build writes into a page are relative to: the page's URL
        # ("page": MkDocs leaves such links alone), or the folder of its Markdown file ("source":
        # Zensical rewrites every relative link from there to the page's URL). Data attributes,
        # which only the page's scripts read, are always relative to the page's URL.
        if links not in ("page", "source"):
            raise ValueError(f"links must be 'page' or 'source', got {links!r}")
        self.links = links
        self.cache = DiskCache(cache_dir)
        self.budget = data_budget_kb * 1000
        self.workers = workers  # processes that compute pages side by side (needs the disk cache)
        self.code = code
        self.memory = memory or Memory()
        # A build that starts with decoded entries in memory (`mkdocs serve`) reads some of what it
        # uses from there, which the disk cache never sees: it cannot tell what is unused.
        self._disk_sees_all = self.memory.empty
        self.timing = Timing()
        self.pages: dict[str, PageBuild] = {}       # src_uri -> the page computed (with figures or numbers)
        self.sources: dict[str, PageSource] = {}    # src_uri -> the page as found
        self.pictures: dict[str, dict[str, str]] = {}  # src_uri -> figure anchor -> inline SVG
        self.figure_files: dict[str, dict[str, str]] = {}
        self.page_json: dict[str, str] = {}
        self.files: dict[str, Generated] = {}
        self.chrome = Chrome.read()  # a build's own copy: `mkdocs serve` sees edited scripts
        self._by_body: dict[str, list[str]] = {}    # digest of a page's Markdown body -> src_uris
        self._results: tuple[dict, set] | None = None  # what the page being built reads (_reading)

    # -- 1. collect -----------------------------------------------------------------------------
    def collect(self, pages: list[PageSource], nav: list[str] = (), site_name: str = "",
                site_url: str | None = None) -> dict[str, Generated]:
        """Check and compute every page; the site files to add. SourceError on any author mistake."""
        self.sources = {p.src_uri: p for p in pages}
        self.urls = {p.src_uri: p.url for p in pages}
        for p in pages:
            self._by_body.setdefault(_body_key(_body(p.text)), []).append(p.src_uri)
        self.refs = CrossRefs.collect(self.docs_dir, os.path.relpath(self.docs_dir, self.root),
                                      [Source(p.src_uri, p.path, p.text) for p in pages], list(nav), self.cache)
        if self.refs.feed_page:
            self._add(ATOM_PATH, self.refs.atom(site_name, site_url, self.urls))
        bundle = javascript_bundle(self.cache)
        self.bundle_path = self._add(f"{ASSETS}/vega-{short_hash(bundle)}.js", bundle)
        loader = loader_script()  # read afresh each build, with the contract's facts (client/loader.py)
        self.loader_path = self._add(f"{ASSETS}/loader-{short_hash(loader)}.js", loader)
        self._add(CSS_PATH, theme.palette_css() + (PACKAGE_ROOT / "assets" / "explainer.css").read_text(encoding="utf-8"))
        for path, (font, _) in theme.FONT_FILES.items():
            self._add(f"{ASSETS}/{path}", Path(font))

        self._check_measurements()
        self._in_parallel(pages)
        for p in pages:
            # A page whose source, catalogue and code are unchanged since the last build in
            # this process (`mkdocs serve`) is not read again.
            page_key = self._page_key(p)
            page = self.memory.get("page", page_key) or self.compute_page(p)
            # What the page's figures and numbers are, for the build's summary (Timing.summary).
            placed, numbers = self.memory.get("page-results", page_key)
            self.timing.placed.update(placed)
            self.timing.numbers_used.update(numbers)
            if not page.live and not page.numbers:
                continue
            self.pages[p.src_uri] = page
            for fig in page.figures:
                self.figure_files[fig.anchor + "@" + p.src_uri] = self._figure_files(fig)
            # Keyed by what decides the state, not by the page's text: a prose edit stores nothing new.
            sliders = page.every_slider()
            state_key = digest(self.fingerprint, page.controls.identity(), list(page.numbers),
                               [vars(s) for s in sliders.values()])
            state = self._remember("page-json", state_key,
                                   lambda: dumps(contract.page_state(page.controls, page.numbers, sliders,
                                                                     self.catalogue)),
                                   lambda text: text, lambda text: text)
            self.page_json[p.src_uri] = self._add(f"{ASSETS}/page/{short_hash(p.src_uri)}.json", state)
        return self.files

    def _check_measurements(self) -> None:
        """The published measurements against the fitted estimate (models/estimate.py): a band
        wider than its limit, or a measurement whose place in the band is not the one the file
        records, fails the build at its line, as an author's mistake does. Kept per file, catalogue
        and code, since the fit takes a moment."""
        path = estimate.MEASUREMENTS_PATH
        key = digest(self.code.fingerprint, self.inputs, path.read_text(encoding="utf-8"))
        errors = self._remember(
            "measurements", key,
            lambda: [[e.path, e.line, e.message] for e in estimate.check(estimate.load(path, self.catalogue))],
            lambda found: found, lambda found: found)
        if errors:
            (where, line, first), more = errors[0], errors[1:]
            also = "".join(f"\n  also {w}:{n}: {m}" for w, n, m in more)
            raise SourceError(where, line, first + also)

    @functools.cached_property
    def catalogue(self) -> Catalogue:
        """The accelerators and models, read once a build."""
        return load_catalogue(self.catalogue_path)

    @functools.cached_property
    def inputs(self) -> str:
        """What decides every result besides its request and its code: the catalogue (read once a build)."""
        return digest(self.catalogue_path.read_text(encoding="utf-8"))

    @functools.cached_property
    def fingerprint(self) -> str:
        """What decides all of a page's results together: all their code, and the catalogue."""
        return digest(self.code.fingerprint, self.inputs)

    def _page_key(self, p: PageSource) -> str:
        return digest(self.fingerprint, self.budget, p.path, p.text)

    def _keep_page(self, p: PageSource, page: PageBuild, results: tuple[dict, set]) -> None:
        """Record a page computed in full: this process keeps it, with the keys of its `results`
        (`_reading`), and the disk cache records that it is complete, so no later build hands it to
        a worker again."""
        key = self._page_key(p)
        self.memory.put("page", key, page)
        self.memory.put("page-results", key, results)
        if self.cache.path("pages", key) is None:
            self.cache.put("pages", key, "complete")

    def compute_page(self, p: PageSource, share: int | None = None) -> PageBuild:
        """Check and compute one page, its figures and numbers through the caches, and keep it
        (`_keep_page`).

        A worker passes `share`: its figure of that place on the page (0, 1, ...), or with
        `workers.NUMBERS` its inline numbers, is computed into the cache and the rest stands in
        empty; what it returns is then no page to show."""
        place = itertools.count()

        def figure(req):
            mine = share is None or next(place) == share
            return self._figure(req) if mine else workers.ELSEWHERE_FIGURE

        def number(identity, make):
            mine = share is None or share == workers.NUMBERS
            return self._number(identity, make) if mine else workers.ELSEWHERE_NUMBER
        with self._reading() as results:
            page = build_page(p.text, p.path, self.catalogue, figure, self.budget, number, self.timing, assumptions)
        if share is not None and 0 <= share < len(page.figures):
            self._figure_files(page.figures[share])  # its site files too, into the cache
        if share is None:
            self._keep_page(p, page, results)
        return page

    @contextlib.contextmanager
    def _reading(self):
        """The results a page reads while it is built: (file, line) of each figure -> its key, and
        each number's key."""
        self._results = results = ({}, set())
        try:
            yield results
        finally:
            self._results = None

    def _in_parallel(self, pages: list[PageSource]) -> None:
        """Hand the pages that have work to do (figures or numbers, and nothing cached) to worker
        processes, which fill the disk cache; the caller then reads them back (compute/workers.py)."""
        if self.workers < 2 or self.cache.root is None:
            return
        todo = [p for p in pages if (FENCE_NAME in p.text or "{{" in p.text)
                and self.memory.get("page", self._page_key(p)) is None
                and self.cache.path("pages", self._page_key(p)) is None]
        jobs = [workers.PageJob(str(self.root), str(self.docs_dir), str(self.catalogue_path), str(self.cache.root),
                                self.budget // 1000, self.code.fingerprint, p.src_uri, p.path, p.url, p.text, share)
                for p in todo for share in self._uncached_shares(p)]
        if len(jobs) < workers.MIN_JOBS:
            return
        self.timing.workers = min(self.workers, len(jobs))
        for result in workers.run(jobs, self.timing.workers):
            self.timing.merge(result)
        self.timing.worker_pages = len({job.src_uri for job in jobs})

    def _uncached_shares(self, p: PageSource) -> list[int]:
        """The page's shares of work (`workers.PageJob.share`) that no cache holds: the page is read as a
        build reads it, but its figures and numbers are only looked up. A prose edit changes the
        page and none of its results, so it leaves nothing for a worker to do, and the page read
        here is then the page itself (kept, so the build does not read it twice)."""
        place, missing = itertools.count(), set()

        def known(namespace: str, key: str) -> bool:
            return self.memory.get(namespace, key) is not None or self.cache.path(namespace, key) is not None

        def figure(req):
            i = next(place)
            if known("figure-meta", self._figure_key(req)):
                return self._figure(req)
            missing.add(i)
            return workers.ELSEWHERE_FIGURE

        def number(identity, make):
            if known("numbers", self._number_key(identity)):
                return self._number(identity, make)
            missing.add(workers.NUMBERS)
            return workers.ELSEWHERE_NUMBER
        try:
            with self._reading() as results:
                page = build_page(p.text, p.path, self.catalogue, figure, self.budget, number, assumed=assumptions)
        except SourceError:
            return []  # the build's own pass reports it, with its file and line
        if not missing:
            self._keep_page(p, page, results)
        return sorted(missing)

    def _add(self, path: str, content: Generated) -> str:
        self.files.setdefault(path, content)
        return path

    def _remember(self, namespace: str, key: str, make, to_json, from_json):
        """`make()` once per key; later builds read the JSON the first one stored, and this
        process keeps the decoded value too."""
        value = self.memory.get(namespace, key)
        if value is not None:
            return value
        cached = self.cache.get(namespace, key)
        if cached is not None:
            value = from_json(json.loads(cached))
        else:
            value = make()
            self.cache.put(namespace, key, dumps(to_json(value)))
        self.memory.put(namespace, key, value)
        return value

    def _figure_key(self, req) -> str:
        """The request, the catalogue, and the code a figure of its kind runs (not all the code)."""
        return digest(self.inputs, self.code.figure(req.kind), req.identity())

    def _number_key(self, identity: dict) -> str:
        """The number, the catalogue, and the code that evaluates it and the terms it calls."""
        return digest(self.inputs, self.code.number(identity["calls"], identity["chooses"]), identity)

    def _figure(self, req) -> FigureArtifacts:
        """The figure's artefacts: in full when computed now, else the light part the HTML needs."""
        key = self._figure_key(req)
        if self._results is not None:
            self._results[0][(req.path, req.line)] = key

        reason = self._reason(req)  # why it would be computed; the record is this figure's from now

        def make() -> FigureArtifacts:
            self.timing.computed[key] = [req.path, req.line, reason]
            artifacts = build_figure(req, self.catalogue, self.timing)
            artifacts.key = key
            self.cache.put("figures", key, dumps(artifacts.to_json()))  # the heavy part, for new pages
            return artifacts
        return self._remember("figure-meta", key, make, FigureArtifacts.light_json, FigureArtifacts.from_json)

    def _heavy(self, fig) -> FigureArtifacts:
        """Spec, data and images for a figure read back light: from the cache, else recomputed."""
        if fig.artifacts.heavy:
            return fig.artifacts
        cached = self.cache.get("figures", fig.artifacts.key)
        if cached is not None:
            return FigureArtifacts.from_json(json.loads(cached))
        artifacts = build_figure(fig.request, self.catalogue, self.timing)
        artifacts.key = fig.artifacts.key
        return artifacts

    def _reason(self, req) -> str:
        """Why the figure `req` would be computed (timing.REASONS), from the record the last build
        that placed a figure of its kind and caption on its page left; leaves this one's. A record
        already this one's is only marked used (so the cache's sweep keeps it)."""
        code, data = self.code.figure(req.kind)
        now = dumps({"code": code, "inputs": digest(self.inputs, data, req.identity())})
        place = digest(req.path, req.kind, req.caption)
        last = self.memory.get("placed", place)
        if last != now or self.cache.path("placed", place) is None:
            last = self.cache.get("placed", place)
            if last != now:
                self.cache.put("placed", place, now)
            self.memory.put("placed", place, now)
        if last is None:
            return "new"
        return "code changed" if json.loads(last)["code"] != code else "inputs changed"

    def _number(self, identity: dict, make) -> NumberResult:
        key = self._number_key(identity)
        if self._results is not None:
            self._results[1].add(key)

        def timed() -> NumberResult:  # the phase "numbers", the models' share apart (compute/timing.py)
            self.timing.numbers_computed.add(key)
            with self.timing.phase("numbers"):
                return make()
        return self._remember("numbers", key, timed, vars, lambda d: NumberResult(**d))

    def _figure_files(self, fig) -> dict[str, str]:
        """Add the figure's JSON, variant data and CSV; names hash what decides them.

        With a cache, each file is stored once as a blob that the host copies, so a rebuild
        reads no figure data at all.
        """
        with self.timing.phase("files"):
            return self._write_figure_files(fig)

    def _write_figure_files(self, fig) -> dict[str, str]:
        # The figure, and the code that writes its files (client/contract.py).
        key = digest(fig.artifacts.key, self.code.state(), fig.scenario_map)
        stem = f"{ASSETS}/fig/{key[:16]}"
        if self.cache.root is None:
            for path, text in contract.site_files(self._heavy(fig), fig.scenario_map, stem).items():
                self._add(path, text)
        else:
            # The figure's heavy part, which its files are made from, stays in the cache while the
            # figure is on the site (a page placing it anew needs it), though a rebuild reads only
            # the files (`tidy_cache` keeps what a build used).
            self.cache.path("figures", fig.artifacts.key)

            def make() -> dict[str, str]:
                blobs = {}
                for path, text in contract.site_files(self._heavy(fig), fig.scenario_map, stem).items():
                    blobs[path] = digest(text)[:32] + Path(path).suffix
                    self.cache.put("blobs", blobs[path], text)
                return blobs
            blobs = self._remember("files", key, make, lambda b: b, lambda b: b)
            if not all(self.cache.path("blobs", b) for b in blobs.values()):
                self.memory.drop("files", key)
                self.cache.put("files", key, dumps(blobs := make()))
            for path, blob in blobs.items():
                self._add(path, self.cache.path("blobs", blob))
        return {"json": f"{stem}.json", "csv": f"{stem}.csv"}

    def tidy_cache(self, keep_days: float) -> str:
        """After a whole build that succeeded: drop the disk cache's entries that neither this build
        nor any other for `keep_days` days has used (`DiskCache.sweep`). Returns what went, in a
        sentence for the host to show after "explainer: " ("" if nothing).

        What workers computed counts as used: this process reads all of it back (`collect`). A build
        that read entries from memory drops nothing."""
        if not self._disk_sees_all:
            return ""
        removed, freed = self.cache.sweep(self.cache.used, keep_days * 86400.0)
        return (f"dropped {removed} cache entries ({freed / 1e6:.1f} MB) that no build has used "
                f"for {keep_days:g} days" if removed else "")

    # -- 2. render (called by the Markdown extension) -------------------------------------------
    def page_for(self, markdown: str, hint: str | None = None) -> str | None:
        """The page whose Markdown body this is: `hint` if the host said which page it renders,
        else the one page with this body. None for text that is no page of this build."""
        if hint in self.sources:
            return hint
        found = self._by_body.get(_body_key(markdown), [])
        if len(found) > 1:
            raise ValueError(f"pages {', '.join(found)} have the same text; the host must say which "
                             "page it renders")
        return found[0] if found else None

    def render_markdown(self, src_uri: str, markdown: str) -> tuple[str, dict[str, list[str]]]:
        """The page's Markdown with citations, glossary terms, numbers and its controls in place,
        and the HTML of each explainer fence by its body (in order). SourceError with file and line."""
        source = self.sources[src_uri]
        url = lambda path: relative_url(path, source.url)  # noqa: E731
        link = self._link(source)
        markdown = self.refs.markdown(src_uri, markdown, self.urls, link, source.path)
        build = self.pages.get(src_uri)
        if build is None:
            return markdown, {}
        markdown = substitute_numbers(markdown, build, source.path)
        fences: dict[str, list[str]] = {}
        for fig in build.figures:
            files = self.figure_files[fig.anchor + "@" + src_uri]
            fences.setdefault(fig.fence.body.strip(), []).append(figure_html(fig, url, files, link))
        self._pictures(src_uri)
        if build.live:
            root = page_root_html(build, url(self.page_json[src_uri]), url(self.bundle_path), link(self.loader_path),
                                  self.catalogue)
            markdown = _after_title(markdown, root)
        return markdown, fences

    def render_html(self, src_uri: str, html: str) -> str:
        """The page's converted HTML with its cross-references resolved."""
        return self.refs.html(src_uri, html, self.urls, self._link(self.sources[src_uri]))

    def _pictures(self, src_uri: str) -> dict[str, str]:
        """The page's static pictures by figure anchor, drawn once: when its Markdown is converted,
        or when the page is finished by a host that converted it in another process (Zensical)."""
        if src_uri not in self.pictures:
            build = self.pages.get(src_uri)
            self.pictures[src_uri] = ({fig.anchor: static_picture(fig.artifacts, fig.anchor) for fig in build.figures}
                                      if build else {})
        return self.pictures[src_uri]

    def _link(self, source: PageSource):
        """Site path -> the `href` or `src` to write into `source`'s page (see `links`)."""
        base = source.url if self.links == "page" else posixpath.dirname(source.src_uri) + "/"
        return lambda path: relative_url(path, "" if base == "/" else base)

    # -- 3. finish ------------------------------------------------------------------------------
    def finish_page(self, src_uri: str, output: str) -> str:
        """The finished HTML page (theme and all): static pictures placed, the chart font preloaded,
        the theme's start-up moved ahead of the content (render/chrome.py)."""
        source = self.sources.get(src_uri)
        output = self.chrome.apply(place_pictures(output, self._pictures(src_uri) if source is not None else {}))
        if source is not None and f'class="{CLASS.static}"' in output:
            # The chart font, early: static pictures are laid out for it.
            fonts = "".join(f'<link rel="preload" href="{relative_url(f"{ASSETS}/{path}", source.url)}" '
                            'as="font" type="font/woff2" crossorigin>' for path in theme.FONT_FILES)
            output = output.replace("</head>", fonts + "</head>", 1)
        return output


def _body(text: str) -> str:
    """A page's Markdown without its front matter, as hosts hand it to Markdown."""
    front, offset = split_front_matter(text)
    return text if front is None else "\n".join(text.split("\n")[offset:])


def _body_key(markdown: str) -> str:
    return digest(markdown.strip())


def _after_title(markdown: str, block: str) -> str:
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return "\n".join(lines[:i + 1] + ["", block] + lines[i + 1:])
        if line.strip():
            break
    return block + "\n" + markdown


__all__ = ["SiteBuild", "PageSource", "Memory", "Generated", "relative_url", "ASSETS", "CSS_PATH"]
