"""Commands that look at runs: report, compare, export, view, replay (the "Look at runs" group of `arena --help`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from arena.review.analysis import export_episodes
from arena.review.compare import COLUMNS, compare_runs, errored_note
from arena.review.fit import fitted
from arena.review.incomplete import incomplete_line
from arena.review.replay import check_episode, show_episode
from arena.review.rundata import RunData
from arena.review.report import build_report
from arena.review.serve import serve_viewer
from arena.review.table import fmt as fmt_value
from arena.review.table import judge_warnings
from arena.review.viewer import write_viewer
from arena.store.calls import read_calls

from .common import console, fail, review_run, run_protocol

app = typer.Typer()

ExportFormat = Literal["csv", "parquet", "jsonl"]
JUDGE_HELP = "Whose verdicts count (default: the judge the run was scored with)."


def say_incomplete(runs: list[RunData], sides: tuple[str, ...] = ()) -> None:
    """First, a warning for each run that is incomplete (`arena.review.incomplete`), naming its side when given."""
    for i, run in enumerate(runs):
        if (line := incomplete_line(run)) is not None:
            side = f"run {sides[i]} ({run.run_id})" if sides else run.run_id
            console.print(f"[yellow]warning:[/yellow] {escape(side)} is {escape(line)}", highlight=False)


@app.command(rich_help_panel="Look at runs")
def report(runs: list[Path] = typer.Argument(..., help="Run directories (two or more: also paired with the first)."),
           out: Optional[Path] = typer.Option(None, help="Where report.html and sweep.png go (default: first run)."),
           judge: Optional[str] = typer.Option(None, help=JUDGE_HELP)) -> None:
    """Summary tables (Table 4/5 layouts, CIs, pass@k, categories, failures, agreement, paired comparison) and
    the sweep plot, as HTML and PNG."""
    try:
        data = [review_run(r, judge) for r in runs]
        built = build_report(data)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    say_incomplete(data)
    for run in data:
        console.print(f"{run.run_id}: judge {run.judge_label}", highlight=False)
    for table in built.tables:
        console.print(fitted(console, table.rich()))
    for run in data:
        for warning in judge_warnings(run.summary):
            console.print(f"[yellow]warning:[/yellow] {run.run_id}: {escape(warning)}", highlight=False)
    html_path, png_path = built.write(out or runs[0])
    console.print(f"report: {html_path}\nplot:   {png_path}")


@app.command(rich_help_panel="Look at runs")
def compare(run_a: Path = typer.Argument(..., help="Run A (the baseline)."),
            run_b: Path = typer.Argument(..., help="Run B (compared with A)."),
            judge: Optional[str] = typer.Option(None, help="Judge for both runs (default: each run's own).")) -> None:
    """Paired comparison of two runs on the tasks they share: Pass@1 difference with a 95 % bootstrap CI,
    McNemar's exact test, tasks won and lost."""
    try:
        a, b = review_run(run_a, judge), review_run(run_b, judge)
        pairs = compare_runs(a, b)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    say_incomplete([a, b], sides=("A", "B"))
    table = Table(title=f"A = {a.run_id} (judge: {a.judge_label}, protocol: {run_protocol(a.info)})\n"
                        f"B = {b.run_id} (judge: {b.judge_label}, protocol: {run_protocol(b.info)})",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, name in enumerate(COLUMNS):  # two-word headers on two lines: the table reads in 80 columns
        header = name if i in (0, 4) or " " not in name else "\n".join(name.rsplit(" ", 1))
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=i > 0)
    for c in pairs:
        table.add_row(*c.row())
    console.print(fitted(console, table))
    for c in pairs:
        console.print(c.detail(), highlight=False, markup=False)
    if (note := errored_note(pairs)) is not None:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)


@app.command(rich_help_panel="Look at runs")
def export(run_dir: Path = typer.Argument(..., help="Run directory."),
           fmt: ExportFormat = typer.Option("csv", "--format", help="csv, parquet or jsonl."),
           out: Optional[Path] = typer.Option(None, help="Output file (default: RUN/export.FORMAT)."),
           judge: Optional[str] = typer.Option(None, help=JUDGE_HELP)) -> None:
    """One row per episode (verdicts, tokens, cost, seconds, finish reason, level, category) as CSV, Parquet or
    JSON lines; in Python: `arena.review.analysis.load_run_frames(RUN)`."""
    try:
        run = review_run(run_dir, judge)
        path = export_episodes(run, out or run_dir / f"export.{fmt}", fmt)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    console.print(f"{len(run.scan)} episode(s), score by judge {run.judge_label}: {path}", highlight=False)


