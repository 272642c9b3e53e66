"""MM-CondChain (PROTOCOLS.md §2): deep chains of visual conditions, each item a True-path and a False-path task.

Public format: `natural.jsonl`, `chart.jsonl`, `gui.jsonl` (in a `data/` folder
or given directly), one item per line with `id`, `domain`, `image`,
`true_path` {`full_instruction`, `pseudocode`, `correct_answer`} and
`false_path` {`diverge_node`, `full_instruction`, `pseudocode`,
`correct_answer`}. Image paths are relative to the dataset root: the parent of
`data/` (the public layout), else the file's folder. For `gui` items `image` is a
trajectory folder; its frames (png/jpg/jpeg) are ordered by the **number in
their file name** (`x_2.png` before `x_10.png`; the last number of the stem,
then the name), not alphabetically as in the original loader, which misorders
trajectories of ten or more frames.

Each item becomes two tasks, `<id>:true` and `<id>:false` (metadata `path`
true|false, `domain`, `pseudocode`, `diverge_node`, `pair`, `frames` for GUI),
category = domain, kind `boxed`, judged by `condchain`. The question is the
original evaluation prompt around the path's instruction; GUI items add one
line saying the images are the trajectory's frames in order (the original
labels each frame "Image i:", which a single user message of images cannot).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.paths import PathEscapeError, resolve_inside
from arena.core.task import Task
from arena.core.world import is_world

SUITE = "condchain"
DOMAINS = ("natural", "chart", "gui")
PATHS = ("true", "false")
FRAME_SUFFIXES = {".png", ".jpg", ".jpeg"}

PROMPT = """Please answer the following question based on the image(s):
{instruction}

