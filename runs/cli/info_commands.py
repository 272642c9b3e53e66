"""Commands that look at what is installed or recorded: summary, list, demo."""

from __future__ import annotations

from pathlib import Path

import typer

from arena.agent import AGENTS
from arena.dataset import LOADERS
from arena.judge import JUDGES
from arena.settings import SETTINGS
from arena.tool import TOOLS
from arena.world import WORLD_BUILDERS
from runs.demo import run_demo
from runs.plugins import load_plugins
from runs.scan import summarize_store
from runs.store import RunStore
from runs.table import summary_table, support_lines

from .common import console, fail

app = typer.Typer()


@app.command()
def summary(run_dir: Path, judge: str = typer.Option("auto", help="Whose verdicts count.")) -> None:
    """Recompute a run's metrics from episodes.jsonl and verdicts.jsonl and print them."""
    store = RunStore(run_dir)
    if not store.exists():
        fail(f"{run_dir}: not a run directory (no run.json)")
    try:
        result = summarize_store(store, judge)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    console.print(summary_table(result, title=f"{run_dir.name} (judge: {judge})"))
    for line in support_lines(result):
        console.print(line, markup=False)


@app.command()
def demo(out: Path = typer.Option(Path("logs"), help="Where run directories go."),
         worlds: Path = typer.Option(Path("worlds"), help="Where the demo world is built."),
         size: str = typer.Option("small", help="World size.")) -> None:
    """Offline demo: build the bundled world, run baseline agents through the arena, print the results."""
    run_demo(console, out=out, worlds=worlds, size=size)


@app.command("list")
def list_plugins() -> None:
    """List the installed suites (loaders), worlds, settings, tools, agents and judges."""
    load_plugins()
    console.print(f"[bold]loaders[/bold]  {', '.join(loader.name for loader in LOADERS)}")
    console.print(f"[bold]worlds[/bold]   {', '.join(sorted(WORLD_BUILDERS))}")
    console.print(f"[bold]settings[/bold] {', '.join(f'{k}={list(v)}' for k, v in SETTINGS.items())}")
    console.print(f"[bold]tools[/bold]    {', '.join(sorted(TOOLS))}")
    console.print(f"[bold]agents[/bold]   {', '.join(sorted(AGENTS))}")
    console.print(f"[bold]judges[/bold]   {', '.join(sorted(JUDGES))}")
