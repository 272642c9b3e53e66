"""What every command of the `arena` CLI shares: the console, value parsing, one-line errors,
and running a grid with a progress display."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from arena.judges.completeness import completeness, planned_of
from arena.judges.metrics import ERRORED
from arena.core.prompt_book import protocol_label
from arena.review.rundata import RunData, load_run
from arena.review.table import (errors_counted_as_wrong, fitted_summary, judge_warnings, legend_lines, repeat_lines,
                                suite_headlines, support_lines)
from arena.runs.briefs import EpisodeBrief, VerdictBrief
from arena.runs.config import RunConfig
from arena.runs.outage import ErrorTally
from arena.runs.plugins import load_plugins
from arena.runs.runner import RunResult, execute
from arena.runs.stops import FAILED

from .interrupts import INTERRUPTED_EXIT, RunGuard
from arena.store.records import HarnessCost, RunInfo
from arena.store.store import RunStore

READABLE_WIDTH = 80
"""The width output that is not a terminal is laid out for when `COLUMNS` does not say one."""


def output_width(environ: Any = os.environ, terminal: bool | None = None) -> int | None:
    """The width the CLI lays its output out for: `COLUMNS` when set (a terminal's or a pipe's), else the terminal's
    own (None: rich asks it), else `READABLE_WIDTH`."""
    columns = str(environ.get("COLUMNS", "")).strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if (sys.stdout.isatty() if terminal is None else terminal) else READABLE_WIDTH


console = Console(width=output_width())


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


def config_file_callback(ctx: typer.Context, param: Any, value: Any) -> Any:
    """`--config FILE`: a YAML mapping of the command's options (as on the command line, `max-rounds` or
    `max_rounds`) that become its defaults, so flags given on the command line override them."""
    if value is None:
        return value
    try:
        loaded = yaml.safe_load(Path(value).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise typer.BadParameter(f"cannot read {value}: {exc}") from None
    if not isinstance(loaded, dict):
        raise typer.BadParameter(f"{value}: expected a mapping of option names to values")
    params = {}
    for p in ctx.command.params:
        if p.param_type_name == "option" and p.name != param.name:
            params[p.name] = p
            for opt in p.opts + p.secondary_opts:
                params.setdefault(opt.lstrip("-").replace("-", "_"), p)
    defaults: dict[str, Any] = {}
    for key, item in loaded.items():
        target = params.get(str(key).replace("-", "_"))
        if target is None:
            valid = sorted(o.lstrip("-") for p in params.values() for o in p.opts if o.startswith("--"))
            raise typer.BadParameter(f"{value}: unknown option {key!r}; valid: {', '.join(sorted(set(valid)))}")
        if target.multiple and not isinstance(item, list):
            item = [item]
        if target.multiple:
            item = [str(v) if not isinstance(v, str) else v for v in item]
        defaults[target.name] = item
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def fail(message: str) -> None:
    """Print one error line and exit with status 2 (usage or data error): never wrapped or cut (a terminal wraps
    it), so a log keeps it on one line."""
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(2)


class PlainProgress:
    """Progress for logs (stdout not a terminal): one plain line every `every` seconds and one at the end, with
    episodes done/total, errors, correct, rate and ETA."""

    def __init__(self, every: float, write=print, clock=time.monotonic):
        self.every, self.write, self.clock = every, write, clock
        self.todo = self.total = self.done = self.errors = self.correct = 0
        self.tally = ErrorTally()
        self.started = self.last = 0.0

    def start(self, todo: int, total: int) -> None:
        """The first run's start line; a later run of the same command (`arena world check`'s baselines) only
        adds its episodes to the count, so the line is said once."""
        if self.total:
            self.todo, self.total = self.todo + todo, self.total + total
            return
        self.todo, self.total = todo, total
        self.started = self.last = self.clock()
        self.write(f"progress: {todo} episode(s) to run or judge of {total} in the grid "
                   f"({total - todo if todo < total else 0} already done)")

    def line(self, now: float | None = None) -> str:
        elapsed = max((self.clock() if now is None else now) - self.started, 1e-9)
        rate = self.done / elapsed
        left = self.todo - self.done
        eta = f"{int(left / rate // 60)}m{int(left / rate % 60):02d}s" if rate > 0 else "?"
        return (f"progress: {self.done}/{self.todo} episodes, {self.tally.line()}, {self.correct} correct, "
                f"{rate:.2f} episodes/s, elapsed {int(elapsed)}s, ETA {eta}")

    def episode(self, errored: bool, correct: bool, error: str | None = None) -> None:
        self.done += 1
        self.errors += int(errored)
        if errored:
            self.tally.add(error)
        self.correct += int(correct)
        now = self.clock()
        if now - self.last >= self.every or self.done == self.todo:
            self.last = now
            self.write(self.line(now))


def progress_every() -> float:
    """Seconds between plain progress lines: $ARENA_PROGRESS_EVERY, default 10."""
    try:
        return max(0.0, float(os.environ.get("ARENA_PROGRESS_EVERY", "10")))
    except ValueError:
        return 10.0


def plain_hooks() -> dict[str, Any]:
    """`on_start` / `progress` hooks printing plain progress lines when stdout is not a terminal, else none
    (for commands without a progress bar: judge, world check). `progress` reads `finish_reason`, `error`, `correct`:
    a run's briefs (`arena.runs.briefs`) or `arena judge`'s Episode and Verdict, which name them alike."""
    if console.is_terminal:
        return {}
    plain = PlainProgress(progress_every(), write=lambda text: console.print(text, markup=False, highlight=False))
    return {"on_start": plain.start,
            "progress": lambda episode, verdict: plain.episode(episode.finish_reason in ERRORED,
                                                               bool(verdict and verdict.correct
                                                                    and not verdict.error), episode.error)}


def execute_with_progress(config: RunConfig, force: bool = False, run_dir: Path | None = None,
                          announce: str = "") -> RunResult:
    """Run with a progress bar (a terminal) or plain progress lines (a log); errors in the data or the config end
    with a clear message. `announce` is printed when the run starts (data, judges and store checked). A run refused
    before it recorded anything leaves no run directory it created (`arena.cli.interrupts.RunGuard`); Ctrl-C prints
    one line (what is kept, how to resume) and exits 130."""
    guard = RunGuard()
    try:
        return _execute_with_progress(config, force, run_dir, announce, guard)
    except KeyboardInterrupt:
        console.print(guard.interrupted_line(), markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(INTERRUPTED_EXIT) from None  # not typer.Exit: commands turn RuntimeErrors into errors
    except Exception:
        guard.refused()
        raise


def _execute_with_progress(config: RunConfig, force: bool, run_dir: Path | None, announce: str,
                           guard: RunGuard) -> RunResult:
    def say(todo: int, total: int) -> None:
        guard.started(todo, total)
        if announce:
            console.print(announce, markup=False, highlight=False)

    if not console.is_terminal:
        plain = PlainProgress(progress_every(), write=lambda text: console.print(text, markup=False,
                                                                                highlight=False))
        return asyncio.run(execute(
            config, force=force, run_dir=run_dir, on_open=guard.seen,
            on_start=lambda todo, total: (say(todo, total), plain.start(todo, total)),
            progress=lambda episode, verdict: plain.episode(episode.finish_reason in ERRORED,
                                                            bool(verdict and verdict.correct and not verdict.error),
                                                            episode.error)))
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
                  transient=False) as bar:
        state: dict[str, Any] = {"task": None, "correct": 0, "tally": ErrorTally()}

        def on_start(todo: int, total: int) -> None:
            say(todo, total)
            state["task"] = bar.add_task(f"episodes ({total - todo} already done)" if todo < total else "episodes",
                                         total=todo, status="")

        def on_episode(episode: EpisodeBrief, verdict: VerdictBrief | None) -> None:
            """A recorded episode's brief and its verdict's (`arena.runs.briefs`), as the runner reports them."""
            state["correct"] += int(bool(verdict and verdict.correct))
            if episode.finish_reason in ERRORED:
                state["tally"].add(episode.error)
            bar.update(state["task"], advance=1,
                       status=escape(f"correct {state['correct']}  {state['tally'].line()}"))

        return asyncio.run(execute(config, progress=on_episode, on_start=on_start, force=force, run_dir=run_dir,
                                   on_open=guard.seen))


def print_summary(summary: dict[str, Any], title: str, run_dir: Any = None, legend: bool = False,
                  wide: bool = False, incomplete: str | None = None) -> None:
    """A summary's table, first the run's `incomplete` line when it has one (`arena.judges.completeness`) and the
    run's warnings (the data's, the endpoints'); with `legend`, what its columns mean under it; with `wide`, every
    column (else the compact ones); then suite headlines, pass@k / majority@k and judge problems."""
    if incomplete:
        console.print(f"[yellow]{escape(incomplete)}[/yellow]", highlight=False)
    for warning in dict.fromkeys(summary.get("warnings", [])):  # what the data and the endpoints said, first
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, emoji=False)
    console.print(fitted_summary(console, summary, title=title, wide=wide))
    if legend:
        for line in legend_lines(summary, console.width, wide=wide):
            console.print(line, markup=False, highlight=False)
    elif not wide and run_dir is not None:
        console.print(f"more columns: arena summary {run_dir} --wide; what they mean: --legend", highlight=False)
    headlines = suite_headlines(summary)
    for line in support_lines(summary) + headlines + repeat_lines(summary):
        console.print(line, markup=False, highlight=False)
    if headlines and run_dir is not None:
        console.print(f"all suite figures: arena report {run_dir}", highlight=False)
    if summary.get("harness"):
        for line in HarnessCost.model_validate(summary["harness"]).lines():
            console.print(line, markup=False, highlight=False)
    for warning in judge_warnings(summary):
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, emoji=False)


def print_result(result: RunResult) -> None:
    if result.summary.get("protocol"):
        console.print(f"protocol: {result.summary['protocol']} (each suite's published pipeline)"
                      if result.summary["protocol"] == "original" else
                      "protocol: arena (the arena's turn handling; see docs/protocols.md)", highlight=False)
    as_wrong = errors_counted_as_wrong(result.summary)
    incomplete = completeness(result.summary, planned_of(result.summary)).line(result.run_dir, as_wrong=as_wrong)
    print_summary(result.summary, f"{result.run_id} (judge: {result.summary['judge']})", result.run_dir,
                  incomplete=incomplete)
    console.print(f"run directory: {result.run_dir}")


def errored_problem(summary: dict[str, Any], run_dir: Any, max_error_share: float = 0.0) -> str | None:
    """Why a run must exit non-zero for its errored episodes (finish reason error, rejected or context overflow:
    not played to the end, left out of Pass@1): more of them than `max_error_share` of its episodes. None else."""
    counts = completeness(summary)
    finished, errored = counts.finishes, counts.errored
    total = sum(finished.values())
    if not errored or errored <= max_error_share * total:
        return None
    how = ", ".join(f"{finished[r]} {r.replace('_', ' ')}" for r in ERRORED if finished.get(r))
    again = "`arena resume " + str(run_dir) + "`" + (" --retry-errors" if errored > finished.get("error", 0) else "")
    allowed = f" (more than --max-error-share {max_error_share:g})" if max_error_share else ""
    counted = ("they count in Pass@1 as the published script scores a failed request" if
               errors_counted_as_wrong(summary) else "they are left out of Pass@1, counted apart")
    return f"{errored} of {total} episode(s) ended in an error ({how}){allowed}: {counted}; {again} plays them again"


def run_problems(result: RunResult, max_error_share: float = 0.0) -> list[str]:
    """Why a finished `arena run` must exit non-zero: it stopped before its whole grid was
    recorded, episodes ended in an error (more than `max_error_share` of them), or a record could not be
    written. Empty when the run is complete (episodes a model answered wrongly are not problems)."""
    problems = []
    if result.stopped or result.unrecorded:
        missing = f"{result.unrecorded} of {result.grid} episode(s) have no record"
        problems.append(f"the run stopped early: {result.stopped}; {missing}" if result.stopped
                        else f"the run stopped early: {missing}")
    finished = completeness(result.summary).finishes  # from the summary: a 100,000-episode run is not parsed again
    failed = sum(n for reason, n in finished.items() if reason in FAILED)
    if failed and failed == sum(finished.values()):
        store = RunStore(result.run_dir)
        error = store.read_episode(next(iter(store.index(persist=False).latest().values()))).error
        first = error.splitlines()[0] if error else ""  # whole: the console wraps it, never cuts it
        problems.append(f"every episode ({failed}) failed (error, rejected or context overflow), e.g. {first}")
    elif (errored := errored_problem(result.summary, result.run_dir, max_error_share)) is not None:
        problems.append(errored)
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


def finish_run(result: RunResult, lines: Sequence[str] = (), max_error_share: float = 0.0) -> None:
    """Print the result and `lines`; then one line per problem, and exit with status 1 when there are any."""
    print_result(result)
    for line in [*cost_lines(result.summary), *lines]:
        console.print(line, highlight=False)
    problems = run_problems(result, max_error_share)
    for problem in problems:
        console.print(f"[red]run incomplete:[/red] {escape(problem)}", highlight=False)
    if problems:
        raise typer.Exit(1)


def review_run(run_dir: str | Path, judge: str | None = None) -> RunData:
    """A run read back for a reviewing command, the plug-ins loaded first (reviewing code loads none itself: the
    suites' loaders give a run's task metadata, the tools replay its calls)."""
    if not Path(run_dir).exists():
        raise ValueError(f"{run_dir}: no such directory")
    load_plugins()
    return load_run(run_dir, judge)


def run_protocol(info: RunInfo) -> str:
    """The protocol a stored run (its run.json) followed, as table titles show it: with the prompts note when a
    run under `original` used the arena's wording where a published text exists (runs recorded before `--protocol`
    read as arena runs, `RunInfo.protocol`)."""
    return protocol_label(info.protocol, info.prompts)
