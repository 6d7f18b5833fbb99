"""A build's first step: read every page, check everything an author can get wrong (SourceError
with the file and line), compute every figure and number through the store, and return the site
as a read-only model (`SiteModel`) with every file to add to it. Nothing is written, so a
mistake leaves the previous site as it was.

Pages with work no cache holds are first handed to worker processes (compute/workers.py), which
fill the disk cache; this step then reads every figure and number back the way a warm rebuild does,
so the site is byte for byte the one a single process builds.
"""
from __future__ import annotations

import itertools
import os
import posixpath
from pathlib import Path

from models import estimate
from models.yamlsource import SourceError

from .. import theme
from ..cache import PACKAGE_ROOT, digest
from ..client import contract
from ..client.bundle import javascript_bundle, short_hash
from ..client.loader import loader_script
from ..compute import assumptions, layout, workers
from ..compute.artifacts import dumps
from ..compute.pages import FENCE_NAME, PageBuild, build_page
from ..render import how, refs as render_refs
from ..render.feed import ATOM_PATH
from ..sources.crossref import CrossRefs, Source
from .cards import collect_cards
from .model import ASSETS, CSS_PATH, FENCE_CHECKS, Generated, PageSource, SiteModel
from .store import Store


class Collector:
    """The collect step of one build, over its `store`."""

    def __init__(self, store: Store):
        self.store = store
        self.settings, self.timing = store.settings, store.timing

    def collect(self, pages: list[PageSource], nav: list[str] = (), site_name: str = "",
                site_url: str | None = None) -> SiteModel:
        """Check and compute every page. SourceError on any author mistake."""
        store, settings = self.store, self.settings
        files: dict[str, Generated] = {}

        def add(path: str, content: Generated) -> str:
            files.setdefault(path, content)
            return path

        urls = {p.src_uri: p.url for p in pages}
        refs = CrossRefs.collect(settings.docs_dir, os.path.relpath(settings.docs_dir, settings.root),
                                 [Source(p.src_uri, p.path, p.text) for p in pages], list(nav), store.cache)
        if refs.feed_page:
            add(ATOM_PATH, render_refs.atom(refs, site_name, site_url, urls))
        bundle = javascript_bundle(store.cache)
        bundle_path = add(f"{ASSETS}/vega-{short_hash(bundle)}.js", bundle)
        loader = loader_script()  # read afresh each build, with the contract's facts (client/loader.py)
        loader_path = add(f"{ASSETS}/loader-{short_hash(loader)}.js", loader)
        add(CSS_PATH, theme.palette_css() + layout.css() + (PACKAGE_ROOT / "assets" / "explainer.css").read_text(encoding="utf-8"))
        for path, (font, _) in theme.FONT_FILES.items():
            add(f"{ASSETS}/{path}", Path(font))

        self._check_measurements()
        self._in_parallel(pages)
        computed: dict[str, PageBuild] = {}
        figure_files: dict[str, dict[str, str]] = {}
        page_json: dict[str, str] = {}
        for p in pages:
            # A page whose source, catalogue and code are unchanged since the last build in
            # this process (`mkdocs serve`) is not read again.
            page = store.page(p) or self.compute_page(p)
            # What the page's figures and numbers are, for the build's summary (Timing.summary).
            placed, numbers = store.page_results(p)
            self.timing.placed.update(placed)
            self.timing.numbers_used.update(numbers)
            if not page.live and not page.numbers:
                continue
            computed[p.src_uri] = page
            for fig in page.figures:
                where, made = store.figure_files(fig)
                for path, content in made.items():
                    add(path, content)
                figure_files[fig.anchor + "@" + p.src_uri] = where
            # Keyed by what decides the state, not by the page's text: a prose edit stores nothing new,
            # and a save of code that none of its numbers runs (their keys hold theirs) none either.
            sliders = page.every_slider()
            state_path = f"{ASSETS}/page/{short_hash(p.src_uri)}.json"
            # Each computed number's card file, by the entry its link leads to, from the page state.
            cards = {}
            for result in page.numbers.values():
                if result.has_cards:
                    path, content = store.card_file(result)
                    cards[how.entry_id(result.id)] = posixpath.relpath(add(path, content), posixpath.dirname(state_path))
            state_key = digest(store.code.page_state(), store.inputs, page.controls.identity(), list(page.numbers),
                               sorted(numbers), [vars(s) for s in sliders.values()], cards)
            state = store.remember("page-json", state_key,
                                   lambda: dumps(contract.page_state(page.controls, page.numbers, sliders,
                                                                     store.catalogue, cards)),
                                   lambda text: text, lambda text: text)
            page_json[p.src_uri] = add(state_path, state)
        # Each page's share card (site/cards.py), with its first figure's picture.
        cards = collect_cards(store, pages, refs, computed, site_name, site_url, add)
        sources = {p.src_uri: p for p in pages}
        return SiteModel(catalogue=store.catalogue, sources=sources,
                         refs=refs, pages=computed, figure_files=figure_files, page_json=page_json,
                         bundle_path=bundle_path, loader_path=loader_path, files=files,
                         site_url=site_url or "", cards=cards,
                         page_keys={uri: store.page_key(sources[uri]) for uri in computed})

    def _check_measurements(self) -> None:
        """The published measurements against the fitted estimate (models/estimate.py): a band
        wider than its limit, or a measurement whose place in the band is not the one the file
        records, fails the build at its line, as an author's mistake does. Kept per file, catalogue
        and the code the check runs (a save of a model it does not run checks nothing again), since
        the fit takes a moment."""
        store = self.store
        path = estimate.MEASUREMENTS_PATH
        key = digest(store.code.measurements(), store.inputs, path.read_text(encoding="utf-8"))
        errors = store.remember(
            "measurements", key,
            lambda: [[e.path, e.line, e.message] for e in estimate.check(estimate.load(path, store.catalogue))],
            lambda found: found, lambda found: found)
        if errors:
            (where, line, first), more = errors[0], errors[1:]
            also = "".join(f"\n  also {w}:{n}: {m}" for w, n, m in more)
            raise SourceError(where, line, first + also)

    def compute_page(self, p: PageSource, share: int | None = None) -> PageBuild:
        """Check and compute one page, its figures and numbers through the store, and keep it
        (`Store.keep_page`).

        A worker passes `share`: its figure of that place on the page (0, 1, ...), or with
        `workers.NUMBERS` its inline numbers, is computed into the cache and the rest stands in
        empty; what it returns is then no page to show."""
        store, place = self.store, itertools.count()

        def figure(req):
            mine = share is None or next(place) == share
            return store.figure(req) if mine else workers.ELSEWHERE_FIGURE

        def number(identity, make):
            mine = share is None or share == workers.NUMBERS
            return store.number(identity, make) if mine else workers.ELSEWHERE_NUMBER
        with store.reading() as results:
            page = build_page(p.text, p.path, store.catalogue, figure, store.budget, number, self.timing, assumptions,
                              FENCE_CHECKS)
        if share is not None and 0 <= share < len(page.figures):
            store.figure_files(page.figures[share])  # its site files too, into the cache
        if share is None:
            store.keep_page(p, page, results)
        return page

    def _in_parallel(self, pages: list[PageSource]) -> None:
        """Hand the pages that have work to do (figures or numbers, and nothing cached) to worker
        processes, which fill the disk cache; `collect` then reads them back (compute/workers.py)."""
        store = self.store
        if self.settings.workers < 2 or store.cache.root is None:
            return
        todo = [p for p in pages if (FENCE_NAME in p.text or "{{" in p.text) and not store.page_done(p)]
        jobs = [workers.PageJob(self.settings.to_json(), store.code.fingerprint, p.src_uri, p.path, p.url, p.text,
                                share)
                for p in todo for share in self._uncached_shares(p)]
        if len(jobs) < workers.MIN_JOBS:
            return
        self.timing.workers = min(self.settings.workers, len(jobs))
        for result in workers.run(jobs, self.timing.workers):
            self.timing.merge(result)
        self.timing.worker_pages = len({job.src_uri for job in jobs})

    def _uncached_shares(self, p: PageSource) -> list[int]:
        """The page's shares of work (`workers.PageJob.share`) that no cache holds: the page is read as a
        build reads it, but its figures and numbers are only looked up. A prose edit changes the
        page and none of its results, so it leaves nothing for a worker to do, and the page read
        here is then the page itself (kept, so the build does not read it twice)."""
        store = self.store
        place, missing = itertools.count(), set()

        def figure(req):
            i = next(place)
            if store.known("figure-meta", store.figure_key(req)):
                return store.figure(req)
            missing.add(i)
            return workers.ELSEWHERE_FIGURE

        def number(identity, make):
            if store.known("numbers", store.number_key(identity)):
                return store.number(identity, make)
            missing.add(workers.NUMBERS)
            return workers.ELSEWHERE_NUMBER
        try:
            with store.reading() as results:
                page = build_page(p.text, p.path, store.catalogue, figure, store.budget, number, assumed=assumptions,
                                  fence_checks=FENCE_CHECKS)
        except SourceError:
            return []  # the build's own pass reports it, with its file and line
        if not missing:
            store.keep_page(p, page, results)
        return sorted(missing)
