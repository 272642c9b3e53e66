"""A run's episodes and verdicts as columns, and the summary computed from them.

`scan_run(store)` takes the per-episode numbers from the episode index
(`runs.run_index`, kept by the store's appends; trajectories are not parsed) and
reads verdicts.jsonl once with orjson, keeping one list per field (agent, setting,
budget, level, tool calls, ...) for the latest record of each episode key, in
first-seen order. `summarize_scan` gives exactly what
`judges.metrics.summarize` gives on the same store (the same sums in the same
order); suites that register their own metrics get their episodes as full records
(read back by byte offset), since those metrics look inside trajectories.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

from arena.trajectory import Episode
from arena.verdict import Verdict
from judges.metrics import AUTO, SUITE_METRICS, confidence, judge_for_task, judge_problems, repeat_metrics

from .lock import RunLock, RunLockedError
from .run_index import FIELDS, EpisodeIndex, IndexSourceError, scan_lines
from .store import RunStore, RunStoreError

@dataclass
class TaskJudge:
    """What `judge_for_task` looks at (the task's own judge), without a task object per episode."""

    judge: str | None


def reader_index(store: RunStore) -> EpisodeIndex:
    """The store's episode index for a reader: repairs are written only when the run's lock is free."""
    if store._index is not None:
        return store._index
    try:
        with RunLock(store.dir, "index update"):
            return EpisodeIndex.load(store.episodes_path, persist=True)
    except (RunLockedError, OSError):
        return EpisodeIndex.load(store.episodes_path, persist=False)


@dataclass
class RunScan:
    """Columns (`runs.run_index.FIELDS`) of a run's current episodes (latest record per key, first-seen order)
    and one tuple per verdict record."""

    store: RunStore
    cols: dict[str, list[Any]] = field(default_factory=dict)
    records: int = 0
    verdict_rows: list[tuple[str, str, float, bool, bool, str | None]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.cols.get("id", []))

    def chosen(self, judge: str) -> dict[int, tuple[float, bool, bool, str | None]]:
        """Row -> (score, correct, judge error?, evidence verdict) of the last verdict by the judge that counts."""
        want = {}
        for row, task_judge in enumerate(self.cols["judge"]):
            want[self.cols["id"][row]] = (row, judge_for_task(TaskJudge(task_judge), judge))
        out: dict[int, tuple[float, bool, bool, str | None]] = {}
        for episode_id, verdict_judge, score, correct, errored, supported in self.verdict_rows:
            hit = want.get(episode_id)
            if hit is not None and hit[1] == verdict_judge:
                out[hit[0]] = (score, correct, errored, supported)
        return out

    def episode(self, row: int) -> Episode:
        """The full record of one row (read back by offset)."""
        with self.store.episodes_path.open("rb") as fh:
            fh.seek(self.cols["offset"][row])
            return Episode.model_validate_json(fh.read(self.cols["length"][row]))


def scan_run(store: RunStore) -> RunScan:
    """The run's episode columns from its index (kept by the store, caught up or rebuilt here when stale) and
    its verdicts, read once with orjson."""
    scan = RunScan(store)
    try:
        index = reader_index(store)
    except IndexSourceError as exc:
        raise RunStoreError(str(exc)) from None
    scan.records = len(index.entries)
    latest = list(index.latest().values())
    scan.cols = {name: [getattr(e, name) for e in latest] for name in FIELDS}
    path = store.verdicts_path
    if path.is_file():
        for lineno, (_, line) in enumerate(scan_lines(path), 1):
            if not line.strip():
                continue
            try:
                v = orjson.loads(line)
                scan.verdict_rows.append((str(v["episode_id"]), str(v["judge"]), float(v["score"]),
                                          bool(v["correct"]), v.get("error") is not None, v.get("supported")))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise RunStoreError(f"{path}:{lineno}: not a valid Verdict record: {type(exc).__name__}: {exc}"
                                    ) from None
    return scan


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 4)


def _support_counts(verdicts: list[tuple[float, bool, bool, str | None] | None]) -> dict[str, int]:
    """`judges.metrics.support_counts` over verdict tuples."""
    assessed = [v[3] for v in verdicts if v is not None and not v[2] and v[1] and v[3] is not None]
    if not assessed:
        return {}
    return {"correct_supported": assessed.count("yes"), "correct_unsupported": assessed.count("no"),
            "correct_support_unknown": assessed.count("unknown")}


