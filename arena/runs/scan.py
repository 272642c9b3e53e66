"""A run's episodes and verdicts as columns, and the summary computed from them.

`scan_run(store)` takes the per-episode numbers from the episode index
(`arena.runs.run_index`, kept by the store's appends; trajectories are not parsed) and
reads verdicts.jsonl once with orjson, keeping one list per field (agent, setting,
budget, level, tool calls, ...) for the latest record of each episode key, in
first-seen order. `summarize_scan` gives exactly what
`arena.judges.metrics.summarize` gives on the same store (the same sums in the same
order, each figure computed once in `arena.judges.metrics` from the group's columns); suites
that register their own metrics get their episodes as full records (read back by
byte offset), since those metrics look inside trajectories.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.endpoints.client import parse_body
from arena.judges.metrics import AUTO, EPISODE_COLUMNS, Columns, group_metrics, judge_for_task, suite_metrics

from .lock import RunLock, RunLockedError
from .run_index import FIELDS, EpisodeIndex, IndexSourceError, scan_lines
from .store import RunStore, RunStoreError

Chosen = tuple[float, bool, "str | None", "str | None", "str | None"]
"""The verdict that counts for a row: score, correct, the judge's error, evidence verdict, extracted answer."""


@dataclass
class TaskJudge:
    """What `judge_for_task` looks at (the task's own judge), without a task object per episode."""

    judge: str | None


def reader_index(store: RunStore) -> EpisodeIndex:
    """The store's episode index for a reader: repairs are written only when the run's lock is free. Loaded
    once per store (kept as the store's index: the viewer, the summary and lookups share it)."""
    if store._index is not None:
        return store._index
    try:
        with RunLock(store.dir, "index update"):
            store._index = EpisodeIndex.load(store.episodes_path, persist=True)
    except (RunLockedError, OSError):
        store._index = EpisodeIndex.load(store.episodes_path, persist=False)
    return store._index


@dataclass
class RunScan:
    """Columns (`arena.runs.run_index.FIELDS`) of a run's current episodes (latest record per key, first-seen order)
    and one tuple per verdict record."""

    store: RunStore
    cols: dict[str, list[Any]] = field(default_factory=dict)
    records: int = 0
    verdict_rows: list[tuple[str, str, float, bool, str | None, str | None, str | None]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.cols.get("id", []))

    def chosen(self, judge: str) -> dict[int, Chosen]:
        """Row -> (score, correct, judge error, evidence verdict, extracted) of the last verdict by the judge
        that counts."""
        want = {}
        for row, task_judge in enumerate(self.cols["judge"]):
            want[self.cols["id"][row]] = (row, judge_for_task(TaskJudge(task_judge), judge))
        out: dict[int, Chosen] = {}
        for episode_id, verdict_judge, *chosen in self.verdict_rows:
            hit = want.get(episode_id)
            if hit is not None and hit[1] == verdict_judge:
                out[hit[0]] = tuple(chosen)  # type: ignore[assignment]
        return out

    def records_of(self) -> Iterator[dict[str, Any]]:
        """Every row's episode record as parsed JSON (orjson), in row order, one at a time (none, and the file
        not opened, when there are no rows: a run whose records could not be written still gets its summary)."""
        path = self.store.episodes_path
        if not self.cols["offset"]:
            return
        with path.open("rb") as fh:
            for offset, length in zip(self.cols["offset"], self.cols["length"]):
                fh.seek(offset)
                line = fh.read(length)
                try:
                    record = parse_body(line)  # orjson, or the standard library for lone surrogates
                except ValueError as exc:
                    raise RunStoreError(f"{path}: byte {offset}: not an episode record: {exc}") from None
                yield record

    def episode(self, row: int) -> Episode:
        """The full record of one row (read back by offset)."""
        with self.store.episodes_path.open("rb") as fh:
            fh.seek(self.cols["offset"][row])
            return Episode.model_validate_json(fh.read(self.cols["length"][row]))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


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
                                          bool(v["correct"]), _text(v.get("error")), v.get("supported"),
                                          _text(v.get("extracted"))))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise RunStoreError(f"{path}:{lineno}: not a valid Verdict record: {type(exc).__name__}: {exc}"
                                    ) from None
    return scan


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
    groups: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for r in range(len(scan)):
        groups[(c["agent"][r], c["setting"][r], c["max_rounds"][r])].append(r)
    out = []
    for (agent, setting, max_rounds), rows in sorted(groups.items()):
        entry: dict[str, Any] = {"agent": agent, "setting": setting, "max_rounds": max_rounds}
        entry.update(group_metrics(group_columns(scan, rows, chosen)))
        suites = sorted({c["suite"][r] for r in rows})
        extras = {s: metrics(_suite_rows(scan, [r for r in rows if c["suite"][r] == s], judge))
                  for s in suites if (metrics := suite_metrics(s)) is not None}
        if extras:
            entry["suites"] = extras
        out.append(entry)
    return {"judge": judge, "groups": out}


def model_call_counts_scan(scan: RunScan) -> dict[str, int]:
    """`arena.runs.prefix.model_call_counts` over columns."""
    made = sum(scan.cols["model_calls"])
    separate = sum(scan.cols["steps"])
    return {"made": made, "separate_runs": separate, "saved": separate - made}


def summarize_store(store: RunStore, judge: str = AUTO) -> dict[str, Any]:
    """One streaming pass and the summary (what `arena summary` prints)."""
    return summarize_scan(scan_run(store), judge)
