"""Drafts that branch: what a tree of guesses yields, what it costs, who drafts, and mixture-of-experts targets."""
from __future__ import annotations

import numpy as np

from models import drafts, kvcache, speculative, trees

from ...sources.controls import Slider
from ..resolved import Resolved
from ...theme import colour
from .base import alt, Column, Columns, FigureKind, grid_product, register, rows_at, slider_filter, slider_params, table_data, TableView
from .longform import follows, part, stack
from .speedup import BATCHES, batch_axis
from ..sliders import ACCEPTANCE, LOOKAHEAD

BRANCHES = (1, 2, 4, 8)
DEPTHS = np.arange(1, 9)
TREE_DEPTH = 4  # the speedup figure's trees: b branches of this depth
MOE_BATCHES = BATCHES[BATCHES <= 256]
# The drafters' lines are smooth and nearly parallel: two batches per doubling draw them as well as
# four, at half the data (the figure has 5 drafters x 8 lookaheads x 19 acceptance rates of lines).
DRAFT_BATCHES = np.unique(np.round(2 ** (np.arange(0, 21) / 2)).astype(int))


def _branches_colour() -> alt.Color:
    return alt.Color("b:N", title="Branches", scale=alt.Scale(domain=list(BRANCHES)),
                     legend=alt.Legend(orient="bottom", direction="horizontal", symbolType="stroke"))


