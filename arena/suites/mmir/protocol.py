"""MMIR's published scoring pipeline, used under `--protocol original`.

Source: eric-ai-lab/MMIR `eval/calculate_score.py` (`llm_judge`, `eval`) @17f24c5, restated in our own words:

- The open-ended judge prompt carries the question's `descs` text exactly as stored in `questions_open.json`: no
  line is stripped, blank lines are kept (the arena's reading strips each option line and drops blank ones). Here
  the task's options become that one stored text, which the `mmir` judge joins into its prompt unchanged.
- A question's reporting group is "web" only when its `source` is spelled exactly "web page", "poster" only when
  exactly "poster", and "office" otherwise (the arena also accepts other casings and "web" / "webpage"). The group
  is part of the task id (`<group>-<index>:<mode>`), so a question whose source is spelled otherwise gets the
  published group's id under `original` (it then pairs with no task of an `arena` run).
- Accuracy divides each group's score sum by the number of questions of that group in the questions file (`src_id`
  built from the whole file), also those that were never answered: a missing answer counts 0. The rule records that
  count on the dataset (`Dataset.population`, kept in run.json): `{"suite": "mmir", "mode": "mcq" | "open", "file":
  the file's name, "questions": n, "groups": {"web" | "office" | "poster": n}}`, groups by the published spelling
  rule; `mmir_metrics` divides by it (a run of part of the file, `--limit`, a filter, a stopped run, reports the
  questions it did not run as wrong). The published overall figure divides by the constant 534, the number of
  questions in the public files; the arena divides by the file's own count (the same for the public files).
"""

from __future__ import annotations

from collections import Counter

from arena.core.dataset import Dataset

from .loader import parse_task_id, task_id


def published_group(source: str) -> str:
    """The reporting group as the published `eval` assigns it: exact spellings only."""
    return "web" if source == "web page" else "poster" if source == "poster" else "office"


def original_questions(dataset: Dataset) -> None:
    """Options as the stored `descs` text, groups by the published spelling rule, and the file's questions per group
    as the population accuracy divides by (see the module docstring)."""
    for task in dataset.tasks:
        stored = task.metadata.get("descs")
        if isinstance(stored, str):
            task.options = [stored]
        source = task.metadata.get("source")
        group, mode = parse_task_id(task.id)
        if isinstance(source, str) and published_group(source) != group:
            task.id = task_id(published_group(source), str(task.metadata.get("index")), mode)
    groups = Counter(parse_task_id(task.id)[0] for task in dataset.tasks)
    dataset.population = {"suite": "mmir", "mode": dataset.meta.get("mode"), "file": dataset.source.name,
                          "questions": len(dataset.tasks), "groups": dict(sorted(groups.items()))}
