"""Run-level commands of the `arena` CLI: run/sweep, resume, judge, fork, doctor (reviewing: `review_commands`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from arena.core.dataset import LOADERS
from arena.judges.completeness import completeness
from arena.judges.protocols import default_protocol
from arena.judges.run_summary import summarize_scan
from arena.runs.config import RunConfig
from arena.runs.finished import NOTHING_LEFT
from arena.runs.fork import fork_config
from arena.runs.plugins import load_plugins
from arena.runs.rejudge import rejudge
from arena.review.table import errors_counted_as_wrong
from arena.runs.runner import confirm_finished
from arena.store.doctor import check_run
from arena.store.records import RunInfo
from arena.store.read import open_run
from arena.store.store import RunStore

from .common import (console, errored_problem, execute_with_progress, fail, finish_run, parse_kv, plain_hooks,
                     print_summary, run_protocol, split_values)
from .run_options import RUN_SIGNATURE, BackendName, ToolMode, agent_choices, parse_bool, run_config

app = typer.Typer()


def run_grid(**options: Any) -> None:
    """Run (or resume) an evaluation grid in one run directory: tasks x settings x budgets x repeats x
    agents/models (`arena sweep` is the same command)."""
    load_plugins()
    try:
        config = run_config(options)
        result = execute_with_progress(config, force=options["force"], announce=protocol_line(config))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    calls = result.summary.get("model_calls", {})
    lines = [f"prefix sharing: {calls.get('made')} model calls made, {calls.get('saved')} saved "
             f"(separate runs: {calls.get('separate_runs')})"] if result.summary.get("prefix_sharing") else []
    finish_run(result, lines, max_error_share=options["max_error_share"])


run_grid.__signature__ = RUN_SIGNATURE  # type: ignore[attr-defined]  # the options, one tuple per help panel
app.command("run", rich_help_panel="Run")(run_grid)
app.command("sweep", rich_help_panel="Run", hidden=True)(run_grid)  # the same command; listed once, as `run`


@app.command(rich_help_panel="Run")
def resume(run_dir: Path = typer.Argument(..., help="Run directory."),
           concurrency: Optional[int] = typer.Option(None, min=1, help="Episodes in flight (default: as recorded)."),
           backend: Optional[BackendName] = typer.Option(None, help="asyncio or ray (default: as recorded)."),
           ray_address: Optional[str] = typer.Option(None, help="Ray cluster address (default: as recorded)."),
           workers: Optional[int] = typer.Option(None, min=1, help="Worker processes (default: as recorded)."),
           force: bool = typer.Option(False, help="Continue even if the recorded configuration does not match."),
           retry_errors: bool = typer.Option(False, help="Also play again episodes the server rejected."),
           max_error_share: float = typer.Option(0.0, min=0.0, max=1.0, help="Share of episodes (0-1) that may end "
                                                 "in an error before the command exits 1; default 0: any.")
           ) -> None:
    """Finish a run in place: skip finished episodes, retry errored ones, judge what lacks a verdict.

    RUN_DIR itself is continued wherever it lies and whatever its name (the recorded run id is kept)."""
    store = RunStore(run_dir)
    if not store.exists():
        what = "no such directory" if not run_dir.exists() else "no run.json in it"
        fail(f"{run_dir}: not a run directory ({what}); give the directory that holds run.json and episodes.jsonl")
    try:
        info = store.info()
    except (OSError, ValueError, RuntimeError) as exc:
        fail(f"{store.run_json}: not readable as a run record: {exc}")
    if info.config is None:
        fail(f"{store.run_json}: field config: missing, the run cannot be resumed")
    overrides = {"concurrency": concurrency, "backend": backend, "ray_address": ray_address, "workers": workers,
                 "retry_errors": retry_errors or None}
    given = {k: v for k, v in overrides.items() if v is not None}
    config = resumed_config(info, run_dir, given)
    try:  # without overrides to record, a run finished and unchanged since its summary is only confirmed
        confirmed = None if given else asyncio.run(confirm_finished(config, run_dir))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    if confirmed is not None:
        console.print(protocol_line(config, "as recorded"), markup=False, highlight=False)
        console.print(f"{NOTHING_LEFT}: the run's {confirmed.grid} episodes are recorded and judged", highlight=False)
        finish_run(confirmed, max_error_share=max_error_share)
        return
    try:
        result = execute_with_progress(config, force=force, run_dir=run_dir,
                                       announce=protocol_line(config, "as recorded"))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    finish_run(result, max_error_share=max_error_share)


def resumed_config(info: RunInfo, run_dir: Path, overrides: dict[str, Any]) -> RunConfig:
    """What `arena resume` runs: the stored config (read in its current sections, `RunInfo`) with the run's own id,
    the directory it lies in, and the scheduling `overrides` (flat names) given on the command line."""
    assert info.config is not None
    return info.config.updated(run_id=info.run_id or run_dir.name, out=str(run_dir.resolve().parent), **overrides)


def protocol_line(config: RunConfig, given: str = "as given") -> str:
    """What a run says before its first episode: the protocol it follows, `--protocol`, the recorded one, or the
    one the data's format gives (the loader that will read it: published format -> original)."""
    protocol = config.grid.protocol
    if protocol is None:
        load_plugins()
        path, fmt = Path(config.data.path), config.data.fmt
        loader = next((lo for lo in LOADERS if (fmt and lo.name == fmt) or (not fmt and path.exists()
                                                                           and lo.detect(path))), None)
        protocol = default_protocol([loader.published]) if loader else "arena"
        how = f"by the data's format ({loader.name})" if loader else "by default"
    else:
        how = given
    return f"protocol: {protocol} ({how}; " + ("each suite's published pipeline)" if protocol == "original"
                                               else "the arena's pipeline)")