@app.command(rich_help_panel="Look at runs")
def view(runs: list[Path] = typer.Argument(..., help="A run directory, or two to compare."),
         out: Optional[Path] = typer.Option(None, help="HTML file (default: RUN/viewer.html, RUN/compare-RUN2.html)."),
         judge: Optional[str] = typer.Option(None, help=JUDGE_HELP),
         max_side: Optional[int] = typer.Option(None, min=1, help="Longest side of embedded images (default: by "
                                                "count)."),
         layout: str = typer.Option("auto", help="auto (one file up to 500 episodes, else page + shards), single or "
                                    "sharded."),
         serve: bool = typer.Option(False, help="Also serve the viewer over HTTP (for a remote machine)."),
         host: str = typer.Option("127.0.0.1", help="Address to serve on (with --serve)."),
         port: int = typer.Option(8765, min=0, help="Port to serve on (with --serve; 0 picks a free one).")
         ) -> None:
    """Write a static HTML viewer of a run (or a side-by-side of two) that opens from the file system: one file
    for small runs, the page plus a `-view/` directory of shards loaded on demand for large ones."""
    if len(runs) > 2:
        fail("view takes one run, or two to compare")
    if layout not in ("auto", "single", "sharded"):
        fail(f"--layout must be auto, single or sharded, got {layout!r}")
    try:
        data = [review_run(r, judge) for r in runs]
        target = out or (runs[0] / ("viewer.html" if len(runs) == 1 else f"compare-{runs[1].resolve().name}.html"))
        path = write_viewer(data, target, max_side=max_side, single=None if layout == "auto" else layout == "single")
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    say_incomplete(data)
    for run in data:
        console.print(f"{run.run_id}: judge {run.judge_label}, Pass@1 "
                      + ", ".join(f"{g['setting']} N={g['max_rounds']}: {fmt_value(g['pass1'])}"
                                  for g in run.summary["groups"]), highlight=False)
    console.print(f"viewer: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if serve:
        try:
            serve_viewer(path, host, port, lambda url: console.print(f"serving {url} (Ctrl-C to stop)", markup=False))
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc}")


@app.command(rich_help_panel="Look at runs")
def replay(run_dir: Path = typer.Argument(..., help="Run directory."),
           episode: Optional[str] = typer.Option(None, help="Episode id, id prefix or key (default: list them)."),
           check: bool = typer.Option(False, help="Re-execute the recorded tool calls and report differences."),
           step: bool = typer.Option(False, help="Wait for Enter between steps."),
           calls: bool = typer.Option(True, help="Show each step's recorded model call (calls.jsonl), if any."),
           judge: Optional[str] = typer.Option(None, help=JUDGE_HELP)) -> None:
    """Step through a recorded episode (with the model calls made for each step, as recorded); --check
    re-executes its tool calls against the world."""
    try:
        run = review_run(run_dir, judge)
        run.episodes  # read (and checked) here, so a corrupt store is one error line
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    if episode is None:
        table = Table(title=f"{run.run_id}: episodes · protocol: {run_protocol(run.info)}")
        for name in ("id", "key", "finish", "verdict", "answer"):
            table.add_column(name)
        for e in run.episodes:
            v = run.chosen.get(e.id)
            verdict = "–" if v is None else ("correct" if v.correct else "wrong")
            table.add_row(e.id[:12], e.key, e.finish_reason, verdict, (e.answer or "")[:40])
        console.print(table)
        return
    try:
        chosen = run.find(episode)
    except ValueError as exc:
        fail(str(exc))
    verdicts = [v for v in run.verdicts if v.episode_id == chosen.id]

    def wait() -> bool:
        return input("[Enter] next step, q to stop: ").strip().lower() != "q"

    try:
        recorded = read_calls(run_dir, chosen.key) if calls else []
    except (ValueError, OSError) as exc:
        fail(str(exc))
    show_episode(console, chosen, verdicts, wait if step and console.is_terminal else None, recorded)
    if check:
        try:
            differences = asyncio.run(check_episode(run, chosen))
        except (ValueError, OSError) as exc:
            fail(str(exc))
        if not differences:
            console.print("[green]check: every recorded observation was reproduced[/green]")
            return
        table = Table(title="check: observations that differ")
        for name in ("round", "tool", "field", "recorded", "replayed"):
            table.add_column(name)
        for d in differences:
            table.add_row(str(d.round), d.tool or "", d.field, d.recorded, d.replayed)
        console.print(table)
        raise typer.Exit(1)
