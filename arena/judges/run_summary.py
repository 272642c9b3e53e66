"""A run's summary (summary.json's groups) from its columns (`arena.store.scan`), without parsing trajectories.

`summarize_scan` gives exactly what `arena.judges.metrics.summarize` gives on the same store (the same sums in the
same order, each figure computed once in `arena.judges.metrics` from the group's columns); suites that register
their own metrics get their episodes as full records (read back by byte offset), since those metrics look inside
trajectories, and the population records run.json holds for them (`arena.store.records.RunInfo.populations`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.store.run_index import scan_lines
from arena.store.scan import Chosen, RunScan, TaskJudge, scan_run
from arena.store.store import RunStore

from .metrics import (AUTO, EPISODE_COLUMNS, Columns, group_metrics, judge_for_task, suite_group_figures,
                      suite_metrics)


def group_columns(scan: RunScan, rows: list[int], chosen: dict[int, Chosen]) -> Columns:
    """`arena.judges.metrics.COLUMNS` of some rows: episode fields from the index, verdict fields from `chosen`."""
    c = scan.cols
    out: Columns = {name: [c[name][r] for r in rows] for name in EPISODE_COLUMNS}
    verdicts = [chosen.get(r) for r in rows]
    out["judged"] = [v is not None for v in verdicts]
    out["score"] = [v[0] if v is not None and v[2] is None else 0.0 for v in verdicts]
    out["correct"] = [v is not None and v[2] is None and v[1] for v in verdicts]
    for k, name in ((2, "judge_error"), (3, "supported"), (4, "extracted")):
        out[name] = [None if v is None else v[k] for v in verdicts]
    return out


def _suite_rows(scan: RunScan, rows: list[int], judge: str) -> list[tuple[Episode, Verdict | None]]:
    """Full (Episode, chosen Verdict) pairs of some rows, for suites' own metrics."""
    ids = {scan.cols["id"][r]: r for r in rows}
    want = {scan.cols["id"][r]: judge_for_task(TaskJudge(scan.cols["judge"][r]), judge) for r in rows}
    found: dict[str, Verdict] = {}
    if scan.store.verdicts_path.is_file():
        for _, line in scan_lines(scan.store.verdicts_path):
            head = orjson.loads(line)
            if head.get("episode_id") in ids and want[head["episode_id"]] == head.get("judge"):
                found[head["episode_id"]] = Verdict.model_validate_json(line)
    return [(scan.episode(r), found.get(scan.cols["id"][r])) for r in rows]


def summarize_scan(scan: RunScan, judge: str = AUTO) -> dict[str, Any]:
    """The run's summary for one judge; equal to `arena.judges.metrics.summarize` of the same store."""
    chosen = scan.chosen(judge)
    c = scan.cols
    populations = scan.store.info().populations() if scan.store.exists() else {}
    groups: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for r in range(len(scan)):
        groups[(c["agent"][r], c["setting"][r], c["max_rounds"][r])].append(r)
    out = []
    for (agent, setting, max_rounds), rows in sorted(groups.items()):
        entry: dict[str, Any] = {"agent": agent, "setting": setting, "max_rounds": max_rounds}
        entry.update(group_metrics(group_columns(scan, rows, chosen)))
        suites = sorted({c["suite"][r] for r in rows})
        extras = {s: suite_group_figures(metrics, _suite_rows(scan, [r for r in rows if c["suite"][r] == s], judge),
                                         populations.get(s))
                  for s in suites if (metrics := suite_metrics(s)) is not None}
        if extras:
            entry["suites"] = extras
        out.append(entry)
    return {"judge": judge, "groups": out}


def summarize_store(store: RunStore, judge: str = AUTO) -> dict[str, Any]:
    """One streaming pass and the summary (what `arena summary` prints)."""
    return summarize_scan(scan_run(store), judge)