def agreement_rich(rows, protocol: str) -> Table:
    table = Table(title=f"judge agreement · protocol: {protocol}", title_justify="left")
    for name in ("judge A", "judge B", "episodes", "agree %", "Cohen's kappa"):
        table.add_column(name)
    for a in rows:
        table.add_row(a.judge_a, a.judge_b, str(a.episodes), "–" if a.percent is None else f"{a.percent:.1f}",
                      "–" if a.kappa is None else f"{a.kappa:.3f}")
    return table


@app.command("judge", rich_help_panel="Run")
def judge_run(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    judge: list[str] = typer.Option(..., help="Judge(s) to score with: auto, normalized, mcq, llm, ..."),
    label: Optional[str] = typer.Option(None, "--as", help="Store the verdicts under this name (one judge)."),
    judge_model: Optional[str] = typer.Option(None, help="Model of a model-based judge."),
    judge_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL of the judge model."),
    judge_api_key_env: Optional[str] = typer.Option(None, help="Environment variable holding the judge's API key."),
    judge_with_image: Optional[str] = typer.Option(None, help="true (default) or false: the LLM judge sends the "
                                                   "task image."),
    judge_option: list[str] = typer.Option([], help="Extra judge option key=value."),
    redo: bool = typer.Option(False, help="Score again episodes that already have this judge's verdict."),
    concurrency: int = typer.Option(8, min=1, help="Judge calls in flight."),
    max_error_share: float = typer.Option(0.0, min=0.0, max=1.0, help="Share of episodes (0-1) that may have ended "
                                          "in an error (not judged) before the command exits 1; default 0: any."),
) -> None:
    """Score a run again without re-running it; verdicts of every judge are kept side by side. Episodes that
    ended in an error are not judged (the command exits 1 while there are any; `arena resume` plays them)."""
    names = split_values(judge)
    if label and len(names) > 1:
        fail("--as names one judge; give a single --judge with it")
    options = {k: v for k, v in {"model": judge_model, "base_url": judge_base_url, "api_key_env": judge_api_key_env,
                                 "with_image": parse_bool(judge_with_image, "--judge-with-image")
                                 }.items() if v is not None}
    options.update(parse_kv(judge_option, "--judge-option"))
    result = None
    for name in names:
        try:
            result = asyncio.run(rejudge(run_dir, name, options, label=label, redo=redo, concurrency=concurrency,
                                         **plain_hooks()))
        except (ValueError, RuntimeError, OSError) as exc:
            fail(str(exc))
        console.print(f"{result.judge}: scored {result.scored} episode(s), {result.skipped} already had a verdict")
        info = RunStore(run_dir).info()
        incomplete = completeness(result.summary, info.planned_episodes).line(
            run_dir, as_wrong=errors_counted_as_wrong(result.summary))
        print_summary(result.summary, f"{run_dir.name} (judge: {result.judge}, asked) · protocol: "
                      f"{run_protocol(info)}", incomplete=incomplete)
    if result is not None and result.agreements:
        console.print(agreement_rich(result.agreements, run_protocol(RunStore(run_dir).info())))
    problem = errored_problem(result.summary, run_dir, max_error_share) if result is not None else None
    if problem:
        console.print(f"[red]run incomplete:[/red] {escape(problem)}", highlight=False)
        raise typer.Exit(1)


