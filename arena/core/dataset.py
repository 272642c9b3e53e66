"""Datasets: tasks plus the root their paths live in and the offline world their tools use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .paths import resolve_inside
from .task import Task


class DatasetError(ValueError):
    """A dataset file that cannot be read; the message names file, line and field."""


class EmbeddedImages(Protocol):
    """Images carried inside a data file (a Parquet column) rather than beside it: a task image reference the
    dataset `owns` is read on demand as (bytes, file extension) and stored in the run's blobs."""

    def owns(self, ref: str) -> bool: ...

    def read(self, ref: str) -> tuple[bytes, str]: ...


@dataclass
class Dataset:
    """Tasks with the directory their relative paths resolve in.

    `world` is an offline world directory (corpus, image index, site) that tools use; `corpus` a corpus directory for
    text search when there is no world. `system_prompt` / `format_instruction` override the arena's prompts
    (VistaArena's `input_template.arguments`); `format_template` names a prompt template (`arena.core.prompt_book`)
    whose text, from the run's prompt book, is the format instruction (a suite's own instruction, which a prompts
    file may replace; `format_instruction` holds its arena wording). `reward_fn` names the original reward functions.
    `embedded` reads task images stored inside the data file itself. `population`: the questions of the file as its
    suite's published evaluator counts them, for the accuracies it divides by every question of the file (also
    those a run did not play): `{"suite": name, "questions": n, "groups": {group: n}, ...}`, set by a suite's
    `original_dataset_rules` and recorded in run.json (`datasets[].population`); None: the suite's figures are over
    the episodes played."""

    name: str
    root: Path
    tasks: list[Task]
    source: Path
    world: Path | None = None
    corpus: Path | None = None
    system_prompt: str | None = None
    format_instruction: str | None = None
    format_template: str | None = None
    reward_fn: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    embedded: EmbeddedImages | None = None
    population: dict[str, Any] | None = None

    def resolve(self, relative: str, where: str = "") -> Path:
        """A path of this dataset, which must stay inside `root`."""
        return resolve_inside(self.root, relative, where=where or str(self.source))


@dataclass
class Loader:
    """A data format: `detect(path)` says whether `load(path, root=None) -> list[Dataset]` reads it; `published`:
    a public benchmark's own format (runs on it default to `--protocol original`)."""

    name: str
    detect: Callable[[Path], bool]
    load: Callable[..., list[Dataset]]
    published: bool = True


LOADERS: list[Loader] = []


def register_loader(name: str, detect: Callable[[Path], bool], published: bool = True):
    """Decorator: `load(path, root=None) -> list[Dataset]` handles files `detect` accepts (`published`: public)."""

    def wrap(load: Callable[..., list[Dataset]]):
        if any(loader.name == name and loader.load is not load for loader in LOADERS):
            raise ValueError(f"loader {name!r} registered twice")
        if all(loader.name != name for loader in LOADERS):
            LOADERS.append(Loader(name, detect, load, published))
        return load

    return wrap


def load_datasets(path: str | Path, root: str | Path | None = None, fmt: str | None = None,
                  original_only: bool = False) -> list[Dataset]:
    """Load `path` (task file, datasets.json, world directory) with the first loader that accepts it; the first
    problem a loader keeps in `meta["original_only"]` ([kind, where, message]) is raised unless `original_only`."""
    if "\x00" in str(path):
        raise DatasetError(f"data path {str(path)!r} contains a NUL byte")
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or directory")
    for loader in LOADERS:
        if (fmt and loader.name == fmt) or (not fmt and loader.detect(path)):
            datasets = loader.load(path, root=Path(root) if root else None)
            for dataset in datasets:
                dataset.meta = {"format": loader.name, "published": loader.published, **dataset.meta}
            if not original_only:
                refuse_original_only(datasets)
            return datasets
    known = ", ".join(loader.name for loader in LOADERS)
    raise DatasetError(f"{path}: no loader recognises this data (known formats: {known})")


def refuse_original_only(datasets: list[Dataset]) -> None:
    """Raise the first problem a loader kept in `meta["original_only"]` (only `--protocol original` reads past it)."""
    for problem in (p for d in datasets for p in d.meta.get("original_only", [])):
        raise DatasetError(problem[2])
