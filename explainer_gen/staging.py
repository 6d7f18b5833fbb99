"""Build into a staging folder and move it into place only when the build succeeds.

MkDocs empties the site folder before it reads a single page, so any failure would leave
readers (and `mkdocs serve` users) with half a site. Staging keeps the previous output
until a complete new one exists.
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path


class WarningCount(logging.Handler):
    """Counts warnings, which make a strict build fail after everything is written."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class Staging:
    def __init__(self, site_dir: str):
        self.final = Path(site_dir)
        self.stage = self.final.with_name(f".{self.final.name}.staging-{os.getpid()}")
        shutil.rmtree(self.stage, ignore_errors=True)

    def commit(self) -> None:
        """Swap the finished stage in for the old site."""
        old = self.final.with_name(f".{self.final.name}.old-{os.getpid()}")
        if self.final.exists():
            os.replace(self.final, old)
        os.replace(self.stage, self.final)
        shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)
