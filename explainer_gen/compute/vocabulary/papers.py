"""Published results and the checks set beside them, from models/published.yaml. None of them
reads the scenario: a paper's setting is its own.

Leviathan et al.'s Table 1 and Chen et al.'s runs are groups of terms, one per field, so that a
field is a name the build checks, not a string it looks up: `chen.c`, `chen.speedup(0)`,
`leviathan.model_speed(5)`. `row` numbers a table's rows from 0.

Each term's derivation (`_derive_*`) cites the paper by its key in docs/feed/papers.bib and names
the field of models/published.yaml it reads, with the file's own note on what the paper measured;
what the model makes of a figure (Theorem 3.8 at a row's setting) is a closed form over them.
"""
from __future__ import annotations

import dataclasses
import math
import re
from functools import lru_cache

from models import papers
from models.units import COUNT, NAMED, RATIO, TIME
from models.yamlsource import closest

from ..derivation import Derivation, Symbol, closed_form, search
from .registry import AS_PUBLISHED, Returns, Topic

topic = Topic("papers")

_PER_TOKEN = TIME / COUNT


# -- where a figure comes from ----------------------------------------------------------------------

def cite(key: str) -> str:
    """The paper of `key` by its entry in the site's bibliography ("chen2023 in the bibliography").
    The bibliography itself is not read here: a number's cache key holds the code and the data
    files it runs, and the bibliography is the pages' input, not the models' (the page's
    References give the entry in full)."""
    # published.yaml's keys are citation keys (author and year, "chen2023") except where a body
    # publishes the figures (MLPerf), whose note in the file names it.
    return f"{key} in the bibliography" if re.fullmatch(r"[a-z]+\d{4}", key) else ""


@lru_cache(maxsize=4)
def _notes(mtime_ns: int) -> dict[str, tuple[str, dict[str, str]]]:
    """The comments models/published.yaml writes about each paper: the one under its key (the
    paper's own), and for each field the comment above it or above the fields just before it (a
    field holding a table of its own starts afresh)."""
    out: dict[str, tuple[str, dict[str, str]]] = {}
    paper, block, note = None, [], ""
    for line in papers.PUBLISHED_PATH.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("#"):
            block.append(text.lstrip("#").strip())
            continue
        top = re.match(r"^([A-Za-z]\w*):", line)
        if top:
            paper, note = top.group(1), ""
            out[paper] = ("", {})
        elif paper and text:
            if block and not out[paper][0] and not note:  # the comment under the key
                out[paper] = (" ".join(block), {})
            elif block:
                note = " ".join(block)
            field = re.match(r"^\s+([A-Za-z]\w*):", line)
            if field and text.endswith(":") and not block:  # a table of its own: the note above is not its
                note = ""
            if field and note:
                out[paper][1][field.group(1)] = note
        block = []
    return out


def _where(paper: str, field: str, entry: str, shown) -> str:
    """The place in models/published.yaml, with what the file notes about the paper and the field."""
    header, fields = _notes(papers.PUBLISHED_PATH.stat().st_mtime_ns).get(paper, ("", {}))
    note = " ".join(x for x in (header, fields.get(field, "")) if x)
    return f"models/published.yaml, {paper}: {entry} = {shown}" + (f". The file notes: {note}" if note else "")


def _figure(quantity: str, dim, result, paper: str, field: str, shown, entry: str | None = None,
            cited: str | None = None) -> Derivation:
    """A figure as the paper prints it and models/published.yaml holds it under `paper` (`entry`:
    where in that entry, when not the field itself; `cited`: the bibliography's key, when not `paper`)."""
    source = cite(cited or paper)
    return Derivation("value", quantity, float(result), dim, method=_where(paper, field, entry or field, shown),
                      sources=(source,) if source else ())


