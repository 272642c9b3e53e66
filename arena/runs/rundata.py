"""A finished run read back from its directory, for reports, the viewer, replay and failure analysis."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from arena.core.task import Task
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.endpoints.client import param_lines
from arena.judges.metrics import AUTO, latest_verdicts

from arena.core.dataset import load_datasets

from .config import RunConfig
from .failures import taxonomy
from .plugins import load_plugins
from .scan import RunScan, reader_index, scan_run, summarize_scan
from .store import RunStore


@dataclass
class RunData:
    """A run read back lazily: the summary comes from one streaming pass (`arena.runs.scan`); episodes and
    verdicts are parsed into records only when asked for."""

    store: RunStore
    info: dict[str, Any]
    judge: str = AUTO
    notes: list[str] = field(default_factory=list)

    @property
    def own_judge(self) -> str:
        """The judge the run was scored with (`run_judge`)."""
        return run_judge(self.info)

    @property
    def judge_label(self) -> str:
        """The judge whose verdicts are shown, said so: "X (the run's judge)" or "X (asked; the run's judge: Y)"."""
        return judge_label(self.judge, self.own_judge)

    @property
    def run_id(self) -> str:
        return str(self.info.get("run_id") or self.store.dir.name)

    @cached_property
    def episodes(self) -> list[Episode]:
        return self.store.episodes()

    @cached_property
    def verdicts(self) -> list[Verdict]:
        return self.store.verdicts()

    @cached_property
    def scan(self) -> RunScan:
        return scan_run(self.store)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The run's metrics recomputed, with the protocol it followed (which decides how a table counts errored
        episodes: `arena.runs.table.errors_counted_as_wrong`)."""
        summary = summarize_scan(self.scan, self.judge)
        protocol = (self.info.get("config") or {}).get("protocol")
        if protocol:
            summary["protocol"] = protocol
        if self.info.get("learned_params"):  # what the endpoints refused, and what the run sent instead
            summary["learned_params"] = self.info["learned_params"]
            summary["warnings"] = param_lines(self.info["learned_params"])
        return summary

    @cached_property
    def chosen(self) -> dict[str, Verdict]:
        """The verdict that counts for each episode id."""
        return latest_verdicts(self.episodes, self.verdicts, self.judge)

    @cached_property
    def failures(self) -> dict[str, list[str]]:
        """Episode id -> its failure labels (`arena.runs.failures`)."""
        return taxonomy(self.episodes, self.chosen, self.verdicts, self.tasks)

    def config(self) -> RunConfig | None:
        try:
            return RunConfig.model_validate(self.info.get("config") or {})
        except ValueError:
            return None

    @cached_property
    def tasks(self) -> dict[str, Task]:
        """The run's tasks with their metadata, when its data can still be loaded (else empty, with a note)."""
        config = self.config()
        if config is None:
            return {}
        load_plugins()
        try:
            datasets = load_datasets(config.data, config.root, config.fmt,
                                     original_only=config.protocol == "original")
        except (OSError, ValueError) as exc:
            self.notes.append(f"task metadata unavailable: {exc}")
            return {}
        return {t.id: t for d in datasets for t in d.tasks}

    def find(self, ref: str) -> Episode:
        """An episode by id, id prefix, key, or task id (when that task has one episode); looked up in the
        episode index, only the match is parsed."""
        index = reader_index(self.store)
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
            raise ValueError(f"{self.store.episodes_path}: {what} match {ref!r} (give an episode id, id prefix, "
                             f"key, or a key's leading fields such as TASK|SETTING|N){keys}")
        return self.store.read_episode(matches[0])


def run_judge(info: dict[str, Any]) -> str:
    """The judge a run was scored with: run.json's `judge`, else its config's, else "auto"."""
    return str(info.get("judge") or (info.get("config") or {}).get("judge") or AUTO)


def judge_label(judge: str, own: str) -> str:
    return f"{judge} (the run's judge)" if judge == own else f"{judge} (asked; the run's judge: {own})"


def load_run(run_dir: str | Path, judge: str | None = None) -> RunData:
    """A run read back; its verdicts are those of `judge`, by default the judge the run was scored with."""
    store = RunStore(run_dir)
    if not store.exists():
        raise ValueError(f"{run_dir}: not a run directory (no run.json)")
    info = store.info()
    return RunData(store=store, info=info, judge=judge or run_judge(info))
