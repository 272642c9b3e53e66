"""Run-level commands of the `arena` CLI: run/sweep, resume, judge, fork, doctor (reviewing: `review_commands`)."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, Literal, Optional

import typer
from rich.markup import escape
from rich.table import Table

from arena.core.agent import AGENTS
from arena.core.budget import Budget
from arena.core.dataset import LOADERS
from arena.core.judge import JUDGES
from arena.core.tool import TOOLS, ToolOptions
from arena.judges.metrics import AUTO
from arena.judges.protocols import default_protocol
from arena.judges.run_summary import summarize_scan
from arena.runs.config import AgentChoice, EndpointLimit, RunConfig
from arena.runs.finished import NOTHING_LEFT
from arena.runs.fork import fork_config
from arena.runs.names import did_you_mean
from arena.runs.plugins import accepted_options, load_plugins
from arena.runs.pricing import parse_price
from arena.runs.rejudge import rejudge
from arena.runs.runner import confirm_finished
from arena.runs.validate import check_tool_options
from arena.store.doctor import check_run
from arena.store.records import RunInfo
from arena.store.read import open_run
from arena.store.store import RunStore

from .common import (config_file_callback, console, errored_problem, execute_with_progress, fail, finish_run, parse_kv,
                     plain_hooks, print_summary, run_protocol, split_values)

app = typer.Typer()


def agent_choices(agents: list[str], models: list[str], offered: dict[str, Any], extra: dict[str, Any]):
    """One AgentChoice per agent, and per model for agents that take a model."""
    choices = []
    for name in agents:
        if name not in AGENTS:
            fail(f"unknown agent {name!r}{did_you_mean(name, AGENTS)}; known: {', '.join(sorted(AGENTS))}")
        factory = AGENTS[name]
        unknown = sorted(set(extra) - set(accepted_options(factory, extra)))
        if unknown:
            takes = inspect.signature(factory).parameters
            fail(f"--agent-option: agent {name!r} does not take "
                 f"{', '.join(key + did_you_mean(key, takes) for key in unknown)}; it takes: "
                 f"{', '.join(inspect.signature(factory).parameters)}")
        takes_model = bool(accepted_options(factory, {"model": None}))
        for model in (models if models and takes_model else [None]):
            given = {k: v for k, v in {**offered, "model": model}.items() if v is not None}
            options = {**accepted_options(factory, given), **extra}
            needed = [p.name for p in inspect.signature(factory).parameters.values()
                      if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
                      and p.name not in options]
            if needed:
                flags = ", ".join(f"--{p.replace('_', '-')}" for p in needed)
                fail(f"--agent {name} needs {flags} (or --agent-option {needed[0]}=...)")
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


P_DATA, P_AGENT, P_GRID, P_TOOLS, P_LIMITS, P_JUDGE, P_SCHED, P_OUTPUT = (
    "Data and task selection", "Agent", "Grid", "Tools", "Limits per episode", "Judge", "Scheduling", "Output")
ToolMode = Literal["xml", "native"]
TokenParam = Literal["auto", "max_tokens", "max_completion_tokens"]
ImageDetail = Literal["low", "high", "auto"]
BackendName = Literal["asyncio", "ray"]
BBoxCoords = Literal["relative", "pixel"]
ImageSearchMode = Literal["auto", "stored", "index", "web", "live"]
WebMode = Literal["offline", "live", "record", "replay", "refresh"]
Protocol = Literal["original", "arena"]


def budgets(values: list[str]) -> list[int]:
    """`--max-rounds` values as whole numbers >= 1; anything else names the option."""
    out = set()
    for value in split_values(values):
        try:
            number = int(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not a whole number", param_hint="'--max-rounds'") from None
        if number < 1:
            raise typer.BadParameter(f"{value!r} must be at least 1", param_hint="'--max-rounds'")
        out.add(number)
    return sorted(out)


def tool_limits(pairs: list[str]) -> dict[str, int]:
    """`--tool-limit NAME=K` pairs (K a whole number >= 0) for registered tools."""
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, count = pair.partition("=")
        if not sep or not name or not count.strip().isdigit():
            raise typer.BadParameter(f"must look like TOOL=K with K a whole number >= 0, got {pair!r}",
                                     param_hint="'--tool-limit'")
        if name not in TOOLS:
            raise typer.BadParameter(f"unknown tool {name!r}{did_you_mean(name, TOOLS)}; tools: {', '.join(sorted(TOOLS))}",
                                     param_hint="'--tool-limit'")
        out[name] = int(count)
    return out


@app.command("run", rich_help_panel="Run")
@app.command("sweep", rich_help_panel="Run", hidden=True)  # the same command; listed once, as `run`
def run_grid(
    config_file: Optional[Path] = typer.Option(
        None, "--config", help="YAML file of run options (names as on the command line, e.g. max-rounds: [6, 10]); "
        "flags given on the command line override it.", is_eager=True, callback=config_file_callback,
        rich_help_panel=P_DATA),
    data: Path = typer.Option(..., "--data", help="Task file (arena JSONL, VistaArena JSON/JSONL), datasets.json, "
                              "or world dir.", rich_help_panel=P_DATA),
    root: Optional[Path] = typer.Option(None, help="Dataset root for relative paths (default: the file's directory).",
                                        rich_help_panel=P_DATA),
    fmt: Optional[str] = typer.Option(None, "--format", help="Force a loader (world, tasks, vistaarena, ...).",
                                      rich_help_panel=P_DATA),
    corpus: Optional[Path] = typer.Option(None, help="Corpus directory (docs.jsonl) for offline text search.",
                                          rich_help_panel=P_DATA),
    limit: Optional[int] = typer.Option(None, min=1, help="Only the first N tasks (after the filters).",
                                        rich_help_panel=P_DATA),
    task: list[str] = typer.Option([], help="Only these task ids.", rich_help_panel=P_DATA),
    level: list[str] = typer.Option([], help="Only tasks of these levels (e.g. L3; several: L2,L3).",
                                    rich_help_panel=P_DATA),
    category: list[str] = typer.Option([], help="Only tasks of these categories.", rich_help_panel=P_DATA),
    suite: list[str] = typer.Option([], help="Only tasks of these suites (vistahop, mmir, ...).", rich_help_panel=P_DATA),
    agent: list[str] = typer.Option(["openai"], help="Agent(s): openai, scripted, smolagents, oracle, direct, "
                                    "text-only, ... (several: scripted,openai)."),
    model: list[str] = typer.Option([], help="Model(s) at the endpoint, for agents that take one (several: m1,m2).", rich_help_panel=P_AGENT),
    base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.", rich_help_panel=P_AGENT),
    api_key_env: Optional[str] = typer.Option(None, help="Environment variable holding the API key (never stored).", rich_help_panel=P_AGENT),
    tool_mode: ToolMode = typer.Option("xml", help="xml (Qwen/Hermes <tool_call>, VistaArena) or native (tools= API).", rich_help_panel=P_AGENT),
    temperature: Optional[float] = typer.Option(None, min=0.0, help="Sampling temperature of the agent (default: not sent, "
                                                "the server's default; paper: 0.7).", rich_help_panel=P_AGENT),
    max_tokens: Optional[int] = typer.Option(None, min=1, help="Max completion tokens per turn.", rich_help_panel=P_AGENT),
    token_param: TokenParam = typer.Option("auto", help="Field for --max-tokens: auto (max_completion_tokens for OpenAI "
                                    "o-series/gpt-5, else max_tokens), max_tokens or max_completion_tokens.", rich_help_panel=P_AGENT),
    reasoning_effort: Optional[str] = typer.Option(None, help="reasoning_effort sent to reasoning models "
                                                   "(low, medium, high).", rich_help_panel=P_AGENT),
    max_images: Optional[int] = typer.Option(None, min=1, help="Images per request: older returned images are replaced by "
                                             "a placeholder (default: learned from the server's errors).", rich_help_panel=P_AGENT),
    max_context_tokens: Optional[int] = typer.Option(None, min=1, help="Estimated prompt tokens per request: oldest "
                                                     "observation images, then texts, are left out.", rich_help_panel=P_AGENT),
    strict_answers: bool = typer.Option(False, help="Ask once for <answer> when a reply has neither a tool call "
                                        "nor an <answer> tag (original: the reply is the answer).", rich_help_panel=P_AGENT),
    parallel_tool_calls: Optional[bool] = typer.Option(None, "--parallel-tool-calls/--no-parallel-tool-calls",
                                                       help="Send parallel_tool_calls in native mode (default: "
                                                       "not sent).", rich_help_panel=P_AGENT),
    image_detail: Optional[ImageDetail] = typer.Option(None, help="OpenAI image detail: low, high or auto (default: not "
                                               "sent).", rich_help_panel=P_AGENT),
    timeout: float = typer.Option(120.0, min=0.001, help="Per-request timeout in seconds.", rich_help_panel=P_AGENT),
    image_max_pixels: int = typer.Option(1280 * 28 * 28, min=1, help="max_pixels of smart_resize for images sent to the "
                                         "model.", rich_help_panel=P_AGENT),
    script: Optional[Path] = typer.Option(None, help="Action script (JSON/YAML) for --agent scripted.", rich_help_panel=P_AGENT),
    agent_option: list[str] = typer.Option([], help="Extra agent option key=value, JSON values allowed (every agent).", rich_help_panel=P_AGENT),
    setting: list[str] = typer.Option(["search+crop"], help="no-tool, search, search+crop, or tools joined by + "
                                      "(several: no-tool,search).", rich_help_panel=P_GRID),
    max_rounds: list[str] = typer.Option(["10"], help="Round budget(s), whole numbers >= 1, e.g. 10 or 6,8,10.",
                                         rich_help_panel=P_GRID),
    repeats: int = typer.Option(1, min=1, help="Repeats per task (paper: 5).", rich_help_panel=P_GRID),
    prefix_sharing: Optional[bool] = typer.Option(
        None, "--prefix-sharing/--no-prefix-sharing", rich_help_panel=P_GRID,
        help="Derive smaller budgets from the largest one's trajectory (default: on unless --show-budget)."),
    seed: int = typer.Option(0, help="Seed of the grid (each episode's seed derives from it).", rich_help_panel=P_GRID),
    final_answer_turn: Optional[bool] = typer.Option(
        None, "--final-answer-turn/--no-final-answer-turn", rich_help_panel=P_GRID,
        help="Ask for an answer when the budget runs out (default: on under arena, off under original)."),
    stop_on_invalid: Optional[bool] = typer.Option(
        None, "--stop-on-invalid/--no-stop-on-invalid", rich_help_panel=P_GRID,
        help="End an episode at an invalid turn (default: off under arena, on under original)."),
    show_budget: bool = typer.Option(False, help="Tell the agent its round budget (turns prefix sharing off).",
                                     rich_help_panel=P_GRID),
    top_k: int = typer.Option(3, min=1, help="Text search results per call (paper: 3).", rich_help_panel=P_TOOLS),
    bbox_coords: BBoxCoords = typer.Option("relative",
                                    help="Crop box coordinates: relative (0-1000) or pixel.", rich_help_panel=P_TOOLS),
    image_search: ImageSearchMode = typer.Option("auto",
                                     help="Reverse image search: auto, stored, index; web (text-to-image lookup on "
                                     "the live web); live (Google Lens of any image in context).",
                                     rich_help_panel=P_TOOLS),
    web: WebMode = typer.Option("offline",
                            help="offline (world/corpus), live, record, replay or refresh (cassettes).",
                            rich_help_panel=P_TOOLS),
    cassette: Optional[Path] = typer.Option(None, help="Cassette file (default with --web: <run>/cassettes.sqlite).",
                                            rich_help_panel=P_TOOLS),
    tool_option: list[str] = typer.Option([], help="Extra tool option key=value (options of the run's tools).",
                                          rich_help_panel=P_TOOLS),
    max_tokens_per_episode: Optional[int] = typer.Option(
        None, min=1, help="End an episode once its prompt + completion tokens reach this.", rich_help_panel=P_LIMITS),
    max_seconds_per_episode: Optional[float] = typer.Option(
        None, min=0.001, help="End an episode once it has run this many seconds.", rich_help_panel=P_LIMITS),
    tool_limit: list[str] = typer.Option([], help="At most K calls of a tool per episode: TOOL=K (repeatable).",
                                         rich_help_panel=P_LIMITS),
    judge: str = typer.Option("auto", help="auto (each task's own), normalized, mcq, llm, or a suite's judge.",
                              rich_help_panel=P_JUDGE),
    judge_model: Optional[str] = typer.Option(None, help="Model of a model-based judge.", rich_help_panel=P_JUDGE),
    judge_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL of the judge model.",
                                                 rich_help_panel=P_JUDGE),
    judge_api_key_env: Optional[str] = typer.Option(None, help="Environment variable holding the judge's API key.",
                                                    rich_help_panel=P_JUDGE),
    judge_with_image: Optional[str] = typer.Option(None, help="true (default: the LLM judge sends the task image, "
                                                   "as the paper's did) or false (text only).",
                                                   rich_help_panel=P_JUDGE),
    protocol: Optional[Protocol] = typer.Option(
        None, help="original (each suite's published pipeline, turn by turn) or arena (the arena's improvements); "
                   "default: original for data in a published format, arena for generated worlds.",
        rich_help_panel=P_GRID),
    prompts: Optional[Path] = typer.Option(
        None, help="YAML file of prompt texts by template name (e.g. vistahop.judge.user, carv.judge.user, "
                   "agent.system.intro) replacing the arena's wording, e.g. with a paper's published judge prompt or "
                   "agent instructions; checked before the first episode (docs/protocols.md, Prompt texts).",
        rich_help_panel=P_JUDGE),
    concurrency: int = typer.Option(8, min=1, help="Episodes in flight.", rich_help_panel=P_SCHED),
    backend: BackendName = typer.Option("asyncio", help="asyncio or ray.",
                                rich_help_panel=P_SCHED),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster address (default: start a local one).",
                                              rich_help_panel=P_SCHED),
    ray_workers: Optional[int] = typer.Option(None, min=1, help="Ray worker actors (default: the cluster's CPUs).",
                                              rich_help_panel=P_SCHED),
    ray_shared_dir: bool = typer.Option(False, help="The run directory is on a filesystem every Ray node mounts at "
                                        "the same path: actors append their episodes' records there themselves.",
                                        rich_help_panel=P_SCHED),
    workers: Optional[int] = typer.Option(None, min=1, help="Worker processes playing episodes on this machine "
                                          "(asyncio backend; default: none, this process plays them).",
                                          rich_help_panel=P_SCHED),
    max_parallel: Optional[int] = typer.Option(None, min=1, help="Max requests in flight per model endpoint.",
                                               rich_help_panel=P_SCHED),
    rpm: Optional[float] = typer.Option(None, min=0.001, help="Max requests per minute per model endpoint.",
                                        rich_help_panel=P_SCHED),
    endpoint_limit: list[str] = typer.Option([], help="Limits of one endpoint: URL=PARALLEL:PER_MINUTE.",
                                             rich_help_panel=P_SCHED),
    run_id: Optional[str] = typer.Option(None, help="Run id (default: derived from data, agents and grid).",
                                         rich_help_panel=P_OUTPUT),
    out: Path = typer.Option(Path("logs"), help="Directory of run directories.", rich_help_panel=P_OUTPUT),
    force: bool = typer.Option(False, help="Continue a run whose configuration changed.", rich_help_panel=P_OUTPUT),
    transcript: bool = typer.Option(True, help="Keep every model call exactly as sent and received (calls.jsonl; "
                                    "arena transcript).", rich_help_panel=P_OUTPUT),
    retry_errors: bool = typer.Option(False, help="Also play again episodes the server rejected (rejected, "
                                      "context_overflow); transient errors are always retried.",
                                      rich_help_panel=P_OUTPUT),
    fail_fast: int = typer.Option(3, min=0, help="Stop the run when the first N requests to an endpoint (agent or "
                                  "judge) are all refused (wrong model, bad key, unsupported parameter); 0: never.",
                                  rich_help_panel=P_LIMITS),
    price: Optional[str] = typer.Option(None, help="Agent price IN,OUT in dollars per million prompt/completion "
                                        "tokens (default: the table of known models).", rich_help_panel=P_LIMITS),
    max_cost: Optional[float] = typer.Option(None, min=0.0, help="Stop the run once its recorded cost reaches this "
                                             "many dollars.", rich_help_panel=P_LIMITS),
    max_error_share: float = typer.Option(0.0, min=0.0, max=1.0, help="Share of episodes (0-1) that may end in an "
                                          "error (error, rejected, context overflow: left out of Pass@1) before "
                                          "the command exits 1; default 0: any.", rich_help_panel=P_LIMITS),
) -> None:
    """Run (or resume) an evaluation grid in one run directory: tasks x settings x budgets x repeats x
    agents/models (`arena sweep` is the same command)."""

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
    if judge != AUTO and judge not in JUDGES:
        fail(f"--judge: unknown judge {judge!r}{did_you_mean(judge, [AUTO, *JUDGES])}; valid: auto, {', '.join(sorted(JUDGES))}")
    rounds = budgets(max_rounds)
    limits = tool_limits(tool_limit)
    extra_tool_options = parse_kv(tool_option, "--tool-option")
    budget_fields: dict[str, Any] = {"tool_limits": limits, "max_tokens": max_tokens_per_episode,
                                     "max_seconds": max_seconds_per_episode}
    if final_answer_turn is not None:
        budget_fields["final_answer_turn"] = final_answer_turn
    if stop_on_invalid is not None:
        budget_fields["on_invalid"] = "stop" if stop_on_invalid else "observe"
    try:
        tool_options = ToolOptions(**{"top_k": top_k, "bbox_coords": bbox_coords, "image_search": image_search,
                                      "web": web, "cassette": str(cassette) if cassette else None,
                                      **extra_tool_options})
        settings = split_values(setting)
        check_tool_options(tool_options, settings, given=extra_tool_options)
        config = RunConfig(
            data=str(data), root=str(root) if root else None, fmt=fmt, corpus=str(corpus) if corpus else None,
            agent=choices[0].agent, agent_options=choices[0].options, agents=choices if len(choices) > 1 else [],
            settings=settings, max_rounds=rounds, repeats=repeats,
            prefix_sharing=prefix_sharing, seed=seed, concurrency=concurrency, backend=backend,
            ray_address=ray_address, ray_workers=ray_workers, ray_shared_dir=ray_shared_dir, workers=workers,
            endpoint_limits=endpoint_limits(max_parallel, rpm, endpoint_limit),
            judge=judge, judge_options=judge_options, tool_options=tool_options,
            budget=Budget(**budget_fields), protocol=protocol,
            show_budget=show_budget, limit=limit, task_ids=task or None,
            levels=split_values(level) or None, categories=split_values(category) or None,
            suites=split_values(suite) or None, run_id=run_id, out=str(out), retry_errors=retry_errors,
            fail_fast=fail_fast, price=list(parse_price(price)) if price else None, max_cost=max_cost,
            transcript=transcript, prompts=str(prompts) if prompts else None,
        )
        result = execute_with_progress(config, force=force, announce=protocol_line(config))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    calls = result.summary.get("model_calls", {})
    lines = [f"prefix sharing: {calls.get('made')} model calls made, {calls.get('saved')} saved "
             f"(separate runs: {calls.get('separate_runs')})"] if result.summary.get("prefix_sharing") else []
    finish_run(result, lines, max_error_share=max_error_share)


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
    config = resumed_config(info, run_dir, {k: v for k, v in overrides.items() if v is not None})
    try:
        confirmed = asyncio.run(confirm_finished(config, run_dir))
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    if confirmed is not None:  # finished and unchanged since its summary: only confirmed
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
        protocol = run_protocol(RunStore(run_dir).info())
        print_summary(result.summary, f"{run_dir.name} (judge: {result.judge}, asked) · protocol: {protocol}")
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
