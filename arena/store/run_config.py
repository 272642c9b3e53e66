"""The configuration of a run, as run.json keeps it: one typed record in sections, each a panel of `arena run --help`.

    data      which tasks: the data file, its loader and root, the corpus, the filters and `limit`
    agents    who plays: one agent with its options, or a sweep of several (`AgentChoice`)
    grid      the cells: settings x max_rounds x repeats, the seed, the protocol, prefix sharing, a fork source
    tools     the tools' options (`arena.core.tool.ToolOptions`)
    limits    per-episode limits (`arena.core.budget.Budget`)
    judge     who scores: the judge, its options, the prompts file
    schedule  how episodes are scheduled: concurrency, backend, workers, endpoint limits
    stops     when the run stops early: fail-fast, price and cost cap
    output    where and what is kept: run id, output directory, transcript, retrying rejected episodes

The grid's fingerprint (and so a default run id) hashes the sections that decide the episodes (`GRID_SECTIONS`);
the others can gain fields without changing any run id. A flat config (formats 1 and 2, and keyword arguments
by their old flat names) is read into the sections (`arena.store.migrate.config_sections`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from arena.core.budget import Budget
from arena.core.tool import ToolOptions

from .migrate import FINGERPRINT_ADDED, FLAT_FIELDS, config_sections, fingerprint_layout


class AgentChoice(BaseModel):
    """One agent of a grid: a registered agent name and the options of its factory."""

    agent: str
    options: dict[str, Any] = Field(default_factory=dict)


class EndpointLimit(BaseModel):
    """Admission limits of one model endpoint (a base URL), shared by every episode and judge using it."""

    max_parallel: int | None = Field(None, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)


class ForkSource(BaseModel):
    """Continue a recorded episode: its first `at_round` rounds are played back before the agent takes over."""

    run_dir: str
    episode_id: str
    at_round: int = Field(ge=0)
    prefix_mode: Literal["reuse", "replay"] = "reuse"


class DataSection(BaseModel):
    """Which tasks: `path` read by a loader (`fmt` forces one) with relative paths under `root`; `corpus` for
    offline text search; `levels` / `categories` / `suites` / `task_ids` keep only tasks with one of those values,
    then `limit` keeps the first N."""

    path: str
    root: str | None = None
    fmt: str | None = None
    corpus: str | None = None
    limit: int | None = Field(None, ge=1)
    task_ids: list[str] | None = None
    levels: list[str] | None = None
    categories: list[str] | None = None
    suites: list[str] | None = None


class AgentsSection(BaseModel):
    """Who plays: `agent` with `options` (passed to its registered factory: e.g. `model`, `base_url`,
    `api_key_env`, `tool_mode` for `openai`; `script` for `scripted`; API keys never stored, name the environment
    variable), or `sweep`, several agents replacing it."""

    agent: str = "openai"
    options: dict[str, Any] = Field(default_factory=dict)
    sweep: list[AgentChoice] = Field(default_factory=list)


class GridSection(BaseModel):
    """The cells: tasks x settings x max_rounds x repeats x agents. `protocol` (None = by the data: `original` for a
    published format, `arena` for generated worlds) is resolved and recorded when the run starts.
    `prefix_sharing` (None = automatic) derives the smaller budgets of a budget sweep from the largest one's
    trajectory (`arena.runs.prefix`); `fork` continues a recorded episode."""

    settings: list[str] = Field(default_factory=lambda: ["search+crop"])
    max_rounds: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [10], min_length=1)
    repeats: int = Field(1, ge=1)
    seed: int = 0
    show_budget: bool = False
    prefix_sharing: bool | None = None
    protocol: Literal["original", "arena"] | None = None
    fork: ForkSource | None = None


class JudgeSection(BaseModel):
    """Who scores: `name` ("auto": each task's own judge) with `options` for its factory; `prompts`, a prompts file
    (YAML: template name -> text, `arena.core.prompt_book`) replacing the arena's wording of those prompts, checked
    before the first episode and resolved to an absolute path when the run starts."""

    name: str | None = "normalized"
    options: dict[str, Any] = Field(default_factory=dict)
    prompts: str | None = None


class ScheduleSection(BaseModel):
    """How episodes are scheduled (never what they are)."""

    concurrency: int = Field(8, ge=1)
    backend: Literal["asyncio", "ray"] = "asyncio"
    ray_address: str | None = None
    ray_workers: int | None = Field(None, ge=1)
    ray_shared_dir: bool = False
    """The run directory lies on a filesystem every node of the Ray cluster mounts at the same path (NFS, Lustre...):
    the actors write its blobs and append their episodes' records there themselves, as on a local Ray instance and
    as local worker processes do; else they send them back to the driver."""
    workers: int | None = Field(None, ge=1)
    """Worker processes playing episodes (`arena.runs.backends.worker_backend`; None: this process's event loop)."""
    endpoint_limits: dict[str, EndpointLimit] = Field(default_factory=dict)


class StopsSection(BaseModel):
    """When the run stops early: `fail_fast` refused requests in a row to an endpoint (0: never); `max_cost`
    dollars, priced by `price` (IN, OUT per million tokens; None: the table of known models)."""

    fail_fast: int = Field(3, ge=0)
    price: list[float] | None = Field(None, min_length=2, max_length=2)
    max_cost: float | None = Field(None, gt=0)


class OutputSection(BaseModel):
    """Where the run goes and what it keeps: `run_id` (None: derived from data, agents and fingerprint) under `out`;
    `transcript` False leaves every model call out of `calls.jsonl`; `retry_errors` plays again episodes the server
    rejected."""

    run_id: str | None = None
    out: str = "logs"
    transcript: bool = True
    retry_errors: bool = False


GRID_SECTIONS = ("data", "agents", "grid", "tools", "limits")
"""The sections that decide the episodes: what the fingerprint hashes."""


class RunConfig(BaseModel):
    """A run's configuration in sections (see the module docstring). Built from sections, or from the old flat
    field names (`RunConfig(data=..., max_rounds=[4], judge="mcq")`), which are read into their sections."""

    data: DataSection
    agents: AgentsSection = Field(default_factory=AgentsSection)
    grid: GridSection = Field(default_factory=GridSection)
    tools: ToolOptions = Field(default_factory=ToolOptions)
    limits: Budget = Field(default_factory=Budget)
    judge: JudgeSection = Field(default_factory=JudgeSection)
    schedule: ScheduleSection = Field(default_factory=ScheduleSection)
    stops: StopsSection = Field(default_factory=StopsSection)
    output: OutputSection = Field(default_factory=OutputSection)

    _sections = model_validator(mode="before")(config_sections)

    def __getattr__(self, name: str) -> Any:
        """A field by its flat name (formats 1 and 2, `FLAT_FIELDS`), read through its section, for code written
        against the flat record (`config.max_rounds` is `config.grid.max_rounds`); `data`, `agents` and `judge`
        are the sections themselves. New code names the section."""
        where = FLAT_FIELDS.get(name)
        if where is None or name in type(self).model_fields:
            return super().__getattr__(name)  # type: ignore[misc]
        section = getattr(self, where[0])
        return section if where[1] is None else getattr(section, where[1])

    def updated(self, **fields: Any) -> RunConfig:
        """A copy with `fields` (by section or by their flat names) replaced, validated again; the fields set
        stay those set (a budget's `model_fields_set` decides what a protocol may change)."""
        return RunConfig.model_validate({**self.model_dump(exclude_unset=True), **fields})

    def agent_choices(self) -> list[AgentChoice]:
        """The grid's agents: the sweep when given, else the single agent with its options."""
        return list(self.agents.sweep) or [AgentChoice(agent=self.agents.agent, options=self.agents.options)]

    def shares_prefixes(self) -> bool:
        """Prefix sharing for budget sweeps: as asked, or by default when the agent is not told its budget."""
        grid = self.grid
        if grid.fork is not None or len(set(grid.max_rounds)) < 2:
            return False
        return (not grid.show_budget) if grid.prefix_sharing is None else grid.prefix_sharing

    def grid_fingerprint(self) -> str:
        """Hash of the sections that decide the episodes (`GRID_SECTIONS`), in the layout every run id since the
        first was hashed in (`arena.store.migrate.fingerprint_layout`)."""
        sections = {name: getattr(self, name).model_dump(mode="json") for name in GRID_SECTIONS}
        keep = fingerprint_layout(sections)
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]


__all__ = ["RunConfig", "AgentChoice", "EndpointLimit", "ForkSource", "DataSection", "AgentsSection", "GridSection",
           "JudgeSection", "ScheduleSection", "StopsSection", "OutputSection", "GRID_SECTIONS", "FLAT_FIELDS",
           "FINGERPRINT_ADDED"]
