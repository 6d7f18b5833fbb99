"""A small on-disk cache for figure artefacts and the JS bundle.

Keys hash everything that decides the output: the request, the catalogue text, the source of
the code the result runs (compute/codegraph.py), and the versions of altair, vl-convert and this
package.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from importlib import metadata
from pathlib import Path
from stat import S_ISREG

import models

PACKAGE_ROOT = Path(__file__).parent
MODELS_ROOT = Path(models.__file__).parent


def check_models_package(models_root: Path = MODELS_ROOT, package_root: Path = PACKAGE_ROOT) -> None:
    """The import name `models` is generic: another top-level `models` earlier on sys.path (a Django
    app, a reader's own folder) would shadow ours and feed the build foreign code. Ours is always
    installed beside `explainer_gen` (site-packages, the checkout of an editable install, or a copy
    run with its folder on PYTHONPATH), so anything else is refused by name."""
    if models_root.resolve().parent != package_root.resolve().parent or not (models_root / "catalogue.yaml").is_file():
        raise ImportError(f"the `models` package imported from {models_root} is not explainer-gen's (expected "
                          f"{package_root.resolve().parent / 'models'}); another package named `models` comes "
                          "first on sys.path: remove it from PYTHONPATH or run from another folder")


check_models_package()


def package_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def source_hashes() -> dict[str, str]:
    """sha256 of every Python and YAML file of the models and the generator (the models' YAML holds
    data they compute from, such as the papers' tables), as they are on disk now, by path relative
    to their package's parent folder."""
    out = {}
    for root in (MODELS_ROOT, PACKAGE_ROOT):
        for path in sorted(p for pattern in ("*.py", "*.yaml") for p in root.rglob(pattern)):
            if "__pycache__" not in path.parts:
                out[path.relative_to(root.parent).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def library_versions() -> list[str]:
    """The versions of the libraries whose output is cached, and of this package."""
    return [package_version(d) for d in ("altair", "vl-convert-python", "explainer-gen", "numpy")]


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


# A temporary file (`put` writes one, then renames it) is left alone for this long, whatever the
# sweep keeps: a younger one may be another build's write in progress.
TMP_SECONDS = 3600.0


class DiskCache:
    """Text blobs under `root/namespace/key`; `root=None` turns caching off.

    It records every entry it reads, finds or writes (`used`), so that a build can drop, at its
    end, what it no longer needs (`sweep`)."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else None
        self.hits = self.misses = 0
        self.used: set[tuple[str, str]] = set()  # (namespace, key) of every entry this object touched

    def get(self, namespace: str, key: str) -> str | None:
        if self.root is None:
            return None
        path = self.root / namespace / key
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            self.misses += 1
            return None
        self.hits += 1
        self.used.add((namespace, key))
        return text

    def path(self, namespace: str, key: str) -> Path | None:
        """Where an entry lives on disk, if caching is on and the entry exists."""
        if self.root is None:
            return None
        path = self.root / namespace / key
        if not path.is_file():
            return None
        self.used.add((namespace, key))
        return path

    def put(self, namespace: str, key: str, text: str) -> None:
        if self.root is None:
            return
        folder = self.root / namespace
        folder.mkdir(parents=True, exist_ok=True)
        # Write then rename, so an interrupted build never leaves a torn entry.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, folder / key)
        self.used.add((namespace, key))

    def sweep(self, used: set[tuple[str, str]], keep_seconds: float, now: float | None = None) -> tuple[int, int]:
        """Drop the entries not in `used` that no build has used for `keep_seconds`; returns how many
        files and bytes went.

        An entry's modification time is when a build last used it: the entries in `used` are
        stamped with `now` here. Keys hash everything that decides a value, so an edit leaves its
        old entries behind, never reads them again, and they would pile up (each save of a page
        during `mkdocs serve`, each deploy that restores the cache and saves it again); keeping
        what was used recently lets an author switch between branches without a cold build.
        Leftover temporary files of an interrupted write go by the same age, and never before an
        hour (`TMP_SECONDS`). Keeping no days is for a cache no other build uses at the same time
        (a deploy's): another build's entries written a moment ago would go too."""
        if self.root is None:
            return 0, 0
        now = time.time() if now is None else now
        removed = freed = 0
        try:
            folders = sorted(p for p in self.root.iterdir() if p.is_dir())
        except OSError:  # no cache yet, or none to read
            return 0, 0
        for folder in folders:
            try:
                paths = list(folder.iterdir())
            except OSError:
                continue
            for path in paths:
                try:
                    if (folder.name, path.name) in used:
                        os.utime(path, (now, now))
                        continue
                    stat = path.stat()
                    # A temporary file younger than an hour may be another build's write in progress.
                    keep = max(keep_seconds, TMP_SECONDS) if path.name.startswith(".tmp-") else keep_seconds
                    if not S_ISREG(stat.st_mode) or now - stat.st_mtime <= keep:
                        continue
                    path.unlink()
                except OSError:  # gone already, or not ours to drop: the build goes on
                    continue
                removed, freed = removed + 1, freed + stat.st_size
        return removed, freed
