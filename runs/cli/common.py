"""What every command of the `arena` CLI shares: the console, value parsing, one-line errors,
and running a grid with a progress display."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runs.config import RunConfig
from runs.runner import RunResult, execute
from runs.stops import FAILED
from runs.table import suite_headlines, summary_table, support_lines

console = Console(width=None if sys.stdout.isatty() else 160)


def split_values(values: list[str]) -> list[str]:
    """Repeated and comma-separated option values as one list."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def parse_kv(pairs: list[str], what: str) -> dict[str, Any]:
    """`key=value` pairs (JSON values allowed) as a dict; a malformed pair names the option."""
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


def fail(message: str) -> None:
    """Print one error line and exit with status 2 (usage or data error)."""
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def execute_with_progress(config: RunConfig, force: bool = False, run_dir: Path | None = None) -> RunResult:
    """Run with a progress bar; errors in the data or the config end with a clear message."""
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

        return asyncio.run(execute(config, progress=on_episode, on_start=on_start, force=force, run_dir=run_dir))


def print_result(result: RunResult) -> None:
    if result.summary.get("protocol"):
        console.print(f"protocol: {result.summary['protocol']} (each suite's published pipeline)"
                      if result.summary["protocol"] == "original" else
                      "protocol: arena (the arena's turn handling; see README 'Protocols')", highlight=False)
    console.print(summary_table(result.summary, title=f"{result.run_id} (judge: {result.summary['judge']})"))
    for line in support_lines(result.summary):
        console.print(line, markup=False)
    headlines = suite_headlines(result.summary)
    for line in headlines:
        console.print(line, markup=False)
    if headlines:
        console.print(f"all suite figures: arena report {result.run_dir}")
    for warning in result.summary.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(f"run directory: {result.run_dir}")


def run_problems(result: RunResult) -> list[str]:
    """Why a finished `arena run` must exit non-zero: it stopped before its whole grid was
    recorded, every episode ended with an error, or a record could not be written. Empty when
    the run is complete (episodes a model answered wrongly are not problems)."""
    problems = []
    if result.stopped or result.unrecorded:
        missing = f"{result.unrecorded} of {result.grid} episode(s) have no record"
        problems.append(f"the run stopped early: {result.stopped}; {missing}" if result.stopped
                        else f"the run stopped early: {missing}")
    failed = sum(1 for e in result.episodes if e.finish_reason in FAILED)
    if result.episodes and failed == len(result.episodes):
        first = (result.episodes[0].error or "").splitlines()[0][:200] if result.episodes[0].error else ""
        problems.append(f"every episode ({failed}) failed (error, rejected or context overflow), e.g. {first}")
    if result.unwritten:
        problems.append(f"{len(result.unwritten)} record(s) could not be written, first: {result.unwritten[0]}")
    return problems


def cost_lines(summary: dict[str, Any]) -> list[str]:
    """The run's cost in dollars, agents and judge, when a price is known for either."""
    if summary.get("cost") is None and summary.get("judge_cost") is None:
        return []
    parts = [f"agents ${summary['cost']:.4f}" if summary.get("cost") is not None else "agents: no price",
             f"judge ${summary['judge_cost']:.4f}" if summary.get("judge_cost") is not None else None]
    return ["cost: " + ", ".join(p for p in parts if p)]


def finish_run(result: RunResult, lines: Sequence[str] = ()) -> None:
    """Print the result and `lines`; then one line per problem, and exit with status 1 when there are any."""
    print_result(result)
    for line in [*cost_lines(result.summary), *lines]:
        console.print(line, highlight=False)
    problems = run_problems(result)
    for problem in problems:
        console.print(f"[red]run incomplete:[/red] {problem}", highlight=False)
    if problems:
        raise typer.Exit(1)
