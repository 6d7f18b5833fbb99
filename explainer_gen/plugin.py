"""MkDocs hooks: a thin layer that feeds pages to the core and files to MkDocs.

All checking and computing happens in `on_files`, before MkDocs writes anything, so a
mistake aborts the build with the site folder as it was.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

from .config import ExplainerConfig

log = get_plugin_logger(__name__)

ASSETS = "assets/explainer"
# Cache entries already decoded in this process, by (namespace, key); values are read-only.
_MEMORY: dict[tuple[str, str], object] = {}
CSS_PATH = f"{ASSETS}/explainer.css"


class ExplainerPlugin(BasePlugin[ExplainerConfig]):
    command = "build"
    staging = None  # self.core.Staging during a build

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.command, self.dirty = command, dirty

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return None
        # The models and the generator as they are on disk now: `mkdocs serve` keeps one process,
        # and an edit to their code must show, and must never be cached under the old code's key.
        try:
            self.core, reloaded = importlib.import_module(f"{__package__}.core").fresh()
        except RuntimeError as exc:
            raise PluginError(f"explainer: {exc}") from None
        if reloaded:
            _MEMORY.clear()
            log.info("the models' or the generator's code changed on disk: loaded it again")
        if self.command in ("build", "gh-deploy") and not getattr(self, "dirty", False):
            self.staging = self.core.Staging(config.site_dir)
            config.site_dir = str(self.staging.stage)
            self.warnings = self.core.WarningCount()
            logging.getLogger("mkdocs").addHandler(self.warnings)
        root = Path(config.config_file_path or ".").resolve().parent
        self.root = root
        self.cache = self.core.DiskCache(root / self.config.cache_dir if self.config.cache_dir else None)
        self.catalogue_path = Path(self.config.catalogue or self.core.CATALOGUE_PATH)
        _register_fence(self.core, config)
        if "attr_list" not in config.markdown_extensions:  # feed and glossary anchors
            config.markdown_extensions.append("attr_list")
        _pin_build_date(root)
        if CSS_PATH not in config.extra_css:
            config.extra_css.append(CSS_PATH)
        return config

    # -- collect: check and compute everything, and hand MkDocs the generated files --
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if not self.config.enabled:
            return None
        self.pages: dict = {}  # src_uri -> core.PageBuild
        self.pictures: dict[str, dict[str, str]] = {}  # page -> figure anchor -> inline SVG
        self.figure_files: dict[str, dict[str, str]] = {}
        self.page_json: dict[str, str] = {}
        try:
            catalogue = self.core.load_catalogue(self.catalogue_path)
        except self.core.SourceError as exc:
            raise PluginError(self._located(exc)) from None
        self.catalogue = catalogue
        added: set[str] = set()
        self._collect_refs(files, config)

        def add(path: str, content: str | bytes | None = None, source: Path | None = None) -> str:
            """A generated site file, from `content` or copied from the cache file `source`."""
            if path not in added:
                files.append(File.generated(config, path, content=content) if source is None
                             else File.generated(config, path, abs_src_path=str(source)))
                added.add(path)
            return path

        if self.refs.feed_page:
            add(self.core.ATOM_PATH, self.refs.atom(config.site_name, config.site_url, self.urls))
        bundle = self.core.javascript_bundle(self.cache)
        self.bundle_path = add(f"{ASSETS}/vega-{self.core.short_hash(bundle)}.js", bundle)
        loader = (self.core.PACKAGE_ROOT / "assets" / "loader.js").read_text(encoding="utf-8")
        self.loader_path = add(f"{ASSETS}/loader-{self.core.short_hash(loader)}.js", loader)
        add(CSS_PATH, self.core.theme.palette_css() + (self.core.PACKAGE_ROOT / "assets" / "explainer.css").read_text(encoding="utf-8"))
        for path, (font, _) in self.core.theme.FONT_FILES.items():
            add(f"{ASSETS}/{path}", source=font)

        fingerprint = self.core.digest(self.core.code_fingerprint(), self.catalogue_path.read_text(encoding="utf-8"))
        budget = self.config.data_budget_kb * 1000
        for file in files.documentation_pages():
            path = self._display_path(file)
            source = file.content_string
            # A page whose source, catalogue and code are unchanged since the last build in
            # this process (`mkdocs serve`) is not read again.
            page_key = ("page", self.core.digest(fingerprint, budget, path, source))
            page = _MEMORY.get(page_key)
            if page is None:
                try:
                    page = self.core.build_page(source, path, catalogue,
                                      lambda req: self._figure(req, catalogue, fingerprint), budget,
                                      lambda identity, make: self._number(identity, make, fingerprint))
                except self.core.SourceError as exc:
                    raise PluginError(self._located(exc)) from None
                _MEMORY[page_key] = page
            if not page.live and not page.numbers:
                continue
            self.pages[file.src_uri] = page
            for fig in page.figures:
                self.figure_files[fig.anchor + "@" + file.src_uri] = self._figure_files(fig, add)
            state = _MEMORY.get(("page-json", page_key[1])) or self.core.dumps(self.core.contract.page_state(page.controls, page.numbers))
            _MEMORY[("page-json", page_key[1])] = state
            self.page_json[file.src_uri] = add(f"{ASSETS}/page/{self.core.short_hash(file.src_uri)}.json", state)
        log.debug(f"{len(self.pages)} pages with figures or numbers; disk cache {self.cache.hits} hits, "
                  f"{self.cache.misses} misses")
        return files

    def _remember(self, namespace: str, key: str, make, to_json, from_json):
        """`make()` once per key; later builds read the JSON the first one stored.

        Within one process (`mkdocs serve`) the decoded value is kept too.
        """
        if (namespace, key) in _MEMORY:
            return _MEMORY[namespace, key]
        cached = self.cache.get(namespace, key)
        if cached is not None:
            value = from_json(json.loads(cached))
        else:
            value = make()
            self.cache.put(namespace, key, self.core.dumps(to_json(value)))
        if len(_MEMORY) > 4096:
            _MEMORY.clear()
        _MEMORY[namespace, key] = value
        return value

    def _figure(self, req, catalogue, fingerprint: str):
        """The figure's artefacts: in full when computed now, else the light part the HTML needs."""
        key = self.core.digest(fingerprint, req.identity())

        def make():
            artifacts = self.core.build_figure(req, catalogue)
            artifacts.key = key
            self.cache.put("figures", key, self.core.dumps(artifacts.to_json()))  # the heavy part, for new pages
            return artifacts
        return self._remember("figure-meta", key, make, self.core.FigureArtifacts.light_json, self.core.FigureArtifacts.from_json)

    def _heavy(self, fig):
        """Spec, data and images for a figure read back light: from the cache, else recomputed."""
        if fig.artifacts.heavy:
            return fig.artifacts
        cached = self.cache.get("figures", fig.artifacts.key)
        if cached is not None:
            return self.core.FigureArtifacts.from_json(json.loads(cached))
        artifacts = self.core.build_figure(fig.request, self.catalogue)
        artifacts.key = fig.artifacts.key
        return artifacts

    def _number(self, identity: dict, make, fingerprint: str):
        return self._remember("numbers", self.core.digest(fingerprint, identity), make, vars, lambda d: self.core.NumberResult(**d))

    def _figure_files(self, fig, add) -> dict[str, str]:
        """Add the figure's JSON, variant data, SVGs and CSV; names hash what decides them.

        With a cache, each file is stored once as a blob that MkDocs copies, so a rebuild
        reads no figure data at all.
        """
        key = self.core.digest(fig.artifacts.key, fig.scenario_map)
        stem = f"{ASSETS}/fig/{key[:16]}"
        if self.cache.root is None:
            for path, text in self.core.site_files(self._heavy(fig), fig.scenario_map, stem).items():
                add(path, text)
        else:
            def make() -> dict[str, str]:
                blobs = {}
                for path, text in self.core.site_files(self._heavy(fig), fig.scenario_map, stem).items():
                    blobs[path] = self.core.digest(text)[:32] + Path(path).suffix
                    self.cache.put("blobs", blobs[path], text)
                return blobs
            blobs = self._remember("files", key, make, lambda b: b, lambda b: b)
            if not all(self.cache.path("blobs", b) for b in blobs.values()):
                _MEMORY.pop(("files", key), None)
                self.cache.put("files", key, self.core.dumps(blobs := make()))
            for path, blob in blobs.items():
                add(path, source=self.cache.path("blobs", blob))
        return {"json": f"{stem}.json", "csv": f"{stem}.csv"}

    # -- render: swap in what was computed --
    def on_page_markdown(self, markdown: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        if not self.config.enabled:
            return None
        build = self.pages.get(page.file.src_uri)
        url = lambda path: get_relative_url(path, page.file.url)  # noqa: E731
        try:
            markdown = self.refs.markdown(page.file.src_uri, markdown, self.urls, url, self._display_path(page.file))
        except self.core.SourceError as exc:
            raise PluginError(self._located(exc)) from None
        if build is None:
            self.core.superfence.set_active({})
            return markdown
        try:
            markdown = self.core.substitute_numbers(markdown, build, self._display_path(page.file))
        except self.core.SourceError as exc:
            raise PluginError(self._located(exc)) from None
        rendered: dict[str, list[str]] = {}
        for fig in build.figures:
            files_ = self.figure_files[fig.anchor + "@" + page.file.src_uri]
            rendered.setdefault(fig.fence.body.strip(), []).append(self.core.figure_html(fig, url, files_))
        # The pictures go into the finished page (on_post_page), past Markdown and search.
        self.pictures[page.file.src_uri] = {fig.anchor: self.core.static_picture(fig.artifacts, fig.anchor)
                                            for fig in build.figures}
        self.core.superfence.set_active(rendered)
        if not build.live:
            return markdown
        root = self.core.page_root_html(build, url(self.page_json[page.file.src_uri]), url(self.bundle_path),
                              url(self.loader_path), self.catalogue)
        return _after_title(markdown, root)

    def on_page_content(self, html: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        if not self.config.enabled:
            return None
        return self.refs.html(page.file.src_uri, html, self.urls, lambda p: get_relative_url(p, page.file.url))

    def _collect_refs(self, files: Files, config: MkDocsConfig) -> None:
        """Check citations, glossary terms and read_next on every page (see crossref.py)."""
        docs = [f for f in files.documentation_pages()]
        self.urls = {f.src_uri: f.url for f in docs}
        sources = [self.core.Source(f.src_uri, self._display_path(f), f.content_string) for f in docs]
        try:
            self.refs = self.core.CrossRefs.collect(Path(config.docs_dir), os.path.relpath(config.docs_dir, self.root),
                                          sources, _nav_paths(config.nav or []))
        except self.core.SourceError as exc:
            raise PluginError(self._located(exc)) from None

    def on_post_page(self, output: str, *, page, config: MkDocsConfig) -> str | None:
        if not self.config.enabled:
            return None
        # Material's search overlay is a dialog without a name; screen readers announce it blank.
        output = output.replace('class="md-search" data-md-component="search" role="dialog"',
                                'class="md-search" data-md-component="search" role="dialog" aria-label="Search"', 1)
        output = self.core.place_pictures(output, self.pictures.get(page.file.src_uri, {}))
        if 'class="eg-static"' in output:
            # The chart font, early: static pictures are laid out for it.
            fonts = "".join(f'<link rel="preload" href="{get_relative_url(f"{ASSETS}/{path}", page.file.url)}" '
                            'as="font" type="font/woff2" crossorigin>' for path in self.core.theme.FONT_FILES)
            output = output.replace("</head>", fonts + "</head>", 1)
        return output

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if self.staging is None:
            return
        logging.getLogger("mkdocs").removeHandler(self.warnings)
        if config.strict and self.warnings.count:
            self.staging.discard()  # MkDocs is about to abort: keep the previous site
        else:
            self.staging.commit()
        config.site_dir = str(self.staging.final)  # gh-deploy reads it after the build
        self.staging = None

    def on_build_error(self, *, error: Exception) -> None:
        if self.staging is not None:
            logging.getLogger("mkdocs").removeHandler(self.warnings)
            self.staging.discard()
            self.staging = None

    def on_serve(self, server, *, config: MkDocsConfig, builder):
        if self.config.enabled:
            # Editing a model, the figure code or the catalogue must rebuild the site.
            server.watch(str(self.core.MODELS_ROOT))
            server.watch(str(self.core.PACKAGE_ROOT))
            server.watch(str(self.catalogue_path))
        return server

    def _display_path(self, file: File) -> str:
        abs_path = file.abs_src_path or file.src_uri
        try:
            return os.path.relpath(abs_path, self.root)
        except ValueError:
            return abs_path

    def _located(self, exc) -> str:
        return f"explainer: {exc}"


def _pin_build_date(root: Path) -> None:
    """Date stamps (sitemap, gzip headers) from the last commit, so equal sources build equal bytes.

    MkDocs reads SOURCE_DATE_EPOCH for every date it writes; an explicit value wins.
    """
    if "SOURCE_DATE_EPOCH" in os.environ:
        return
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%ct"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return
    if out.returncode == 0 and out.stdout.strip().isdigit():
        os.environ["SOURCE_DATE_EPOCH"] = out.stdout.strip()


def _register_fence(core, config: MkDocsConfig) -> None:
    """Make sure superfences knows the `explainer` fence, so authors need not list it."""
    if "pymdownx.superfences" not in config.markdown_extensions:
        config.markdown_extensions.append("pymdownx.superfences")
    settings = config.mdx_configs.setdefault("pymdownx.superfences", {})
    fences = settings.setdefault("custom_fences", [])
    for fence in (core.superfence.FENCE, core.mathml.FENCE):
        if not any(f.get("name") == fence["name"] for f in fences):
            fences.append(dict(fence))


def _nav_paths(nav) -> list[str]:
    """Every page path in mkdocs.yml's nav, in order."""
    out: list[str] = []
    for item in nav if isinstance(nav, list) else [nav]:
        for value in (item.values() if isinstance(item, dict) else [item]):
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, list):
                out += _nav_paths(value)
    return out


def _after_title(markdown: str, block: str) -> str:
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            return "\n".join(lines[:i + 1] + ["", block] + lines[i + 1:])
        if line.strip():
            break
    return block + "\n" + markdown
