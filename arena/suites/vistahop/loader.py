"""VistaArena's public evaluator format (PROTOCOLS.md §1).

An annotation is a JSON list or JSON lines of items with `prompt` (chat
messages; the first user text is the question, `<image>` markers removed),
`reward_model.ground_truth` (a string or a list), `image` (paths relative to
the dataset root; only the first is used, as in the original), and optionally
`image_search_title_list` / `image_search_thumbnail_list` (stored reverse-image
results). A `datasets.json` maps names to `root`, `annotation`, `reward_fn`
(`em_score_mcq`, `llm_score`) and `input_template.arguments.{system_prompt,
format_instruction}`; an `annotation` that is a Parquet file is read by
`arena.suites.vistahop.parquet` (with the entry's optional `columns` mapping). Task
ids: the item's `id` when present, else a hash of its content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.task import Task

from arena.core.arena_tasks import check_paths, collect_tasks, content_id, first_record

from .parquet import parquet_dataset


def _question(prompt: Any, where: str) -> str:
    if isinstance(prompt, str):
        return prompt.replace("<image>", "").strip()
    if not isinstance(prompt, list):
        raise DatasetError(f"{where}: field prompt: must be a list of chat messages")
    for message in prompt:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            if isinstance(content, str):
                return content.replace("<image>", "").strip()
    raise DatasetError(f"{where}: field prompt: no user message with text")


def original_item_facts(item: dict[str, Any]) -> dict[str, Any]:
    """How the published loader (ahang0712/vistahop `evaluation/run_vistahop_eval.py` `load_datasets`) reads this
    item where the arena reads it differently, kept as `metadata["original"]` for `--protocol original`: the
    question is the first user message's content only when that content is a string (else empty), and an
    `image` that is not a list gives no image path, on which the original's sample fails (scored 0)."""
    facts: dict[str, Any] = {}
    prompt = item.get("prompt")
    if isinstance(prompt, list):
        user = next((m for m in prompt if isinstance(m, dict) and m.get("role") == "user"), None)
        content = user.get("content", "") if user is not None else ""
        facts["question"] = content.replace("<image>", "").strip() if isinstance(content, str) else ""
    if "image" in item and not isinstance(item["image"], list):
        facts["unplayable"] = ("field image is not a list; the published evaluator finds no image path for this "
                               "item, fails on it and scores it 0 (--protocol arena reads it)")
    return {"original": facts} if facts else {}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


# The kinds of problem the published loader (`load_datasets`) gets past where the arena refuses the file; they are
# recorded in `Dataset.meta["original_only"]` as [kind, where, message] (see `arena.core.dataset.refuse_original_only`).
MISSING_ANNOTATION = "datasets.json entry whose annotation file does not exist (dataset skipped)"
BROKEN_LINE = "JSON line that does not parse (line skipped)"
TRAILING_COMMA = "JSON line ending with a comma (read without it)"
BROKEN_LIST = "annotation JSON list that does not parse (dataset skipped)"
NO_GROUND_TRUTH = "row without reward_model.ground_truth (answer read as \"\")"


