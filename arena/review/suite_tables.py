"""The suites' results in their papers' table layouts (`Suite.paper_tables`), from the figures each group of a
run's summary holds (`summary.json` → `groups[].suites`, computed by the suites' `metrics`). Nothing is
recomputed here: each cell is a number of the summary, or the mean of such numbers where the suite says so.
"""

from __future__ import annotations

from arena.core.suite import SUITES, PaperTable, SuiteFigures

from .report_table import Table
from .rundata import RunData


def suite_figures(runs: list[RunData], suite: str) -> list[SuiteFigures]:
    """(label, suite figures) of every group of every run that has figures of `suite`."""
    several = len(runs) > 1
    out = []
    for run in runs:
        for g in run.summary["groups"]:
            figures = (g.get("suites") or {}).get(suite)
            if figures:
                label = f"{g['agent']} · {g['setting']} · N={g['max_rounds']}"
                out.append(SuiteFigures(f"{run.run_id}: {label}" if several else label, figures))
    return out


def _table(paper: PaperTable) -> Table:
    return Table(paper.title, list(paper.columns), [list(row) for row in paper.rows])


def suite_tables(runs: list[RunData]) -> list[Table]:
    """The paper-layout tables of the suites these runs hold, suite by suite in registration order (every
    installed suite registered first: the caller has loaded the plug-ins, as `arena.cli.common.review_run` does)."""
    tables = []
    for name, suite in SUITES.items():
        groups = suite_figures(runs, name)
        if groups:
            tables += [_table(t) for t in suite.paper_tables(groups) if t.rows]
    return tables
