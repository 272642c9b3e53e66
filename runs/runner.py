"""Execute a run: load data, build the grid, run missing episodes concurrently, judge, summarise.

Resumable: episodes already finished under the same run id are skipped, errored
ones are run again, and finished episodes lacking a verdict are judged.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import platform
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from arena.agent import AGENTS, Agent, Prompting
from arena.dataset import Dataset, load_datasets
from arena.discovery import import_submodules
from arena.episode import EpisodeSpec, run_episode
from arena.judge import JUDGES, Judge
from arena.settings import tools_for_setting
from arena.tool import TOOLS, Tool
from arena.trajectory import Episode, episode_key
from arena.verdict import Verdict
from judges.metrics import AUTO, judge_for, summarize

from .config import RunConfig
from .store import RunStore


def load_plugins() -> None:
    """Register every tool, agent, judge, loader and world builder."""
    for package in ("tools", "agents", "judges", "arena.suites", "arena.worlds"):
        import_submodules(package)


@dataclass
class RunResult:
    run_dir: Path
    run_id: str
    summary: dict[str, Any]
    episodes: list[Episode] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    ran: int = 0


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:48] or "run"


def git_hash() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("arena", "openai", "pydantic", "pillow", "bm25s", "playwright"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def episode_seed(seed: int, key: str) -> int:
    return int(hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()[:8], 16)


def call_with_options(factory: Callable[..., Any], options: dict[str, Any], what: str) -> Any:
    """Call a registered factory; unknown options are an error that lists the accepted ones."""
    params = inspect.signature(factory).parameters
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in options if k not in params and not accepts_any]
    if unknown:
        raise ValueError(f"{what} does not take option(s) {', '.join(unknown)}; it takes: {', '.join(params)}")
    try:
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None


class Judges:
    """Judges built on demand: the run's judge, or with "auto" each task's own."""

    def __init__(self, name: str, options: dict[str, Any], cache_path: Path):
        self.name, self.options, self.cache_path = name, options, cache_path
        self._built: dict[str, Judge] = {}

    def get(self, judge_id: str) -> Judge:
        if judge_id not in self._built:
            if judge_id not in JUDGES:
                raise ValueError(f"unknown judge {judge_id!r}; known: {', '.join(sorted(JUDGES))}")
            factory = JUDGES[judge_id]
            params = inspect.signature(factory).parameters
            options = {k: v for k, v in self.options.items() if k in params} if self.name == AUTO else dict(self.options)
            if "cache_path" in params and "cache_path" not in options:
                options["cache_path"] = str(self.cache_path)
            self._built[judge_id] = call_with_options(factory, options, f"judge {judge_id!r}")
        return self._built[judge_id]

    def describe(self) -> dict[str, Any]:
        return {"judge": self.name, "built": {k: j.describe() for k, j in self._built.items()}}

    async def aclose(self) -> None:
        for judge in self._built.values():
            await judge.aclose()


def select_tasks(datasets: list[Dataset], config: RunConfig) -> list[tuple[Dataset, Any]]:
    pairs = [(ds, task) for ds in datasets for task in ds.tasks]
    if config.task_ids:
        wanted = set(config.task_ids)
        pairs = [(ds, t) for ds, t in pairs if t.id in wanted]
        missing = wanted - {t.id for _, t in pairs}
        if missing:
            raise ValueError(f"task id(s) not in the data: {', '.join(sorted(missing))}")
    if config.limit:
        pairs = pairs[: config.limit]
    return pairs


def build_tools(config: RunConfig) -> dict[str, list[Tool]]:
    """One instance per tool for the whole run, shared by every setting that names it."""
    built: dict[str, Tool] = {}
    per_setting = {}
    for setting in config.settings:
        names = tools_for_setting(setting, set(TOOLS))
        for name in names:
            if name not in built:
                built[name] = TOOLS[name](config.tool_options)
        per_setting[setting] = [built[n] for n in names]
    return per_setting


async def execute(config: RunConfig, *, progress: Callable[[Episode, Verdict | None], None] | None = None,
                  force: bool = False, on_start: Callable[[int, int], None] | None = None) -> RunResult:
    load_plugins()
    datasets = load_datasets(config.data, config.root, config.fmt)
    if config.corpus:
        for dataset in datasets:
            dataset.corpus = Path(config.corpus).resolve()
    pairs = select_tasks(datasets, config)
    if config.agent not in AGENTS:
        raise ValueError(f"unknown agent {config.agent!r}; known: {', '.join(sorted(AGENTS))}")
    agent: Agent = call_with_options(AGENTS[config.agent], config.agent_options, f"agent {config.agent!r}")
    tools_by_setting = build_tools(config)
    run_id = config.run_id or f"{slug(datasets[0].name)}-{slug(agent.id)}-{config.grid_fingerprint()[:8]}"
    store = RunStore(Path(config.out) / run_id)
    judges = Judges(config.judge or AUTO, config.judge_options, store.dir / "judge_cache.jsonl")
    try:
        store.open({
            "run_id": run_id, "fingerprint": config.grid_fingerprint(), "config": config.redacted(),
            "agent": agent.describe(), "datasets": [{"name": d.name, "source": str(d.source), "root": str(d.root),
                                                     "tasks": len(d.tasks), "world": d.meta.get("world")}
                                                    for d in datasets],
            "versions": versions(), "git": git_hash(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }, force=force)
        done = {e.key: e for e in store.episodes() if e.finish_reason != "error"}
        specs = []
        for dataset, task in pairs:
            prompting = Prompting(system_prompt=dataset.system_prompt, format_instruction=dataset.format_instruction,
                                  show_budget=config.show_budget)
            for setting in config.settings:
                for max_rounds in config.max_rounds:
                    for repeat in range(config.repeats):
                        key = episode_key(task.id, setting, max_rounds, repeat, agent.id)
                        if key in done:
                            continue
                        budget = config.budget.model_copy(update={"max_rounds": max_rounds})
                        specs.append(EpisodeSpec(run_id=run_id, task=task, dataset=dataset, agent=agent,
                                                 tools=tools_by_setting[setting], setting=setting, budget=budget,
                                                 repeat=repeat, seed=episode_seed(config.seed, key),
                                                 prompting=prompting))
        judge_name = config.judge or AUTO
        verdicts_done = {(v.episode_id, v.judge) for v in store.verdicts()}
        unjudged = [e for e in done.values() if (e.id, judge_for(e, judge_name)) not in verdicts_done]
        if on_start:
            on_start(len(specs) + len(unjudged), len(pairs) * len(config.settings) * len(config.max_rounds)
                     * config.repeats)
        slots = asyncio.Semaphore(config.concurrency)

        async def judge_and_store(episode: Episode) -> Verdict | None:
            verdict = await judges.get(judge_for(episode, judge_name)).score(episode, store.blobs)
            store.append_verdict(verdict)
            return verdict

        async def one(spec: EpisodeSpec) -> None:
            async with slots:
                episode = await run_episode(spec, store.blobs)
                store.append_episode(episode)
                verdict = await judge_and_store(episode)
            if progress:
                progress(episode, verdict)

        async def rejudge(episode: Episode) -> None:
            async with slots:
                verdict = await judge_and_store(episode)
            if progress:
                progress(episode, verdict)

        await asyncio.gather(*(one(s) for s in specs), *(rejudge(e) for e in unjudged))
        episodes, verdicts = store.episodes(), store.verdicts()
        summary = summarize(episodes, verdicts, judge_name)
        summary.update({"run_id": run_id, "judges": judges.describe()})
        store.write_summary(summary)
        return RunResult(run_dir=store.dir, run_id=run_id, summary=summary, episodes=episodes, verdicts=verdicts,
                         ran=len(specs))
    finally:
        await agent.aclose()
        await judges.aclose()
        for tool in {id(t): t for tools in tools_by_setting.values() for t in tools}.values():
            await tool.aclose()


def run(config: RunConfig, **kwargs: Any) -> RunResult:
    """Synchronous wrapper of `execute`."""
    return asyncio.run(execute(config, **kwargs))
