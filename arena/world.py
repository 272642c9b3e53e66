"""Offline worlds: versioned directories of everything the tools may touch.

Layout of a world directory:

    world.json      name, version, seed, content hash, suite, counts
    tasks.jsonl     arena Task records (image paths relative to the world dir)
    corpus/         docs.jsonl (one {id, url, title, text} per line) for text search
    images/         scene images, thumbnails; image index files for reverse search
    site/           pages served only to the browser tool
    trajectories/   GUI frames

Worlds are built by registered builders (`arena world build NAME`) and are valid
`--data` for `arena run`: their corpus and indexes are wired to the tools.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field

WORLD_FILE = "world.json"


class WorldInfo(BaseModel):
    name: str
    version: str = "1"
    suite: str = "vistahop"
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

    def wrap(build: WorldBuilder) -> WorldBuilder:
        WORLD_BUILDERS[name] = build
        return build

    return wrap
