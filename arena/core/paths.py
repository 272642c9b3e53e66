"""Resolving dataset-relative paths without letting them escape their root."""

from __future__ import annotations

import functools
from pathlib import Path


class PathEscapeError(ValueError):
    """A dataset path that points outside its root (absolute, `..`, or a symlink out)."""


def resolve_inside(root: str | Path, relative: str, *, where: str = "") -> Path:
    """Return `root / relative` resolved, or raise PathEscapeError naming `where` and the path."""
    at = f"{where}: " if where else ""
    if "\x00" in relative:
        raise PathEscapeError(f"{at}path {relative!r} contains a NUL byte")
    root_path, root_parts = _resolved_root(root if type(root) is str else str(root))
    candidate = _resolved(root_path, relative)
    if candidate.parts[:len(root_parts)] != root_parts:  # (the root itself, or a path below it)
        raise PathEscapeError(f"{at}path {relative!r} escapes the dataset root {root_path}")
    return candidate


@functools.lru_cache(maxsize=8192)  # a task's image is resolved by each of its episodes (a lstat per component)
def _resolved(root: Path, relative: str) -> Path:
    return (root / relative).resolve()


@functools.lru_cache(maxsize=256)  # every task path of a dataset resolves against one root (the path itself, always)
def _resolved_root(root: str) -> tuple[Path, tuple[str, ...]]:
    resolved = Path(root).resolve()
    return resolved, resolved.parts
