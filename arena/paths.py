"""Resolving dataset-relative paths without letting them escape their root."""

from __future__ import annotations

import functools
from pathlib import Path


class PathEscapeError(ValueError):
    """A dataset path that points outside its root (absolute, `..`, or a symlink out)."""


def resolve_inside(root: str | Path, relative: str, *, where: str = "") -> Path:
    """Return `root / relative` resolved, or raise PathEscapeError naming `where` and the path."""
    resolved = _resolved(str(root), relative)
    if isinstance(resolved, Path):
        return resolved
    raise PathEscapeError(f"{where}: {resolved}" if where else resolved)


@functools.lru_cache(maxsize=1 << 16)  # a run resolves each task's paths at load and again per episode
def _resolved(root: str, relative: str) -> Path | str:
    """The resolved path, or what is wrong with it."""
    if "\x00" in relative:
        return f"path {relative!r} contains a NUL byte"
    root_path = Path(root).resolve()
    candidate = (root_path / relative).resolve()
    if candidate != root_path and root_path not in candidate.parents:
        return f"path {relative!r} escapes the dataset root {root_path}"
    return candidate
