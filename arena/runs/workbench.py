"""What playing episodes of a run needs, built from its config alone: datasets, agents, tools.

The driver builds one; so does every Ray worker, from the same config JSON, so a
job described by names (`EpisodeJob`) means the same episode everywhere.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from arena.core.agent import AGENTS, Agent, Prompting
from arena.core.blobs import BlobStore
from arena.core.dataset import Dataset, load_datasets, refuse_original_only
from arena.core.episode import EpisodeSpec, run_episode
from arena.core.prompt_book import PromptBook
from arena.judges.protocols import apply_original_dataset_rules, default_protocol, original_turn_rule
from arena.core.task import Task
from arena.core.tool import TOOLS, RunResources, Tool
from arena.core.trajectory import Episode, Step

from .config import RunConfig
from .limits import EndpointGate, Gate, LimitedAgent, endpoint_limit, endpoint_of
from .names import did_you_mean
from .plugins import call_with_options, load_plugins
from .validate import setting_tools


class EpisodeJob(BaseModel):
    """One episode to play, by names and indices into the run's config, so it can travel to a worker."""

    key: str
    dataset: int
    task_id: str
    setting: str
    max_rounds: int
    repeat: int
    agent: int
    seed: int
    prefix: list[Step] = Field(default_factory=list)
    prefix_mode: Literal["reuse", "replay"] = "reuse"
    meta: dict[str, Any] = Field(default_factory=dict)

    def prefix_blobs(self) -> list[str]:
        """Blob ids the prefix's reused observations need."""
        if self.prefix_mode != "reuse":
            return []
        return sorted({b for s in self.prefix if s.observation for b in s.observation.images})


def select_tasks(datasets: list[Dataset], config: RunConfig) -> list[tuple[Dataset, Any]]:
    pairs = [(ds, task) for ds in datasets for task in ds.tasks]
    if config.data.task_ids:
        wanted = set(config.data.task_ids)
        pairs = [(ds, t) for ds, t in pairs if t.id in wanted]
        missing = wanted - {t.id for _, t in pairs}
        if missing:
            raise ValueError(f"task id(s) not in the data: {', '.join(sorted(missing))}")
    for field, wanted in (("level", config.data.levels), ("category", config.data.categories), ("suite", config.data.suites)):
        if wanted:
            values = {str(getattr(t, field)) for _, t in pairs}
            unknown = sorted(set(wanted) - values)
            if unknown:
                raise ValueError(f"--{field} {', '.join(unknown)}: no task has it; the tasks' {field} values: "
                                 f"{', '.join(sorted(values))}")
            pairs = [(ds, t) for ds, t in pairs if str(getattr(t, field)) in set(wanted)]
    if config.data.limit:
        pairs = pairs[: config.data.limit]
    return pairs


def build_tools(config: RunConfig) -> dict[str, list[Tool]]:
    """One instance per tool for the whole run, shared by every setting that names it."""
    built: dict[str, Tool] = {}
    per_setting = {}
    for setting in config.grid.settings:
        names = setting_tools(setting)
        for name in names:
            if name not in built:
                built[name] = TOOLS[name](config.tools)
        per_setting[setting] = [built[n] for n in names]
    return per_setting


def distinct(per_setting: dict[str, list[Tool]]) -> list[Tool]:
    """Each tool of the run once (settings share instances)."""
    unique: dict[int, Tool] = {}
    for tools in per_setting.values():
        for tool in tools:
            unique.setdefault(id(tool), tool)
    return list(unique.values())


def with_protocol(config: RunConfig, datasets: list[Dataset]) -> RunConfig:
    """The config with its protocol resolved (none given: by the data, `default_protocol`); under `original` no extra
    final-answer turn, unless the run's budget asks for one explicitly. The given config is left as it is."""
    protocol = config.grid.protocol or default_protocol([bool(d.meta.get("published")) for d in datasets])
    limits = config.limits
    if protocol == "original" and "final_answer_turn" not in limits.model_fields_set:
        limits = limits.model_copy(update={"final_answer_turn": False})
    return config.model_copy(update={"grid": config.grid.model_copy(update={"protocol": protocol}),
                                     "limits": limits})