def _branches_dash() -> alt.StrokeDash:
    """Dashes as well as colours: the lines of four and eight branches nearly coincide."""
    return alt.StrokeDash("b:N", scale=alt.Scale(domain=list(BRANCHES), range=[[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]),
                          legend=None)


@register
class TreeYield(FigureKind):
    name = "tree-yield"
    title = "Tokens a verify pass yields against the draft's depth, for trees of 1 to 8 branches"
    reads = ()
    sliders = {"a": ACCEPTANCE}
    columns = {"a": Column("acceptance rate", "ratio"), "b": Column("branches", "count"),
               "d": Column("depth, draft passes a step", "count"), "nodes": Column("positions guessed per request", "count"),
               "tokens": Column("tokens per verify pass, mean", "count")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        cols = grid_product(grid, b=np.array(BRANCHES, dtype=float), d=DEPTHS.astype(float))
        cols["nodes"] = cols["b"] * cols["d"]
        cols["tokens"] = np.array([trees.Tree(int(b), int(d)).expected_tokens(a)
                                   for a, b, d in zip(cols["a"], cols["b"], cols["d"])])
        return cols

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        return base.mark_line(point=True, strokeWidth=2).encode(
            x=alt.X("d:Q", title="Depth: draft passes a step", scale=alt.Scale(domain=[1, DEPTHS.max()]),
                    axis=alt.Axis(values=DEPTHS.tolist(), format="d")),
            y=alt.Y("tokens:Q", title="Tokens per verify pass", scale=alt.Scale(domain=[1, DEPTHS.max() + 1])),
            color=_branches_colour(), strokeDash=_branches_dash(),
            tooltip=[alt.Tooltip("b:N", title="branches"), alt.Tooltip("d:Q", title="depth"),
                     alt.Tooltip("nodes:Q", title="positions guessed"),
                     alt.Tooltip("tokens:Q", title="tokens per pass", format=".2f")],
        ).add_params(*slider_params(sliders)).properties(height=300)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders)
        rows = [[f"{d:d}"] + [f"{cols['tokens'][m & (cols['b'] == b) & (cols['d'] == d)][0]:.2f}" for b in BRANCHES]
                for d in DEPTHS]
        return TableView(caption=f"Tokens per verify pass at acceptance rate {sliders['a'].default:.2f}",
                         headers=["Depth"] + [f"{b} branch{'es' if b > 1 else ''}" for b in BRANCHES], rows=rows)

    description = ("Line chart of the tokens a verify pass yields against the depth of the draft, at acceptance {a}. "
                   "At depth 4 a chain yields {chain4} and eight branches {wide4}; at depth 8, {chain8} and {wide8}. "
                   "At every depth eight branches keep {gain} as many guessed tokens as a chain, because only the "
                   "first guess has rivals.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        def tokens(b: int, d: int) -> float:
            return float(cols["tokens"][at & (cols["b"] == b) & (cols["d"] == d)][0])

        a = position["a"]
        gain = (tokens(BRANCHES[-1], 4) - 1) / (tokens(1, 4) - 1)  # kept guesses: the root's coverage over a chain's
        return {"a": f"{a:.2f}", "chain4": f"{tokens(1, 4):.2f}", "wide4": f"{tokens(BRANCHES[-1], 4):.2f}",
                "chain8": f"{tokens(1, 8):.2f}", "wide8": f"{tokens(BRANCHES[-1], 8):.2f}", "gain": f"{gain:.2f} times"}


@register
class TreeSpeedup(FigureKind):
    name = "tree-speedup"
    title = "Speedup of trees of depth 4 over plain decoding against batch size"
    sliders = {"a": ACCEPTANCE}
    columns = {"a": Column("acceptance rate", "ratio"), "b": Column("branches", "count"),
               "batch": Column("batch size", "count"), "speedup": Column("speedup over plain decoding", "ratio"),
               "positions": Column("positions verified per request", "count"), "fits": Column("fits in memory: 1, or past the cap: 0", "ratio"),
               "cap": Column("memory cap", "count", "requests")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        cols = grid_product(grid, b=np.array(BRANCHES, dtype=float), batch=BATCHES.astype(float))
        cols["speedup"] = np.empty(len(cols["a"]))
        for b in BRANCHES:
            m = cols["b"] == b
            cols["speedup"][m] = trees.speedup(r.acc, r.target, r.draft, r.cards, cols["batch"][m], cols["a"][m],
                                               trees.Tree(b, TREE_DEPTH), r.context, r.precision)
        cols["positions"] = cols["b"] * TREE_DEPTH + 1
        cap = r.memory_cap(with_draft=True)
        cols["fits"] = (cols["batch"] <= cap).astype(float)
        cols["cap"] = np.full(len(cols["a"]), cap)
        return cols

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders))
        _, x = batch_axis()
        lines = base.transform_filter("datum.fits == 1").mark_line(point=True, strokeWidth=2).encode(
            x=x, y=alt.Y("speedup:Q", title="Speedup over plain decoding (×)",
                         scale=alt.Scale(type="log", domain=[0.1, 10])),
            color=_branches_colour(), strokeDash=_branches_dash(),
            tooltip=[alt.Tooltip("b:N", title="branches"), alt.Tooltip("positions:Q", title="positions verified"),
                     alt.Tooltip("batch:Q", title="batch"), alt.Tooltip("speedup:Q", title="speedup", format=".2f")])
        even = alt.Chart(alt.InlineData(values=[{"even": 1}])).mark_rule(strokeDash=[4, 4]).encode(y="even:Q")
        return alt.layer(even, lines).add_params(*slider_params(sliders)).properties(height=320)

    def _breakeven(self, cols: Columns, at: np.ndarray, b: int) -> str:
        return _stops(_first_slower(cols, at & (cols["b"] == b)))

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders) & (cols["fits"] == 1)
        rows = []
        for batch in np.unique(cols["batch"][m]):
            rows.append([f"{batch:g}"] + [f"{cols['speedup'][m & (cols['b'] == b) & (cols['batch'] == batch)][0]:.2f}×"
                                          for b in BRANCHES])
        return TableView(caption=f"Speedup of trees of depth {TREE_DEPTH} at acceptance rate {sliders['a'].default:.2f}, "
                                 f"{r.cards} × {r.acc.name}, {r.target.name} target, {r.draft.name} draft, "
                                 f"{r.context:,} tokens of context",
                         headers=["Batch"] + [f"{b} branch{'es' if b > 1 else ''} ({b * TREE_DEPTH + 1} positions)"
                                              for b in BRANCHES], rows=rows)

    description = ("Line chart of speedup against batch size for trees of depth {depth} at acceptance {a} on {cards} × "
                   "{acc}: at batch 1 a chain gives {chain1} and eight branches {wide1}. The chain's speedup {chain_b}; "
                   "with eight branches it {wide_b}.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        def first(b: int) -> str:
            return f"{cols['speedup'][at & (cols['b'] == b) & (cols['batch'] == 1)][0]:.2f}×"

        return {"depth": f"{TREE_DEPTH}", "a": f"{position['a']:.2f}", "cards": f"{r.cards}", "acc": r.acc.name,
                "chain1": first(1), "wide1": first(BRANCHES[-1]),
                "chain_b": self._breakeven(cols, at, 1), "wide_b": self._breakeven(cols, at, BRANCHES[-1])}


KIND_LABELS = {"model": "draft model", "medusa": "Medusa heads", "eagle": "EAGLE layer", "mtp": "MTP modules",
               "lookup": "prompt lookup"}
# Each drafter as the subject of a sentence, with the form of "to stop" that agrees with it.
KIND_SUBJECTS = {"draft model": ("the draft model", "stops"), "Medusa heads": ("Medusa heads", "stop"),
                 "EAGLE layer": ("the EAGLE layer", "stops"), "MTP modules": ("MTP modules", "stop"),
                 "prompt lookup": ("prompt lookup", "stops")}


@register
class DraftSpeedup(FigureKind):
    name = "draft-speedup"
    title = "Speedup against batch size for five ways of drafting"
    sliders = {"a": ACCEPTANCE, "k": LOOKAHEAD}
    columns = {"a": Column("acceptance rate", "ratio"), "k": Column("lookahead k", "count"), "kind": Column("drafter"),
               "batch": Column("batch size", "count"), "speedup": Column("speedup over plain decoding", "ratio"),
               "draft_ms": Column("drafting time a step", "time", "ms"), "fits": Column("fits in memory: 1, or past the cap: 0", "ratio")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = []
        for k in grid["k"]:
            ways = drafts.drafters(r.target, r.draft, int(k))
            for key, label in KIND_LABELS.items():
                way = ways[key]
                cap = float(drafts.slots(r.acc, r.target, way, r.cards, r.context, precision=r.precision))
                a, batch = np.meshgrid(grid["a"], DRAFT_BATCHES.astype(float), indexing="ij")
                a, batch = a.ravel(), batch.ravel()
                parts.append(part(
                    "line", len(a), a=a, k=float(k), kind=label, batch=batch,
                    speedup=drafts.speedup(r.acc, r.target, way, r.cards, batch, a, float(k), r.context, r.precision),
                    draft_ms=1e3 * way.draft_s(r.acc, r.cards, batch, r.context, r.precision),
                    fits=(batch <= cap).astype(float)))
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data()).transform_filter(slider_filter(sliders)).transform_filter("datum.fits == 1")
        _, x = batch_axis()
        lines = base.mark_line(strokeWidth=2).encode(
            x=x,
            y=alt.Y("speedup:Q", title="Speedup over plain decoding (×)", scale=alt.Scale(type="log", domain=[0.25, 8])),
            color=alt.Color("kind:N", title="Drafter", scale=alt.Scale(domain=list(KIND_LABELS.values())),
                            legend=alt.Legend(orient="bottom", direction="horizontal", columns=3)),
            strokeDash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=list(KIND_LABELS.values())), legend=None),
            tooltip=[alt.Tooltip("kind:N", title="drafter"), alt.Tooltip("batch:Q", title="batch"),
                     alt.Tooltip("draft_ms:Q", title="drafting (ms)", format=".2f"),
                     alt.Tooltip("speedup:Q", title="speedup", format=".2f")])
        even = alt.Chart(alt.InlineData(values=[{"even": 1}])).mark_rule(strokeDash=[4, 4]).encode(y="even:Q")
        return alt.layer(even, lines).add_params(*slider_params(sliders)).properties(height=320)

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        m = rows_at(cols, sliders)
        k = int(sliders["k"].default)
        ways = drafts.drafters(r.target, r.draft, k)
        rows = []
        for key, label in KIND_LABELS.items():
            way, mine = ways[key], m & (cols["kind"] == label)

            def at(batch: float, column: str) -> float:
                return float(cols[column][mine & (cols["batch"] == batch)][0])

            rows.append([label, f"{way.held_bytes(r.precision) / 1e9:.1f} GB",
                         f"{way.cache_bytes_per_token(r.precision) / 1e3:,.1f} KB",
                         f"{at(1, 'draft_ms'):.2f} ms", f"{at(64, 'draft_ms'):.2f} ms",
                         f"{at(1, 'speedup'):.2f}×", f"{at(64, 'speedup'):.2f}×"])
        return TableView(caption=f"What each drafter adds to {r.target.name} on {r.cards} × {r.acc.name}, {k} guesses a "
                                 f"step, acceptance rate {sliders['a'].default:.2f}, {r.context:,} tokens of context",
                         headers=["Drafter", "Weights held", "Cache a token", "Drafting, batch 1", "Drafting, batch 64",
                                  "Speedup, batch 1", "Speedup, batch 64"], rows=rows)

    description = ("Line chart of speedup against batch size for five drafters at acceptance {a} and lookahead {k} on "
                   "{cards} × {acc}. At batch 1: {at1}. Prompt lookup, which drafts on the host, gives the most at every "
                   "batch. {first}")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        def first(label: str) -> float:
            return float(cols["speedup"][at & (cols["kind"] == label) & (cols["batch"] == 1)][0])

        ends = {label: _first_slower(cols, at & (cols["kind"] == label)) for label in KIND_LABELS.values()}
        never = [KIND_SUBJECTS[label][0] for label, b in ends.items() if b is not None and b <= 1]
        stopping = {label: b for label, b in ends.items() if b is not None and b > 1}
        if never:
            names = never[0] if len(never) == 1 else ", ".join(never[:-1]) + " and " + never[-1]
            first_stop = f"Slower than plain decoding at every batch: {names}."
        elif stopping:
            label = min(stopping, key=stopping.get)
            subject, verb = KIND_SUBJECTS[label]
            first_stop = f"{subject[0].upper()}{subject[1:]} {verb} paying first, by a batch of {stopping[label]:,.0f}."
        else:
            first_stop = "Every drafter still pays at the largest batch that fits."
        return {"a": f"{position['a']:.2f}", "k": f"{position['k']:.0f}", "cards": f"{r.cards}", "acc": r.acc.name,
                "at1": ", ".join(f"{label} {first(label):.2f}×" for label in KIND_LABELS.values()),
                "first": first_stop}


