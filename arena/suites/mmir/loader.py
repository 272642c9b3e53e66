"""MMIR (PROTOCOLS.md §3): find the element(s) of a layout-rich artifact that carry an injected inconsistency.

Public format: a directory with `questions_open.json` and/or `questions_mcq.json`
(JSON lists), optionally `metadata.jsonl`, and `images/`. Per item the loader
reads `gt_ans` (a list of 1–2 element ids, ints), `source` ("web page",
"poster" or an office kind), `descs` (the option lines, one string or a list),
the image (`image`, `image_path`, `img_path`, `file_name` or `image_file`; else
`file_name`/`image` of the same line of `metadata.jsonl`; a path relative to the
directory, or to its `images/`), and optionally `question`/`prompt`, `category`.
Each file becomes one dataset (`mmir-open`, `mmir-mcq`) of `element_ids` tasks.

Task ids carry what the scoring groups by, because an episode keeps only the
task's id, answers and options: `<group>-<name>:<mode>`, where group is `web`
("web page"), `poster`, or `office` (anything else, as in MMIR's
`calculate_score.py`) and mode is `mcq` or `open`; public items are named by
their index in the file (`web-12:mcq`). Answers are the ground-truth ids as
strings; options are the option lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.paths import PathEscapeError, resolve_inside
from arena.core.task import Task
from arena.core.world import is_world

SUITE = "mmir"
QUESTION_FILES = {"mcq": "questions_mcq.json", "open": "questions_open.json"}
CATEGORIES = ["Factual Contradiction", "Identity Misattribution", "Contextual Mismatch",
              "Quantitative Discrepancy", "Temporal/Spatial Incoherence"]
IMAGE_FIELDS = ("image", "image_path", "img_path", "file_name", "image_file")

OPEN_PROMPT = """This is {article} {artifact}. An inconsistency has been injected into it: one element, or a pair of \
elements, conflicts semantically with the rest of the artifact. The kinds of inconsistency are factual contradiction, \
identity misattribution, contextual mismatch, quantitative discrepancy, and temporal/spatial incoherence.

Identify which element(s) pose the semantic inconsistency.

Answer in this format:
<ans>the inconsistent element(s), described precisely enough to locate them</ans>
<reason>why they are inconsistent</reason>"""

MCQ_PROMPT = """This is {article} {artifact}. An inconsistency has been injected into it: one element, or a pair of \
elements, conflicts semantically with the rest of the artifact. The kinds of inconsistency are factual contradiction, \
identity misattribution, contextual mismatch, quantitative discrepancy, and temporal/spatial incoherence.

Identify which element(s) pose the semantic inconsistency. The elements of the artifact are:
{options}

Answer with the id of one element, or the ids of two elements, in this format:
<ans>"[ID1]"</ans> or <ans>"[ID1],[ID2]"</ans>
<reason>why they are inconsistent</reason>"""


def source_group(source: str) -> str:
    """MMIR's reporting groups: "web page" -> web, "poster" -> poster, anything else -> office."""
    value = source.strip().lower()
    if value in ("web page", "web", "webpage"):
        return "web"
    if value == "poster":
        return "poster"
    return "office"


def task_id(group: str, name: str, mode: str) -> str:
    return f"{group}-{name}:{mode}"


def parse_task_id(value: str) -> tuple[str, str]:
    """(source group, mode) of an MMIR task id `<group>-<name>:<mode>`."""
    head, _, mode = value.rpartition(":")
    group = head.split("-", 1)[0] if head else ""
    return group, (mode if mode in QUESTION_FILES else "")


def artifact_phrase(source: str) -> tuple[str, str]:
    kind = source.strip().lower() or "artifact"
    noun = {"web page": "web page", "poster": "poster"}.get(kind, kind)
    return ("an" if noun[:1] in "aeiou" else "a"), noun


def build_question(mode: str, source: str, options: list[str]) -> str:
    article, artifact = artifact_phrase(source)
    if mode == "mcq":
        return MCQ_PROMPT.format(article=article, artifact=artifact, options="\n".join(options))
    return OPEN_PROMPT.format(article=article, artifact=artifact)


def ground_truth(value: Any, where: str) -> list[int]:
    """MMIR's `gt_ans`: a list of one or two distinct element ids."""
    if not isinstance(value, list) or not 1 <= len(value) <= 2:
        raise DatasetError(f"{where}: field gt_ans: must be a list of 1 or 2 element ids, got {value!r}")
    ids = []
    for item in value:
        if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit())):
            raise DatasetError(f"{where}: field gt_ans: {item!r} is not an integer element id")
        ids.append(int(item))
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{where}: field gt_ans: repeated id in {value!r}")
    return ids


