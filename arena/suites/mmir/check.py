"""What `arena world check` proves about `mmir-mini` worlds.

- `mmir-oracle` (answers the world's injection record) scores 100 % on the multiple-choice
  tasks; open-ended tasks need a judge model to map free text to element ids, so the
  baselines play the `mcq` tasks only (the open ones share their artifacts and are checked
  structurally);
- `mmir-random` (one or two listed ids, drawn uniformly) stays near chance: about 1 in 11 on
  a one-element injection and 1 in 110 on a pair, at most 0.09 per task; bound = chance plus
  three binomial standard deviations at the small size's 10 multiple-choice tasks, 0.36;
- every injected element id exists on its page (`data-arena-id` in `site/`), its text is
  on that page, and it is among the task's listed elements; every image and page exists;
  the public question files agree with tasks.jsonl.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import read_jsonl
from arena.core.task import Task
from arena.core.world import Baseline, WorldCheck

RANDOM_MAX = 0.36


def _task_problems(world: Path, task: Task) -> list[str]:
    meta = task.metadata
    page_file = world / str(meta.get("page", ""))
    if not page_file.is_file():
        return [f"task {task.id}: page {meta.get('page')!r} is missing"]
    page = page_file.read_text(encoding="utf-8")
    problems = []
    truth = [int(i) for i in task.answers]
    if not 1 <= len(truth) <= 2 or truth != list(meta.get("gt_ans", [])):
        problems.append(f"task {task.id}: answers {task.answers} do not match metadata.gt_ans {meta.get('gt_ans')}")
    elements = {int(e["id"]): e for e in meta.get("elements", [])}
    listed = {o.split("]", 1)[0] + "]" for o in task.options}
    for element_id in truth:
        if f'data-arena-id="{element_id}"' not in page:
            problems.append(f"task {task.id}: injected element {element_id} is not on its page {page_file}")
        if f"[{element_id}]" not in listed:
            problems.append(f"task {task.id}: injected element {element_id} is not among the listed elements")
        element = elements.get(element_id)
        if element is None:
            problems.append(f"task {task.id}: injected element {element_id} has no metadata.elements entry")
        elif element["type"] != "image" and html.escape(element["content"], quote=False) not in page:
            problems.append(f"task {task.id}: the text of element {element_id} is not on its page")
    for rel in task.images:
        if not (world / rel).is_file():
            problems.append(f"task {task.id}: image {rel} is missing")
    return problems


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], dict[str, Any]]:
    problems = [p for task in tasks for p in _task_problems(world, task)]
    recorded = {r["file_name"]: r["gt_ans"] for r in read_jsonl(world / "metadata.jsonl")}
    for mode in ("mcq", "open"):
        public = world / f"questions_{mode}.json"
        items = json.loads(public.read_text(encoding="utf-8")) if public.is_file() else []
        if not items:
            problems.append(f"{public}: missing or empty")
        for item in items:
            if recorded.get(item.get("image")) != item.get("gt_ans"):
                problems.append(f"{public}: item {item.get('id')}: gt_ans differs from metadata.jsonl")
    stats = {"tasks": len(tasks), "artifacts": len(recorded),
             "categories": dict(sorted(Counter(t.category or "?" for t in tasks).items())),
             "pairs": sum(1 for t in tasks if len(t.answers) == 2) // 2}
    return problems, stats


CHECK = WorldCheck(
    baselines=(Baseline("mmir-oracle", "no-tool", max_rounds=1, min_pass=1.0),
               Baseline("mmir-random", "no-tool", max_rounds=1, max_pass=RANDOM_MAX)),
    static=static_problems, judge="auto", oracle="mmir-oracle",
    played=lambda task: task.metadata.get("mode") == "mcq")
