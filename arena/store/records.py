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

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .migrate import DEFAULT_JUDGE, DEFAULT_PROTOCOL, upgrade_run_info
from .run_config import AgentChoice, EndpointLimit, ForkSource, RunConfig

FORMAT_VERSION = 3
"""1: records before versioning (run.json `version` 1, episode lines without `format`); 2: `format` on episode
lines, `version` 2 in run.json (nothing else changed: a format-1 run reads as it always did); 3: run.json's
`config` in sections (`RunConfig`; a flat config of formats 1 and 2 is read into them, `arena.store.migrate`)."""

__all__ = ["FORMAT_VERSION", "RunInfo", "RunConfig", "AgentChoice", "EndpointLimit", "ForkSource", "Episode",
           "Verdict", "CallRecord", "SummaryGroup", "HarnessCost", "RunSummary"]


class RunInfo(BaseModel):
    """run.json: a run's identity and configuration (API keys never stored, base URLs redacted).

    Read in any format: `arena.store.migrate.upgrade_run_info` runs before validation, so every reader sees the
    current fields (`judge` always set, `config` in sections with its `protocol` set)."""

    model_config = ConfigDict(extra="allow")

    version: int = 1
    """The format the run directory was created or last reopened with (1: before versioning)."""
    run_id: str | None = None
    fingerprint: str | None = None
    judge: str = DEFAULT_JUDGE
    """The judge the run is scored with ("auto": each task's own); what summary, report, view and export show."""
    config: RunConfig | None = None
    """The run's configuration as it was resolved when the run last started (redacted); None only in a record
    written without one."""
    agent: dict[str, Any] = Field(default_factory=dict)
    agents: list[dict[str, Any]] = Field(default_factory=list)
    datasets: list[dict[str, Any]] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    git: str | None = None
    warnings: list[str] = Field(default_factory=list)
    created: str | None = None
    resumed: int = 0
    prompts: dict[str, Any] | None = None
    """The prompts file and the wording of each template the run's requests used (`PromptBook.run_record`)."""
    learned_limits: dict[str, Any] = Field(default_factory=dict)
    """Per agent id, the limits learned from its endpoint's errors (e.g. images per request)."""
    learned_params: dict[str, Any] = Field(default_factory=dict)
    """Per endpoint, the request fields it refused and what the run sent instead (`arena.endpoints.client`)."""
    forked_from: dict[str, Any] | None = None
    """A fork's source: run id and directory, episode, key, round, agent (`arena.runs.fork.fork_prefix`)."""
    planned_episodes: int | None = Field(None, ge=0)
    """The grid's episode count (tasks x settings x budgets x repeats x agents) as the runner last planned it: what
    the screens of an unfinished run count the episodes never played against (None: recorded before it was kept)."""

    _upgrade = model_validator(mode="before")(upgrade_run_info)

    @property
    def protocol(self) -> str:
        """The protocol the run followed (runs recorded before --protocol followed the arena's)."""
        return (self.config.grid.protocol if self.config else None) or DEFAULT_PROTOCOL

    def populations(self) -> dict[str, list[dict[str, Any]]]:
        """Suite name -> the population records of the run's datasets (`datasets[].population`: the questions of a
        dataset's file, counted as the suite's published evaluator counts them; each names its `suite`). A dataset
        entry without one (runs before it was kept, `--protocol arena` runs, generated worlds) adds nothing."""
        out: dict[str, list[dict[str, Any]]] = {}
        for entry in self.datasets:
            population = entry.get("population")
            if isinstance(population, dict) and population.get("suite"):
                out.setdefault(str(population["suite"]), []).append(population)
        return out


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


class HarnessCost(BaseModel):
    """What the arena itself cost while it played (`arena.runs.harness_cost`), for the episodes played by the
    session that wrote the summary (a resume that plays nothing keeps the previous session's figures).

    CPU is process time (`time.process_time`: every thread of the process) over the playing phase; a round is one
    model call an episode made itself. The harness's time inside an episode is its wall time minus its model calls'
    time (`Step.model_seconds`): what the arena spends between a model reply and the next request (tools
    included; their part is `tool_seconds`). Sums are over the played episodes' own steps, so they are
    recomputable from the episode records."""

    model_config = ConfigDict(extra="allow")

    backend: str
    """asyncio, workers or ray."""
    workers: int = 0
    episodes: int = 0
    """Episodes played by the session (not derived from a shared prefix)."""
    rounds: int = 0
    """Model calls those episodes made themselves."""
    wall_seconds: float = 0.0
    """The playing phase, start to end."""
    driver_cpu_seconds: float = 0.0
    worker_cpu_seconds: float | None = None
    """Workers' CPU since they were ready (None: the episodes ran in the driver)."""
    driver_cpu_per_round_ms: float | None = None
    driver_cpu_per_episode_ms: float | None = None
    worker_cpu_per_round_ms: float | None = None
    driver_load: float = 0.0
    """Driver CPU over wall time: cores the driver kept busy (1.0: one core saturated)."""
    episode_seconds: float = 0.0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    harness_seconds: float = 0.0
    """episode_seconds - model_seconds."""
    harness_share: float | None = None
    """harness_seconds / episode_seconds, in [0, 1]."""
    hint: str | None = None

    def lines(self) -> list[str]:
        """The figures as printed lines (under the summary table, in `arena report`); none when nothing played."""
        if not self.episodes:
            return []

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} ms"

        who = self.backend + (f", {self.workers} workers" if self.workers else "")
        share = "-" if self.harness_share is None else f"{self.harness_share:.1%}"
        lines = [f"harness cost ({who}; {self.episodes} episodes played, {self.rounds} rounds): driver CPU "
                 f"{ms(self.driver_cpu_per_round_ms)} per round, {ms(self.driver_cpu_per_episode_ms)} per episode "
                 f"(busy {self.driver_load:.0%} of {self.wall_seconds:.1f} s)"
                 + (f"; workers' CPU {ms(self.worker_cpu_per_round_ms)} per round"
                    if self.worker_cpu_per_round_ms is not None else ""),
                 f"episode time {self.episode_seconds:.2f} s (summed over the played episodes) = model calls "
                 f"{self.model_seconds:.2f} s + harness {self.harness_seconds:.2f} s ({share}: tools "
                 f"{self.tool_seconds:.2f} s, the arena's own work and waits "
                 f"{max(0.0, self.harness_seconds - self.tool_seconds):.2f} s)"]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines


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
    harness: HarnessCost | None = None
