"""Episodes whose last turn wrote a given text, for the differential tests of the published scoring rules."""

from __future__ import annotations

from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode, Observation, Step


def final_turn_episode(output: str, answers: list[str], *, suite: str, task_id: str = "t", kind: str = "open",
                       options: list[str] | None = None, level: str | None = None, category: str | None = None,
                       answer: str | None = "use-output", steps: list[Step] | None = None) -> Episode:
    """An episode of one answering turn that wrote `output` (plus `steps` before it)."""
    task = TaskRef(id=task_id, suite=suite, question="Q?", answers=answers, kind=kind, options=options or [],
                   level=level, category=category)
    final = Step(round=len(steps or []) + 1, output=output, action="answer", answer=output)
    return Episode(id=f"e-{abs(hash((output, task_id))) % 10**8}", run_id="r", key=f"{task_id}|s|10|0|a", task=task,
                   agent="a", setting="s", budget=Budget(), steps=[*(steps or []), final],
                   answer=output if answer == "use-output" else answer, finish_reason="answered")


__all__ = ["final_turn_episode", "Observation", "Step"]
