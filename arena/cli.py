"""The `arena` command line (typer + rich)."""

from __future__ import annotations

import asyncio
import sys
import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate tool-using multimodal agents.")
world_app = typer.Typer(no_args_is_help=True, help="Build and check generated worlds.")
app.add_typer(world_app, name="world")
from arena.cli_cassette import cassette_app  # noqa: E402

app.add_typer(cassette_app, name="cassette")
console = Console(width=None if sys.stdout.isatty() else 160)


def _split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _parse_kv(pairs: list[str], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{what} must look like key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def execute_with_progress(config, force: bool = False):
    """Run with a progress bar; errors in the data or the config end with a clear message."""
    from runs.runner import execute

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
                  transient=False) as bar:
        state = {"task": None, "correct": 0, "errors": 0}

        def on_start(todo: int, total: int) -> None:
            state["task"] = bar.add_task(f"episodes ({total - todo} already done)" if todo < total else "episodes",
                                         total=todo, status="")

        def on_episode(episode, verdict) -> None:
            state["correct"] += int(bool(verdict and verdict.correct))
            state["errors"] += int(episode.finish_reason == "error")
            bar.update(state["task"], advance=1,
                       status=f"correct {state['correct']}  errors {state['errors']}")

        return asyncio.run(execute(config, progress=on_episode, on_start=on_start, force=force))


def print_result(result) -> None:
    from runs.table import suite_headlines, summary_table

    console.print(summary_table(result.summary, title=f"{result.run_id} (judge: {result.summary['judge']})"))
    headlines = suite_headlines(result.summary)
    for line in headlines:
        console.print(line, markup=False)
    if headlines:
        console.print(f"all suite figures: arena report {result.run_dir}")
    for warning in result.summary.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(f"run directory: {result.run_dir}")


@app.command()
def summary(run_dir: Path, judge: str = typer.Option("auto", help="Whose verdicts count.")) -> None:
    """Recompute a run's metrics from episodes.jsonl and verdicts.jsonl and print them."""
    from judges.metrics import summarize
    from runs.store import RunStore
    from runs.table import summary_table

    store = RunStore(run_dir)
    if not store.exists():
        _fail(f"{run_dir}: not a run directory (no run.json)")
    result = summarize(store.episodes(), store.verdicts(), judge)
    console.print(summary_table(result, title=f"{run_dir.name} (judge: {judge})"))


@app.command()
def demo(out: Path = typer.Option(Path("logs"), help="Where run directories go."),
         worlds: Path = typer.Option(Path("worlds"), help="Where the demo world is built."),
         size: str = typer.Option("small", help="World size.")) -> None:
    """Offline demo: build the bundled world, run baseline agents through the arena, print the results."""
    from runs.demo import run_demo

    run_demo(console, out=out, worlds=worlds, size=size)


@world_app.command("build")
def world_build(name: str, out: Optional[Path] = typer.Option(None, help="Output directory (default worlds/NAME-SIZE)."),
                seed: int = typer.Option(0), size: str = typer.Option("small")) -> None:
    """Generate a bundled world, deterministically from the seed."""
    import time

    from arena.world import WORLD_BUILDERS, read_world
    from runs.runner import load_plugins

    load_plugins()
    if name not in WORLD_BUILDERS:
        _fail(f"unknown world {name!r}; known: {', '.join(sorted(WORLD_BUILDERS))}")
    target = out or Path("worlds") / f"{name}-{size}"
    started = time.perf_counter()
    path = WORLD_BUILDERS[name](target, seed=seed, size=size)
    from tools.image_index import ReverseImageIndex

    ReverseImageIndex.for_world(path)
    info = read_world(path)
    console.print(f"built {info.name} ({info.size}, seed {info.seed}) in {time.perf_counter() - started:.1f} s "
                  f"at {path}: {json.dumps(info.counts)}")


@world_app.command("check")
def world_check(path: Path, out: Path = typer.Option(Path("logs"), help="Where the check's runs go."),
                concurrency: int = typer.Option(4)) -> None:
    """Validate a world: oracle solves every task, baselines stay near zero, no answer leaks."""
    from runs.runner import load_plugins
    from runs.world_check import check_world, report_lines

    load_plugins()
    report = check_world(path, out, concurrency=concurrency)
    target = Path(out) / f"world-check-{report.name}-{report.size}-{report.content_hash[:10]}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report.model_dump_json(indent=2) + "\n")
    for line in report_lines(report):
        console.print(line, markup=False)
    console.print(f"full report: {target}")
    if not report.ok:
        raise typer.Exit(1)


@app.command("list")
def list_plugins() -> None:
    """List the installed suites (loaders), worlds, settings, tools, agents and judges."""
    from arena.agent import AGENTS
    from arena.dataset import LOADERS
    from arena.judge import JUDGES
    from arena.settings import SETTINGS
    from arena.tool import TOOLS
    from arena.world import WORLD_BUILDERS
    from runs.runner import load_plugins

    load_plugins()
    console.print(f"[bold]loaders[/bold]  {', '.join(loader.name for loader in LOADERS)}")
    console.print(f"[bold]worlds[/bold]   {', '.join(sorted(WORLD_BUILDERS))}")
    console.print(f"[bold]settings[/bold] {', '.join(f'{k}={list(v)}' for k, v in SETTINGS.items())}")
    console.print(f"[bold]tools[/bold]    {', '.join(sorted(TOOLS))}")
    console.print(f"[bold]agents[/bold]   {', '.join(sorted(AGENTS))}")
    console.print(f"[bold]judges[/bold]   {', '.join(sorted(JUDGES))}")


from runs import cli_runs  # noqa: E402,F401  registers the run commands


def main() -> None:
    app()
