"""What `arena world check` proves about `ureason-mini` worlds.

- `ureason-oracle` (renders the world's gold SVG for each criterion with the `render` tool)
  scores 100 % with the deterministic `ureason-verify` judge: every gold image renders and
  meets its criterion;
- `ureason-random` (a row of 1–7 shapes of one random kind and colour) stays near chance:
  it can meet a count criterion with probability 1/(10 colours x 3 shapes x 7 counts), a
  colour criterion with at most 1/30, an order or a word criterion never, so chance is
  under 0.04 per task; bound = 0.04 plus three binomial standard deviations at the small
  size's 30 tasks, 0.15;
- every task's criterion parses in the suite's grammar and equals its world item's
  `expect_en`; the three settings of an item share one criterion; every item file line
  has id, prompt, expect_en and category.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import read_jsonl
from arena.core.task import Task
from arena.core.world import Baseline, WorldCheck

from .policies import world_criteria
from .world import Criterion

RANDOM_MAX = 0.15


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], dict[str, Any]]:
    problems = []
    for path in sorted((world / "data").glob("*.jsonl")):
        for lineno, record in enumerate(read_jsonl(path), 1):
            missing = [k for k in ("id", "prompt", "expect_en", "category") if k not in record]
            if missing:
                problems.append(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
    criteria = world_criteria(world)
    for task in tasks:
        sentence = task.answers[0] if task.answers else ""
        if Criterion.parse(sentence) is None:
            problems.append(f"task {task.id}: criterion {sentence!r} is not in the machine-checkable grammar")
        key = (str(task.metadata.get("family")), str(task.metadata.get("ureason_id")))
        if criteria.get(key) != sentence:
            problems.append(f"task {task.id}: criterion differs from its world item {key}: {criteria.get(key)!r}")
    stats = {"tasks": len(tasks), "items": len(criteria),
             "settings": dict(sorted(Counter(t.level or "?" for t in tasks).items())),
             "criteria": dict(sorted(Counter(t.metadata.get("criterion_kind", "?") for t in tasks).items()))}
    return problems, stats


CHECK = WorldCheck(
    baselines=(Baseline("ureason-oracle", "render", max_rounds=2, min_pass=1.0),
               Baseline("ureason-random", "render", max_rounds=2, max_pass=RANDOM_MAX)),
    static=static_problems, judge="ureason-verify", oracle="ureason-oracle")
