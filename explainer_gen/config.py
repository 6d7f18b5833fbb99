"""Typed configuration of the explainer plugin (the `explainer:` entry under `plugins:`)."""
from __future__ import annotations

from mkdocs.config import config_options as opt
from mkdocs.config.base import Config, ValidationError


class Days(opt.Type):
    """A number of days, 0 or more (a bool is no number here, though Python counts it as one)."""

    def __init__(self, default: float):
        super().__init__((int, float), default=default)

    def run_validation(self, value):
        value = super().run_validation(value)
        if isinstance(value, bool) or value < 0:
            raise ValidationError(f"must be a number of days, 0 or more; got {value!r}")
        return value


class ExplainerConfig(Config):
    enabled = opt.Type(bool, default=True)
    # The accelerator and model catalogue; the one shipped with `models` when unset.
    catalogue = opt.Optional(opt.File(exists=True))
    # Figure results and the JS bundle are kept here between builds; empty turns it off.
    cache_dir = opt.Type(str, default=".cache/explainer")
    # A whole `mkdocs build` that succeeds drops the cache entries no build has used for this many
    # days (0: everything this build did not use). Rebuilds inside `mkdocs serve` drop nothing.
    cache_keep_days = Days(default=7)
    # Most figure data (gzip, loaded by default) one page may carry.
    data_budget_kb = opt.Type(int, default=100)
    # Processes that compute pages side by side on a cold build; 0 picks one per core (at most 8),
    # 1 computes in the build's own process. Workers need the cache, which carries their results.
    workers = opt.Type(int, default=0)
