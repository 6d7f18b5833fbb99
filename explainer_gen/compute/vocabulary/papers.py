"""Published results and the checks set beside them, from models/published.yaml. None of them
reads the scenario: a paper's setting is its own.

Leviathan et al.'s Table 1 and Chen et al.'s runs are groups of terms, one per field, so that a
field is a name the build checks, not a string it looks up: `chen.c`, `chen.speedup(0)`,
`leviathan.model_speed(5)`. `row` numbers a table's rows from 0.
"""
from __future__ import annotations

from models import papers
from models.yamlsource import closest

from .registry import AS_PUBLISHED, Returns, Topic

topic = Topic("papers")


@topic.term(depends=(), returns=Returns(AS_PUBLISHED, "figure a paper reports, by field"))
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


def _leviathan(row) -> papers.LeviathanRow:
    rows = papers.leviathan_table1()
    if not 0 <= int(row) < len(rows):
        raise ValueError(f"Leviathan et al.'s Table 1 has rows 0 to {len(rows) - 1}, not {row}")
    return rows[int(row)]


class leviathan:
    """Leviathan et al., Table 1 (c = 0): a row's setting, the printed speedup, and the model's."""

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate in Leviathan et al.'s row"))
    def a(row) -> float:
        return float(_leviathan(row).a)

    @topic.term(depends=(), returns=Returns("count", "lookahead in Leviathan et al.'s row"))
    def k(row) -> float:
        return float(_leviathan(row).k)

    @topic.term(depends=(), returns=Returns("ratio", "walltime improvement Leviathan et al. printed"))
    def speed(row) -> float:
        """The walltime improvement as printed."""
        return float(_leviathan(row).paper_speed)

    @topic.term(depends=(), returns=Returns("ratio", "walltime improvement by Theorem 3.8"))
    def model_speed(row) -> float:
        """Theorem 3.8 at the row's a and k."""
        return float(_leviathan(row).model_speed)


def _chen(row) -> papers.ChenRow:
    rows = papers.chen2023().rows
    if not 0 <= int(row) < len(rows):
        raise ValueError(f"Chen et al. report rows 0 to {len(rows) - 1}, not {row}")
    return rows[int(row)]


class chen:
    """Chen et al. 2023: the setting (times in seconds, sizes in parameters) and, for measured row
    `row`, the published speedup and time, and what the model makes of them."""

    @topic.term(depends=(), returns=Returns("time per count", "target's time per token, as published"))
    def target_s() -> float:
        """Plain decoding, seconds per token."""
        return float(papers.chen2023().target_s)

    @topic.term(depends=(), returns=Returns("time per count", "draft's time per token, as published"))
    def draft_s() -> float:
        """One draft step, seconds."""
        return float(papers.chen2023().draft_s)

    @topic.term(depends=(), returns=Returns("count", "lookahead Chen et al. used"))
    def k() -> float:
        """Their lookahead K."""
        return float(papers.chen2023().k)

    @topic.term(depends=(), returns=Returns("ratio", "draft step over target step, measured"))
    def c() -> float:
        """Measured: a draft step over a target step."""
        return float(papers.chen2023().c)

    @topic.term(depends=(), returns=Returns("ratio", "draft weights over target weights"))
    def c_roofline() -> float:
        """What a bandwidth-bound roofline would charge: draft weights over target weights."""
        return float(papers.chen2023().c_roofline)

    @topic.term(depends=(), returns=Returns("count", "target's parameters, Chen et al."))
    def target_params() -> float:
        return float(papers.chen2023().target_params)

    @topic.term(depends=(), returns=Returns("count", "draft's parameters, Chen et al."))
    def draft_params() -> float:
        return float(papers.chen2023().draft_params)

    @topic.term(depends=(), returns=Returns("ratio", "model speedup if every guess fails"))
    def floor() -> float:
        """The model's speedup if every guess fails, at the measured c."""
        return float(papers.chen2023().floor)

    @topic.term(depends=(), returns=Returns("ratio", "model speedup if every guess holds"))
    def ceiling() -> float:
        """... and if every guess holds."""
        return float(papers.chen2023().ceiling)

    @topic.term(depends=(), returns=Returns("ratio", "speedup Chen et al. measured"))
    def speedup(row) -> float:
        """A measured speedup as published."""
        return float(_chen(row).paper_speedup)

    @topic.term(depends=(), returns=Returns("time per count", "time per token Chen et al. measured"))
    def ms(row) -> float:
        """A measured time per token as published, in seconds despite the name (the paper's ms)."""
        return float(_chen(row).paper_ms / 1e3)

    @topic.term(depends=(), returns=Returns("ratio", "speedup from the row's own times"))
    def time_ratio(row) -> float:
        """The speedup the row's own times give: plain time per token over speculative."""
        return float(papers.chen2023().target_s / (_chen(row).paper_ms / 1e3))

    @topic.term(depends=(), returns=Returns("ratio", "acceptance rate implied by the speedup"))
    def implied_a(row) -> float:
        """The acceptance at which Theorem 3.8, at the measured c, gives that speedup."""
        return float(_chen(row).implied_a)

    @topic.term(depends=(), returns=Returns("ratio", "speedup with the draft priced by its weights"))
    def roofline_speedup(row) -> float:
        """The same acceptance with the draft priced by its weight read."""
        return float(_chen(row).roofline_speedup)