def _stops(first: float | None) -> str:
    """Where a speedup line crosses 1×, as a predicate ("The chain's speedup ...")."""
    if first is None:
        return "stays above 1× at every batch that fits"
    if first <= 1:
        return "is below 1× at every batch"
    return f"falls below 1× by a batch of {first:,.0f}"


def _first_slower(cols: Columns, mine: np.ndarray) -> float | None:
    """The smallest drawn batch (that fits) at which the rows `mine` are slower than plain decoding."""
    mine = mine & (cols["fits"] == 1)
    slower = cols["batch"][mine][cols["speedup"][mine] < 1.0]
    return float(slower.min()) if slower.size else None


@register
class MoeVerify(FigureKind):
    """The scenario's target is the model under test (a mixture of experts, pinned by the page),
    and its draft slot names the model it is set against (a dense model of the same width). Nothing
    is drafted on the cards here: the guesses are free, as prompt lookup's are, so the verify pass
    alone decides whether speculation pays."""

    name = "moe-verify"
    title = "A verify pass in plain steps, for a mixture of experts and a dense model"
    reads = ("accelerator", "cards", "target", "draft", "context", "weights", "kv")
    sliders = {"a": ACCEPTANCE, "k": LOOKAHEAD}
    columns = {"what": Column("row"), "model": Column("model"), "a": Column("acceptance rate", "ratio"),
               "k": Column("lookahead k", "count"), "batch": Column("batch size", "count"),
               "ratio": Column("verify pass over one plain step, or on the yield rows tokens per pass", "ratio"),
               "share": Column("share of experts read by the verify pass", "ratio")}

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        parts = []
        for m in (r.target, r.draft):
            cap = float(kvcache.slots(r.acc, m, r.cards, r.context, precision=r.precision))
            batch = MOE_BATCHES[MOE_BATCHES <= cap].astype(float)
            for k in grid["k"]:
                plain = speculative.plain_step_s(r.acc, m, r.cards, batch, r.context, r.precision)
                verify = speculative.verify_step_s(r.acc, m, r.cards, batch, k, r.context, r.precision)
                parts.append(part("pass", len(batch), model=m.name, a=0.0, k=float(k), batch=batch,
                                  ratio=verify / plain, share=m.expert_share(batch * (k + 1))))
        a, k = np.meshgrid(grid["a"], grid["k"], indexing="ij")
        parts.append(part("yield", a.size, model="", a=a.ravel(), k=k.ravel(), batch=0.0,
                          ratio=speculative.expected_tokens(a.ravel(), k.ravel()), share=0.0))
        return stack(parts, list(self.columns))

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        base = alt.Chart(table_data())
        lines = base.transform_filter(follows(["pass"], [sliders["k"]])).mark_line(point=True, strokeWidth=2).encode(
            x=alt.X("batch:Q", title="Batch size (requests)", scale=alt.Scale(type="log", base=2, domain=[1, 256]),
                    axis=alt.Axis(values=[1, 4, 16, 64, 256], format="d")),
            y=alt.Y("ratio:Q", title="Verify pass, in plain steps (×)", scale=alt.Scale(domain=[0, 8])),
            color=alt.Color("model:N", title="Model", legend=alt.Legend(orient="bottom", direction="horizontal")),
            tooltip=[alt.Tooltip("model:N", title="model"), alt.Tooltip("batch:Q", title="batch"),
                     alt.Tooltip("ratio:Q", title="plain steps", format=".2f"),
                     alt.Tooltip("share:Q", title="experts read", format=".0%")])
        yielded = base.transform_filter(follows(["yield"], sliders.values()))
        rule = yielded.mark_rule(strokeDash=[5, 3], color=colour("muted")).encode(y="ratio:Q")
        label = yielded.transform_calculate(text="'tokens a pass yields: ' + format(datum.ratio, '.2f')").mark_text(
            align="left", baseline="bottom", dx=4, dy=-3, x=0, color=colour("muted")).encode(y="ratio:Q", text="text:N")
        return alt.layer(rule, label, lines).add_params(*slider_params(sliders)).properties(height=300)

    @staticmethod
    def _pass(cols: Columns, k: float, m, batch: float) -> tuple[float, float] | None:
        i = (cols["what"] == "pass") & (cols["model"] == m.name) & (np.abs(cols["k"] - k) < 0.5) & (cols["batch"] == batch)
        return (float(cols["ratio"][i][0]), float(cols["share"][i][0])) if i.any() else None

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        k = sliders["k"].default
        rows = []
        for batch in MOE_BATCHES:
            cells = [f"{batch:g}"]
            for m in (r.target, r.draft):
                got = self._pass(cols, k, m, float(batch))
                cells.append("does not fit" if got is None else f"{got[0]:.2f}×")
            moe = self._pass(cols, k, r.target, float(batch))
            cells.append("" if moe is None else f"{moe[1]:.0%}")
            rows.append(cells)
        return TableView(caption=f"A verify pass of {k:.0f} guesses a request, in plain decode steps, {r.cards} × "
                                 f"{r.acc.name}, {r.context:,} tokens of context",
                         headers=["Batch", r.target.name, r.draft.name, f"Experts read ({r.target.name})"], rows=rows)

    description = ("Line chart of the verify pass's time in plain decode steps against batch size, lookahead {k}, on "
                   "{cards} × {acc}. At batch 1 it costs {moe1} plain steps for {moe} and {dense1} for {dense}; the pass "
                   "yields {tokens} tokens at acceptance {a}.")

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        k = position["k"]
        moe, dense = self._pass(cols, k, r.target, 1.0), self._pass(cols, k, r.draft, 1.0)
        tokens = float(cols["ratio"][at & (cols["what"] == "yield")][0])
        return {"k": f"{k:.0f}", "cards": f"{r.cards}", "acc": r.acc.name, "moe": r.target.name,
                "dense": r.draft.name, "moe1": f"{moe[0]:.2f}", "dense1": f"{dense[0]:.2f}",
                "tokens": f"{tokens:.2f}", "a": f"{position['a']:.2f}"}
