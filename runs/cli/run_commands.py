"""Run-level commands of the `arena` CLI: run/sweep, resume, judge, report, view, replay, fork, doctor."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from arena.agent import AGENTS
from arena.budget import Budget
from arena.tool import ToolOptions
from runs.config import AgentChoice, EndpointLimit, RunConfig
from runs.doctor import check_run
from runs.fork import fork_config
from runs.plugins import accepted_options, load_plugins
from runs.pricing import parse_price
from runs.rejudge import rejudge
from runs.replay import check_episode, show_episode
from runs.report import build_report
from runs.rundata import load_run
from runs.serve import serve_viewer
from runs.store import RunStore
from runs.table import summary_table, support_lines
from runs.viewer import write_viewer

from .common import console, execute_with_progress, fail, finish_run, parse_kv, split_values

app = typer.Typer()


def agent_choices(agents: list[str], models: list[str], offered: dict[str, Any], extra: dict[str, Any]):
    """One AgentChoice per agent, and per model for agents that take a model."""
    choices = []
    for name in agents:
        if name not in AGENTS:
            fail(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
        factory = AGENTS[name]
        takes_model = bool(accepted_options(factory, {"model": None}))
        for model in (models if models and takes_model else [None]):
            given = {k: v for k, v in {**offered, "model": model}.items() if v is not None}
            options = {**accepted_options(factory, given), **extra}
            choices.append(AgentChoice(agent=name, options=options))
    return choices


def parse_bool(value: Optional[str], option: str) -> Optional[bool]:
    """true/false (also yes/no, 1/0, on/off) of an option that takes a value; None when not given."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise typer.BadParameter(f"{option} must be true or false, got {value!r}")


def endpoint_limits(max_parallel: Optional[int], rpm: Optional[float], per_endpoint: list[str]):
    limits = {}
    if max_parallel or rpm:
        limits["*"] = EndpointLimit(max_parallel=max_parallel, requests_per_minute=rpm)
    for item in per_endpoint:
        url, sep, spec = item.rpartition("=")
        parallel, _, per_minute = spec.partition(":")
        try:
            limits[url.rstrip("/")] = EndpointLimit(max_parallel=int(parallel) if parallel else None,
                                                    requests_per_minute=float(per_minute) if per_minute else None)
        except ValueError:
            sep = ""
        if not sep or not url:
            raise typer.BadParameter(f"--endpoint-limit must look like URL=PARALLEL:PER_MINUTE, got {item!r}")
    return limits


