"""The public read API of a run directory: `open_run(path)` and what a `Run` gives.

    import arena.store
    run = arena.store.open_run("logs/<run-id>")
    run.info.run_id, run.judge               # run.json (`RunInfo`), the judge it is scored with
    for episode in run.episodes(): ...       # `Episode` records, the latest of each grid key
    run.verdicts()                           # `Verdict` records, every one written
    run.calls(episode.key)                   # the model calls of an episode, requests rebuilt exactly
    run.blob(episode.images[0])              # a stored image's bytes
    run.frame()                              # pandas: one row per episode with the verdict that counts
    run.populations(suite)                   # the questions of each file the suite's figures divide by

A run can be read while it is being written: what is read is what was whole on disk at that moment. Reading
writes nothing but a repaired episode index (`episodes.idx`, a cache), and only when the run's lock is free. It loads no Ray, no plug-in, no agent, tool or suite: only the
records, the index and (for `frame`) pandas. Older runs read as `arena.store.migrate` says (applied by the records
themselves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict, judge_for_task

from .calls import read_calls
from .records import RunInfo
from .scan import RunScan, TaskJudge, reader_index, scan_run
from .store import RunStore, read_records

if TYPE_CHECKING:
    import pandas as pd

FRAME_COLUMNS = ("run_id", "episode_id", "key", "task_id", "suite", "level", "category", "agent", "setting",
                 "max_rounds", "repeat", "finish_reason", "answer", "rounds", "tool_calls", "invalid_calls",
                 "ignored_calls", "prompt_tokens", "completion_tokens", "seconds", "model_calls", "judged", "judge",
                 "score", "correct", "judge_error", "extracted")
"""The columns of `Run.frame()` before the per-judge ones (`score[J]`, `correct[J]` for every judge J with verdicts
in the run). `score` is 0 for an unjudged episode or a judge error, as in Pass@1."""

_FROM_INDEX = {"episode_id": "id", "finish_reason": "finish", "invalid_calls": "invalid", "ignored_calls": "ignored"}


@dataclass
class Run:
    """A run directory opened for reading (see the module docstring)."""

    store: RunStore
    info: RunInfo
    judge: str
    """The judge whose verdicts count (`frame`): the run's own unless `open_run` was given another."""
    _scan: RunScan | None = field(default=None, repr=False)

    @property
    def dir(self) -> Path:
        return self.store.dir

    @property
    def run_id(self) -> str:
        return self.info.run_id or self.store.dir.name

    def episodes(self) -> Iterator[Episode]:
        """The latest record of each episode key, in first-seen order, one parsed record at a time (read back by
        the offsets the episode index keeps: a record superseded by a retry is never parsed)."""
        scan = self.scan()
        for row in range(len(scan)):
            yield scan.episode(row)

    def verdicts(self) -> Iterator[Verdict]:
        """Every verdict record, in the order written (a re-judged episode has several; `frame` picks the one
        that counts)."""
        return read_records(self.store.verdicts_path, Verdict)

    def calls(self, episode: str) -> list[dict[str, Any]]:
        """The model calls of an episode (its key): `{"round", "role", "request", "response"}` each, the request
        rebuilt exactly as the server got it (`arena.store.calls.read_calls`)."""
        return read_calls(self.store.dir, episode)

    def find(self, ref: str) -> Episode:
        """One episode by id, id prefix, key, or task id (`find_episode`)."""
        return find_episode(self.store, ref)

    def blob(self, blob_id: str) -> bytes:
        """A stored blob's bytes (an image an episode refers to, or a JSON value a call refers to)."""
        return self.store.blobs.get(blob_id)

    def populations(self, suite: str) -> list[dict[str, Any]]:
        """The population records of the run's datasets of `suite` (run.json `datasets[].population`: the questions
        of each file, per group, that the suite's figures divide by under `--protocol original`, also those the run
        did not play); empty for `--protocol arena` runs and runs recorded before they were kept."""
        return self.info.populations().get(suite, [])

    def scan(self) -> RunScan:
        """The run's columns (`arena.store.scan`), read once per `Run`."""
        if self._scan is None:
            self._scan = scan_run(self.store)
        return self._scan

    def frame(self) -> pd.DataFrame:
        """One row per episode (`FRAME_COLUMNS`, then `score[J]`/`correct[J]` per judge J), built from the episode
        index and verdicts.jsonl without parsing a trajectory. For steps and the fields only a trajectory holds
        (seed, error, cost, hops), `arena.review.analysis.load_run_frames` parses the records."""
        import pandas as pd  # loaded on use: opening a run to read records needs no pandas (~0.5 s)

        scan = self.scan()
        c, n = scan.cols, len(scan)
        chosen = scan.chosen(self.judge)
        cols: dict[str, list[Any]] = {"run_id": [self.run_id] * n}
        for name in FRAME_COLUMNS[1:21]:
            cols[name] = c[_FROM_INDEX.get(name, name)]
        picked = [chosen.get(r) for r in range(n)]
        cols["judged"] = [v is not None for v in picked]
        cols["judge"] = [judge_for_task(TaskJudge(c["judge"][r]), self.judge) if picked[r] is not None else None
                         for r in range(n)]
        cols["score"] = [v[0] if v is not None and v[2] is None else 0.0 for v in picked]
        cols["correct"] = [bool(v is not None and v[2] is None and v[1]) for v in picked]
        cols["judge_error"] = [None if v is None else v[2] for v in picked]
        cols["extracted"] = [None if v is None else v[4] for v in picked]
        latest: dict[tuple[str, str], tuple[float, bool, str | None]] = {}
        for episode_id, judge, score, correct, error, *_ in scan.verdict_rows:
            latest[(episode_id, judge)] = (score, correct, error)
        for judge in sorted({judge for _, judge in latest}):
            other = [latest.get((episode_id, judge)) for episode_id in c["id"]]
            cols[f"score[{judge}]"] = [None if o is None else (o[0] if o[2] is None else 0.0) for o in other]
            cols[f"correct[{judge}]"] = [None if o is None else bool(o[2] is None and o[1]) for o in other]
        return pd.DataFrame(cols)


def find_episode(store: RunStore, ref: str) -> Episode:
    """An episode by id, id prefix, key, or task id (when that task has one episode); looked up in the
    episode index, only the match is parsed."""
    index = reader_index(store)
    current = list(index.latest().values())
    matches = [e for e in current if e.id == ref or e.key == ref]
    if not matches:
        matches = [e for e in current if e.key.startswith(ref + "|")]
    if not matches:
        matches = [e for e in current if e.id.startswith(ref)]
    if not matches:
        matches = [e for e in index.entries if e.id == ref or e.id.startswith(ref)]
    if not matches:
        matches = [e for e in current if e.task_id == ref]
    if len(matches) != 1:
        what = "no episode" if not matches else f"{len(matches)} episodes"
        keys = "".join(f"\n  {e.key}" for e in matches[:20])
        raise ValueError(f"{store.episodes_path}: {what} match {ref!r} (give an episode id, id prefix, "
                         f"key, or a key's leading fields such as TASK|SETTING|N){keys}")
    return store.read_episode(matches[0])


def open_run(path: str | Path, judge: str | None = None) -> Run:
    """A run directory opened for reading; `judge` picks whose verdicts `frame` shows (default: the run's own).
    Raises ValueError for a directory without run.json, `RunStoreError` naming file and field for a bad one."""
    store = RunStore(path)
    if not store.exists():
        raise ValueError(f"{path}: not a run directory (no run.json)")
    info = store.info()
    return Run(store, info, judge or info.judge)
