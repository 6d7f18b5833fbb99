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
   bundle, `atom.xml`, the stylesheet, the share cards) are written into the staging folder and
   every page gets `SiteBuild.finish_page`; then the staging folder replaces the site folder. A
   failure at any step leaves the last good site in place (`staging.Staging`).
"""
from __future__ import annotations

import argparse
import http.server
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
    from mkdocs.structure.files import get_files

    config_file = Path(config_file).resolve()
    cfg = load(config_file)
    core = importlib.import_module(f"{__package__}.core")
    site = core.SiteBuild(core.host.settings(cfg, cfg.plugins["explainer"].config, links="source"), core.CODE)
    generated = core.host.collect(site, cfg, get_files(cfg))
    return site, generated, cfg


def converting(md) -> str | None:
    """The src_uri of the page Zensical is converting with `md`: Zensical (0.0.73) hands each
    page's context to the Markdown instance through its own preprocessor, whose page `path` is the
    page's path under the docs folder. None when there is none (text that is no page)."""
    from zensical.extensions.context import ContextPreprocessor

    context = ContextPreprocessor.from_markdown(md)
    return getattr(getattr(context, "page", None), "path", None)


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
        core.host.ExplainerExtension(lambda: site, converting).extendMarkdown(md)


def makeExtension(**kwargs) -> Extension:  # noqa: N802 (Python-Markdown's name)
    return _Host(**kwargs)


_NAME = "!!python/name:"


def derived_config(cfg, config_file: Path, site_dir: str = "site") -> str:
    """`mkdocs.yml` as Zensical needs it: this module and the explainer fences listed as Markdown
    extensions, the stylesheet linked, the folders absolute, and the plugins left out."""
    from .host import FENCES
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
              for f in FENCES]
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


def build(config_file: Path, zensical: str = "zensical", site_dir: Path | None = None, verbose: bool = False) -> int:
    """The three steps; 0 on success, 1 (with the message on stderr) on any failure."""
    from mkdocs.structure.files import File

    from models.yamlsource import SourceError

    from .staging import Staging

    config_file = Path(config_file).resolve()
    try:
        site, generated, cfg = collect(config_file)
    except SourceError as exc:
        print(f"explainer: {exc}", file=sys.stderr)
        return 1
    staging = Staging(str(site_dir or cfg.site_dir))
    try:
        whole = convert(config_file, cfg, zensical, staging.stage)
        if whole:
            write_generated(staging.stage, generated)
            # Each page, and the theme's own 404 page, which starts up as the others do.
            files = {src_uri: File(src_uri, cfg.docs_dir, "", cfg.use_directory_urls).dest_uri
                     for src_uri in site.sources}
            for name, dest in {**files, "404.html": "404.html"}.items():
                page = staging.stage / dest
                if page.exists():
                    page.write_text(site.finish_page(name, page.read_text(encoding="utf-8")), encoding="utf-8")
    except SourceError as exc:
        print(f"explainer: {exc}", file=sys.stderr)
        whole = False
    except BaseException:
        staging.discard()
        raise
    if not whole:  # the last good site stays as it was
        staging.discard()
        return 1
    staging.commit()
    for line in site.timing.computed_figures() if verbose else ():
        print(f"explainer: {line}", file=sys.stderr)
    print(f"explainer: {site.timing.summary()}", file=sys.stderr)
    dropped = site.tidy_cache(cfg.plugins["explainer"].config.cache_keep_days)
    if dropped:
        print(f"explainer: {dropped}", file=sys.stderr)
    return 0


def convert(config_file: Path, cfg, zensical: str, stage: Path) -> bool:
    """Step 2: Zensical converts the pages into `stage`. False, with Zensical's message on
    stderr, when it fails; then nothing of its output is kept."""
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
        shutil.rmtree(zroot / "site", ignore_errors=True)
        return False
    os.replace(zroot / "site", stage)
    return True


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


# -- serve: `mkdocs serve` for the Zensical host ------------------------------------------------

