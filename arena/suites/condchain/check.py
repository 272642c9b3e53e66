"""What `arena world check` proves about `condchain-mini` and `condchain-mini-agentic` worlds.

- `condchain-oracle` (executes each task's compiled chain over the world's facts) scores 100 %;
- `condchain-random` (a uniformly drawn option label or None, never looking) stays near chance:
  with 2–4 layers of 3 options, a final list of 2–3 and `None`, chance is at most 1/8 per task;
  the bound is chance plus three binomial standard deviations at the small size's 12 tasks
  (0.125 + 3 * sqrt(0.125 * 0.875 / 12) = 0.41), so a check fails only when a baseline beats
  chance for a reason (an answer that leaks, options that give it away);
- every item has a True path and a False path whose pseudocode compiles; every condition parses
  with VPIR and evaluates over the item's facts; on the True path every condition holds, on
  the False path exactly the layer named by `diverge_node` fails; each recorded answer equals
  the executed chain's; every image or GUI frame exists.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import read_jsonl
from arena.core.task import Task
from arena.core.world import Baseline, WorldCheck

from . import vpir
from .policies import ChainError, chain_lines, execute_chain, option_label

RANDOM_MAX = 0.41


def _path_problems(where: str, branch: dict[str, Any], facts: dict[str, Any], diverge: int | None) -> list[str]:
    code = str(branch.get("pseudocode") or "")
    conditions = [text[3:-1] for _, text in chain_lines(code) if text.startswith("if ") and text.endswith(":")]
    if not conditions:
        return [f"{where}: no conditions in the pseudocode"]
    problems = []
    for n, condition in enumerate(conditions, 1):
        try:
            holds = vpir.holds(condition, facts)
        except vpir.VPIRError as exc:
            problems.append(f"{where}: condition {n} does not evaluate: {exc}")
            continue
        if holds != (n != diverge):
            problems.append(f"{where}: condition {n} is {holds}, expected {n != diverge}")
    try:
        value, letter, _ = execute_chain(code, facts)
    except (ChainError, vpir.VPIRError) as exc:
        return problems + [f"{where}: the chain does not execute: {exc}"]
    label = option_label(str(branch.get("full_instruction") or ""), letter, value)
    if label != branch.get("correct_answer"):
        problems.append(f"{where}: recorded answer {branch.get('correct_answer')!r}, the chain gives {label!r}")
    return problems


def static_problems(world: Path, tasks: list[Task]) -> tuple[list[str], dict[str, Any]]:
    problems: list[str] = []
    layers: Counter[int] = Counter()
    domains: Counter[str] = Counter()
    none_answers = 0
    for path in sorted((world / "data").glob("*.jsonl")):
        for lineno, item in enumerate(read_jsonl(path), 1):
            where = f"{path}:{lineno} ({item.get('id')})"
            domains[str(item.get("domain"))] += 1
            facts, true, false = item.get("facts"), item.get("true_path"), item.get("false_path")
            if not isinstance(facts, dict) or not isinstance(true, dict) or not isinstance(false, dict):
                problems.append(f"{where}: needs facts, true_path and false_path objects")
                continue
            node = re.fullmatch(r"qa_(\d+)", str(false.get("diverge_node")))
            if node is None:
                problems.append(f"{where}: false_path.diverge_node {false.get('diverge_node')!r} is not qa_N")
                continue
            layers[len([1 for _, t in chain_lines(str(true.get("pseudocode"))) if t.startswith("if ")])] += 1
            none_answers += true.get("correct_answer") == "None"
            problems += _path_problems(f"{where} true_path", true, facts, None)
            problems += _path_problems(f"{where} false_path", false, facts, int(node.group(1)))
    for task in tasks:
        for rel in task.images + list(task.metadata.get("frames") or []):
            if not (world / rel).is_file():
                problems.append(f"task {task.id}: image {rel} is missing")
    stats = {"items": sum(domains.values()), "tasks": len(tasks), "domains": dict(sorted(domains.items())),
             "layers": dict(sorted(layers.items())), "true_path_none_answers": none_answers}
    return problems, stats


CHECK = WorldCheck(
    baselines=(Baseline("condchain-oracle", "no-tool", max_rounds=1, min_pass=1.0),
               Baseline("condchain-random", "no-tool", max_rounds=1, max_pass=RANDOM_MAX)),
    static=static_problems, judge="auto", oracle="condchain-oracle")
