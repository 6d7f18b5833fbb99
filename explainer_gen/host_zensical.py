"""Zensical as a host: the same site from the same `docs/` and `mkdocs.yml`, built by Zensical.

Zensical reads `mkdocs.yml` and runs the Python-Markdown extensions it lists, but it ignores
`plugins:`, so nothing calls the explainer plugin's hooks. This module stands in for them, in
three steps run by `python -m explainer_gen.host_zensical build` (`make zensical`):

1. **collect**, in this process: the same `SiteBuild.collect` the plugin runs. Every author
   mistake stops the build here, as `file:line: message` and exit status 1, before Zensical has
   touched anything; every figure and number lands in the disk cache.
2. **convert**: Zensical builds from a derived copy of `mkdocs.yml` in a project folder of its
   own (`ZENSICAL_ROOT`), which lists this module as a Markdown extension and the explainer fences.
   The extension (`makeExtension`) collects again inside Zensical's process, from the warm cache,
   and hands each page to `ExplainerExtension`, as the plugin does. Zensical runs with its own
   page cache cleared, since it would otherwise keep a page whose Markdown is unchanged even
   when the data behind its numbers changed.
3. **finish**, in this process: the generated files (figure data, pictures, CSV, the Vega
   bundle, `atom.xml`, the stylesheet) are written into the staging folder and every page gets
   `SiteBuild.finish_page`; then the staging folder replaces the site folder. A failure at any
   step leaves the last good site in place (`staging.Staging`).
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from markdown import Extension

# Zensical's project: its root is the folder of the config file it is given, where it keeps its
# own cache in `.cache/` (which `--clean` removes whole) and wants the docs and site folders. So
# the derived config gets a folder of its own, with a copy of the docs, and the explainer's
# cache next to mkdocs.yml stays out of Zensical's reach.
ZENSICAL_ROOT = ".cache/zensical"
MODULE = "explainer_gen.host_zensical"
_SITES: dict[str, object] = {}  # config file -> SiteBuild, collected once per process


def load(config_file: Path):
    """The project's MkDocs configuration, read as MkDocs reads it (`!ENV` and all)."""
    from mkdocs.config import load_config

    return load_config(str(config_file))


def collect(config_file: Path):
    """A collected SiteBuild for the project, and the files it generates. SourceError on a mistake."""
    from mkdocs.structure.files import File

    from .plugin import _nav_paths

    config_file = Path(config_file).resolve()
    cfg = load(config_file)
    core = importlib.import_module(f"{__package__}.core")
    opts = cfg.plugins["explainer"].config
    root, docs = config_file.parent, Path(cfg.docs_dir)
    site = core.SiteBuild(
        root=root, docs_dir=docs, catalogue_path=Path(opts.catalogue or core.CATALOGUE_PATH),
        cache_dir=root / opts.cache_dir if opts.cache_dir else None, data_budget_kb=opts.data_budget_kb,
        code_fingerprint=core.code_fingerprint(), workers=opts.workers or core.default_workers(), links="source")
    pages = []
    for path in sorted(docs.rglob("*.md")):
        src_uri = path.relative_to(docs).as_posix()
        url = File(src_uri, str(docs), cfg.site_dir, cfg.use_directory_urls).url
        pages.append(core.PageSource(src_uri, os.path.relpath(path, root), url, path.read_text(encoding="utf-8")))
    generated = site.collect(pages, _nav_paths(cfg.nav or []), cfg.site_name, cfg.site_url)
    return site, generated, cfg


class _Host(Extension):
    """The extension Zensical loads: the explainer's own, over a build collected in this process."""

    def __init__(self, **kwargs):
        self.config = {"config_file": ["mkdocs.yml", "the project's mkdocs.yml"]}
        super().__init__(**kwargs)

    def extendMarkdown(self, md) -> None:  # noqa: N802 (Python-Markdown's name)
        config_file = str(Path(self.getConfig("config_file")).resolve())
        if config_file not in _SITES:
            _SITES[config_file] = collect(Path(config_file))[0]
        site = _SITES[config_file]
        core = importlib.import_module(f"{__package__}.core")
        core.ExplainerExtension(lambda: site, lambda: None).extendMarkdown(md)


def makeExtension(**kwargs) -> Extension:  # noqa: N802 (Python-Markdown's name)
    return _Host(**kwargs)


_NAME = "!!python/name:"


