"""A run's episodes and verdicts as columns (the summary is computed from them by `arena.judges.run_summary`).

`scan_run(store)` takes the per-episode numbers from the episode index
(`arena.store.run_index`, kept by the store's appends; trajectories are not parsed) and
reads verdicts.jsonl once with orjson, keeping one list per field (agent, setting,
budget, level, tool calls, ...) for the latest record of each episode key, in
first-seen order. The store names no judge or metric: which verdict counts for a row is
`arena.core.verdict.judge_for_task`, and the metrics are computed from these columns above it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson

from arena.core.trajectory import Episode
from arena.core.verdict import judge_for_task

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
    if (held := store.held_index()) is not None:
        return held
    try:
        with RunLock(store.dir, "index update"):
            store._index = EpisodeIndex.load(store.episodes_path, persist=True)
    except (RunLockedError, OSError):
        store._index = EpisodeIndex.load(store.episodes_path, persist=False)
    return store._index


@dataclass
class RunScan:
    """Columns (`arena.store.run_index.FIELDS`) of a run's current episodes (latest record per key, first-seen order)
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
                    record = _loads(line)  # orjson, or the standard library for lone surrogates
                except ValueError as exc:
                    raise RunStoreError(f"{path}: byte {offset}: not an episode record: {exc}") from None
                yield record

    def episode(self, row: int) -> Episode:
        """The full record of one row (read back by offset)."""
        with self.store.episodes_path.open("rb") as fh:
            fh.seek(self.cols["offset"][row])
            return Episode.model_validate_json(fh.read(self.cols["length"][row]))


def _loads(line: bytes) -> Any:
    """A JSON line: orjson, else the standard library (which reads escaped lone surrogates that orjson refuses;
    servers do send them when a model emits invalid Unicode, and episode records keep what was received)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


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
    columns = list(zip(*index.latest().values())) or [() for _ in FIELDS]  # entries are tuples in FIELDS order
    scan.cols = {name: list(column) for name, column in zip(FIELDS, columns)}
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


def model_call_counts_scan(scan: RunScan) -> dict[str, int]:
    """Model calls made, the calls separate runs per budget would have made, and those saved by prefix sharing
    (`arena.runs.prefix.model_call_counts` over columns)."""
    made = sum(scan.cols["model_calls"])
    separate = sum(scan.cols["steps"])
    return {"made": made, "separate_runs": separate, "saved": separate - made}
