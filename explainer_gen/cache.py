"""A small on-disk cache for figure artefacts and the JS bundle.

Keys hash everything that decides the output: the request, the catalogue text, the source
of the models and of the figure code, and the versions of altair, vl-convert and this package.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import models

PACKAGE_ROOT = Path(__file__).parent
MODELS_ROOT = Path(models.__file__).parent


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


# The generator code whose output is cached: figure kinds, artefacts, numbers and what they
# read. Editing anything else (hooks, HTML, loader, cross-references) recomputes nothing.
COMPUTING = ("figures/*.py", "artifacts.py", "theme.py", "controls.py", "numbers.py", "vocabulary.py",
             "pages.py")


def _sources(root: Path, patterns: tuple[str, ...] = ("**/*.py",)) -> list[Path]:
    return sorted({p for pattern in patterns for p in root.glob(pattern)})


def _code_files() -> list[Path]:
    return _sources(MODELS_ROOT) + _sources(PACKAGE_ROOT, COMPUTING)


@lru_cache(maxsize=16)
def _code_fingerprint(mtimes: tuple) -> str:
    parts = {"code": [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in _code_files()],
             "versions": [_version(d) for d in ("altair", "vl-convert-python", "explainer-gen", "numpy")]}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def code_fingerprint() -> str:
    """Hash of the model and computing sources and the library versions (re-read when a file changes)."""
    return _code_fingerprint(tuple((str(p), p.stat().st_mtime_ns) for p in _code_files()))


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class DiskCache:
    """Text blobs under `root/namespace/key`; `root=None` turns caching off."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else None
        self.hits = self.misses = 0

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
        return text

    def path(self, namespace: str, key: str) -> Path | None:
        """Where an entry lives on disk, if caching is on and the entry exists."""
        if self.root is None:
            return None
        path = self.root / namespace / key
        return path if path.is_file() else None

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
