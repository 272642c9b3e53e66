"""What `arena world check` proves about a `vistahop-mini` world.

- every task is solved by the `oracle` (which answers only from tool observations) within
  its own round budget (`metadata.max_rounds`), scored by the `normalized` judge;
- the `direct` baseline (no tools) stays at or below 5 % Pass@1 and `text-only` (searches
  the question, never looks at the image) at or below 10 %;
- no accepted answer appears in its question; every task has its gold path;
- every anchor obeys the legibility rule (its stored heights are recomputed);
- the VistaArena export holds the same questions and answers as tasks.jsonl.
Chain statistics (tasks per level, hops, fused operations, relation categories) are reported.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from arena.core.dataset import load_datasets
from arena.core.task import Task
from arena.core.world import Baseline, WorldCheck

from .world.chains import answer_in_question
from .world.legibility import Legibility, measure

DIRECT_MAX = 0.05
TEXT_ONLY_MAX = 0.10


def chain_stats(tasks: list[Task]) -> dict[str, Any]:
    """Tasks per kind and level, hops, fusion operations, relation categories and answer kinds."""
    single = [t for t in tasks if t.metadata.get("type") == "single"]
    fused = [t for t in tasks if t.metadata.get("type") == "fused"]

    def mean(items: list[Task]) -> float | None:
        return round(sum(t.hops or 0 for t in items) / len(items), 2) if items else None

    categories: Counter[str] = Counter()
    for task in tasks:
        for chain in task.metadata.get("gold_chain", []):
            categories.update(h["category"] for h in chain["hops"])
    return {
        "tasks": len(tasks), "single": len(single), "fused": len(fused),
        "levels": {lvl: sum(1 for t in tasks if t.level == lvl) for lvl in ("L1", "L2", "L3")},
        "average_hops": mean(tasks) or 0.0, "average_hops_single": mean(single), "average_hops_fused": mean(fused),
        "hops": dict(sorted(Counter(t.hops or 0 for t in tasks).items())),
        "fusion_ops": dict(sorted(Counter((t.metadata.get("fusion") or {}).get("op") for t in fused).items())),
        "relation_categories": dict(sorted(categories.items())),
        "answer_kinds": dict(sorted(Counter(t.metadata.get("answer_kind", "?") for t in tasks).items())),
    }


def _anchor_problems(world: Path) -> tuple[list[str], int]:
    problems: list[str] = []
    checked = 0
    scenes_file = world / "images" / "scenes.jsonl"
    if not scenes_file.is_file():
        return [f"{scenes_file}: missing, anchors cannot be checked"], 0
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
    return problems, checked


def _export_problems(world: Path, tasks: list[Task]) -> list[str]:
    datasets_json = world / "vistaarena" / "datasets.json"
    if not datasets_json.is_file():
        return [f"{datasets_json}: missing (no VistaArena export)"]
    problems = []
    exported = {t.id: t for ds in load_datasets(datasets_json) for t in ds.tasks}
    for task in tasks:
        other = exported.get(task.id)
        if other is None:
            problems.append(f"{datasets_json}: task {task.id} is missing from the VistaArena export")
        elif (other.question, other.answers, other.images) != (task.question, task.answers, task.images):
            problems.append(f"{datasets_json}: task {task.id} differs from tasks.jsonl")
    return problems


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], dict[str, Any]]:
    """Answer leaks, gold paths, legibility of every anchor, agreement of the VistaArena export;
    with the chain statistics."""
    problems = []
    for task in tasks:
        leaked = answer_in_question(task.question, task.answers)
        if leaked is not None:
            problems.append(f"task {task.id}: answer {leaked!r} appears in the question")
        if not task.metadata.get("gold_path"):
            problems.append(f"task {task.id}: metadata.gold_path is missing")
    anchors, checked = _anchor_problems(world)
    stats = chain_stats(tasks) | {"anchors_checked": checked}
    return problems + anchors + _export_problems(world, tasks), stats


VISTAHOP_CHECK = WorldCheck(
    baselines=(Baseline("oracle", "search+crop", min_pass=1.0),
               Baseline("direct", "no-tool", max_rounds=10, max_pass=DIRECT_MAX),
               Baseline("text-only", "search+crop", max_rounds=10, max_pass=TEXT_ONLY_MAX)),
    static=static_problems,
)