@app.command("run")
@app.command("sweep")
def run_grid(
    data: Path = typer.Option(..., "--data", help="Task file (arena JSONL, VistaArena JSON/JSONL), datasets.json, "
                              "or world dir."),
    root: Optional[Path] = typer.Option(None, help="Dataset root for relative paths (default: the file's directory)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Force a loader (world, tasks, vistaarena, ...)."),
    corpus: Optional[Path] = typer.Option(None, help="Corpus directory (docs.jsonl) for offline text search."),
    agent: list[str] = typer.Option(["openai"], help="Agent(s): openai, scripted, smolagents, oracle, direct, "
                                    "text-only, ... (several: scripted,openai)."),
    model: list[str] = typer.Option([], help="Model(s) at the endpoint, for agents that take one (several: m1,m2)."),
    base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: Optional[str] = typer.Option(None, help="Environment variable holding the API key (never stored)."),
    tool_mode: str = typer.Option("xml", help="xml (Qwen/Hermes <tool_call>, VistaArena) or native (tools= API)."),
    temperature: Optional[float] = typer.Option(None, help="Sampling temperature of the agent (default: not sent, "
                                                "the server's default; paper: 0.7)."),
    max_tokens: Optional[int] = typer.Option(None, help="Max completion tokens per turn."),
    token_param: str = typer.Option("auto", help="Field for --max-tokens: auto (max_completion_tokens for OpenAI "
                                    "o-series/gpt-5, else max_tokens), max_tokens or max_completion_tokens."),
    reasoning_effort: Optional[str] = typer.Option(None, help="reasoning_effort sent to reasoning models "
                                                   "(low, medium, high)."),
    max_images: Optional[int] = typer.Option(None, help="Images per request: older returned images are replaced by "
                                             "a placeholder (default: learned from the server's errors)."),
    max_context_tokens: Optional[int] = typer.Option(None, help="Estimated prompt tokens per request: oldest "
                                                     "observation images, then texts, are left out."),
    strict_answers: bool = typer.Option(False, help="Ask once for <answer> when a reply has neither a tool call "
                                        "nor an <answer> tag (original: the reply is the answer)."),
    parallel_tool_calls: Optional[bool] = typer.Option(None, "--parallel-tool-calls/--no-parallel-tool-calls",
                                                       help="Send parallel_tool_calls in native mode (default: "
                                                       "not sent)."),
    image_detail: Optional[str] = typer.Option(None, help="OpenAI image detail: low, high or auto (default: not "
                                               "sent)."),
    timeout: float = typer.Option(120.0, help="Per-request timeout in seconds."),
    image_max_pixels: int = typer.Option(1280 * 28 * 28, help="max_pixels of smart_resize for images sent to the "
                                         "model."),
    script: Optional[Path] = typer.Option(None, help="Action script (JSON/YAML) for --agent scripted."),
    agent_option: list[str] = typer.Option([], help="Extra agent option key=value, JSON values allowed (every agent)."),
    setting: list[str] = typer.Option(["search+crop"], help="no-tool, search, search+crop, or tools joined by + "
                                      "(several: no-tool,search)."),
    max_rounds: list[str] = typer.Option(["10"], help="Round budget(s), e.g. 10 or 6,8,10,12,14."),
    repeats: int = typer.Option(1, help="Repeats per task (paper: 5)."),
    prefix_sharing: Optional[bool] = typer.Option(
        None, "--prefix-sharing/--no-prefix-sharing",
        help="Derive smaller budgets from the largest one's trajectory (default: on unless --show-budget)."),
    seed: int = typer.Option(0),
    concurrency: int = typer.Option(8, help="Episodes in flight."),
    backend: str = typer.Option("asyncio", help="asyncio or ray."),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster address (default: start a local one)."),
    ray_workers: Optional[int] = typer.Option(None, help="Ray worker actors (default: the cluster's CPUs)."),
    max_parallel: Optional[int] = typer.Option(None, help="Max requests in flight per model endpoint."),
    rpm: Optional[float] = typer.Option(None, help="Max requests per minute per model endpoint."),
    endpoint_limit: list[str] = typer.Option([], help="Limits of one endpoint: URL=PARALLEL:PER_MINUTE."),
    judge: str = typer.Option("auto", help="auto, normalized, mcq, llm, ..."),
    judge_model: Optional[str] = typer.Option(None),
    judge_base_url: Optional[str] = typer.Option(None),
    judge_api_key_env: Optional[str] = typer.Option(None),
    judge_with_image: Optional[str] = typer.Option(None, help="true (default: the LLM judge sends the task image, "
                                                   "as the paper's did) or false (text only)."),
    top_k: int = typer.Option(3, help="Text search results per call (paper: 3)."),
    bbox_coords: str = typer.Option("relative", help="Crop box coordinates: relative (0-1000) or pixel."),
    image_search: str = typer.Option("auto", help="Reverse image search: auto, stored, index; web (text-to-image "
                                     "lookup on the live web); live (Google Lens of any image in context)."),
    web: str = typer.Option("offline", help="offline (world/corpus), live, record, replay or refresh (cassettes)."),
    cassette: Optional[Path] = typer.Option(None, help="Cassette file (default with --web: <run>/cassettes.sqlite)."),
    tool_option: list[str] = typer.Option([], help="Extra tool option key=value."),
    protocol: Optional[str] = typer.Option(
        None, help="original (each suite's published pipeline, turn by turn) or arena (the arena's improvements); "
                   "default: original for data in a published format, arena for generated worlds."),
    final_answer_turn: Optional[bool] = typer.Option(
        None, "--final-answer-turn/--no-final-answer-turn",
        help="Ask for an answer when the budget runs out (default: on under arena, off under original)."),
    stop_on_invalid: Optional[bool] = typer.Option(
        None, "--stop-on-invalid/--no-stop-on-invalid",
        help="End an episode at an invalid turn (default: off under arena, on under original)."),
    show_budget: bool = typer.Option(False, help="Tell the agent its round budget (turns prefix sharing off)."),
    limit: Optional[int] = typer.Option(None, help="Only the first N tasks."),
    task: list[str] = typer.Option([], help="Only these task ids."),
    run_id: Optional[str] = typer.Option(None, help="Run id (default: derived from data, agents and grid)."),
    out: Path = typer.Option(Path("logs"), help="Directory of run directories."),
    force: bool = typer.Option(False, help="Continue a run whose configuration changed."),
    retry_errors: bool = typer.Option(False, help="Also play again episodes the server rejected (rejected, "
                                      "context_overflow); transient errors are always retried."),
    price: Optional[str] = typer.Option(None, help="Agent price IN,OUT in dollars per million prompt/completion "
                                        "tokens (default: the table of known models)."),
    max_cost: Optional[float] = typer.Option(None, help="Stop the run once its recorded cost reaches this many "
                                             "dollars."),
) -> None:
    """Run (or resume) an evaluation grid in one run directory: tasks x settings x budgets x repeats x
    agents/models. `run` and `sweep` are the same command."""

    load_plugins()
    offered = {"base_url": base_url, "api_key_env": api_key_env, "tool_mode": tool_mode, "temperature": temperature,
               "max_tokens": max_tokens, "timeout": timeout, "image_max_pixels": image_max_pixels,
               "script": str(script) if script else None,
               "token_param": token_param if token_param != "auto" else None, "reasoning_effort": reasoning_effort,
               "max_images": max_images, "max_context_tokens": max_context_tokens,
               "strict_answers": strict_answers or None, "parallel_tool_calls": parallel_tool_calls,
               "image_detail": image_detail}
    choices = agent_choices(split_values(agent), split_values(model), offered, parse_kv(agent_option, "--agent-option"))
    judge_options = {k: v for k, v in {"model": judge_model, "base_url": judge_base_url,
                                       "api_key_env": judge_api_key_env,
                                       "with_image": parse_bool(judge_with_image, "--judge-with-image")
                                       }.items() if v is not None}
    if backend not in ("asyncio", "ray"):
        fail(f"--backend must be asyncio or ray, got {backend!r}")
    if protocol not in (None, "original", "arena"):
        fail(f"--protocol must be original or arena, got {protocol!r}")
    budget_fields: dict[str, Any] = {}
    if final_answer_turn is not None:
        budget_fields["final_answer_turn"] = final_answer_turn
    if stop_on_invalid is not None:
        budget_fields["on_invalid"] = "stop" if stop_on_invalid else "observe"
    try:
        config = RunConfig(
            data=str(data), root=str(root) if root else None, fmt=fmt, corpus=str(corpus) if corpus else None,
            agent=choices[0].agent, agent_options=choices[0].options, agents=choices if len(choices) > 1 else [],
            settings=split_values(setting), max_rounds=sorted({int(n) for n in split_values(max_rounds)}), repeats=repeats,
            prefix_sharing=prefix_sharing, seed=seed, concurrency=concurrency, backend=backend,
            ray_address=ray_address, ray_workers=ray_workers,
            endpoint_limits=endpoint_limits(max_parallel, rpm, endpoint_limit),
            judge=judge, judge_options=judge_options,
            tool_options=ToolOptions(top_k=top_k, bbox_coords=bbox_coords, image_search=image_search, web=web,
                                     cassette=str(cassette) if cassette else None,
                                     **parse_kv(tool_option, "--tool-option")),
            budget=Budget(**budget_fields), protocol=protocol,
            show_budget=show_budget, limit=limit,
            task_ids=task or None, run_id=run_id, out=str(out), retry_errors=retry_errors,
            price=list(parse_price(price)) if price else None, max_cost=max_cost,
        )
        result = execute_with_progress(config, force=force)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    calls = result.summary.get("model_calls", {})
    lines = [f"prefix sharing: {calls.get('made')} model calls made, {calls.get('saved')} saved "
             f"(separate runs: {calls.get('separate_runs')})"] if result.summary.get("prefix_sharing") else []
    finish_run(result, lines)