# What each figure `published` reads is, as models/published.yaml's comments and the papers give it:
# its dimension by name (models/units.NAMED) and the SI value of the unit it is written in. A page
# that reads a figure not listed here gets an unchecked number; a test holds every page's to this.
PUBLISHED_FIELDS: dict[tuple[str, str], tuple[str, float]] = {
    ("yu2022", "throughput_gain"): ("ratio", 1.0),
    ("kwon2023", "kv_used_low"): ("ratio", 1.0), ("kwon2023", "kv_used_high"): ("ratio", 1.0),
    ("kwon2023", "throughput_gain_low"): ("ratio", 1.0), ("kwon2023", "throughput_gain_high"): ("ratio", 1.0),
    ("deepseek2024", "mtp_acceptance_low"): ("ratio", 1.0), ("deepseek2024", "mtp_acceptance_high"): ("ratio", 1.0),
    ("deepseek2024", "mtp_tps_gain"): ("ratio", 1.0),
    ("agrawal2024", "capacity_gain_low"): ("ratio", 1.0), ("agrawal2024", "capacity_gain_high"): ("ratio", 1.0),
    ("mlperf", "tpot_p99_ms"): ("time", 1e-3), ("mlperf", "tpot_p99_interactive_ms"): ("time", 1e-3),
    ("frantar2025", "full_speedup_batch_low"): ("count", 1.0), ("frantar2025", "full_speedup_batch_high"): ("count", 1.0),
}


def _derive_published(paper: str, field: str):
    dimension, unit = PUBLISHED_FIELDS.get((paper, field), (None, 1.0))
    return _figure(f"{paper}: {field}, as published", NAMED.get(dimension), published(paper, field) * unit, paper,
                   field, published_entry(paper, field))


def _published_units(paper, field):
    """What published(paper, field) returns, as PUBLISHED_FIELDS declares it (None: not listed)."""
    dimension, unit = PUBLISHED_FIELDS.get((paper, field), (None, 1.0))
    return (NAMED[dimension], unit) if dimension else None


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "figure a paper reports, by field", of_arguments=_published_units),
            derive=_derive_published)
def published(paper: str, field: str) -> float:
    """A figure a paper reports, by its citation key and field: published("kwon2023", "kv_used_low")."""
    value = published_entry(paper, field)
    if isinstance(value, (list, dict)):
        raise ValueError(f"{paper}.{field} in models/published.yaml is a list, not one number")
    return float(value)


def published_entry(paper: str, field: str):
    """The entry as the file holds it, a number or a list (`published` for a number)."""
    table = papers.published()
    if paper not in table or not isinstance(table[paper], dict):
        raise ValueError(f"no paper {paper!r} in models/published.yaml; "
                         f"{closest(paper, [k for k, v in table.items() if isinstance(v, dict)])}")
    if field not in table[paper]:
        raise ValueError(f"{paper} has no field {field!r} in models/published.yaml; {closest(field, table[paper])}")
    return table[paper][field]


def _theorem(quantity: str, result: float, a: float, k: Symbol, price: str, sources: tuple[str, ...],
             a_words: str = "acceptance rate of one guess", **symbols: Symbol) -> Derivation:
    """Leviathan et al.'s Theorem 3.8 (models.papers.walltime_improvement) as a closed form:
    E(a, k) / (k c + 1), with E(a, k) = (1 - a^(k+1)) / (1 - a), 1 at a = 0 and k + 1 at a = 1; `price`, the
    draft step over the target step (c), as a formula over `symbols`."""
    if a >= 1.0:
        formula = f"(k + 1) / (k * {price} + 1)"
    elif a == 0.0:
        formula = f"1 / (k * {price} + 1)"
    else:
        formula = f"(1 - a ** (k + 1)) / (1 - a) / (k * {price} + 1)"
        symbols = {"a": Symbol(float(a), RATIO, a_words), **symbols}
    return closed_form(quantity, RATIO, result, formula, sources, k=k, **symbols)


# -- Leviathan et al., Table 1 ----------------------------------------------------------------------

_TABLE = "leviathan2023_table1"


def _leviathan(row) -> papers.LeviathanRow:
    rows = papers.leviathan_table1()
    if not 0 <= int(row) < len(rows):
        raise ValueError(f"Leviathan et al.'s Table 1 has rows 0 to {len(rows) - 1}, not {row}")
    return rows[int(row)]


def _table_figure(row, field: str, words: str, dim, result: float) -> Derivation:
    _leviathan(row)  # refuses a row the table lacks
    raw = papers.published()[_TABLE][int(row)]
    return _figure(f"{words}, row {int(row) + 1} of Leviathan et al.'s Table 1", dim, result, _TABLE, field,
                   raw[field], f"row {int(row) + 1}, {field}", cited="leviathan2023")


