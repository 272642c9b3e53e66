"""A run read back for review: `arena.store.Run` (the public read API) with the views reports, the viewer, replay
and failure analysis add (summary, verdicts that count, failure labels, tasks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from arena.core.dataset import load_datasets
from arena.core.task import Task
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.endpoints.client import param_lines
from arena.judges.metrics import latest_verdicts
from arena.judges.protocols import apply_original_dataset_rules
from arena.judges.run_summary import summarize_scan
from arena.store.read import Run, find_episode, open_run
from arena.store.records import RunConfig, RunInfo
from arena.store.scan import RunScan
from arena.store.store import RunStore

from .failures import taxonomy


@dataclass
class RunData:
    """A run read back for review: `arena.store.Run` (the public read API: run.json, episodes, verdicts, columns)
    with review's views added: the summary recomputed, the verdict that counts per episode, failure labels and the
    tasks. Episodes and verdicts are parsed into records only when asked for."""

    run: Run
    notes: list[str] = field(default_factory=list)

    @property
    def judge(self) -> str:
        """The judge whose verdicts count (`Run.judge`: the run's own unless another was asked for)."""
        return self.run.judge

    @property
    def store(self) -> RunStore:
        return self.run.store

    @property
    def info(self) -> RunInfo:
        return self.run.info

    @property
    def own_judge(self) -> str:
        """The judge the run was scored with."""
        return self.run.info.judge

    @property
    def judge_label(self) -> str:
        """The judge whose verdicts are shown, said so: "X (the run's judge)" or "X (asked; the run's judge: Y)"."""
        return judge_label(self.judge, self.own_judge)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @cached_property
    def episodes(self) -> list[Episode]:
        return self.store.episodes()

    @cached_property
    def verdicts(self) -> list[Verdict]:
        return self.store.verdicts()

    @property
    def scan(self) -> RunScan:
        return self.run.scan()

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The run's metrics recomputed, with the protocol it followed (which decides how a table counts errored
        episodes: `arena.review.table.errors_counted_as_wrong`)."""
        summary = summarize_scan(self.scan, self.judge)
        summary["protocol"] = self.info.protocol
        if self.info.learned_params:  # what the endpoints refused, and what the run sent instead
            summary["learned_params"] = self.info.learned_params
            summary["warnings"] = param_lines(self.info.learned_params)
        return summary

    @cached_property
    def chosen(self) -> dict[str, Verdict]:
        """The verdict that counts for each episode id."""
        return latest_verdicts(self.episodes, self.verdicts, self.judge)

    @cached_property
    def failures(self) -> dict[str, list[str]]:
        """Episode id -> its failure labels (`arena.review.failures`)."""
        return taxonomy(self.episodes, self.chosen, self.verdicts, self.tasks)

    def data_source(self) -> RunConfig | None:
        """The run's config, where its tasks come from (None: run.json holds none)."""
        return self.info.config

    @cached_property
    def tasks(self) -> dict[str, Task]:
        """The run's tasks with their metadata, when its data can still be loaded (else empty, with a note). The
    loaders are those registered: the caller loads the plug-ins first (`arena.runs.plugins.load_plugins`)."""
        config = self.data_source()
        if config is None:
            return {}
        try:
            datasets = load_datasets(config.data.path, config.data.root, config.data.fmt,
                                     original_only=self.info.protocol == "original")
            if self.info.protocol == "original":
                apply_original_dataset_rules(datasets)  # the tasks as the run read them
        except (OSError, ValueError) as exc:
            self.notes.append(f"task metadata unavailable: {exc}")
            return {}
        return {t.id: t for d in datasets for t in d.tasks}

    def find(self, ref: str) -> Episode:
        """An episode by id, id prefix, key, or task id (`arena.store.read.find_episode`)."""
        return find_episode(self.store, ref)


def judge_label(judge: str, own: str) -> str:
    return f"{judge} (the run's judge)" if judge == own else f"{judge} (asked; the run's judge: {own})"


def load_run(run_dir: str | Path, judge: str | None = None) -> RunData:
    """A run read back; its verdicts are those of `judge`, by default the judge the run was scored with. The
    caller registers every installed suite first (`arena.cli.common.review_run`): its metrics are part of the run's
    summary."""
    return RunData(open_run(run_dir, judge))