Please select the correct option from all choices.
Output your answer in the format: \\boxed{{letter-number}}
Replace letter-number with the option you choose. If you believe there is no correct answer, output \\boxed{{None}}.
"""
FRAMES_NOTE = "The {count} images are the frames of a GUI trajectory, in order (Image 1 to Image {count}).\n\n"
BROWSE_NOTE = ("The images for this question are the {count} frames of a GUI trajectory. View them one at a time with "
               "the browser tool: action \"frame\" with index 1 to {count}, or \"next\" / \"prev\".\n\n")

_BOXED = re.compile(r"\\boxed\s*\{\s*([^}]*)\s*\}")
_LABEL = re.compile(r"\b([A-Z]\d+|None)\b")


def parse_boxed(text: str | None) -> str:
    """MM-CondChain's answer parser: the last `\\boxed{...}` (spaces removed; none/null/nan/empty mean
    "None"), else the last `[A-Z]<digits>` or `None` token, else "None"."""
    t = text or ""
    boxed = _BOXED.findall(t)
    if boxed:
        answer = boxed[-1].strip().replace(" ", "")
        return "None" if answer.lower() in ("none", "null", "nan", "") else answer
    labels = _LABEL.findall(t)
    if labels:
        answer = labels[-1].strip().replace(" ", "")
        return "None" if answer.lower() == "none" else answer
    return "None"


def build_question(instruction: str, frames: int = 0, browse: bool = False) -> str:
    prefix = ""
    if frames:
        prefix = (BROWSE_NOTE if browse else FRAMES_NOTE).format(count=frames)
    return prefix + PROMPT.format(instruction=instruction)


def parse_task_id(value: str) -> tuple[str, str]:
    """(item id, path) of a task id `<id>:true` / `<id>:false`; path "" when it is neither."""
    head, _, path = value.rpartition(":")
    return (head, path) if path in PATHS else (value, "")


def frame_sort_key(path: Path) -> tuple[int, int, str]:
    numbers = re.findall(r"\d+", path.stem)
    return (0, int(numbers[-1]), path.name) if numbers else (1, 0, path.name)


def trajectory_frames(root: Path, folder: str, where: str) -> list[str]:
    """Frame paths (relative to root) of a GUI trajectory folder, in the order of the numbers in their names."""
    try:
        path = resolve_inside(root, folder, where=where)
    except PathEscapeError as exc:
        raise DatasetError(str(exc)) from None
    if not path.is_dir():
        raise DatasetError(f"{where}: trajectory folder {folder!r} not found under {root}")
    frames = sorted((p for p in path.iterdir() if p.is_file() and p.suffix.lower() in FRAME_SUFFIXES),
                    key=frame_sort_key)
    if not frames:
        raise DatasetError(f"{where}: trajectory folder {folder!r} has no png/jpg frames")
    base = root.resolve()
    return [p.resolve().relative_to(base).as_posix() for p in frames]


def _field(record: dict[str, Any], name: str, where: str, kind: type = str) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        raise DatasetError(f"{where}: field {name}: missing or not a {kind.__name__}")
    return value


def tasks_from_record(record: dict[str, Any], index: int, root: Path, where: str, default_domain: str,
                      browse_gui: bool = False) -> list[Task]:
    item_id = str(record.get("id") or (f"{index}" if record.get("seed") is None else f"{index}_seed{record['seed']}"))
    domain = str(record.get("domain") or default_domain)
    image = record.get("image") or record.get("image_path")
    if not isinstance(image, str) or not image:
        raise DatasetError(f"{where}: field image: missing")
    frames: list[str] = []
    if domain == "gui":
        frames = trajectory_frames(root, image, f"{where}: field image")
        images = [] if browse_gui else frames
    else:
        try:
            resolve_inside(root, image, where=f"{where}: field image")
        except PathEscapeError as exc:
            raise DatasetError(str(exc)) from None
        images = [image]
    tasks = []
    for path in PATHS:
        branch = _field(record, f"{path}_path", where, dict)
        instruction = _field(branch, "full_instruction", f"{where}: {path}_path", str)
        answer = _field(branch, "correct_answer", f"{where}: {path}_path", str)
        metadata: dict[str, Any] = {"path": path, "domain": domain, "pair": item_id,
                                    "pseudocode": branch.get("pseudocode", ""), "image": image}
        if path == "false":
            metadata["diverge_node"] = branch.get("diverge_node")
        if frames:
            metadata["frames"] = frames
        tasks.append(Task(id=f"{item_id}:{path}", suite=SUITE,
                          question=build_question(instruction, len(frames), browse_gui and bool(frames)),
                          images=images, answers=[answer], kind="boxed", category=domain,
                          judge=SUITE, metadata=metadata))
    return tasks


def load_file(path: Path, root: Path) -> list[Task]:
    default_domain = path.stem if path.stem in DOMAINS else ""
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("["):
        try:
            records = list(enumerate(json.loads(text), 1))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    else:
        records = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    tasks, seen = [], set()
    for index, (lineno, record) in enumerate(records):
        where = f"{path}:{lineno}"
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: an item must be a JSON object")
        for task in tasks_from_record(record, index, root, where, default_domain):
            if task.id in seen:
                raise DatasetError(f"{where}: field id: duplicate item id {task.id.rsplit(':', 1)[0]!r}")
            seen.add(task.id)
            tasks.append(task)
    return tasks


def _data_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    for folder in (path / "data", path):
        files = [folder / f"{d}.jsonl" for d in DOMAINS if (folder / f"{d}.jsonl").is_file()]
        if files:
            return files
    return []


def _looks_like_item(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        record = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and "true_path" in record and "false_path" in record


def detect(path: Path) -> bool:
    if path.is_dir():
        return not is_world(path) and bool(_data_files(path))
    return path.suffix == ".jsonl" and _looks_like_item(path)


def default_root(file: Path) -> Path:
    return file.parent.parent if file.parent.name == "data" else file.parent


def load(path: Path, root: Path | None = None) -> list[Dataset]:
    files = _data_files(path)
    if not files:
        raise DatasetError(f"{path}: no natural.jsonl, chart.jsonl or gui.jsonl")
    base = (root or (path if path.is_dir() else default_root(path))).resolve()
    tasks = [task for file in files for task in load_file(file, base)]
    name = "condchain" if path.is_dir() else f"condchain-{path.stem}"
    return [Dataset(name=name, root=base, tasks=tasks, source=files[0] if len(files) == 1 else path,
                    meta={"suite": SUITE, **frame_order_warnings(tasks)})]


CONDCHAIN_LOADER = Loader("condchain", detect=detect, load=load)


def frame_order_warnings(tasks: list[Task]) -> dict[str, Any]:
    """`protocol_warnings` when some GUI trajectory's frames come in a different order under the original's
    file-name sort than under the arena's numeric sort (a run prints the one of its protocol)."""
    differ = sorted({str(t.metadata["pair"]) for t in tasks
                     if t.metadata.get("frames") and sorted(t.metadata["frames"]) != t.metadata["frames"]})
    if not differ:
        return {}
    which = f"{len(differ)} GUI trajectories (e.g. item {differ[0]})"
    return {"protocol_warnings": {
        "original": f"{which} have frames whose file-name order (used: the published loader's) differs from the "
                    "order of the numbers in their names (--protocol arena)",
        "arena": f"{which} have frames whose numeric order (used) differs from the published loader's file-name "
                 "order (--protocol original)"}}
