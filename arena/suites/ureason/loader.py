"""UReason (PROTOCOLS.md §5): reasoning-driven image generation in three settings, and its public item format.

Public files are JSON lines `{id, prompt, expect_en, category}`, one file per
family: `{family}.jsonl` asks the model to reason and write
`refined prompt: ...` before generating (settings 2 and 3), `direct_{family}.jsonl`
holds the same instances with a plain generation instruction (setting 1).

Each instance becomes one arena task per setting, so a single run holds all
three and the metrics can report the gains Δ1→2 and Δ2→3:
`level` is the setting (`direct`, `guided`, `decontext`), `category` the family,
`answers` = [expect_en], kind `image`; ids are `{family}-{id}-{setting}`. A
direct file gives `direct` tasks, any other file `guided` and `decontext` tasks
(same question; the generation agent decides what conditions the image:
the whole reasoning context for `guided`, only the extracted refined prompt for
`decontext`). The path may be one file or a folder of such files.
"""

from __future__ import annotations

import re
from pathlib import Path

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.task import Task
from arena.core.prompt_book import register_template
from arena.core.world import is_world

from arena.core.arena_tasks import first_record, iter_records

FAMILIES = ("code", "arithmetic", "spatial", "attribute", "text")
SETTINGS = ("direct", "guided", "decontext")
SETTING_NUMBERS = {"direct": 1, "guided": 2, "decontext": 3}

# UReason's extract_thought.py: text after the last marker; the whole text when there is none.
REFINED_PROMPT_MARKER = re.compile(
    r"(?:\*\*|)\b(?:refined\s+prompt|the\s+refined\s+prompt|final\s+scene\s+prompt|final\s+prompt|prompt)\b"
    r"(?:\s+is|):*", re.IGNORECASE)

GENERATION_INSTRUCTION = (
    "Create the image with the generation tool you have: `render` draws the SVG or HTML markup you write, "
    "`generate_image` sends a text prompt to an image model. When the image exists, reply <answer>done</answer>."
)
GENERATION_TEMPLATE = "ureason.agent.instruction"  # a prompts file may replace the text (arena.core.prompt_book)
register_template(GENERATION_TEMPLATE, GENERATION_INSTRUCTION, kind="agent")


def extract_refined_prompt(text: str) -> tuple[str, bool]:
    """(refined prompt, found): the text after the last "refined prompt:" / "final scene prompt:" / "prompt:"
    marker, with `</think>` and `<image_start>` removed; the whole text (found False) when no marker occurs."""
    matches = list(REFINED_PROMPT_MARKER.finditer(text))
    if matches:
        extracted, found = text[matches[-1].end():].strip().lstrip("*").strip(), True
    else:
        extracted, found = text.strip(), False
    return extracted.replace("</think>", "").replace("<image_start>", "").strip(), found


def ureason_task(family: str, item_id: str, prompt: str, criterion: str, setting: str,
                 metadata: dict | None = None) -> Task:
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(SETTINGS)}, got {setting!r}")
    return Task(id=f"{family}-{item_id}-{setting}", suite="ureason", question=prompt, answers=[criterion],
                kind="image", category=family, level=setting,
                metadata={"ureason_id": item_id, "family": family, "setting": setting,
                          **({"requires_agent": "image_gen"} if setting == "decontext" else {}), **(metadata or {})},
                judge="ureason-vlm")


def load_file(path: Path) -> list[Task]:
    direct = path.name.startswith("direct_")
    settings = ("direct",) if direct else ("guided", "decontext")
    tasks = []
    for lineno, item in iter_records(path):
        where = f"{path}:{lineno}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: an item must be a JSON object")
        for field in ("id", "prompt", "expect_en"):
            if item.get(field) in (None, ""):
                raise DatasetError(f"{where}: field {field}: missing")
        if not isinstance(item["prompt"], str) or not isinstance(item["expect_en"], str):
            raise DatasetError(f"{where}: fields prompt and expect_en must be strings")
        family = str(item.get("category") or path.stem.removeprefix("direct_")).strip().lower()
        extra = {"source_file": path.name, "source_line": lineno}
        if "expect_zh" in item:
            extra["expect_zh"] = item["expect_zh"]
        for setting in settings:
            tasks.append(ureason_task(family, str(item["id"]), item["prompt"], item["expect_en"], setting, extra))
    return tasks


def _is_item_file(path: Path) -> bool:
    if not path.is_file() or path.suffix != ".jsonl":
        return False
    record = first_record(path)
    return isinstance(record, dict) and {"prompt", "expect_en"} <= set(record)


def _item_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if _is_item_file(path) else []
    if not path.is_dir() or is_world(path):
        return []
    return sorted(p for p in path.glob("*.jsonl") if _is_item_file(p))


def load_ureason(path: Path, root: Path | None = None) -> list[Dataset]:
    """UReason item files (one file, or every such `.jsonl` in a folder) as one dataset."""
    tasks, seen = [], {}
    for file in _item_files(path):
        for task in load_file(file):
            if task.id in seen:
                raise DatasetError(f"{file}:{task.metadata['source_line']}: field id: task {task.id!r} "
                                   f"already comes from {seen[task.id]}")
            seen[task.id] = f"{file}:{task.metadata['source_line']}"
            tasks.append(task)
    if not tasks:
        raise DatasetError(f"{path}: no UReason items ({{id, prompt, expect_en, category}} JSON lines)")
    base = (root or (path if path.is_dir() else path.parent)).resolve()
    return [Dataset(name=path.stem, root=base, tasks=tasks, source=path,
                    format_instruction=GENERATION_INSTRUCTION, format_template=GENERATION_TEMPLATE)]


UREASON_LOADER = Loader("ureason", detect=lambda path: bool(_item_files(path)), load=load_ureason)