def _derive_leviathan_a(row):
    return _table_figure(row, "a", "acceptance rate", RATIO, leviathan.a(row))


def _derive_leviathan_k(row):
    return _table_figure(row, "k", "lookahead", COUNT, leviathan.k(row))


def _derive_leviathan_speed(row):
    return _table_figure(row, "speed", "walltime improvement as printed", RATIO, leviathan.speed(row))


def _derive_leviathan_model_speed(row):
    r = _leviathan(row)
    where = f"models/published.yaml, {_TABLE}: row {int(row) + 1}, a = {r.a} and k = {r.k}"
    return _theorem(f"walltime improvement by Theorem 3.8 at row {int(row) + 1} of Leviathan et al.'s Table 1",
                    leviathan.model_speed(row), r.a, Symbol(float(r.k), COUNT, "lookahead: guesses a step"),
                    "c", (f"{cite('leviathan2023')}, Theorem 3.8", where),
                    c=Symbol(0.0, RATIO, "draft step over target step: Table 1 sets it to 0"))


class leviathan:
    """Leviathan et al., Table 1 (c = 0): a row's setting, the printed speedup, and the model's."""

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate in Leviathan et al.'s row"),
                derive=_derive_leviathan_a)
    def a(row) -> float:
        return float(_leviathan(row).a)

    @topic.term(depends=(), returns=Returns("count", "lookahead in Leviathan et al.'s row"),
                derive=_derive_leviathan_k)
    def k(row) -> float:
        return float(_leviathan(row).k)

    @topic.term(depends=(), returns=Returns("ratio", "walltime improvement Leviathan et al. printed"),
                derive=_derive_leviathan_speed)
    def speed(row) -> float:
        """The walltime improvement as printed."""
        return float(_leviathan(row).paper_speed)

    @topic.term(depends=(), returns=Returns("ratio", "walltime improvement by Theorem 3.8"),
                derive=_derive_leviathan_model_speed)
    def model_speed(row) -> float:
        """Theorem 3.8 at the row's a and k."""
        return float(_leviathan(row).model_speed)


# -- Chen et al. ------------------------------------------------------------------------------------

_CHEN = "chen2023"


def _chen(row) -> papers.ChenRow:
    rows = papers.chen2023().rows
    if not 0 <= int(row) < len(rows):
        raise ValueError(f"Chen et al. report rows 0 to {len(rows) - 1}, not {row}")
    return rows[int(row)]


def _chen_figure(field: str, words: str, dim, result: float, unit: str = "") -> Derivation:
    raw = papers.published()[_CHEN][field]
    return _figure(f"{words}, Chen et al.", dim, result, _CHEN, field, f"{raw}{unit}")


def _chen_row_figure(row, field: str, words: str, dim, result: float, unit: str = "") -> Derivation:
    r = _chen(row)
    raw = papers.published()[_CHEN]["measured"][int(row)][field]
    return _figure(f"{words}, Chen et al., {r.task}", dim, result, _CHEN, "measured", f"{raw}{unit}",
                   f"measured, row {int(row) + 1} ({r.task}), {field}")


def _steps() -> dict[str, Symbol]:
    """The published step times the measured c is made of."""
    c = papers.chen2023()
    return {"d": Symbol(c.draft_s, _PER_TOKEN, "one draft step, as published (draft_ms_per_token)"),
            "t": Symbol(c.target_s, _PER_TOKEN, "one target step: plain decoding, a token (target_ms_per_token)")}


def _sizes() -> dict[str, Symbol]:
    """The published sizes the roofline's c is made of."""
    c = papers.chen2023()
    return {"Nd": Symbol(c.draft_params, COUNT, "draft's parameters (draft_params_b)"),
            "Nt": Symbol(c.target_params, COUNT, "target's parameters (target_params_b)")}


def _lookahead() -> Symbol:
    return Symbol(float(papers.chen2023().k), COUNT, "lookahead K: guesses a step (lookahead)")


def _chen_sources(*extra: str) -> tuple[str, ...]:
    return tuple(x for x in (cite(_CHEN), *extra, f"models/published.yaml, {_CHEN}") if x)


