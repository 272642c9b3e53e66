"""Commands that look at what is installed or recorded: summary, list, demo."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, Optional

import typer

from arena.cli.demo import run_demo
from arena.core.agent import AGENTS
from arena.core.dataset import LOADERS
from arena.core.judge import JUDGES
from arena.core.settings import SETTINGS
from arena.core.tool import TOOLS
from arena.core.world import WORLD_BUILDERS
from arena.review.incomplete import run_completeness
from arena.review.summary_formats import SummaryFormat, summary_csv, summary_json, summary_markdown
from arena.review.table import errors_counted_as_wrong
from arena.runs.plugins import load_plugins

from .common import console, fail, print_summary, review_run

app = typer.Typer()


@app.command(rich_help_panel="Look at runs")
def summary(run_dir: Path = typer.Argument(..., help="Run directory."),
            judge: Optional[str] = typer.Option(None, help="Whose verdicts count (default: the judge the run was "
                                                "scored with)."),
            legend: bool = typer.Option(False, "--legend", help="Say under the table what each column and "
                                        "finish reason means."),
            wide: bool = typer.Option(False, "--wide", help="Every column (levels, tool use, judge problems, "
                                      "tokens, seconds, cost), not only those that read at 80 columns."),
            fmt: SummaryFormat = typer.Option("table", "--format", help="table (the terminal's), json, csv or "
                                              "markdown (for scripts and papers).")) -> None:
    """Recompute a run's metrics from episodes.jsonl and verdicts.jsonl and print them; an incomplete run says
    first how many of its planned episodes were never played or errored."""
    try:
        run = review_run(run_dir, judge)
        result = run.summary
        done = run_completeness(run)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    incomplete = done.line(run_dir, as_wrong=errors_counted_as_wrong(result))
    recorded = list(run.info.warnings)  # the data's, as the run read it
    result = {**result, "warnings": list(dict.fromkeys(recorded + list(result.get("warnings", []))))}
    title = f"{run_dir.name} (judge: {run.judge_label})"
    if fmt != "table":
        text = (summary_json(result, done) if fmt == "json" else summary_csv(result) if fmt == "csv"
                else summary_markdown(result, title, incomplete, wide))
        sys.stdout.write(text)
        return
    print_summary(result, title, run_dir, legend=legend, wide=wide, incomplete=incomplete)


@app.command(rich_help_panel="Worlds and plugins")
def demo(out: Path = typer.Option(Path("logs"), help="Where run directories go."),
         worlds: Path = typer.Option(Path("worlds"), help="Where the demo world is built."),
         size: Literal["tiny", "small", "full"] = typer.Option("small", help="World size.")) -> None:
    """Offline demo: build the bundled world, run baseline agents through the arena, print the results."""
    run_demo(console, out=out, worlds=worlds, size=size)


@app.command("list", rich_help_panel="Worlds and plugins")
def list_plugins() -> None:
    """List the installed suites (loaders), worlds, settings, tools, agents and judges."""
    load_plugins()
    console.print(f"[bold]loaders[/bold]  {', '.join(loader.name for loader in LOADERS)}")
    console.print(f"[bold]worlds[/bold]   {', '.join(sorted(WORLD_BUILDERS))}")
    console.print(f"[bold]settings[/bold] {', '.join(f'{k}={list(v)}' for k, v in SETTINGS.items())}")
    console.print(f"[bold]tools[/bold]    {', '.join(sorted(TOOLS))}")
    console.print(f"[bold]agents[/bold]   {', '.join(sorted(AGENTS))}")
    console.print(f"[bold]judges[/bold]   {', '.join(sorted(JUDGES))}")