def _group_metrics(scan: RunScan, rows: list[int], chosen: dict[int, tuple[float, bool, bool, str | None]]
                   ) -> dict[str, Any]:
    """`judges.metrics.group_metrics`, over columns (same sums, same order, same rounding)."""
    c = scan.cols
    verdicts = [chosen.get(r) for r in rows]
    scores = [v[0] if v is not None and not v[2] else 0.0 for v in verdicts]
    by_repeat: dict[int, list[float]] = defaultdict(list)
    by_level: dict[str, list[float]] = defaultdict(list)
    by_category: dict[str, list[float]] = defaultdict(list)
    for r, score in zip(rows, scores):
        by_repeat[c["repeat"][r]].append(score)
        if c["level"][r]:
            by_level[c["level"][r]].append(score)
        if c["category"][r]:
            by_category[c["category"][r]].append(score)
    repeat_means = [sum(v) / len(v) for _, v in sorted(by_repeat.items())]
    calls = [c["tool_calls"][r] for r in rows]
    tools = sorted({t for r in rows for t in c["calls_per_tool"][r]} | {t for r in rows for t in c["tools"][r]})
    max_calls = [c["max_rounds"][r] * c["max_calls"][r] for r in rows if c["has_tools"][r]]
    avg_calls = _mean([float(x) for x in calls]) or 0.0
    utilisation = (avg_calls / _mean([float(m) for m in max_calls])) if max_calls else None
    n = len(rows)
    return {
        "episodes": n,
        "tasks": len({c["task_id"][r] for r in rows}),
        "repeats": len(by_repeat),
        "pass1": _pct(_mean(scores)),
        "pass1_std": _pct(statistics.stdev(repeat_means)) if len(repeat_means) > 1 else 0.0,
        "pass1_per_repeat": [_pct(m) for m in repeat_means],
        "correct": sum(1 for v in verdicts if v is not None and not v[2] and v[1]),
        **_support_counts(verdicts),
        "levels": {k: _pct(_mean(v)) for k, v in sorted(by_level.items())},
        "level_counts": {k: len(v) for k, v in sorted(by_level.items())},
        "categories": {k: _pct(_mean(v)) for k, v in sorted(by_category.items())},
        "avg_tool_calls": round(avg_calls, 4),
        "avg_calls_per_tool": {t: round(sum(c["calls_per_tool"][r].get(t, 0) for r in rows) / n, 4)
                               for t in tools} if rows else {},
        "avg_rounds": round(_mean([float(c["rounds"][r]) for r in rows]) or 0.0, 4),
        "tool_utilisation": _pct(utilisation),
        "finish_reasons": dict(sorted(Counter(c["finish"][r] for r in rows).items())),
        "invalid_calls": sum(c["invalid"][r] for r in rows),
        "ignored_calls": sum(c["ignored"][r] for r in rows),
        "errors": sum(1 for r in rows if c["finish"][r] == "error"),
        "unjudged": sum(1 for v in verdicts if v is None),
        "judge_errors": sum(1 for v in verdicts if v is not None and v[2]),
        "avg_prompt_tokens": round(_mean([float(c["prompt_tokens"][r]) for r in rows]) or 0.0, 2),
        "avg_completion_tokens": round(_mean([float(c["completion_tokens"][r]) for r in rows]) or 0.0, 2),
        "avg_seconds": round(_mean([c["seconds"][r] for r in rows]) or 0.0, 4),
    }


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


RECORD_METRICS = (confidence, judge_problems, repeat_metrics)
"""Group figures computed from whole records (they read answers and verdict texts), not from index columns."""


def summarize_scan(scan: RunScan, judge: str = AUTO) -> dict[str, Any]:
    """The run's summary for one judge; equal to `judges.metrics.summarize` of the same store."""
    chosen = scan.chosen(judge)
    c = scan.cols
    groups: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for r in range(len(scan)):
        groups[(c["agent"][r], c["setting"][r], c["max_rounds"][r])].append(r)
    out = []
    for (agent, setting, max_rounds), rows in sorted(groups.items()):
        entry: dict[str, Any] = {"agent": agent, "setting": setting, "max_rounds": max_rounds}
        entry.update(_group_metrics(scan, rows, chosen))
        full = _suite_rows(scan, rows, judge)  # the figures that need whole records (answers, verdict texts)
        for metric in RECORD_METRICS:
            entry.update(metric(full))
        suites = sorted({c["suite"][r] for r in rows})
        extras = {s: SUITE_METRICS[s](_suite_rows(scan, [r for r in rows if c["suite"][r] == s], judge))
                  for s in suites if s in SUITE_METRICS}
        if extras:
            entry["suites"] = extras
        out.append(entry)
    return {"judge": judge, "groups": out}


def model_call_counts_scan(scan: RunScan) -> dict[str, int]:
    """`runs.prefix.model_call_counts` over columns."""
    made = sum(scan.cols["model_calls"])
    separate = sum(scan.cols["steps"])
    return {"made": made, "separate_runs": separate, "saved": separate - made}


def summarize_store(store: RunStore, judge: str = AUTO) -> dict[str, Any]:
    """One streaming pass and the summary (what `arena summary` prints)."""
    return summarize_scan(scan_run(store), judge)
