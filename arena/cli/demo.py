"""`arena demo`: the offline tour. Builds the bundled VistaHop-style world, runs the oracle,
direct and text-only agents on it through the whole arena (tools, budget, judge, run
store), prints the results tables, and writes an HTML viewer of each run.

The oracle runs at the paper's budget (N = 10) and at the budget its longest gold
path needs, sharing the trajectory prefix: the gap between the two is the cost of a
round budget on long chains (VistaHop's L3 items need more than ten tool calls).

Before the runs it says what each agent is (`AGENT_ROLES`), after the tables what their columns and finish
reasons mean (`arena.runs.table.legend_lines`)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

from rich.console import Console

from arena.core.dataset import load_datasets
from arena.core.world import WORLD_BUILDERS, is_world, read_world
from arena.review.rundata import load_run
from arena.review.table import fitted_summary, legend_lines
from arena.review.viewer import write_viewer
from arena.runs.config import RunConfig
from arena.runs.plugins import load_plugins
from arena.runs.runner import RunResult, execute

WORLD = "vistahop-mini"
AGENTS = ("oracle", "direct", "text-only")
AGENT_ROLES = {
    "oracle": "follows each task's gold tool path (crops, searches) and answers only from what the tools "
              "returned: the tasks are solvable with the tools, given enough rounds",
    "direct": "answers at once from the question, with no tool and no look at the image: near 0, since the "
              "world is fictional and no model can know it",
    "text-only": "searches the question's text once and answers from the results, never looking at the image: "
                 "near 0, since the question names its starting point only visually",
}


def ensure_world(worlds: Path, size: str, seed: int = 0) -> Path:
    """Build the demo world unless a matching one is already there."""
    target = worlds / f"{WORLD}-{size}"
    if is_world(target):
        info = read_world(target)
        if info.size == size and info.seed == seed:
            return target
    return WORLD_BUILDERS[WORLD](target, seed=seed, size=size)


def run_demo(console: Console, out: Path, worlds: Path, size: str = "small") -> list[RunResult]:
    load_plugins()
    with console.status(f"building world {WORLD} ({size})"):
        world = ensure_world(worlds, size)
    info = read_world(world)
    console.print(f"world {info.name} ({info.size}, seed {info.seed}, hash {info.content_hash[:12]}) at {world}: "
                  f"{info.counts}")
    tasks = [t for d in load_datasets(world) for t in d.tasks]
    needed = max(len(t.metadata.get("gold_path", {}).get("steps", [])) for t in tasks) + 1
    console.print("agents, each a scripted policy run through the arena (tools, budget, judge, run store):")
    for agent in AGENTS:  # each role wrapped under its own start
        for line in textwrap.wrap(AGENT_ROLES[agent], max(console.width, 40), initial_indent=f"  {agent:<9}  ",
                                  subsequent_indent=" " * 13):
            console.print(line, highlight=False, markup=False)
    results = []
    for agent in AGENTS:
        budgets = sorted({10, needed}) if agent == "oracle" else [10]
        config = RunConfig(data=str(world), agent=agent, settings=["search+crop"], max_rounds=budgets,
                           judge="normalized", out=str(out), concurrency=8)
        with console.status(f"running {agent}"):
            result = asyncio.run(execute(config))
        results.append(result)
        viewer = write_viewer([load_run(result.run_dir)], result.run_dir / "viewer.html")
        console.print(fitted_summary(console, result.summary,
                                     title=f"{agent} on {WORLD}-{size} (judge: normalized)"))
        console.print(f"  run directory: {result.run_dir}   viewer: {viewer}")
    console.print("what the columns mean (any run: arena summary RUN --legend; every column: arena summary RUN "
                  "--wide --legend):", highlight=False)
    every_group = {"groups": [g for r in results for g in r.summary.get("groups", [])]}
    for line in legend_lines(every_group, console.width):
        console.print(line, highlight=False, markup=False)
    return results