def item_to_task(item: dict[str, Any], where: str, reward_fn: list[str],
                 problems: list[list[str]] | None = None) -> Task:
    """A task from one item; a missing ground truth is refused, or, when `problems` is given, recorded there and
    read as the answer "" as the published loader reads it."""
    if not isinstance(item, dict):
        raise DatasetError(f"{where}: an item must be a JSON object")
    reward = item.get("reward_model")
    if not isinstance(reward, dict) or "ground_truth" not in reward:
        message = f"{where}: field reward_model.ground_truth: missing"
        if problems is None:
            raise DatasetError(message)
        problems.append([NO_GROUND_TRUTH, where, message])
        reward = {"ground_truth": [""]}
    answers = [str(a) for a in _as_list(reward["ground_truth"])]
    if not answers:
        raise DatasetError(f"{where}: field reward_model.ground_truth: empty")
    images = [str(p) for p in _as_list(item["image"] if "image" in item else item.get("images"))][:1]
    titles = _as_list(item.get("image_search_title_list"))
    thumbs = _as_list(item.get("image_search_thumbnail_list"))
    stored = [{"title": str(t), "thumbnail": str(thumbs[i]) if i < len(thumbs) and thumbs[i] else None}
              for i, t in enumerate(titles[:5])]
    mcq = "em_score_mcq" in reward_fn and "llm_score" not in reward_fn
    extra = item.get("extra_info")
    if not isinstance(extra, dict):
        extra = {}
    hops = item["hops"] if "hops" in item else extra.get("hops")
    path = extra.get("reasoning_path")
    evidence = [str(v) for v in path if v not in (None, "")] if isinstance(path, list) else []
    given_id = item.get("id")
    return Task(
        id=str(given_id) if given_id is not None else content_id(item, "va"),
        suite="vistahop",
        question=_question(item.get("prompt"), where),
        images=images,
        answers=answers,
        kind="mcq" if mcq else "open",
        level=item["level"] if "level" in item else extra.get("level"),
        hops=int(hops) if isinstance(hops, (int, float)) else None,
        category=item["category"] if "category" in item else extra.get("category"),
        metadata={"image_search": stored, "source_item": {k: v for k, v in item.items() if k != "prompt"},
                  **original_item_facts(item)},
        judge="mcq" if mcq else ("llm" if "llm_score" in reward_fn else None),
        evidence=list(dict.fromkeys(evidence)),
    )


def load_annotation(path: Path, root: Path, reward_fn: list[str],
                    problems: list[list[str]] | None = None) -> list[Task]:
    """The tasks of an annotation file; with `problems`, what only the published loader gets past is recorded
    there (broken JSON lines skipped, missing ground truths read as "") instead of refused."""
    bad: list[DatasetError] | None = None if problems is None else []
    tasks = collect_tasks(path, root, lambda item, where: item_to_task(item, where, reward_fn, problems), bad)
    lines = path.read_text(encoding="utf-8").splitlines() if bad else []
    for error in bad or []:
        where = str(error).split(": invalid JSON")[0]
        line = lines[int(where.rsplit(":", 1)[1]) - 1].strip()
        try:  # the published loader strips one trailing comma from each JSON line before parsing it
            record = json.loads(line[:-1]) if line.endswith(",") else None
        except json.JSONDecodeError:
            record = None
        if record is None:
            problems.append([BROKEN_LINE, where, str(error)])
            continue
        problems.append([TRAILING_COMMA, where, str(error)])
        task = item_to_task(record, where, reward_fn, problems)
        if any(t.id == task.id for t in tasks):
            raise DatasetError(f"{where}: field id: duplicate task id {task.id!r}")
        check_paths(task, root, where)
        tasks.append(task)
    return tasks


def original_warnings(problems: list[list[str]]) -> dict[str, Any]:
    """`original_only` problems and their `protocol_warnings` line under `original`: one per kind, with how many
    and where."""
    if not problems:
        return {}
    kinds: dict[str, list[str]] = {}
    for kind, where, _ in problems:
        kinds.setdefault(kind, []).append(where)
    lines = [f"{len(wheres)} {kind}, as the published loader does: {', '.join(wheres)}"
             for kind, wheres in kinds.items()]
    return {"original_only": problems, "protocol_warnings": {"original": "\n".join(lines)}}


def _is_annotation(path: Path) -> bool:
    if not path.is_file() or path.suffix not in (".json", ".jsonl") or path.name == "datasets.json":
        return False
    record = first_record(path)
    return isinstance(record, dict) and "prompt" in record and "reward_model" in record


def _is_datasets_json(path: Path) -> bool:
    if not path.is_file() or path.suffix != ".json":
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and bool(data) and all(
        isinstance(v, dict) and "annotation" in v for v in data.values())


