"""CARV (PROTOCOLS.md §4): compositional visual analogies, their scene states and the public item format.

A scene state assigns one value to each of the five properties of the paper
(`subject_number`, `subject`, `spatial_relation`, `object_color`, `object`). An
image is named by its state's stem `{number}_{subject}_{position}_{color}_{object}`
(multi-word subjects joined by `-`; `_` is accepted when reading). An atomic
transformation is `(property, old, new)`; a pair of images defines the set of
atomic transformations between them, and compositional items combine two such
sets with Union, Intersection or Difference. The answer is a caption of the
resulting image, or "No resulting image." when the combined set is empty.

Public items: `context_image` (3 stems for single-step, 5 for compositional:
`I1, I1', I2, I2', Iq`) and `label` (the answer stem; its image file, when present, is the task's
ground-truth image, `reference_images`, for the paper's judge). The operation and setting
come from item fields when present (`operation`/`op`, `setting`/`source`), else
from tokens of the file name, else they are inferred from the stems (Shared
Source when `I1 = I2 = Iq`; the operation whose result equals `T(Iq, Ia)` when
exactly one does).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.task import Task

from arena.core.arena_tasks import collect_tasks, content_id, first_record

PROPERTIES = ("subject_number", "subject", "spatial_relation", "object_color", "object")
NUMBERS = ("one", "two")
SUBJECTS = ("bottle", "mug", "bowl", "book", "knife", "scissors", "spatula", "toilet-paper", "phone")
RELATIONS = ("on", "under", "left", "right")
COLORS = ("wood", "red", "blue")
OBJECTS = ("table", "chair")
VALUES: dict[str, tuple[str, ...]] = {
    "subject_number": NUMBERS, "subject": SUBJECTS, "spatial_relation": RELATIONS,
    "object_color": COLORS, "object": OBJECTS,
}
OPERATIONS = ("union", "intersection", "difference")
NO_RESULT = "No resulting image."

_NOUNS = {
    "bottle": ("bottle", "bottles"), "mug": ("mug", "mugs"), "bowl": ("bowl", "bowls"), "book": ("book", "books"),
    "knife": ("knife", "knives"), "scissors": ("pair of scissors", "pairs of scissors"),
    "spatula": ("spatula", "spatulas"), "toilet-paper": ("roll of toilet paper", "rolls of toilet paper"),
    "phone": ("phone", "phones"),
}
_RELATION_PHRASES = {"on": "on", "under": "under", "left": "to the left of", "right": "to the right of"}
_COLOR_WORDS = {"wood": "wooden", "red": "red", "blue": "blue"}
_STEM_RELATIONS = {"on": "on", "under": "under", "below": "under", "left": "left", "right": "right"}


@dataclass(frozen=True, order=True)
class State:
    """One scene: how many subjects, which, where relative to the furniture, and the furniture's colour and kind."""

    subject_number: str
    subject: str
    spatial_relation: str
    object_color: str
    object: str

    def __post_init__(self) -> None:
        for prop in PROPERTIES:
            if getattr(self, prop) not in VALUES[prop]:
                raise ValueError(f"{prop} must be one of {', '.join(VALUES[prop])}, got {getattr(self, prop)!r}")

    @property
    def stem(self) -> str:
        return "_".join(getattr(self, p) for p in PROPERTIES)

    @property
    def caption(self) -> str:
        singular, plural = _NOUNS[self.subject]
        noun = singular if self.subject_number == "one" else plural
        return (f"{self.subject_number.capitalize()} {noun} {_RELATION_PHRASES[self.spatial_relation]} "
                f"a {_COLOR_WORDS[self.object_color]} {self.object}.")

    def get(self, prop: str) -> str:
        return getattr(self, prop)

    def with_values(self, values: dict[str, str]) -> "State":
        return replace(self, **values)

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def parse_stem(stem: str) -> State:
    """The state a stem names; ValueError says what is wrong with it."""
    name = Path(stem).stem if Path(stem).suffix.lower() in (".png", ".jpg", ".jpeg", ".webp") else stem
    tokens = [t for t in name.strip().lower().split("_") if t]
    if len(tokens) < 5:
        raise ValueError(f"stem {stem!r} needs number_subject_position_color_object")
    number, color, obj, middle = tokens[0], tokens[-2], tokens[-1], tokens[1:-2]
    at = max((i for i, t in enumerate(middle) if t in _STEM_RELATIONS), default=None)
    if at is None or at == 0:
        raise ValueError(f"stem {stem!r} has no position among {', '.join(RELATIONS)}")
    subject = "-".join(middle[:at]).replace("_", "-")
    subject = {"toilet-papers": "toilet-paper", "cup": "mug", "knives": "knife"}.get(subject, subject)
    if subject.endswith("s") and subject[:-1] in SUBJECTS:
        subject = subject[:-1]
    return State(number, subject, _STEM_RELATIONS[middle[at]], color, obj)


