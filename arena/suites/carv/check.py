"""What `arena world check` proves about `carv-mini` worlds.

- `carv-oracle` (derives each answer from the states of the context images) scores 100 %
  with the `carv-parse` judge;
- `carv-copy` (captions the query image unchanged, never looking at the pair) stays at or
  below 5 %: every generated transformation is non-empty, so it can only score on an item
  whose composed transformation happens to leave the query unchanged, which the generator
  does not produce (chance 0; the bound leaves room for one such item in 20);
- every answer caption parses back (with the judge's caption parser) to the item's answer
  state, and "No resulting image." answers have no state; every context image exists and
  its stem names a state; the public items agree with tasks.jsonl.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import read_jsonl
from arena.core.task import Task
from arena.core.world import Baseline, WorldCheck

from .judge import parse_caption
from .loader import NO_RESULT, PROPERTIES, parse_stem

COPY_MAX = 0.05


def _task_problems(world: Path, task: Task, items: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    parsed = parse_caption(task.answers[0] if task.answers else "")
    state = task.metadata.get("answer_state")
    if state is None:
        if not parsed.no_result:
            problems.append(f"task {task.id}: no answer state, but the caption {task.answers} is not {NO_RESULT!r}")
    elif not parsed.complete or any(parsed.values.get(p) != state.get(p) for p in PROPERTIES):
        problems.append(f"task {task.id}: caption {task.answers[0]!r} parses as {parsed.describe()}, "
                        f"the answer state is {state}")
    for rel in task.images:
        if not (world / rel).is_file():
            problems.append(f"task {task.id}: image {rel} is missing")
        try:
            parse_stem(rel)
        except ValueError as exc:
            problems.append(f"task {task.id}: {exc}")
    item = items.get(task.id)
    if item is None:
        problems.append(f"task {task.id}: not in carv_items.jsonl")
    elif item.get("context_image") != task.metadata.get("context_stems") or \
            (item.get("label") or None) != task.metadata.get("label_stem"):
        problems.append(f"task {task.id}: carv_items.jsonl differs from tasks.jsonl")
    return problems


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], dict[str, Any]]:
    items = {str(r["id"]): r for r in read_jsonl(world / "carv_items.jsonl")}
    problems = [p for task in tasks for p in _task_problems(world, task, items)]
    stats = {"tasks": len(tasks), "operations": dict(sorted(Counter(t.category or "?" for t in tasks).items())),
             "settings": dict(sorted(Counter(t.level or "?" for t in tasks).items())),
             "no_result_answers": sum(1 for t in tasks if t.metadata.get("answer_state") is None)}
    return problems, stats


CHECK = WorldCheck(
    baselines=(Baseline("carv-oracle", "no-tool", max_rounds=1, min_pass=1.0),
               Baseline("carv-copy", "no-tool", max_rounds=1, max_pass=COPY_MAX)),
    static=static_problems, judge="auto", oracle="carv-oracle")