def load_vistaarena(path: Path, root: Path | None = None) -> list[Dataset]:
    base = (root or path.parent).resolve()
    corpus = base / "corpus"
    problems: list[list[str]] = []
    return [Dataset(name=path.stem, root=base, tasks=load_annotation(path, base, [], problems), source=path,
                    corpus=corpus if (corpus / "docs.jsonl").is_file() else None, meta=original_warnings(problems))]


VISTAARENA_LOADER = Loader("vistaarena", detect=_is_annotation, load=load_vistaarena)


def _check_entry(entry: Any, where: str) -> None:
    """A datasets.json entry's fields have the types the loader reads (errors name the field)."""
    for field in ("annotation", "root"):
        value = entry.get(field)
        if (field == "annotation" or value is not None) and (not isinstance(value, str) or "\x00" in value):
            raise DatasetError(f"{where}: field {field}: must be a path string, got {value!r}")
    template = entry.get("input_template")
    if template is not None and not isinstance(template, dict):
        raise DatasetError(f"{where}: field input_template: must be an object, got {type(template).__name__}")
    arguments = (template or {}).get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise DatasetError(f"{where}: field input_template.arguments: must be an object, "
                           f"got {type(arguments).__name__}")
    for key, value in (arguments or {}).items():
        if key in ("system_prompt", "format_instruction") and value is not None and not isinstance(value, str):
            raise DatasetError(f"{where}: field input_template.arguments.{key}: must be a string, "
                               f"got {type(value).__name__}")


def load_datasets_json(path: Path, root: Path | None = None) -> list[Dataset]:
    config = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for name, entry in config.items():
        where = f"{path}: dataset {name!r}"
        _check_entry(entry, where)
        base = (root or (path.parent / entry.get("root", "."))).resolve()
        annotation = Path(entry["annotation"])
        candidates = [annotation] if annotation.is_absolute() else [base / annotation, path.parent / annotation]
        found = next((c for c in candidates if c.is_file()), None)
        reward_fn = [str(r) for r in _as_list(entry.get("reward_fn"))]
        if found is None:
            message = f"{where}: field annotation: {entry['annotation']!r} not found under {base}"
            # skipped before its scoring methods are checked, as in the published loader
            out.append(Dataset(name=name, root=base, tasks=[], source=path, reward_fn=reward_fn or ["em_score_mcq"],
                               meta=original_warnings([[MISSING_ANNOTATION, f"{path}: dataset {name!r}", message]])))
            continue
        arguments = (entry.get("input_template") or {}).get("arguments") or {}
        corpus = base / "corpus"
        world = base if (base / "world.json").is_file() else None
        if found.suffix.lower() in (".parquet", ".pq"):
            columns = entry.get("columns")
            if columns is not None and not isinstance(columns, dict):
                raise DatasetError(f"{where}: field columns: must map roles to column names")
            out.append(parquet_dataset(found, base, name, columns=columns, reward_fn=reward_fn, world=world,
                                       corpus=corpus if (corpus / "docs.jsonl").is_file() else None,
                                       system_prompt=arguments.get("system_prompt"),
                                       format_instruction=arguments.get("format_instruction")))
            continue
        problems: list[list[str]] = []
        try:
            tasks = load_annotation(found, base, reward_fn, problems)
        except DatasetError as exc:
            if first_record(found) is not None or not found.read_text(encoding="utf-8").lstrip().startswith("["):
                raise
            problems, tasks = [[BROKEN_LIST, str(found), str(exc)]], []
        out.append(Dataset(name=name, root=base, tasks=tasks, source=found,
                           world=world, corpus=corpus if (corpus / "docs.jsonl").is_file() else None,
                           system_prompt=arguments.get("system_prompt"),
                           format_instruction=arguments.get("format_instruction"), reward_fn=reward_fn,
                           meta={"unused_reward_fn": [str(r) for r in _as_list(entry.get("unused_reward_fn"))],
                                 **original_warnings(problems)}))
    return out


VISTAARENA_DATASETS_LOADER = Loader("vistaarena-datasets", detect=_is_datasets_json, load=load_datasets_json)
