"""MkDocs hooks: a thin adapter that hands the build (site.SiteBuild) its pages and MkDocs the
files, the Markdown extension and the finished pages.

All checking and computing happens in `on_files`, before MkDocs writes anything, so a
mistake aborts the build with the site folder as it was.
"""
from __future__ import annotations

import importlib
import logging
import os
import subprocess
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, get_plugin_logger
from mkdocs.structure.files import File, Files

from .config import ExplainerConfig

# Its lines read "INFO    -  explainer: ...", as the build's summary line is specified (issue 31).
log = get_plugin_logger("explainer")


class ExplainerPlugin(BasePlugin[ExplainerConfig]):
    command = "build"
    staging = None  # core.Staging during a build
    site = None     # core.SiteBuild, made anew for every build
    rendering = None  # src_uri of the page MkDocs is converting

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
        if reloaded or not hasattr(self, "memory"):
            self.memory = self.core.Memory()  # what this process keeps between builds
        if reloaded:
            log.info("the models' or the generator's code changed on disk: loaded it again")
        if self.command in ("build", "gh-deploy") and not getattr(self, "dirty", False):
            self.staging = self.core.Staging(config.site_dir)
            config.site_dir = str(self.staging.stage)
            self.warnings = self.core.WarningCount()
            logging.getLogger("mkdocs").addHandler(self.warnings)
        self.root = Path(config.config_file_path or ".").resolve().parent
        self.catalogue_path = Path(self.config.catalogue or self.core.CATALOGUE_PATH)
        _register_fences(self.core, config)
        config.markdown_extensions.append(self.core.ExplainerExtension(lambda: self.site, lambda: self.rendering))
        if "attr_list" not in config.markdown_extensions:  # feed and glossary anchors
            config.markdown_extensions.append("attr_list")
        _pin_build_date(self.root)
        if self.core.CSS_PATH not in config.extra_css:
            config.extra_css.append(self.core.CSS_PATH)
        return config

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if not self.config.enabled:
            return None
        self.site = self.core.SiteBuild(
            root=self.root, docs_dir=Path(config.docs_dir), catalogue_path=self.catalogue_path,
            cache_dir=self.root / self.config.cache_dir if self.config.cache_dir else None,
            data_budget_kb=self.config.data_budget_kb, code=self.core.CODE,
            memory=self.memory, workers=self.config.workers or self.core.default_workers())
        pages = [self.core.PageSource(f.src_uri, self._display_path(f), f.url, f.content_string)
                 for f in files.documentation_pages()]
        try:
            generated = self.site.collect(pages, _nav_paths(config.nav or []), config.site_name, config.site_url)
        except self.core.SourceError as exc:
            raise PluginError(f"explainer: {exc}") from None
        if self.site.timing.workers:
            log.info(f"{self.site.timing.worker_pages} pages computed by {self.site.timing.workers} "
                     "worker processes")
        for path, content in generated.items():
            files.append(File.generated(config, path, abs_src_path=str(content)) if isinstance(content, Path)
                         else File.generated(config, path, content=content))
        return files

    def on_page_markdown(self, markdown: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        self.rendering = page.file.src_uri  # which page the Markdown extension is about to see
        return None

    def on_page_content(self, html: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        self.rendering = None
        return None

    def on_post_page(self, output: str, *, page, config: MkDocsConfig) -> str | None:
        if not self.config.enabled:
            return None
        return self.site.finish_page(page.file.src_uri, output)

    def on_post_template(self, output_content: str, *, template_name: str, config: MkDocsConfig) -> str | None:
        # The theme's own pages (404.html) start up as the others do; sitemap.xml is left alone.
        if not self.config.enabled or not template_name.endswith(".html"):
            return None
        return self.site.finish_page(template_name, output_content)

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if self.config.enabled and self.site is not None:  # every build's, `mkdocs serve`'s rebuilds too
            for line in self.site.timing.computed_figures():  # with --verbose
                log.debug(line)
            log.info(self.site.timing.summary())
        if self.staging is None:
            return
        logging.getLogger("mkdocs").removeHandler(self.warnings)
        if config.strict and self.warnings.count:
            self.staging.discard()  # MkDocs is about to abort: keep the previous site
        else:
            self.staging.commit()
            dropped = self.site.tidy_cache(self.config.cache_keep_days) if self.site is not None else ""
            if dropped:
                log.info(dropped)
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


def _register_fences(core, config: MkDocsConfig) -> None:
    """Make sure superfences knows the `explainer` and `math` fences, so authors need not list them."""
    if "pymdownx.superfences" not in config.markdown_extensions:
        config.markdown_extensions.append("pymdownx.superfences")
    settings = config.mdx_configs.setdefault("pymdownx.superfences", {})
    fences = settings.setdefault("custom_fences", [])
    for fence in (core.superfence.FENCE, core.mathml.FENCE):
        fences[:] = [f for f in fences if f.get("name") != fence["name"]] + [dict(fence)]


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
