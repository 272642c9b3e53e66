"""The arena's own formats: Task JSON lines (or a JSON list), and world directories."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import ValidationError

from arena.core.dataset import Dataset, DatasetError, register_loader
from arena.core.paths import PathEscapeError, resolve_inside
from arena.core.task import Task
from arena.core.world import is_world, read_world


def content_id(record: dict[str, Any], prefix: str = "t") -> str:
    """A stable id from a record's content (not its position in the file)."""
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    return f"{prefix}-{hashlib.sha256(canonical.encode()).hexdigest()[:12]}"


def iter_records(path: Path, bad: list[DatasetError] | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, record) from a JSON list or JSON lines; errors name file and line (into `bad` if given)."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        for i, item in enumerate(data):
            yield i + 1, item
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:  # a broken JSON line: refused, or kept in `bad` and skipped
            error = DatasetError(f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})")
            if bad is None:
                raise error from None
            bad.append(error)


def first_record(path: Path) -> Any:
    """The first record of a JSON / JSON-lines file, or None when it is not one."""
    try:
        first = next(iter_records(path), None)
    except (DatasetError, OSError, UnicodeDecodeError):
        return None
    return first[1] if first else None


def check_paths(task: Task, root: Path, where: str) -> None:
    paths = [(f"images[{i}]", p) for i, p in enumerate(task.images)]
    paths += [(f"metadata.image_search[{i}].thumbnail", r.get("thumbnail")) for i, r in
              enumerate(task.metadata.get("image_search") or []) if isinstance(r, dict) and r.get("thumbnail")]
    for field, rel in paths:
        try:
            resolve_inside(root, rel, where=f"{where}: field {field}")
        except PathEscapeError as exc:
            raise DatasetError(str(exc)) from None


def collect_tasks(path: Path, root: Path, to_task: Callable[[Any, str], Task], bad: list | None = None) -> list[Task]:
    """Tasks from every record of a file, with unique ids and paths inside `root`; errors name file and line."""
    tasks, seen, name = [], set(), str(path)
    for lineno, record in iter_records(path, bad):
        where = f"{name}:{lineno}"
        try:
            task = to_task(record, where)
        except ValidationError as exc:  # a loader's Task(...) with a field of the wrong type
            err = exc.errors()[0]
            raise DatasetError(f"{where}: field {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
        if task.id in seen:
            raise DatasetError(f"{where}: field id: duplicate task id {task.id!r}")
        seen.add(task.id)
        check_paths(task, root, where)
        tasks.append(task)
    return tasks


def record_to_task(record: Any, where: str) -> Task:
    """An arena Task record; its id defaults to a hash of its content."""
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: a task must be a JSON object")
    return Task.model_validate({"id": content_id(record), **record})  # collect_tasks names a field it refuses


def load_task_file(path: Path, root: Path) -> list[Task]:
    return collect_tasks(path, root, record_to_task)


def chain_evidence(task: Task) -> Task:
    """A generated world's task with `evidence` set from its gold chain: every hop's target (the seed is read
    from the image, so it is not evidence a tool must retrieve)."""
    if task.evidence:
        return task
    targets = [str(hop["target"]) for chain in task.metadata.get("gold_chain") or [] if isinstance(chain, dict)
               for hop in chain.get("hops") or [] if isinstance(hop, dict) and hop.get("target") not in (None, "")]
    return task.model_copy(update={"evidence": list(dict.fromkeys(targets))}) if targets else task


def _is_task_file(path: Path) -> bool:
    if not path.is_file() or path.suffix not in (".json", ".jsonl"):
        return False
    record = first_record(path)
    return isinstance(record, dict) and "question" in record and "answers" in record


@register_loader("world", detect=is_world, published=False)
def load_world(path: Path, root: Path | None = None) -> list[Dataset]:
    info = read_world(path)
    tasks_file = path / "tasks.jsonl"
    if not tasks_file.is_file():
        raise DatasetError(f"{path}: world has no tasks.jsonl")
    corpus = path / "corpus"
    tasks = [chain_evidence(t) for t in load_task_file(tasks_file, path.resolve())]
    return [Dataset(name=info.name, root=path.resolve(), tasks=tasks,
                    source=tasks_file, world=path.resolve(), corpus=corpus.resolve() if corpus.is_dir() else None,
                    meta={"world": info.model_dump()})]


@register_loader("tasks", detect=_is_task_file, published=False)
def load_tasks(path: Path, root: Path | None = None) -> list[Dataset]:
    base = (root or path.parent).resolve()
    corpus = base / "corpus"
    return [Dataset(name=path.stem, root=base, tasks=load_task_file(path, base), source=path,
                    corpus=corpus if (corpus / "docs.jsonl").is_file() else None)]
