"""The scripts under bench/ loaded as modules for tests (bench/ is not a package: its scripts import each other by
name, so bench/ goes on sys.path first)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_script(name: str, as_name: str | None = None) -> ModuleType:
    """bench/`name`.py, executed afresh as module `as_name` (default `bench_<name>`)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(as_name or f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