# Added to every HTML page as it is served (never to the files): it asks which build the server
# holds, and reloads the page once a newer one has been swapped in. Instant navigation runs the
# next page's copy too, so the first copy in a tab is the only one that polls.
RELOAD_PATH = "/.explainer-build"
RELOAD_SCRIPT = ("<script>(() => { if (window.__explainerReload) return; window.__explainerReload = 1;"
                 " let seen = null; setInterval(async () => { try {"
                 f" const r = await fetch('{RELOAD_PATH}', {{cache: 'no-store'}}); const now = await r.text();"
                 " if (seen !== null && now !== seen) location.reload(); seen = now; } catch (e) {} }, 1000);"
                 " })();</script>")


def watched(config_file: Path) -> list[Path]:
    """What a rebuild reads: the config, the docs, and what every host watches (host.watched: the
    catalogue and the code that computes, whose edits only a new process sees)."""
    from . import host

    cfg = load(config_file)
    return [config_file, Path(cfg.docs_dir), *host.watched(host.settings(cfg, cfg.plugins["explainer"].config))]


def snapshot(paths: list[Path]) -> dict[str, tuple[int, int]]:
    """Each watched file's modification time and size: a change to any of them is a change."""
    out = {}
    for root in paths:
        for path in ([root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []):
            if path.is_file() and "__pycache__" not in path.parts:
                st = path.stat()
                out[str(path)] = (st.st_mtime_ns, st.st_size)
    return out


class _ReloadingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site folder as it stands; pages get the reload script, and RELOAD_PATH answers
    with the number of good builds so far (`server.build`)."""

    def log_message(self, *args) -> None:  # quiet: the build's messages are what matters
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path == RELOAD_PATH:
            return self._send(str(self.server.build).encode(), "text/plain")
        target = Path(self.translate_path(self.path))
        target = target / "index.html" if target.is_dir() else target
        if path.endswith(("/", ".html")) and target.suffix == ".html" and target.is_file():
            page = target.read_bytes().replace(b"</body>", RELOAD_SCRIPT.encode() + b"</body>", 1)
            return self._send(page, "text/html; charset=utf-8")
        return super().do_GET()

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def serve(config_file: Path, zensical: str, address: str = "127.0.0.1:8000", interval: float = 0.5) -> int:
    """Build, serve the site at `address`, and rebuild whenever a watched file changes. Each
    build runs in a new process (an edited model is read afresh); a failed one prints its
    message and leaves the last good site served. Open pages reload after each good build."""
    import functools
    import threading
    import time

    config_file = Path(config_file).resolve()
    site_dir = Path(load(config_file).site_dir)
    command = [sys.executable, "-m", MODULE, "build", "-f", str(config_file), "--zensical", zensical]

    def rebuild() -> bool:
        started = time.monotonic()
        ok = subprocess.run(command, cwd=config_file.parent).returncode == 0
        print(f"explainer: {'built' if ok else 'build failed; still serving the last good site'}"
              f" in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        return ok

    # What is on disk as serving starts, taken before the first build: an edit made while that
    # build runs, or while the server starts, is then seen as an edit and builds again.
    paths = watched(config_file)
    seen = snapshot(paths)
    rebuild()
    host, _, port = address.rpartition(":")
    handler = functools.partial(_ReloadingHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer((host or "127.0.0.1", int(port)), handler)
    server.build = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"explainer: serving {site_dir} at http://{host or '127.0.0.1'}:{server.server_address[1]}/",
          file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(interval)
            now = snapshot(paths)
            if now != seen:
                seen = now
                if rebuild():
                    server.build += 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.shutdown()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explainer_gen.host_zensical")
    ap.add_argument("command", choices=["build", "serve"])
    ap.add_argument("-f", "--config-file", default="mkdocs.yml")
    ap.add_argument("-d", "--site-dir", type=Path, help="where `build` puts the site (default: mkdocs.yml's site_dir)")
    ap.add_argument("-a", "--dev-addr", default="127.0.0.1:8000", help="where `serve` serves the site")
    ap.add_argument("--zensical", default=str(Path(sys.executable).with_name("zensical")),
                    help="the zensical command (default: the one beside this Python)")
    ap.add_argument("-v", "--verbose", action="store_true", help="name each figure `build` computes, and why")
    args = ap.parse_args(argv)
    if args.command == "serve":
        return serve(Path(args.config_file), args.zensical, args.dev_addr)
    return build(Path(args.config_file), args.zensical, args.site_dir, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
