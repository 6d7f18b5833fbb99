"""What a build is given and what its collect step makes: the settings a host passes, the pages as
the host found them, and the site as collected (`SiteModel`), which rendering only reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from models.catalogue import Catalogue

from ..compute.pages import PageBuild
from ..render import mathml
from ..sources.crossref import CrossRefs

ASSETS = "assets/explainer"
CSS_PATH = f"{ASSETS}/explainer.css"
# Fences the render layer reads, checked when a page is collected (compute/pages.build_page).
FENCE_CHECKS = MappingProxyType({mathml.FENCE["name"]: mathml.check_fence})

# A generated file: its text or bytes, or the path of a file to copy.
Generated = str | bytes | Path


@dataclass(frozen=True)
class PageSource:
    """A Markdown page as the host found it."""

    src_uri: str   # its path under the docs folder
    path: str      # its path as errors show it (relative to the project)
    url: str       # its URL, relative to the site root ("explainers/roofline/")
    text: str      # the whole file, front matter included


@dataclass(frozen=True)
class Settings:
    """What a host tells a build (host.settings reads them from a project's configuration): the
    project's folder, its docs, the catalogue, the cache (None: none), the most figure data a page
    may carry, the processes that compute pages side by side (they need the cache), and what the
    `href` and `src` the build writes into a page are relative to: the page's URL ("page": MkDocs
    leaves such links alone), or the folder of its Markdown file ("source": Zensical rewrites
    every relative link from there to the page's URL). Data attributes, which only the page's
    scripts read, are always relative to the page's URL."""

    root: Path
    docs_dir: Path
    catalogue_path: Path
    cache_dir: Path | None = None
    data_budget_kb: int = 100
    workers: int = 1
    links: str = "page"

    def __post_init__(self) -> None:
        if self.links not in ("page", "source"):
            raise ValueError(f"links must be 'page' or 'source', got {self.links!r}")
        for name in ("root", "docs_dir", "catalogue_path", "cache_dir"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))

    def to_json(self) -> dict:
        """As a worker process receives them (compute/workers.PageJob)."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in vars(self).items()}


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class SiteModel:
    """The site as its collect step leaves it (site/collect.py), read-only: every page as found,
    the cross-references, the pages with figures or numbers as computed, where each figure's files
    and each page's state are, and every file to add to the site."""

    catalogue: Catalogue
    sources: Mapping[str, PageSource]       # src_uri -> the page as found
    refs: CrossRefs
    pages: Mapping[str, PageBuild]          # src_uri -> the page computed (it has figures or numbers)
    figure_files: Mapping[str, Mapping[str, str]]  # "<anchor>@<src_uri>" -> {"json": path, "csv": path, "svg": path}
    page_json: Mapping[str, str]            # src_uri -> the site path of its state
    bundle_path: str                        # the Vega bundle's site path
    loader_path: str                        # the loader's site path
    files: Mapping[str, Generated] = field(default_factory=dict)
    site_url: str = ""                      # where the site is published ("" where none is set)
    cards: Mapping[str, Any] = field(default_factory=dict)  # src_uri -> its share card (render/share.Card)
    page_keys: Mapping[str, str] = field(default_factory=dict)  # src_uri -> what the page computed is of (Store.page_key)
    urls: Mapping[str, str] = field(init=False)  # src_uri -> the page's URL, from the site root

    def __post_init__(self) -> None:
        for name in ("sources", "pages", "figure_files", "page_json", "files", "cards", "page_keys"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "urls", _frozen({uri: p.url for uri, p in self.sources.items()}))


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
