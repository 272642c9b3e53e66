"""`arena world build|check`: generate a bundled world; prove a world is solvable with its tools and only with them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from arena.core.world import WORLD_BUILDERS, read_world
from arena.runs.plugins import load_plugins
from arena.runs.world_check import check_world, report_lines
from arena.tools.image_index import ReverseImageIndex

from .common import console, fail, plain_hooks

app = typer.Typer(no_args_is_help=True, help="Build and check generated worlds.")


@app.command("build")
def world_build(name: str = typer.Argument(..., help="World kind (see `arena list`)."),
                out: Optional[Path] = typer.Option(None, help="Output directory (default worlds/NAME-SIZE)."),
                seed: int = typer.Option(0, help="Seed: the same seed builds the same bytes."),
                size: str = typer.Option("small", help="Size: small or full (vistahop-mini also tiny).")) -> None:
    """Generate a bundled world, deterministically from the seed."""
    load_plugins()
    if name not in WORLD_BUILDERS:
        fail(f"unknown world {name!r}; known: {', '.join(sorted(WORLD_BUILDERS))}")
    target = out or Path("worlds") / f"{name}-{size}"
    existed = target.exists()
    started = time.perf_counter()
    try:
        path = WORLD_BUILDERS[name](target, seed=seed, size=size)
        ReverseImageIndex.for_world(path)
        info = read_world(path)
    except (ValueError, RuntimeError, OSError) as exc:
        if not existed and target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        fail(f"world build {name} --size {size}: {exc}")
    console.print(f"built {info.name} ({info.size}, seed {info.seed}) in {time.perf_counter() - started:.1f} s "
                  f"at {path}: {json.dumps(info.counts)}")


@app.command("check")
def world_check(path: Path = typer.Argument(..., help="World directory."),
                out: Path = typer.Option(Path("logs"), help="Where the check's runs go."),
                concurrency: int = typer.Option(4, min=1, help="Episodes in flight.")) -> None:
    """Validate a world: oracle solves every task, baselines stay near zero, no answer leaks."""
    load_plugins()
    try:
        report = check_world(path, out, concurrency=concurrency, **plain_hooks())
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    target = Path(out) / f"world-check-{report.name}-{report.size}-{report.content_hash[:10]}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report.model_dump_json(indent=2) + "\n")
    for line in report_lines(report):
        console.print(line, markup=False)
    console.print(f"full report: {target}")
    if not report.ok:
        raise typer.Exit(1)
