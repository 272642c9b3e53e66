"""Typed records for every file a run directory holds, and the one format version they are written in.

    run.json         `RunInfo`: what was run (the redacted config, its fingerprint, agents, datasets, versions)
    episodes.jsonl   `arena.core.trajectory.Episode`, one per line (re-exported here)
    verdicts.jsonl   `arena.core.verdict.Verdict`, one per line (re-exported here)
    calls.jsonl      `CallRecord`, one model call per line (`arena.store.calls` writes and reads them)
    summary.json     `RunSummary`: the metrics recomputed from episodes and verdicts, one `SummaryGroup` per
                     (agent, setting, max_rounds)

`FORMAT_VERSION` is written into run.json (`version`) and every episode line (`format`) from format 2 on; a record
without it was written before versioning (format 1). Everything that reads an older run differently lives in
`arena.store.migrate`. Fields added by newer writers are kept when read back (`extra="allow"`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.core.tool import ToolOptions
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

FORMAT_VERSION = 2
"""1: records before versioning (run.json `version` 1, episode lines without `format`); 2: `format` on episode
lines, `version` 2 in run.json (nothing else changed: a format-1 run reads as it always did)."""

__all__ = ["FORMAT_VERSION", "RunInfo", "Episode", "Verdict", "CallRecord", "DataSource", "SummaryGroup", "RunSummary"]


class RunInfo(BaseModel):
    """run.json: a run's identity and configuration (API keys never stored, base URLs redacted)."""

    model_config = ConfigDict(extra="allow")

    version: int = 1
    """The format the run directory was created or last reopened with (1: before versioning)."""
    run_id: str | None = None
    fingerprint: str | None = None
    judge: str | None = None
    """The judge the run is scored with ("auto": each task's own); what summary, report, view and export show."""
    config: dict[str, Any] = Field(default_factory=dict)
    agent: dict[str, Any] = Field(default_factory=dict)
    agents: list[dict[str, Any]] = Field(default_factory=list)
    datasets: list[dict[str, Any]] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    git: str | None = None
    warnings: list[str] = Field(default_factory=list)
    created: str | None = None
    resumed: int = 0


class DataSource(BaseModel):
    """Where a run's tasks come from, as its run.json config records it (the fields reviewing needs to load the
    tasks again, or replay an episode's tools against its world; the whole config is `arena.runs.config.RunConfig`).
    """

    model_config = ConfigDict(extra="ignore")

    data: str
    root: str | None = None
    fmt: str | None = None
    corpus: str | None = None
    protocol: str | None = None
    tool_options: ToolOptions = Field(default_factory=ToolOptions)


class CallRecord(BaseModel):
    """One line of calls.jsonl: a model call as sent and received, compacted (see `arena.store.calls`)."""

    model_config = ConfigDict(extra="allow")

    episode: str
    """The episode key the call was made for."""
    role: Literal["agent", "judge"]
    sid: str
    """The recording scope (one per try of an episode, one per judging)."""
    round: int
    keep: int
    """Leading messages equal to the previous call's of the same scope."""
    request: dict[str, Any]
    add: list[Any]
    response: Any
    status: int | None = None
    error: str | None = None


class SummaryGroup(BaseModel):
    """The metrics of one (agent, setting, max_rounds) group (`arena.judges.metrics.group_metrics`: n, pass@1,
    breakdowns, tool use, outcomes, resources, ...; `suites`: suites' own figures), kept as written."""

    model_config = ConfigDict(extra="allow")

    agent: str
    setting: str
    max_rounds: int


class RunSummary(BaseModel):
    """summary.json: one entry per (agent, setting, max_rounds) group, for the judge named in `judge`."""

    model_config = ConfigDict(extra="allow")

    version: int = FORMAT_VERSION
    run_id: str | None = None
    judge: str
    groups: list[SummaryGroup] = Field(default_factory=list)
    judges: dict[str, Any] = Field(default_factory=dict)
    model_calls: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    prefix_sharing: bool = False
