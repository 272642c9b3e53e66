"""`arena world check DIR`: prove a generated world is solvable with the tools and only with them.

Checks, each failure a line in `problems`:
- every task is solved by the `oracle` (which answers only from tool observations)
  within its own round budget (`metadata.max_rounds`), through the real runner,
  tools and the `normalized` judge;
- the `direct` baseline (no tools) stays at or below 5 % Pass@1 and `text-only`
  (searches the question, never looks at the image) at or below 10 %;
- no accepted answer appears in its question;
- every anchor obeys the legibility rule (its stored heights are recomputed);
- the VistaArena export holds the same questions and answers as tasks.jsonl.
Chain statistics (tasks per level, hops, fused operations, relation categories)
are reported alongside.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from arena.dataset import load_datasets
from arena.task import Task
from arena.world import is_world, read_world
from arena.worlds.vistahop.chains import answer_in_question
from arena.worlds.vistahop.legibility import Legibility, measure

from .config import RunConfig
from .runner import RunResult, load_plugins, run

DIRECT_MAX = 0.05
TEXT_ONLY_MAX = 0.10
BASELINE_ROUNDS = 10


class AgentFigures(BaseModel):
    agent: str
    setting: str
    max_rounds: int
    episodes: int
    correct: int
    pass_at_1: float
    run_dir: str


class ChainStats(BaseModel):
    tasks: int
    single: int
    fused: int
    levels: dict[str, int]
    average_hops: float
    average_hops_single: float | None
    average_hops_fused: float | None
    hops: dict[int, int]
    fusion_ops: dict[str, int]
    relation_categories: dict[str, int]
    answer_kinds: dict[str, int]


class WorldCheckReport(BaseModel):
    ok: bool
    world: str
    name: str
    size: str
    seed: int
    content_hash: str
    stats: ChainStats
    anchors_checked: int
    agents: list[AgentFigures] = Field(default_factory=list)
    thresholds: dict[str, float] = Field(default_factory=lambda: {"oracle_min": 1.0, "direct_max": DIRECT_MAX,
                                                                  "text_only_max": TEXT_ONLY_MAX})
    problems: list[str] = Field(default_factory=list)


def chain_stats(tasks: list[Task]) -> ChainStats:
    single = [t for t in tasks if t.metadata.get("type") == "single"]
    fused = [t for t in tasks if t.metadata.get("type") == "fused"]

    def mean(items: list[Task]) -> float | None:
        return round(sum(t.hops or 0 for t in items) / len(items), 2) if items else None

    categories: Counter[str] = Counter()
    for task in tasks:
        for chain in task.metadata.get("gold_chain", []):
            categories.update(h["category"] for h in chain["hops"])
    return ChainStats(
        tasks=len(tasks), single=len(single), fused=len(fused),
        levels={lvl: sum(1 for t in tasks if t.level == lvl) for lvl in ("L1", "L2", "L3")},
        average_hops=mean(tasks) or 0.0, average_hops_single=mean(single), average_hops_fused=mean(fused),
        hops=dict(sorted(Counter(t.hops or 0 for t in tasks).items())),
        fusion_ops=dict(sorted(Counter((t.metadata.get("fusion") or {}).get("op") for t in fused).items())),
        relation_categories=dict(sorted(categories.items())),
        answer_kinds=dict(sorted(Counter(t.metadata.get("answer_kind", "?") for t in tasks).items())),
    )


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], int]:
    """Answer leaks, legibility of every anchor, and agreement of the VistaArena export."""
    problems = []
    for task in tasks:
        leaked = answer_in_question(task.question, task.answers)
        if leaked is not None:
            problems.append(f"task {task.id}: answer {leaked!r} appears in the question")
        if not task.metadata.get("gold_path"):
            problems.append(f"task {task.id}: metadata.gold_path is missing")
    checked = 0
    scenes_file = world / "images" / "scenes.jsonl"
    if scenes_file.is_file():
        for lineno, line in enumerate(scenes_file.read_text(encoding="utf-8").splitlines(), 1):
            scene = json.loads(line)
            for anchor in scene["anchors"]:
                checked += 1
                stored = Legibility.model_validate(anchor["legibility"])
                again = measure(stored.text_px, anchor["bbox_2d"], scene["width"], scene["height"])
                where = f"{scenes_file}:{lineno}: anchor {anchor['id']}"
                if (again.model_px, again.crop_px) != (stored.model_px, stored.crop_px):
                    problems.append(f"{where}: stored heights {stored.model_px}/{stored.crop_px} px, "
                                    f"recomputed {again.model_px}/{again.crop_px} px")
                if not again.ok:
                    problems.append(f"{where}: breaks the legibility rule (model view {again.model_px} px, "
                                    f"crop {again.crop_px} px)")
    else:
        problems.append(f"{scenes_file}: missing, anchors cannot be checked")
    datasets_json = world / "vistaarena" / "datasets.json"
    if datasets_json.is_file():
        exported = {t.id: t for ds in load_datasets(datasets_json) for t in ds.tasks}
        for task in tasks:
            other = exported.get(task.id)
            if other is None:
                problems.append(f"{datasets_json}: task {task.id} is missing from the VistaArena export")
            elif (other.question, other.answers, other.images) != (task.question, task.answers, task.images):
                problems.append(f"{datasets_json}: task {task.id} differs from tasks.jsonl")
    else:
        problems.append(f"{datasets_json}: missing (no VistaArena export)")
    return problems, checked


def _figures(result: RunResult, agent: str, setting: str, rounds: int) -> AgentFigures:
    correct = {v.episode_id for v in result.verdicts if v.correct}
    wins = sum(1 for e in result.episodes if e.id in correct)
    total = len(result.episodes)
    return AgentFigures(agent=agent, setting=setting, max_rounds=rounds, episodes=total, correct=wins,
                        pass_at_1=round(wins / total, 4) if total else 0.0, run_dir=str(result.run_dir))


def _oracle_problems(result: RunResult, tasks: dict[str, Task]) -> list[str]:
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


def check_world(world_dir: Path, out: Path, concurrency: int = 4) -> WorldCheckReport:
    """Validate a world directory; runs go under `out` (resumed when the same world is checked again)."""
    load_plugins()
    world = Path(world_dir)
    if not is_world(world):
        raise ValueError(f"{world}: not a world directory (no world.json)")
    info = read_world(world)
    datasets = load_datasets(world)
    tasks = [t for ds in datasets for t in ds.tasks]
    by_id = {t.id: t for t in tasks}
    problems, anchors = static_problems(world, tasks)
    oracle_rounds = max([int(t.metadata.get("max_rounds") or 0) for t in tasks] + [BASELINE_ROUNDS])
    plan = (("oracle", "search+crop", oracle_rounds), ("direct", "no-tool", BASELINE_ROUNDS),
            ("text-only", "search+crop", BASELINE_ROUNDS))
    figures: list[AgentFigures] = []
    for agent, setting, rounds in plan:
        config = RunConfig(data=str(world), agent=agent, settings=[setting], max_rounds=[rounds],
                           judge="normalized", concurrency=concurrency, out=str(out),
                           run_id=f"world-check-{info.name}-{info.content_hash[:10]}-{agent}")
        result = run(config)
        figures.append(_figures(result, agent, setting, rounds))
        if agent == "oracle":
            problems += _oracle_problems(result, by_id)
    limits = {"oracle": (1.0, None), "direct": (None, DIRECT_MAX), "text-only": (None, TEXT_ONLY_MAX)}
    for fig in figures:
        low, high = limits[fig.agent]
        if fig.episodes != len(tasks):
            problems.append(f"{fig.agent}: {fig.episodes} episodes for {len(tasks)} tasks")
        if low is not None and fig.pass_at_1 < low:
            problems.append(f"{fig.agent}: Pass@1 {fig.pass_at_1:.2%} is below {low:.0%}")
        if high is not None and fig.pass_at_1 > high:
            problems.append(f"{fig.agent}: Pass@1 {fig.pass_at_1:.2%} is above {high:.0%}")
    return WorldCheckReport(ok=not problems, world=str(world), name=info.name, size=info.size, seed=info.seed,
                            content_hash=info.content_hash, stats=chain_stats(tasks), anchors_checked=anchors,
                            agents=figures, problems=problems)


def report_lines(report: WorldCheckReport) -> list[str]:
    """A short human summary of a report (the CLI prints the JSON too)."""
    s = report.stats
    lines = [f"{report.name} ({report.size}, seed {report.seed}): {'OK' if report.ok else 'FAILED'}",
             f"tasks {s.tasks} (single {s.single}, fused {s.fused}); levels {s.levels}; average hops "
             f"{s.average_hops} (single {s.average_hops_single}, fused {s.average_hops_fused})",
             f"anchors checked {report.anchors_checked}"]
    lines += [f"{f.agent:<10} {f.setting:<12} Pass@1 {f.pass_at_1:7.2%} ({f.correct}/{f.episodes})"
              for f in report.agents]
    lines += [f"problem: {p}" for p in report.problems[:50]]
    return lines
