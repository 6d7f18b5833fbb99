"""MkDocs hooks: a thin host that hands the build (site.SiteBuild, made through the adapter every
host shares, host.py) its pages, and MkDocs the files, the Markdown extension and the finished pages.

All checking and computing happens in `on_files`, before MkDocs writes anything, so a
mistake aborts the build with the site folder as it was.
"""
from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import subprocess
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority, get_plugin_logger
from mkdocs.structure.files import File, Files

from .config import ExplainerConfig

# Its lines read "INFO    -  explainer: ...", as the build's summary line is specified (issue 31).
log = get_plugin_logger("explainer")

# What MkDocs' Page.render sets, which a conversion reused under `mkdocs serve` sets again.
_CONVERTED = ("content", "toc", "_title_from_render", "present_anchor_ids", "links_to_anchors")


class ExplainerPlugin(BasePlugin[ExplainerConfig]):
    command = "build"
    staging = None  # core.Staging during a build
    site = None     # core.SiteBuild, made anew for every build
    rendering = None  # src_uri of the page MkDocs is converting
    served = False    # whether `mkdocs serve` has built once in this process
    converting = None  # (page, key, warning count) of a conversion `mkdocs serve` may reuse later
    conversion_inputs = None  # host.conversion_inputs of this build, once its first page is converted

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
        self.settings = self.core.host.settings(config, self.config)
        self.core.host.register(config, lambda: self.site, lambda md: self.rendering)
        _pin_build_date(self.settings.root)
        return config

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if not self.config.enabled:
            return None
        settings = self.settings
        if self.command == "serve" and self.served:
            # A rebuild after a save computes what the save changed in this process: a worker takes
            # a second or more to start (its imports and vl-convert's engine), more than a save's
            # few figures. The first build of `mkdocs serve`, which may be cold, keeps them.
            settings = dataclasses.replace(settings, workers=1)
        self.served = self.command == "serve"
        self.site = self.core.SiteBuild(settings, self.core.CODE, self.memory)
        self.conversion_inputs = None
        try:
            generated = self.core.host.collect(self.site, config, files)
        except self.core.SourceError as exc:
            raise PluginError(f"explainer: {exc}") from None
        if self.site.timing.workers:
            log.info(f"{self.site.timing.worker_pages} pages computed by {self.site.timing.workers} "
                     "worker processes")
        for path, content in generated.items():
            files.append(File.generated(config, path, abs_src_path=str(content)) if isinstance(content, Path)
                         else File.generated(config, path, content=content))
        return files

    @event_priority(-100)  # after every other plugin's: this is the Markdown MkDocs converts
    def on_page_markdown(self, markdown: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        self.rendering = page.file.src_uri  # which page the Markdown extension is about to see
        if self.config.enabled and self.command == "serve":
            self._reuse_conversion(markdown, page, config, files)
        return None

    def _reuse_conversion(self, markdown: str, page, config: MkDocsConfig, files: Files) -> None:
        """Under `mkdocs serve`, a page converted before, at an earlier rebuild in this process, from
        the same Markdown with the same links, settings and everything the build puts into it
        (host.conversion_key, host.conversion_inputs), is not converted again: MkDocs' `render`
        of the page sets what that conversion set. A prose save converts the page saved, and no
        other. A conversion that logged a warning is never reused, so each rebuild says it again."""
        host = self.core.host
        if self.conversion_inputs is None:  # the same for every page of the build (files, settings)
            self.conversion_inputs = host.conversion_inputs(config, files)
        key = host.conversion_key(self.site, page.file.src_uri, markdown, self.conversion_inputs)
        kept = self.memory.get("converted", key)
        if kept is not None:
            def render(config: MkDocsConfig, files: Files) -> None:
                for name, value in zip(_CONVERTED, kept):
                    setattr(page, name, value)
            page.render = render
            return
        self._end_conversion()
        self.converting = (page, key, self.core.WarningCount())
        logging.getLogger("mkdocs").addHandler(self.converting[2])

    def _end_conversion(self, page=None) -> None:
        """The conversion under way is over: kept for later rebuilds if it is `page`'s and warned of nothing."""
        if self.converting is None:
            return
        converted, key, warnings = self.converting
        self.converting = None
        logging.getLogger("mkdocs").removeHandler(warnings)
        if converted is page and not warnings.count:
            self.memory.put("converted", key, tuple(getattr(page, name) for name in _CONVERTED))

    @event_priority(100)  # before any other plugin's: what is kept is the conversion's own HTML
    def on_page_content(self, html: str, *, page, config: MkDocsConfig, files: Files) -> str | None:
        self.rendering = None
        self._end_conversion(page)
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
        self._end_conversion()
        if self.staging is not None:
            logging.getLogger("mkdocs").removeHandler(self.warnings)
            self.staging.discard()
            self.staging = None

    def on_serve(self, server, *, config: MkDocsConfig, builder):
        if self.config.enabled:
            # Editing a model, the figure code or the catalogue must rebuild the site.
            for path in self.core.host.watched(self.settings):
                server.watch(str(path))
        return server


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