Atomic = tuple[str, str, str]


def transformation(before: State, after: State) -> frozenset[Atomic]:
    """T(I, I'): the atomic transformations `(property, old, new)` between two states (paper, Eq. 1)."""
    return frozenset((p, before.get(p), after.get(p)) for p in PROPERTIES if before.get(p) != after.get(p))


def apply(transform: Iterable[Atomic], state: State) -> State:
    """The state after applying every atomic transformation; ValueError when one does not fit the state."""
    values: dict[str, str] = {}
    for prop, old, new in sorted(transform):
        if state.get(prop) != old:
            raise ValueError(f"cannot apply ({prop}: {old} -> {new}) to a state whose {prop} is {state.get(prop)}")
        if prop in values:
            raise ValueError(f"two transformations change {prop}")
        values[prop] = new
    return state.with_values(values)


def compose(operation: str, t1: frozenset[Atomic], t2: frozenset[Atomic]) -> frozenset[Atomic]:
    if operation == "union":
        return t1 | t2
    if operation == "intersection":
        return t1 & t2
    if operation == "difference":
        return t1 - t2
    raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")


def answer_caption(state: State | None) -> str:
    return NO_RESULT if state is None else state.caption


def transformation_json(t: Iterable[Atomic]) -> list[list[str]]:
    return [list(a) for a in sorted(t)]


# --- prompts (the paper's Direct Prompt, Appendix A.1) ---------------------------------------------------------

OPERATION_DESCRIPTIONS = {
    "union": "UNION: the final transformation contains every atomic transformation that appears in T1 or in T2.",
    "intersection": "INTERSECTION: the final transformation contains only the atomic transformations that appear "
                    "in both T1 and T2.",
    "difference": "DIFFERENCE: the final transformation contains the atomic transformations of T1 that do not "
                  "appear in T2.",
}
_CAPTION_FORMAT = ('The final output should be a concise caption of the resulting image in JSON format. '
                   'If the final transformation is empty, the caption is "No resulting image."\n'
                   'REQUIRED OUTPUT FORMAT\n{ "caption": your concise caption of the resulting image }')


def compositional_prompt(operation: str) -> str:
    return (
        "You are an expert visual reasoning AI. Your task is to perform a visual reasoning task. You are given two "
        "image pairs and a query image. Each image pair consists of two images, showing a set of transformations "
        "from the first image to the second. Images 1 and 2 are the first pair, images 3 and 4 the second pair, "
        "and image 5 is the query image. Extract the transformation from the first image pair as T1 and the second "
        f"image pair as T2, perform the set operation {operation.upper()} on the T1 and T2 to obtain the final "
        f"transformation. {OPERATION_DESCRIPTIONS[operation]} Then apply the final transformation to the query "
        f"image to predict the resulting image. {_CAPTION_FORMAT}"
    )


def single_prompt() -> str:
    return (
        "You are an expert visual reasoning AI. Your task is to perform a visual reasoning task. You are given one "
        "image pair and a query image. Images 1 and 2 are the pair, showing a set of transformations from the "
        "first image to the second; image 3 is the query image. Extract the transformation T from the image pair, "
        f"then apply it to the query image to predict the resulting image. {_CAPTION_FORMAT}"
    )


def carv_task(task_id: str, images: list[str], stems: list[State], answer: State | None, operation: str,
              setting: str, metadata: dict[str, Any] | None = None) -> Task:
    """A CARV task: `operation` is single|union|intersection|difference, `setting` single|SS|DS.

    `category` carries the operation, `level` the setting and `hops` |T| (atomic
    transformations per context pair), so metrics can rebuild the paper's Table 2.
    """
    t1 = transformation(stems[0], stems[1])
    meta: dict[str, Any] = {
        "operation": operation, "setting": setting, "atomic": len(t1),
        "context_stems": [s.stem for s in stems], "label_stem": answer.stem if answer else None,
        "answer_state": answer.as_dict() if answer else None, "t1": transformation_json(t1),
    }
    if len(stems) == 5:
        t2 = transformation(stems[2], stems[3])
        meta["t2"] = transformation_json(t2)
        meta["target"] = transformation_json(compose(operation, t1, t2)) if operation in OPERATIONS else None
    meta.update(metadata or {})
    question = single_prompt() if operation == "single" else compositional_prompt(operation)
    return Task(id=task_id, suite="carv", question=question, images=images, answers=[answer_caption(answer)],
                kind="caption", category=operation, level=setting, hops=len(t1), metadata=meta, judge="carv-parse")


# --- the public format ---------------------------------------------------------------------------------------

_NO_LABEL = re.compile(r"^\s*(|none|null|no[ _-]?result.*|no[ _-]?resulting[ _-]?image\.?)\s*$", re.I)
_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp")
_OP_ALIASES = {"union": "union", "u": "union", "intersection": "intersection", "intersect": "intersection",
               "i": "intersection", "difference": "difference", "diff": "difference", "d": "difference",
               "single": "single", "single-step": "single", "singlestep": "single"}