class Workbench:
    """Datasets, agents (wrapped by the endpoint gate), tools and prompt book of one run.

    The prompt book is the run's `--prompts` file over the arena's wording (`arena.core.prompt_book`): given by the
    driver, or loaded from `config.judge.prompts` (a worker process rebuilding the Workbench from the run's
    config); every episode's agent requests take their templates' texts from it."""

    def __init__(self, config: RunConfig, gate: Gate | None = None, prompts: PromptBook | None = None):
        load_plugins()
        self.config = config
        self.prompts = prompts if prompts is not None else PromptBook.load(config.judge.prompts)
        self.datasets: list[Dataset] = load_datasets(config.data.path, config.data.root, config.data.fmt,
                                                     original_only=config.grid.protocol != "arena")
        if config.data.corpus:
            for dataset in self.datasets:
                dataset.corpus = Path(config.data.corpus).resolve()
        config = self.config = with_protocol(config, self.datasets)
        """The run's config as played: its protocol resolved (`with_protocol`)."""
        if config.grid.protocol == "arena":
            refuse_original_only(self.datasets)
        if config.grid.protocol == "original":
            apply_original_dataset_rules(self.datasets)
        self.pairs: list[tuple[Dataset, Task]] = select_tasks(self.datasets, config)
        self.gate = gate or EndpointGate(config.schedule.endpoint_limits)
        self.agents: list[Agent] = []
        for choice in config.agent_choices():
            if choice.agent not in AGENTS:
                raise ValueError(f"unknown agent {choice.agent!r}{did_you_mean(choice.agent, AGENTS)}; known: {', '.join(sorted(AGENTS))}")
            options = dict(choice.options)
            if "pool_size" not in options and "pool_size" in inspect.signature(AGENTS[choice.agent]).parameters:
                options["pool_size"] = config.schedule.concurrency  # connections sized to the episodes in flight
            agent = call_with_options(AGENTS[choice.agent], options, f"agent {choice.agent!r}")
            endpoint = endpoint_of(choice.options)
            limited = endpoint_limit(config.schedule.endpoint_limits, endpoint) is not None
            self.agents.append(LimitedAgent(agent, self.gate, endpoint) if limited else agent)
        ids = [a.id for a in self.agents]
        clashes = sorted({i for i in ids if ids.count(i) > 1})
        if clashes:
            raise ValueError(f"several agents of the grid have the id {', '.join(clashes)}; give each an "
                             "`id` option (e.g. --agent-option id=NAME)")
        self._tools: dict[str, list[Tool]] | None = None
        self._resources: RunResources | None = None
        self._opening = asyncio.Lock()
        self._tasks = {(i, t.id): (d, t) for i, d in enumerate(self.datasets) for t in d.tasks}
        self._dataset_index = {id(d): i for i, d in enumerate(self.datasets)}

    @property
    def tools_by_setting(self) -> dict[str, list[Tool]]:
        """The run's tools, built on first use (after the runner has settled run-dependent options)."""
        if self._tools is None:
            self._tools = build_tools(self.config)
        return self._tools

    async def open_tools(self) -> None:
        """Open every tool of the run once in this process, with the run's resources (idempotent)."""
        async with self._opening:
            if self._resources is not None:
                return
            self._resources = RunResources(self.config.tools)
            for tool in distinct(self.tools_by_setting):
                await tool.open(self._resources)

    def dataset_index(self, dataset: Dataset) -> int:
        return self._dataset_index[id(dataset)]

    def spec(self, job: EpisodeJob, run_id: str) -> EpisodeSpec:
        dataset, task = self._tasks[(job.dataset, job.task_id)]
        budget = self.config.limits.model_copy(update={"max_rounds": job.max_rounds})
        agent = self.agents[job.agent]
        rule = original_turn_rule(task.suite) if self.config.grid.protocol == "original" and agent.text_protocol \
            else None
        if rule is not None and "on_invalid" not in self.config.limits.model_fields_set:
            budget.on_invalid = "stop"  # a turn the published pipeline fails on ends the episode
        prompting = self.prompting(dataset)
        return EpisodeSpec(run_id=run_id, task=task, dataset=dataset, agent=self.agents[job.agent],
                           tools=self.tools_by_setting[job.setting], setting=job.setting, budget=budget,
                           repeat=job.repeat, seed=job.seed, prompting=prompting, prefix=list(job.prefix),
                           prefix_mode=job.prefix_mode,
                           turn_rule=rule)

    def prompting(self, dataset: Dataset) -> Prompting:
        """The prompt choices of `dataset`'s episodes: its own texts, the run's show-budget and prompt book."""
        instruction = self.prompts.format(dataset.format_template) if dataset.format_template \
            else dataset.format_instruction
        return Prompting(system_prompt=dataset.system_prompt, format_instruction=instruction,
                         show_budget=self.config.grid.show_budget, prompts=self.prompts,
                         answer_form_required=self.config.grid.protocol == "arena")

    def prompt_templates(self) -> list[str]:
        """The prompt templates the run's agent requests use (per agent, dataset, task layout and setting), and the
        datasets' own format templates (run.json records their wording)."""
        tools = {bool(setting_tools(setting)) for setting in self.config.grid.settings}
        final_turn = self.config.limits.final_answer_turn
        names: set[str] = set()
        layouts: dict[tuple[int, str], tuple[Dataset, Task]] = {}
        for dataset, task in self.pairs:
            layouts.setdefault((id(dataset), task.layout.model_dump_json()), (dataset, task))
            if dataset.format_template:
                names.add(dataset.format_template)
        for dataset, task in layouts.values():
            prompting = self.prompting(dataset)
            for agent in self.agents:
                for with_tools in tools:
                    names.update(agent.prompt_templates(prompting, task.layout, with_tools, final_turn))
        return sorted(names)

    async def play(self, job: EpisodeJob, run_id: str, blobs: BlobStore) -> Episode:
        """Run one job to its Episode; model calls made here are recorded in `meta.model_calls`. The run's
        tools are opened before the first job this process plays."""
        if self._resources is None:
            await self.open_tools()
        episode = await run_episode(self.spec(job, run_id), blobs)
        episode.meta.update(job.meta)
        if job.prefix:
            episode.meta["model_calls"] = len(episode.steps) - len(job.prefix)
        return episode

    async def aclose(self) -> None:
        """Close the agents, then the tools, then the run's shared tool resources."""
        for agent in self.agents:
            await agent.aclose()
        for tool in distinct(self._tools or {}):
            await tool.aclose()
        if self._resources is not None:
            await self._resources.aclose()
