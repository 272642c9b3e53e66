"""`arena demo`: the offline tour. Builds the bundled VistaHop-style world, runs the oracle,
direct and text-only agents on it through the whole arena (tools, budget, judge, run
store), and prints the results table and where everything was written."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from arena.world import WORLD_BUILDERS, is_world, read_world

from .config import RunConfig
from .runner import RunResult, execute, load_plugins
from .table import summary_table

WORLD = "vistahop-mini"
AGENTS = ("oracle", "direct", "text-only")


def ensure_world(worlds: Path, size: str, seed: int = 0) -> Path:
    """Build the demo world unless a matching one is already there."""
    target = worlds / f"{WORLD}-{size}"
    if is_world(target):
        info = read_world(target)
        if info.size == size and info.seed == seed:
            return target
    return WORLD_BUILDERS[WORLD](target, seed=seed, size=size)


def run_demo(console: Console, out: Path, worlds: Path, size: str = "small") -> list[RunResult]:
    import asyncio

    load_plugins()
    with console.status(f"building world {WORLD} ({size})"):
        world = ensure_world(worlds, size)
    info = read_world(world)
    console.print(f"world {info.name} ({info.size}, seed {info.seed}, hash {info.content_hash[:12]}) at {world}: "
                  f"{info.counts}")
    results = []
    for agent in AGENTS:
        config = RunConfig(data=str(world), agent=agent, settings=["search+crop"], max_rounds=[10],
                           judge="normalized", out=str(out), run_id=f"demo-{size}-{agent}", concurrency=8)
        with console.status(f"running {agent}"):
            result = asyncio.run(execute(config))
        results.append(result)
        console.print(summary_table(result.summary, title=f"{agent} on {WORLD}-{size} (judge: normalized)"))
        console.print(f"  run directory: {result.run_dir}")
    return results