def _derive_chen_target_s():
    return _chen_figure("target_ms_per_token", "target's time per token", _PER_TOKEN, chen.target_s(), " ms")


def _derive_chen_draft_s():
    return _chen_figure("draft_ms_per_token", "draft's time per step", _PER_TOKEN, chen.draft_s(), " ms")


def _derive_chen_k():
    return _chen_figure("lookahead", "lookahead K", COUNT, chen.k())


def _derive_chen_c():
    return closed_form("draft step over target step, as Chen et al. measured them", RATIO, chen.c(), "d / t",
                       _chen_sources(), **_steps())


def _derive_chen_c_roofline():
    return closed_form("draft weights over target weights, Chen et al.'s models", RATIO, chen.c_roofline(),
                       "Nd / Nt", _chen_sources(), **_sizes())


def _derive_chen_target_params():
    return _chen_figure("target_params_b", "target's parameters", COUNT, chen.target_params(), " billion")


def _derive_chen_draft_params():
    return _chen_figure("draft_params_b", "draft's parameters", COUNT, chen.draft_params(), " billion")


def _derive_chen_floor():
    return _theorem("speedup by Theorem 3.8 if every guess fails (a = 0: one token a step), at Chen et al.'s "
                    "measured c",
                    chen.floor(), 0.0, _lookahead(), "d / t", _chen_sources(f"{cite('leviathan2023')}, Theorem 3.8"),
                    **_steps())


def _derive_chen_ceiling():
    return _theorem("speedup by Theorem 3.8 if every guess holds (a = 1: K + 1 tokens a step), at Chen et al.'s "
                    "measured c", chen.ceiling(), 1.0, _lookahead(), "d / t",
                    _chen_sources(f"{cite('leviathan2023')}, Theorem 3.8"), **_steps())


def _derive_chen_speedup(row):
    return _chen_row_figure(row, "speedup", "speedup measured", RATIO, chen.speedup(row))


def _derive_chen_ms(row):
    return _chen_row_figure(row, "ms_per_token", "time per token measured", _PER_TOKEN, chen.ms(row), " ms")


def _derive_chen_time_ratio(row):
    r = _chen(row)
    return closed_form(f"plain time per token over speculative, Chen et al., {r.task}", RATIO, chen.time_ratio(row),
                       "t / m", _chen_sources(),
                       t=_steps()["t"],
                       m=Symbol(r.paper_ms / 1e3, _PER_TOKEN, f"time per token with speculation, {r.task} "
                                                              f"(measured, ms_per_token)"))


def _derive_chen_implied_a(row):
    r, c = _chen(row), papers.chen2023()
    a = chen.implied_a(row)
    theorem = (f"Theorem 3.8, E(a, K) / (K c + 1) with K = {c.k} and c = {c.draft_s * 1e3:g} ms / "
               f"{c.target_s * 1e3:g} ms")
    if not math.isfinite(a):
        return search(f"acceptance rate implied by the speedup, Chen et al., {r.task}", RATIO, a,
                      f"bisection on a in [0, 1] for the acceptance at which {theorem} gives the printed "
                      f"{r.paper_speedup:g}x: none, the speedup lies outside {c.floor:.3f}x to {c.ceiling:.3f}x "
                      "(models/papers.py: implied_acceptance)", *_chen_sources(f"{cite('leviathan2023')}, Theorem 3.8"))
    lo = math.floor(a * 1000.0) / 1000.0
    hi = lo + 0.001
    at_lo, at_hi = (float(papers.walltime_improvement(x, c.k, c.c)) for x in (lo, hi))
    return search(f"acceptance rate implied by the speedup, Chen et al., {r.task}", RATIO, a,
                  f"bisection on a in [0, 1] for the acceptance at which {theorem} gives the printed "
                  f"{r.paper_speedup:g}x (models/papers.py: implied_acceptance): a = {a:.5f}; either side, at "
                  f"a = {lo:.3f} it gives {at_lo:.4f}x and at a = {hi:.3f}, {at_hi:.4f}x",
                  *_chen_sources(f"{cite('leviathan2023')}, Theorem 3.8"))