def derived_config(cfg, config_file: Path, site_dir: str = "site") -> str:
    """`mkdocs.yml` as Zensical needs it: this module and the explainer fences listed as Markdown
    extensions, the stylesheet linked, the folders absolute, and the plugins left out."""
    from .render import mathml, superfence
    from .site import CSS_PATH

    raw = yaml.load(config_file.read_text(encoding="utf-8"), Loader=_Loader) or {}
    raw.pop("plugins", None)
    # Inside Zensical's project folder, as it wants them (absolute ones outside it make it panic).
    raw["docs_dir"], raw["site_dir"] = "docs", site_dir
    raw["site_url"] = cfg.site_url
    raw["extra_css"] = list(raw.get("extra_css") or []) + [CSS_PATH]
    # Material's look, which the stylesheet and the pictures are made for; Zensical's default is
    # its own "modern" variant.
    raw.setdefault("theme", {}).setdefault("variant", "classic")
    extensions = [e for e in raw.get("markdown_extensions") or []
                  if (next(iter(e)) if isinstance(e, dict) else e) != "pymdownx.superfences"]
    fences = [{"name": f["name"], "class": f["class"],
               "format": f"{_NAME}{f['format'].__module__}.{f['format'].__name__}"}
              for f in (superfence.FENCE, mathml.FENCE)]
    extensions += [{"pymdownx.superfences": {"custom_fences": fences}},
                   {MODULE: {"config_file": str(config_file)}}]
    if "attr_list" not in extensions:
        extensions.append("attr_list")
    raw["markdown_extensions"] = extensions
    text = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)
    # The fences' functions as YAML's Python names (unquoted), which Zensical, like MkDocs, resolves.
    return re.sub(r"'(!!python/name:[\w.]+)'", r"\1", text)


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml's tags: `!ENV [NAME, default]` resolved now, Python names kept as text."""


def _env(loader, node):
    names = loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else [loader.construct_scalar(node)]
    *keys, default = names if len(names) > 1 else (names + [None])
    return next((os.environ[k] for k in keys if k in os.environ), default)


_Loader.add_constructor("!ENV", _env)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: f"{_NAME}{suffix}")


def build(config_file: Path, zensical: str = "zensical", site_dir: Path | None = None) -> int:
    """The three steps; 0 on success, 1 (with the message on stderr) on any failure."""
    from models.yamlsource import SourceError

    from .staging import Staging

    config_file = Path(config_file).resolve()
    try:
        site, generated, cfg = collect(config_file)
    except SourceError as exc:
        print(f"explainer: {exc}", file=sys.stderr)
        return 1
    staging = Staging(str(site_dir or cfg.site_dir))
    zroot = config_file.parent / ZENSICAL_ROOT
    zroot.mkdir(parents=True, exist_ok=True)
    # A copy of the docs (Zensical resolves links, and wants its docs inside its own folder).
    docs_copy = zroot / "docs"
    if docs_copy.is_symlink():
        docs_copy.unlink()
    shutil.rmtree(docs_copy, ignore_errors=True)
    shutil.copytree(cfg.docs_dir, docs_copy)
    (zroot / "mkdocs.yml").write_text(derived_config(cfg, config_file), encoding="utf-8")
    shutil.rmtree(zroot / "site", ignore_errors=True)
    result = subprocess.run([zensical, "build", "--clean", "-f", str(zroot / "mkdocs.yml")], cwd=zroot,
                            capture_output=True, text=True)
    if result.returncode != 0 or not (zroot / "site" / "index.html").exists():
        print(_zensical_error(result.stderr or result.stdout), file=sys.stderr)
        return 1
    os.replace(zroot / "site", staging.stage)
    write_generated(staging.stage, generated)
    for src_uri, source in site.sources.items():
        page = staging.stage / source.url / "index.html" if cfg.use_directory_urls else None
        if page is not None and page.exists():
            page.write_text(site.finish_page(src_uri, page.read_text(encoding="utf-8")), encoding="utf-8")
    staging.commit()
    return 0


def write_generated(site_dir: Path, generated: dict) -> None:
    for path, content in generated.items():
        target = site_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            target.write_bytes(content.read_bytes())
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def _zensical_error(output: str) -> str:
    """Zensical's report of an extension's failure ends in a traceback; the explainer's own
    message (file:line: ...) is its last line, and that is what an author needs."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    ours = [line for line in lines if "explainer:" in line or "SourceError" in line]
    return (ours[-1].split("SourceError: ", 1)[-1] if ours else "\n".join(lines[-20:])) or "zensical build failed"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explainer_gen.host_zensical")
    ap.add_argument("command", choices=["build"])
    ap.add_argument("-f", "--config-file", default="mkdocs.yml")
    ap.add_argument("-d", "--site-dir", type=Path, help="where the site goes (default: mkdocs.yml's site_dir)")
    ap.add_argument("--zensical", default=str(Path(sys.executable).with_name("zensical")),
                    help="the zensical command (default: the one beside this Python)")
    args = ap.parse_args(argv)
    return build(Path(args.config_file), args.zensical, args.site_dir)


if __name__ == "__main__":
    sys.exit(main())