_SETTING_ALIASES = {"ss": "SS", "shared": "SS", "same": "SS", "shared source": "SS", "same source": "SS",
                    "ds": "DS", "different": "DS", "different source": "DS", "single": "single"}


def _item_operation(item: dict[str, Any], file_tokens: list[str]) -> str | None:
    for key in ("operation", "op", "set_operation"):
        value = item.get(key)
        if isinstance(value, str) and value.strip().lower() in _OP_ALIASES:
            return _OP_ALIASES[value.strip().lower()]
    for token in file_tokens:
        if token in ("union", "intersection", "difference", "single"):
            return token
    return None


def _item_setting(item: dict[str, Any], file_tokens: list[str]) -> str | None:
    for key in ("setting", "source"):
        value = item.get(key)
        if isinstance(value, str) and value.strip().lower() in _SETTING_ALIASES:
            return _SETTING_ALIASES[value.strip().lower()]
    for token in file_tokens:
        if token in ("ss", "shared", "same"):
            return "SS"
        if token in ("ds", "different"):
            return "DS"
    return None


def infer_operation(states: list[State], answer: State | None) -> str | None:
    """The set operation whose result, applied to the query, gives the answer; None when none or several do."""
    t1, t2 = transformation(states[0], states[1]), transformation(states[2], states[3])
    fits = []
    for op in OPERATIONS:
        target = compose(op, t1, t2)
        try:
            result = apply(target, states[4]) if target else None
        except ValueError:
            continue
        if result == answer:
            fits.append(op)
    return fits[0] if len(fits) == 1 else None


def infer_setting(states: list[State]) -> str:
    if len(states) == 3:
        return "single"
    if states[0] == states[2] == states[4]:
        return "SS"
    return "DS" if len({states[0], states[2], states[4]}) == 3 else "mixed"


def _find_image(root: Path, stem: str) -> str | None:
    exts = ("",) if Path(stem).suffix.lower() in _IMAGE_EXTS else _IMAGE_EXTS
    for base in ("", "images/"):
        for ext in exts:
            rel = f"{base}{stem}{ext}"
            if (root / rel).is_file():
                return rel
    return None


def load_items(path: Path, root: Path) -> list[Task]:
    file_tokens = [t for t in re.split(r"[^a-z0-9]+", path.stem.lower()) if t]

    def to_task(item: Any, where: str) -> Task:
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: an item must be a JSON object")
        stems = item.get("context_image")
        if not isinstance(stems, list) or len(stems) not in (3, 5) or not all(isinstance(s, str) for s in stems):
            raise DatasetError(f"{where}: field context_image: must be a list of 3 or 5 image stems")
        states, images = [], []
        for i, stem in enumerate(stems):
            try:
                states.append(parse_stem(stem))
            except ValueError as exc:
                raise DatasetError(f"{where}: field context_image[{i}]: {exc}") from None
            found = _find_image(root, stem)
            if found is None:
                raise DatasetError(f"{where}: field context_image[{i}]: no image file for {stem!r} under {root} "
                                   f"(tried {stem}.png/.jpg/.jpeg/.webp, also in images/)")
            images.append(found)
        label = item.get("label")
        if label is not None and not isinstance(label, str):
            raise DatasetError(f"{where}: field label: must be an image stem or empty")
        answer = None
        if label is not None and not _NO_LABEL.match(label):
            try:
                answer = parse_stem(label)
            except ValueError as exc:
                raise DatasetError(f"{where}: field label: {exc}") from None
        if len(states) == 3:
            operation, setting = "single", "single"
        else:
            operation = _item_operation(item, file_tokens) or infer_operation(states, answer) or "unknown"
            setting = _item_setting(item, file_tokens) or infer_setting(states)
        task_id = str(item["id"]) if item.get("id") is not None else content_id(item, "carv")
        extra = {k: v for k, v in item.items() if k not in ("context_image", "label")}
        task = carv_task(task_id, images, states, answer, operation, setting,
                         {"source_item": extra} if extra else None)
        truth = _find_image(root, label) if answer is not None and label else None
        task.reference_images = [str((root / truth).resolve())] if truth else []
        return task

    return collect_tasks(path, root, to_task)


def _is_carv_file(path: Path) -> bool:
    if not path.is_file() or path.suffix not in (".json", ".jsonl"):
        return False
    record = first_record(path)
    return isinstance(record, dict) and "context_image" in record and "label" in record


def load_carv(path: Path, root: Path | None = None) -> list[Dataset]:
    """A CARV public item file; images are looked up as `{stem}.png|jpg|...` in `root` (default: the file's folder)
    or its `images/` folder."""
    base = (root or path.parent).resolve()
    return [Dataset(name=path.stem, root=base, tasks=load_items(path, base), source=path)]


CARV_LOADER = Loader("carv", detect=_is_carv_file, load=load_carv)
