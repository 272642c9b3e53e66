"""Offline worlds: versioned directories of everything the tools may touch.

Layout of a world directory:

    world.json      name, version, seed, content hash, suite, counts
    tasks.jsonl     arena Task records (image paths relative to the world dir)
    corpus/         docs.jsonl (one {id, url, title, text} per line) for text search
    images/         scene images, thumbnails; image index files for reverse search
    site/           web pages served only to the tools of the world
    trajectories/   GUI frames

Worlds are built by registered builders (`arena world build NAME`) and are valid
`--data` for `arena run`: their corpus and indexes are wired to the tools.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field

from .discovery import claim, registering
from .task import Task

WORLD_FILE = "world.json"


class WorldInfo(BaseModel):
    name: str
    version: str = "1"
    suite: str = "arena"
    seed: int = 0
    size: str = "small"
    content_hash: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)


def is_world(path: Path) -> bool:
    return path.is_dir() and (path / WORLD_FILE).is_file()


def read_world(path: str | Path) -> WorldInfo:
    return WorldInfo.model_validate_json((Path(path) / WORLD_FILE).read_text())


def content_hash(root: str | Path, exclude: tuple[str, ...] = (WORLD_FILE,)) -> str:
    """SHA-256 over every file's relative path and bytes, in sorted order (index caches excluded)."""
    root = Path(root)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in exclude or rel.startswith(".cache/"):
            continue
        digest.update(rel.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def write_world(root: str | Path, info: WorldInfo) -> WorldInfo:
    """Stamp `world.json` with the content hash of everything else in the directory."""
    root = Path(root)
    info = info.model_copy(update={"content_hash": content_hash(root)})
    (root / WORLD_FILE).write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
    return info


WorldBuilder = Callable[..., Path]
WORLD_BUILDERS: dict[str, WorldBuilder] = {}


def register_world(name: str):
    """Decorator for `build(out: Path, *, seed: int, size: str) -> Path` (deterministic from the seed)."""
    return registering(WORLD_BUILDERS, name, "world")


@dataclass(frozen=True)
class Baseline:
    """One policy a world check runs on every task, with the Pass@1 range it must land in.

    `max_rounds=None` gives the policy the largest budget any task of the world asks for
    (`metadata.max_rounds`), at least `default_rounds` of the check."""

    agent: str
    setting: str
    max_rounds: int | None = None
    min_pass: float | None = None
    max_pass: float | None = None


StaticCheck = Callable[[Path, list[Task]], tuple[list[str], dict[str, Any]]]


@dataclass(frozen=True)
class WorldCheck:
    """What `arena world check` proves about one kind of world: baselines with their Pass@1 bounds
    (an oracle at 100 %, tool-less or blind policies near chance), the judge that scores them, and
    the suite's structural checks (`static(world_dir, tasks) -> (problems, stats)`)."""

    baselines: tuple[Baseline, ...]
    static: StaticCheck
    judge: str = "normalized"
    default_rounds: int = 10
    oracle: str | None = "oracle"
    played: Callable[[Task], bool] | None = None
    """Which tasks the baselines play (default: all); e.g. not those only a judge model can score."""


WORLD_CHECKS: dict[str, WorldCheck] = {}


def register_world_check(world_name: str, check: WorldCheck) -> WorldCheck:
    """Declare how worlds built by `world_name` are checked (one check per world kind)."""
    claim(WORLD_CHECKS, world_name, check, "world check")
    return check