@app.command()
def resume(run_dir: Path,
           concurrency: Optional[int] = typer.Option(None, help="Episodes in flight (default: as recorded)."),
           backend: Optional[str] = typer.Option(None, help="asyncio or ray (default: as recorded)."),
           ray_address: Optional[str] = typer.Option(None),
           force: bool = typer.Option(False, help="Continue even if the recorded configuration does not match."),
           retry_errors: bool = typer.Option(False, help="Also play again episodes the server rejected.")
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
    try:
        config = RunConfig.model_validate(info.get("config") or {})
    except ValueError as exc:
        fail(f"{store.run_json}: field config: {exc}")
    update: dict[str, Any] = {"run_id": info.get("run_id") or run_dir.name, "out": str(run_dir.resolve().parent)}
    if "protocol" not in (info.get("config") or {}):
        update["protocol"] = "arena"  # recorded before --protocol existed: the arena's pipeline
    for name, value in (("concurrency", concurrency), ("backend", backend), ("ray_address", ray_address)):
        if value is not None:
            update[name] = value
    if retry_errors:
        update["retry_errors"] = True
    config = RunConfig.model_validate({**config.model_dump(), **update})
    try:
        result = execute_with_progress(config, force=force, run_dir=run_dir)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    finish_run(result)


def agreement_rich(rows) -> Table:
    table = Table(title="judge agreement", title_justify="left")
    for name in ("judge A", "judge B", "episodes", "agree %", "Cohen's kappa"):
        table.add_column(name)
    for a in rows:
        table.add_row(a.judge_a, a.judge_b, str(a.episodes), "–" if a.percent is None else f"{a.percent:.1f}",
                      "–" if a.kappa is None else f"{a.kappa:.3f}")
    return table


@app.command("judge")
def judge_run(
    run_dir: Path,
    judge: list[str] = typer.Option(..., help="Judge(s) to score with: auto, normalized, mcq, llm, ..."),
    label: Optional[str] = typer.Option(None, "--as", help="Store the verdicts under this name (one judge)."),
    judge_model: Optional[str] = typer.Option(None),
    judge_base_url: Optional[str] = typer.Option(None),
    judge_api_key_env: Optional[str] = typer.Option(None),
    judge_with_image: Optional[str] = typer.Option(None, help="true (default) or false: the LLM judge sends the "
                                                   "task image."),
    judge_option: list[str] = typer.Option([], help="Extra judge option key=value."),
    redo: bool = typer.Option(False, help="Score again episodes that already have this judge's verdict."),
    concurrency: int = typer.Option(8),
) -> None:
    """Score a run again without re-running it; verdicts of every judge are kept side by side."""
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
            result = asyncio.run(rejudge(run_dir, name, options, label=label, redo=redo, concurrency=concurrency))
        except (ValueError, RuntimeError, OSError) as exc:
            fail(str(exc))
        console.print(f"{result.judge}: scored {result.scored} episode(s), {result.skipped} already had a verdict")
        console.print(summary_table(result.summary, title=f"{run_dir.name} (judge: {result.judge})"))
        for line in support_lines(result.summary):
            console.print(line, markup=False)
    if result is not None and result.agreements:
        console.print(agreement_rich(result.agreements))


@app.command()
def report(runs: list[Path] = typer.Argument(..., help="Run directories."),
           out: Optional[Path] = typer.Option(None, help="Where report.html and sweep.png go (default: first run)."),
           judge: str = typer.Option("auto", help="Whose verdicts count.")) -> None:
    """Summary tables (Table 4/5 layouts, categories, failures, agreement) and the sweep plot, as HTML and PNG."""
    try:
        data = [load_run(r, judge) for r in runs]
        built = build_report(data)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    for table in built.tables:
        console.print(table.rich())
    html_path, png_path = built.write(out or runs[0])
    console.print(f"report: {html_path}\nplot:   {png_path}")


@app.command()
def view(runs: list[Path] = typer.Argument(..., help="A run directory, or two to compare."),
         out: Optional[Path] = typer.Option(None, help="HTML file (default: RUN/viewer.html, RUN/compare-RUN2.html)."),
         judge: str = typer.Option("auto", help="Whose verdicts count."),
         max_side: Optional[int] = typer.Option(None, help="Longest side of embedded images (default: by count)."),
         layout: str = typer.Option("auto", help="auto (one file up to 500 episodes, else page + shards), single or "
                                    "sharded."),
         serve: bool = typer.Option(False, help="Also serve the viewer over HTTP (for a remote machine)."),
         host: str = typer.Option("127.0.0.1", help="Address to serve on (with --serve)."),
         port: int = typer.Option(8765, help="Port to serve on (with --serve; 0 picks a free one).")
         ) -> None:
    """Write a static HTML viewer of a run (or a side-by-side of two) that opens from the file system: one file
    for small runs, the page plus a `-view/` directory of shards loaded on demand for large ones."""
    if len(runs) > 2:
        fail("view takes one run, or two to compare")
    if layout not in ("auto", "single", "sharded"):
        fail(f"--layout must be auto, single or sharded, got {layout!r}")
    try:
        data = [load_run(r, judge) for r in runs]
        target = out or (runs[0] / ("viewer.html" if len(runs) == 1 else f"compare-{runs[1].resolve().name}.html"))
        path = write_viewer(data, target, max_side=max_side, single=None if layout == "auto" else layout == "single")
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    console.print(f"viewer: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if serve:
        try:
            serve_viewer(path, host, port, lambda url: console.print(f"serving {url} (Ctrl-C to stop)", markup=False))
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc}")


@app.command()
def replay(run_dir: Path,
           episode: Optional[str] = typer.Option(None, help="Episode id, id prefix or key (default: list them)."),
           check: bool = typer.Option(False, help="Re-execute the recorded tool calls and report differences."),
           step: bool = typer.Option(False, help="Wait for Enter between steps."),
           judge: str = typer.Option("auto")) -> None:
    """Step through a recorded episode; --check re-executes its tool calls against the world."""
    try:
        run = load_run(run_dir, judge)
        run.episodes  # read (and checked) here, so a corrupt store is one error line
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    if episode is None:
        table = Table(title=f"{run.run_id}: episodes")
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

    show_episode(console, chosen, verdicts, wait if step and console.is_terminal else None)
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


@app.command()
def fork(run_dir: Path,
         episode: str = typer.Option(..., help="Episode id, id prefix or key to continue."),
         at_round: int = typer.Option(..., help="Keep the first K recorded rounds; the new agent plays from K+1."),
         agent: str = typer.Option(..., help="The agent that takes over."),
         model: Optional[str] = typer.Option(None),
         base_url: Optional[str] = typer.Option(None),
         api_key_env: Optional[str] = typer.Option(None),
         tool_mode: str = typer.Option("xml"),
         temperature: Optional[float] = typer.Option(None),
         script: Optional[Path] = typer.Option(None, help="Action script for --agent scripted."),
         agent_option: list[str] = typer.Option([], help="Extra agent option key=value."),
         repeats: int = typer.Option(1, help="Continuations to sample."),
         max_rounds: Optional[int] = typer.Option(None, help="Budget of the fork (default: the episode's)."),
         replay_tools: bool = typer.Option(False, help="Execute the kept rounds' tool calls again."),
         judge: Optional[str] = typer.Option(None, help="Judge (default: the run's)."),
         run_id: Optional[str] = typer.Option(None),
         out: Optional[Path] = typer.Option(None, help="Directory of run directories (default: the run's).")) -> None:
    """Continue a recorded episode from its first K rounds with another agent or model, as a new linked run."""
    load_plugins()
    offered = {"base_url": base_url, "api_key_env": api_key_env, "tool_mode": tool_mode, "temperature": temperature,
               "script": str(script) if script else None}
    choice = agent_choices([agent], [model] if model else [], offered, parse_kv(agent_option, "--agent-option"))[0]
    try:
        config = fork_config(load_run(run_dir), episode, at_round, choice, repeats=repeats, max_rounds=max_rounds,
                             run_id=run_id, out=str(out) if out else None,
                             prefix_mode="replay" if replay_tools else "reuse", judge=judge)
        result = execute_with_progress(config)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    finish_run(result)


@app.command()
def doctor(run_dir: Path,
           repair: bool = typer.Option(False, help="Repair what can be repaired (cut torn lines, quarantine corrupt "
                                       "ones, rebuild the index, recompute summary.json).")) -> None:
    """Check a run directory: torn or corrupt lines, orphan verdicts, missing images, stale index, summary equal
    to its recomputation. Exits 1 when a problem is left."""
    try:
        report = check_run(run_dir, repair=repair)
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