def _derive_chen_roofline_speedup(row):
    r = _chen(row)
    d = _theorem(f"speedup with the draft priced by its weights, at the acceptance Chen et al.'s {r.task} "
                 "speedup implies", chen.roofline_speedup(row), r.implied_a, _lookahead(), "Nd / Nt",
                 _chen_sources(f"{cite('leviathan2023')}, Theorem 3.8"),
                 a_words="acceptance rate of one guess the printed speedup implies (below)", **_sizes())
    return dataclasses.replace(d, parts=(_derive_chen_implied_a(row),))


class chen:
    """Chen et al. 2023: the setting (times in seconds, sizes in parameters) and, for measured row
    `row`, the published speedup and time, and what the model makes of them."""

    @topic.term(depends=(), returns=Returns("time per count", "target's time per token, as published"),
                derive=_derive_chen_target_s)
    def target_s() -> float:
        """Plain decoding, seconds per token."""
        return float(papers.chen2023().target_s)

    @topic.term(depends=(), returns=Returns("time per count", "draft's time per token, as published"),
                derive=_derive_chen_draft_s)
    def draft_s() -> float:
        """One draft step, seconds."""
        return float(papers.chen2023().draft_s)

    @topic.term(depends=(), returns=Returns("count", "lookahead Chen et al. used"), derive=_derive_chen_k)
    def k() -> float:
        """Their lookahead K."""
        return float(papers.chen2023().k)

    @topic.term(depends=(), returns=Returns("ratio", "draft step over target step, measured"), derive=_derive_chen_c)
    def c() -> float:
        """Measured: a draft step over a target step."""
        return float(papers.chen2023().c)

    @topic.term(depends=(), returns=Returns("ratio", "draft weights over target weights"),
                derive=_derive_chen_c_roofline)
    def c_roofline() -> float:
        """What a bandwidth-bound roofline would charge: draft weights over target weights."""
        return float(papers.chen2023().c_roofline)

    @topic.term(depends=(), returns=Returns("count", "target's parameters, Chen et al."),
                derive=_derive_chen_target_params)
    def target_params() -> float:
        return float(papers.chen2023().target_params)

    @topic.term(depends=(), returns=Returns("count", "draft's parameters, Chen et al."),
                derive=_derive_chen_draft_params)
    def draft_params() -> float:
        return float(papers.chen2023().draft_params)

    @topic.term(depends=(), returns=Returns("ratio", "model speedup if every guess fails"), derive=_derive_chen_floor)
    def floor() -> float:
        """The model's speedup if every guess fails, at the measured c."""
        return float(papers.chen2023().floor)

    @topic.term(depends=(), returns=Returns("ratio", "model speedup if every guess holds"),
                derive=_derive_chen_ceiling)
    def ceiling() -> float:
        """... and if every guess holds."""
        return float(papers.chen2023().ceiling)

    @topic.term(depends=(), returns=Returns("ratio", "speedup Chen et al. measured"), derive=_derive_chen_speedup)
    def speedup(row) -> float:
        """A measured speedup as published."""
        return float(_chen(row).paper_speedup)

    @topic.term(depends=(), returns=Returns("time per count", "time per token Chen et al. measured"),
                derive=_derive_chen_ms)
    def ms(row) -> float:
        """A measured time per token as published, in seconds despite the name (the paper's ms)."""
        return float(_chen(row).paper_ms / 1e3)

    @topic.term(depends=(), returns=Returns("ratio", "speedup from the row's own times"),
                derive=_derive_chen_time_ratio)
    def time_ratio(row) -> float:
        """The speedup the row's own times give: plain time per token over speculative."""
        return float(papers.chen2023().target_s / (_chen(row).paper_ms / 1e3))

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate implied by the speedup"),
                derive=_derive_chen_implied_a)
    def implied_a(row) -> float:
        """The acceptance at which Theorem 3.8, at the measured c, gives that speedup."""
        return float(_chen(row).implied_a)

    @topic.term(depends=(), returns=Returns("ratio", "speedup with the draft priced by its weights"),
                derive=_derive_chen_roofline_speedup)
    def roofline_speedup(row) -> float:
        """The same acceptance with the draft priced by its weight read."""
        return float(_chen(row).roofline_speedup)