def option_lines(descs: Any, where: str) -> list[str]:
    if isinstance(descs, str):
        return [line.strip() for line in descs.splitlines() if line.strip()]
    if isinstance(descs, list) and all(isinstance(d, str) for d in descs):
        return [d.strip() for d in descs if d.strip()]
    raise DatasetError(f"{where}: field descs: must be a string of option lines or a list of strings")


def _metadata_rows(folder: Path) -> list[dict[str, Any]]:
    path = folder / "metadata.jsonl"
    if not path.is_file():
        return []
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
        rows.append(row if isinstance(row, dict) else {})
    return rows


def _image_path(item: dict[str, Any], meta: dict[str, Any], root: Path, where: str) -> str:
    value = next((item[k] for k in IMAGE_FIELDS if isinstance(item.get(k), str) and item[k]), None)
    field = next((k for k in IMAGE_FIELDS if isinstance(item.get(k), str) and item[k]), None)
    if value is None:
        value = next((meta[k] for k in ("file_name", "image") if isinstance(meta.get(k), str) and meta[k]), None)
        field = "metadata.jsonl file_name"
    if value is None:
        raise DatasetError(f"{where}: field image: no image path (looked for {', '.join(IMAGE_FIELDS)} "
                           f"and metadata.jsonl file_name)")
    candidates = [value, f"images/{value}"]
    for rel in candidates:
        try:
            path = resolve_inside(root, rel, where=f"{where}: field {field}")
        except PathEscapeError as exc:
            raise DatasetError(str(exc)) from None
        if path.is_file():
            return path.relative_to(root.resolve()).as_posix()
    raise DatasetError(f"{where}: field {field}: image {value!r} not found in {root} or {root / 'images'}")


def load_question_file(path: Path, mode: str, root: Path) -> list[Task]:
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(items, list):
        raise DatasetError(f"{path}: must be a JSON list of questions")
    metadata = _metadata_rows(path.parent)
    tasks = []
    for i, item in enumerate(items):
        where = f"{path}: item {i}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: a question must be a JSON object")
        gt = ground_truth(item.get("gt_ans"), where)
        source = item.get("source")
        if not isinstance(source, str) or not source.strip():
            raise DatasetError(f"{where}: field source: missing (\"web page\", \"poster\" or an office kind)")
        options = option_lines(item.get("descs", ""), where)
        meta = metadata[i] if len(metadata) == len(items) else {}
        image = _image_path(item, meta, root, where)
        question = next((item[k] for k in ("question", "prompt") if isinstance(item.get(k), str) and item[k]), None)
        category = item.get("category") or meta.get("category") or meta.get("error_category")
        extras = {k: v for k, v in item.items() if k not in ("descs", "gt_ans", "question", "prompt")}
        tasks.append(Task(
            id=task_id(source_group(source), str(i), mode), suite=SUITE,
            question=question or build_question(mode, source, options), images=[image],
            answers=[str(g) for g in gt], kind="element_ids", options=options,
            category=str(category) if category else None, judge=SUITE,
            metadata={"mode": mode, "source": source, "gt_ans": gt, "index": i, **extras,
                      **({"descs": item["descs"]} if isinstance(item.get("descs"), str) else {})},
        ))
    return tasks


def _question_files(path: Path) -> list[tuple[str, Path]]:
    if path.is_dir():
        return [(mode, path / name) for mode, name in QUESTION_FILES.items() if (path / name).is_file()]
    return [(mode, path) for mode, name in QUESTION_FILES.items() if path.name == name]


def detect(path: Path) -> bool:
    if path.is_dir() and is_world(path):
        return False
    return bool(_question_files(path))


def load(path: Path, root: Path | None = None) -> list[Dataset]:
    base = (root or (path if path.is_dir() else path.parent)).resolve()
    datasets = []
    for mode, file in _question_files(path):
        tasks = load_question_file(file, mode, base)
        datasets.append(Dataset(name=f"mmir-{mode}", root=base, tasks=tasks, source=file,
                                meta={"suite": SUITE, "mode": mode}))
    if not datasets:
        raise DatasetError(f"{path}: no {' or '.join(QUESTION_FILES.values())}")
    return datasets


MMIR_LOADER = Loader("mmir", detect=detect, load=load)