@app.command(rich_help_panel="Run")
def fork(run_dir: Path = typer.Argument(..., help="Run directory of the episode to continue."),
         episode: str = typer.Option(..., help="Episode id, id prefix or key to continue."),
         at_round: int = typer.Option(..., min=0, help="Keep the first K recorded rounds; the new agent plays from K+1."),
         agent: str = typer.Option(..., help="The agent that takes over."),
         model: Optional[str] = typer.Option(None, help="Model at the endpoint, for agents that take one."),
         base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL."),
         api_key_env: Optional[str] = typer.Option(None, help="Environment variable holding the API key."),
         tool_mode: ToolMode = typer.Option("xml", help="xml or native."),
         temperature: Optional[float] = typer.Option(None, min=0.0, help="Sampling temperature of the agent "
                                                     "(default: not sent)."),
         script: Optional[Path] = typer.Option(None, help="Action script for --agent scripted."),
         agent_option: list[str] = typer.Option([], help="Extra agent option key=value."),
         repeats: int = typer.Option(1, min=1, help="Continuations to sample."),
         max_rounds: Optional[int] = typer.Option(None, min=1, help="Budget of the fork (default: the episode's)."),
         replay_tools: bool = typer.Option(False, help="Execute the kept rounds' tool calls again."),
         judge: Optional[str] = typer.Option(None, help="Judge (default: the run's)."),
         run_id: Optional[str] = typer.Option(None, help="Run id of the fork (default: derived)."),
         out: Optional[Path] = typer.Option(None, help="Directory of run directories (default: the run's).")) -> None:
    """Continue a recorded episode from its first K rounds with another agent or model, as a new linked run."""
    load_plugins()
    offered = {"base_url": base_url, "api_key_env": api_key_env, "tool_mode": tool_mode, "temperature": temperature,
               "script": str(script) if script else None}
    choice = agent_choices([agent], [model] if model else [], offered, parse_kv(agent_option, "--agent-option"))[0]
    try:
        config = fork_config(open_run(run_dir), episode, at_round, choice, repeats=repeats, max_rounds=max_rounds,
                             run_id=run_id, out=str(out) if out else None,
                             prefix_mode="replay" if replay_tools else "reuse", judge=judge)
        result = execute_with_progress(config, announce=protocol_line(config, "as recorded"))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    finish_run(result)


@app.command(rich_help_panel="Look at runs")
def doctor(run_dir: Path,
           repair: bool = typer.Option(False, help="Repair what can be repaired (cut torn lines, quarantine corrupt "
                                       "ones, rebuild the index, recompute summary.json).")) -> None:
    """Check a run directory: torn or corrupt lines, orphan verdicts, missing images, stale index, summary equal
    to its recomputation. Exits 1 when a problem is left."""
    try:
        report = check_run(run_dir, repair=repair, summarize=summarize_scan)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    counts = ", ".join(f"{v} {k}" for k, v in report.counts.items())
    console.print(f"{run_dir}: {counts}", highlight=False)
    for finding in report.findings:
        console.print(finding.line(), markup=False, highlight=False)
    if report.ok:
        console.print("[green]ok[/green]" + (" (after repair)" if report.findings else ""))
        return
    left = [f for f in report.findings if not f.repaired]
    hint = " (run again with --repair)" if not repair and any(f.repairable for f in left) else ""
    console.print(f"[red]{len(left)} problem(s) left[/red]{hint}")
    raise typer.Exit(1)
