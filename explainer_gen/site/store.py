"""A build's store: the keys of its results and both cache layers they live in.

- `Memory`: decoded entries by (namespace, key), which one process (`mkdocs serve`) keeps from
  one build to the next;
- the disk cache (cache.DiskCache), which every build of the project reads and workers fill.

Each key hashes everything that decides its value: the catalogue, the request, and the code the
result runs (compute/codegraph.py), so an entry is never stale. What a result is, and how it is
made, is not the store's business: it is handed a function that makes it.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import time
from pathlib import Path

from models.catalogue import Catalogue, load_catalogue

from ..cache import DiskCache, digest
from ..client import contract
from ..compute.artifacts import FigureArtifacts, build_figure, dumps
from ..compute.codegraph import CodeKeys
from ..compute.numbers import NumberResult
from ..compute.pages import PageBuild
from ..compute.timing import Timing
from ..render import how, share
from .model import ASSETS, Generated, PageSource, Settings


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


class Store:
    """The keys and cache layers of one build. `code` gives the hashes of the code each result runs
    (core.CODE); `timing` counts what is computed."""

    def __init__(self, settings: Settings, code: CodeKeys, memory: Memory | None, timing: Timing):
        self.settings, self.code, self.timing = settings, code, timing
        self.cache = DiskCache(settings.cache_dir)
        self.memory = memory or Memory()
        self.budget = settings.data_budget_kb * 1000
        # A build that starts with decoded entries in memory (`mkdocs serve`) reads some of what it
        # uses from there, which the disk cache never sees: it cannot tell what is unused.
        self._disk_sees_all = self.memory.empty
        self._results: tuple[dict, set] | None = None  # what the page being built reads (`reading`)

    @functools.cached_property
    def catalogue(self) -> Catalogue:
        """The accelerators and models, read once a build."""
        return load_catalogue(self.settings.catalogue_path)

    @functools.cached_property
    def inputs(self) -> str:
        """What decides every result besides its request and its code: the catalogue (read once a build)."""
        return digest(self.settings.catalogue_path.read_text(encoding="utf-8"))

    @functools.cached_property
    def fingerprint(self) -> str:
        """What decides all of a page's results together: all their code, and the catalogue."""
        return digest(self.code.fingerprint, self.inputs)

    # -- keys --------------------------------------------------------------------------------------
    def page_key(self, p: PageSource) -> str:
        return digest(self.fingerprint, self.budget, p.path, p.text)

    def figure_key(self, req) -> str:
        """The request, the catalogue, and the code a figure of its kind runs (not all the code)."""
        return digest(self.inputs, self.code.figure(req.kind), req.identity())

    def number_key(self, identity: dict) -> str:
        """The number, the catalogue, and the code that evaluates it and the terms it calls."""
        return digest(self.inputs, self.code.number(identity["calls"], identity["chooses"]), identity)

    # -- both layers -------------------------------------------------------------------------------
    def known(self, namespace: str, key: str) -> bool:
        """Whether either layer holds the entry (without reading it)."""
        return self.memory.get(namespace, key) is not None or self.cache.path(namespace, key) is not None

    def remember(self, namespace: str, key: str, make, to_json, from_json):
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

    def page(self, p: PageSource) -> PageBuild | None:
        """The page as computed by an earlier build in this process, if its source, catalogue and
        code are unchanged since."""
        return self.memory.get("page", self.page_key(p))

    def page_results(self, p: PageSource) -> tuple[dict, set]:
        """The keys of what a page kept here reads (`reading`)."""
        return self.memory.get("page-results", self.page_key(p))

    def page_done(self, p: PageSource) -> bool:
        """Whether a build (or a worker) computed the whole page into the cache."""
        return self.page(p) is not None or self.cache.path("pages", self.page_key(p)) is not None

    def keep_page(self, p: PageSource, page: PageBuild, results: tuple[dict, set]) -> None:
        """Record a page computed in full: this process keeps it, with the keys of its `results`
        (`reading`), and the disk cache records that it is complete, so no later build hands it to
        a worker again."""
        key = self.page_key(p)
        self.memory.put("page", key, page)
        self.memory.put("page-results", key, results)
        if self.cache.path("pages", key) is None:
            self.cache.put("pages", key, "complete")

    @contextlib.contextmanager
    def reading(self):
        """The results a page reads while it is built: (file, line) of each figure -> its key, and
        each number's key."""
        self._results = results = ({}, set())
        try:
            yield results
        finally:
            self._results = None

    # -- results -----------------------------------------------------------------------------------
    def figure(self, req) -> FigureArtifacts:
        """The figure's artefacts: in full when computed now, else the light part the HTML needs."""
        key = self.figure_key(req)
        if self._results is not None:
            self._results[0][(req.path, req.line)] = key

        reason = self._reason(req)  # why it would be computed; the record is this figure's from now

        def make() -> FigureArtifacts:
            self.timing.computed[key] = [req.path, req.line, reason]
            artifacts = build_figure(req, self.catalogue, self.timing)
            artifacts.key = key
            self.cache.put("figures", key, dumps(artifacts.to_json()))  # the heavy part, for new pages
            return artifacts
        return self.remember("figure-meta", key, make, FigureArtifacts.light_json, FigureArtifacts.from_json)

    def heavy(self, fig) -> FigureArtifacts:
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

    @functools.cached_property
    def card_code(self) -> str:
        """What decides every share card besides its text and figure: the code that composes it
        (render/share.py and all it imports, as loaded; vl-convert's version, whose resvg draws it)
        and the font files it is set in."""
        graph = self.code.graph
        code = [(graph.modules[m].path, graph.modules[m].digest) for m in sorted(graph.closure((share.__name__,)))]
        fonts = [hashlib.sha256(path.read_bytes()).hexdigest() for path in share.FONT_FILES.values()]
        return digest(code, self.code.versions, fonts)

    def share_card(self, title: str, site_name: str, figure: share.Figure | None) -> bytes:
        """A page's share card as PNG (render/share.py), made once per title, site name, figure
        picture, font and code. The seconds spent making cards are the timing's "cards"."""
        key = digest(self.card_code, title, site_name, figure.svg if figure is not None else None)

        def make() -> bytes:
            start = time.perf_counter()
            png = share.card_png(share.card_svg(title, site_name, figure))
            self.timing.add({"cards": time.perf_counter() - start})
            return png
        return self.remember("cards", key, make, lambda png: base64.b64encode(png).decode("ascii"),
                             base64.b64decode)

    def number(self, identity: dict, make) -> NumberResult:
        key = self.number_key(identity)
        if self._results is not None:
            self._results[1].add(key)

        def timed() -> NumberResult:  # the phase "numbers", the models' share apart (compute/timing.py)
            self.timing.numbers_computed.add(key)
            with self.timing.phase("numbers"):
                result = make()
            result.key = key
            if result.cards is not None and self.cache.root is not None:
                # The heavy part, apart: a build reads it only to write a card file again (after an edit
                # of the code that writes them). The file is written where the number is computed (in a
                # worker, beside the others), and the cards are not kept in memory with the number.
                self.cache.put("number-cards", key, dumps(result.cards))
                self.card_file(result)
                result.cards = None
            return result
        return self.remember("numbers", key, timed, NumberResult.light_json, lambda d: NumberResult(**d))

    def card_file(self, result: NumberResult) -> tuple[str, Generated]:
        """A computed number's card file (client/contract.number_card): where the page finds it, and
        the file. Named by what decides it, the number and the code that writes the file; with a
        cache, stored once as a blob that the host copies, as a figure's files are."""
        key = digest(result.key, self.code.cards())
        path = f"{ASSETS}/how/{key[:16]}.json"

        def text() -> str:
            cards = result.cards
            if cards is None:
                cached = self.cache.get("number-cards", result.key)
                if cached is None:
                    raise RuntimeError(f"the card of number {result.id} ({result.key}) is not in the build's cache; "
                                       "remove the cache folder and build again")
                cards = json.loads(cached)
            return dumps(contract.number_card([how.card(t) for t in cards["templates"]], cards["which"],
                                              cards["holes"]))
        if self.cache.root is None:
            return path, text()
        self.cache.path("number-cards", result.key)  # kept while the number's card is on the site

        def make() -> str:
            blob = digest(made := text())[:32] + ".json"
            self.cache.put("blobs", blob, made)
            return blob
        blob = self.remember("card-files", key, make, lambda b: b, lambda b: b)
        if not self.cache.path("blobs", blob):
            self.memory.drop("card-files", key)
            self.cache.put("card-files", key, dumps(blob := make()))
        return path, self.cache.path("blobs", blob)

    def figure_files(self, fig) -> tuple[dict[str, str], dict[str, Generated]]:
        """The figure's JSON, variant data, CSV and picture (client/contract.site_files): where the
        page finds them ({"json": path, "csv": path, "svg": path}), and the files to add to the
        site. Names hash what decides them.

        With a cache, each file is stored once as a blob that the host copies, so a rebuild
        reads no figure data at all.
        """
        with self.timing.phase("files"):
            return self._figure_files(fig)

    def _figure_files(self, fig) -> tuple[dict[str, str], dict[str, Generated]]:
        # The figure, and the code that writes its files (client/contract.py).
        key = digest(fig.artifacts.key, self.code.state(), fig.scenario_map)
        stem = f"{ASSETS}/fig/{key[:16]}"
        where = {"json": f"{stem}.json", "csv": f"{stem}.csv", "svg": f"{stem}.svg"}
        if self.cache.root is None:
            return where, dict(contract.site_files(self.heavy(fig), fig.scenario_map, stem))
        # The figure's heavy part, which its files are made from, stays in the cache while the
        # figure is on the site (a page placing it anew needs it), though a rebuild reads only
        # the files (`tidy` keeps what a build used).
        self.cache.path("figures", fig.artifacts.key)

        def make() -> dict[str, str]:
            blobs = {}
            for path, text in contract.site_files(self.heavy(fig), fig.scenario_map, stem).items():
                blobs[path] = digest(text)[:32] + Path(path).suffix
                self.cache.put("blobs", blobs[path], text)
            return blobs
        blobs = self.remember("files", key, make, lambda b: b, lambda b: b)
        if not all(self.cache.path("blobs", b) for b in blobs.values()):
            self.memory.drop("files", key)
            self.cache.put("files", key, dumps(blobs := make()))
        return where, {path: self.cache.path("blobs", blob) for path, blob in blobs.items()}

    def tidy(self, keep_days: float) -> str:
        """After a whole build that succeeded: drop the disk cache's entries that neither this build
        nor any other for `keep_days` days has used (`DiskCache.sweep`). Returns what went, in a
        sentence for the host to show after "explainer: " ("" if nothing).

        What workers computed counts as used: the build reads all of it back. A build that read
        entries from memory drops nothing."""
        if not self._disk_sees_all:
            return ""
        removed, freed = self.cache.sweep(self.cache.used, keep_days * 86400.0)
        return (f"dropped {removed} cache entries ({freed / 1e6:.1f} MB) that no build has used "
                f"for {keep_days:g} days" if removed else "")
