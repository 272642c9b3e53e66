"""`arena world check DIR`: prove a generated world is solvable with the tools and only with them.

The world's suite declares what that means (`arena.core.world.WorldCheck`, registered per world kind):
baseline policies with the Pass@1 range each must land in, and structural checks. This module
runs the baselines through the real runner, tools and judge, and gathers the problems: each
failure is a line in `problems`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from arena.core.agent import AGENTS
from arena.core.dataset import load_datasets
from arena.core.task import Task
from arena.core.world import WORLD_CHECKS, Baseline, is_world, read_world

from .config import RunConfig
from .plugins import accepted_options, load_plugins
from .runner import RunResult, run


class AgentFigures(BaseModel):
    agent: str
    setting: str
    max_rounds: int
    episodes: int
    correct: int
    pass_at_1: float
    run_dir: str


class WorldCheckReport(BaseModel):
    ok: bool
    world: str
    name: str
    size: str
    seed: int
    content_hash: str
    stats: dict[str, Any] = Field(default_factory=dict)
    agents: list[AgentFigures] = Field(default_factory=list)
    thresholds: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)


def _figures(result: RunResult, agent: str, setting: str, rounds: int) -> AgentFigures:
    correct = {v.episode_id for v in result.verdicts if v.correct}
    wins = sum(1 for e in result.episodes if e.id in correct)
    total = len(result.episodes)
    return AgentFigures(agent=agent, setting=setting, max_rounds=rounds, episodes=total, correct=wins,
                        pass_at_1=round(wins / total, 4) if total else 0.0, run_dir=str(result.run_dir))


def _oracle_problems(result: RunResult, tasks: dict[str, Task]) -> list[str]:
    """Every task the oracle missed, or solved only past the task's own round budget."""
    correct = {v.episode_id for v in result.verdicts if v.correct}
    problems = []
    for episode in sorted(result.episodes, key=lambda e: e.task.id):
        task = tasks[episode.task.id]
        budget = int(task.metadata.get("max_rounds") or 0)
        used = episode.totals.rounds + (1 if any(s.final_turn for s in episode.steps) else 0)
        if episode.id not in correct:
            why = next((s.reasoning for s in reversed(episode.steps) if s.reasoning), None) or episode.error or ""
            problems.append(f"task {task.id}: oracle answered {episode.answer!r}, expected {task.answers} "
                            f"({episode.finish_reason}; {why[:300]})")
        elif budget and used > budget:
            problems.append(f"task {task.id}: oracle needed {used} rounds, over the task's budget of {budget}")
    return problems


def _bound_problems(fig: AgentFigures, baseline: Baseline, n_tasks: int) -> list[str]:
    problems = []
    if fig.episodes != n_tasks:
        problems.append(f"{fig.agent}: {fig.episodes} episodes for {n_tasks} tasks")
    if baseline.min_pass is not None and fig.pass_at_1 < baseline.min_pass:
        problems.append(f"{fig.agent}: Pass@1 {fig.pass_at_1:.2%} is below {baseline.min_pass:.0%}")
    if baseline.max_pass is not None and fig.pass_at_1 > baseline.max_pass:
        problems.append(f"{fig.agent}: Pass@1 {fig.pass_at_1:.2%} is above {baseline.max_pass:.0%}")
    return problems


def check_world(world_dir: Path, out: Path, concurrency: int = 4, **hooks: Any) -> WorldCheckReport:
    """Validate a world directory; runs go under `out` (resumed when the same world is checked again).
    `hooks` (`progress`, `on_start`) are passed to each baseline's run (`arena.runs.runner.execute`)."""
    load_plugins()
    world = Path(world_dir)
    if not is_world(world):
        raise ValueError(f"{world}: not a world directory (no world.json)")
    info = read_world(world)
    check = WORLD_CHECKS.get(info.name)
    if check is None:
        raise ValueError(f"{world}: no check is registered for worlds of kind {info.name!r}; "
                         f"known: {', '.join(sorted(WORLD_CHECKS)) or 'none'}")
    tasks = [t for ds in load_datasets(world) for t in ds.tasks]
    problems, stats = check.static(world, tasks)
    tasks = [t for t in tasks if check.played is None or check.played(t)]
    by_id = {t.id: t for t in tasks}
    widest = max([int(t.metadata.get("max_rounds") or 0) for t in tasks] + [check.default_rounds])
    figures: list[AgentFigures] = []
    for baseline in check.baselines:
        rounds = baseline.max_rounds or widest
        options = accepted_options(AGENTS[baseline.agent], {"world": str(world.resolve())})
        config = RunConfig(data=str(world), agent=baseline.agent, agent_options=options, settings=[baseline.setting],
                           max_rounds=[rounds], judge=check.judge, concurrency=concurrency, out=str(out),
                           task_ids=None if check.played is None else sorted(by_id),
                           run_id=f"world-check-{info.name}-{info.content_hash[:10]}-{baseline.agent}")
        result = run(config, **hooks)
        fig = _figures(result, baseline.agent, baseline.setting, rounds)
        figures.append(fig)
        if baseline.agent == check.oracle:
            problems += _oracle_problems(result, by_id)
        problems += _bound_problems(fig, baseline, len(tasks))
    thresholds = {b.agent: {"min": b.min_pass, "max": b.max_pass} for b in check.baselines}
    return WorldCheckReport(ok=not problems, world=str(world), name=info.name, size=info.size, seed=info.seed,
                            content_hash=info.content_hash, stats=stats, agents=figures, thresholds=thresholds,
                            problems=problems)


def report_lines(report: WorldCheckReport) -> list[str]:
    """A short human summary of a report (the CLI writes the full JSON beside it)."""
    lines = [f"{report.name} ({report.size}, seed {report.seed}): {'OK' if report.ok else 'FAILED'}"]
    lines += [f"{key}: {value}" for key, value in report.stats.items() if not isinstance(value, (dict, list))]
    lines += [f"{f.agent:<10} {f.setting:<12} Pass@1 {f.pass_at_1:7.2%} ({f.correct}/{f.episodes})"
              for f in report.agents]
    lines += [f"problem: {p}" for p in report.problems[:50]]
    return lines
