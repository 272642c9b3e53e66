"""The options of `arena run` (and `arena sweep`), one tuple per help panel, and the run config built from them one
section at a time (`arena.store.run_config`: data, agents, grid, tools, limits, judge, schedule, stops, output).

The command's signature is assembled from the panels (`RUN_SIGNATURE`): typer reads it as it reads any function's,
so every option keeps its name, help text and panel; `run_config` turns the parsed options into the record.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from arena.core.agent import AGENTS
from arena.core.budget import Budget
from arena.core.judge import JUDGES
from arena.core.tool import TOOLS, ToolOptions
from arena.judges.metrics import AUTO
from arena.runs.config import AgentChoice, EndpointLimit, RunConfig
from arena.runs.names import did_you_mean
from arena.runs.plugins import accepted_options
from arena.runs.pricing import parse_price
from arena.runs.validate import check_tool_options
from arena.store.run_config import (AgentsSection, DataSection, GridSection, JudgeSection, OutputSection,
                                    ScheduleSection, StopsSection)

from .common import config_file_callback, fail, parse_kv, split_values

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
            raise typer.BadParameter(f"unknown tool {name!r}{did_you_mean(name, TOOLS)}; "
                                     f"tools: {', '.join(sorted(TOOLS))}", param_hint="'--tool-limit'")
        out[name] = int(count)
    return out


def _option(name: str, annotation: Any, default: Any, *flags: str, panel: str | None = None,
            **settings: Any) -> inspect.Parameter:
    """One option of the command: its parameter name, type, default, flags (none: from the name), the help panel
    it is listed in and the rest of its `typer.Option` settings."""
    option = typer.Option(default, *flags, rich_help_panel=panel, **settings)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


DATA_OPTIONS = (
    _option("config_file", Optional[Path], None, "--config", panel=P_DATA,
            help="YAML file of run options (names as on the command line, e.g. max-rounds: [6, 10]); flags given on "
                 "the command line override it.", is_eager=True, callback=config_file_callback),
    _option("data", Path, ..., "--data", panel=P_DATA,
            help="Task file (arena JSONL, VistaArena JSON/JSONL), datasets.json, or world dir."),
    _option("root", Optional[Path], None, panel=P_DATA,
            help="Dataset root for relative paths (default: the file's directory)."),
    _option("fmt", Optional[str], None, "--format", panel=P_DATA,
            help="Force a loader (world, tasks, vistaarena, ...)."),
    _option("corpus", Optional[Path], None, panel=P_DATA,
            help="Corpus directory (docs.jsonl) for offline text search."),
    _option("limit", Optional[int], None, panel=P_DATA, min=1, help="Only the first N tasks (after the filters)."),
    _option("task", list[str], [], panel=P_DATA, help="Only these task ids."),
    _option("level", list[str], [], panel=P_DATA, help="Only tasks of these levels (e.g. L3; several: L2,L3)."),
    _option("category", list[str], [], panel=P_DATA, help="Only tasks of these categories."),
    _option("suite", list[str], [], panel=P_DATA, help="Only tasks of these suites (vistahop, mmir, ...)."),
)
"""Data and task selection: which tasks (`DataSection`)."""


AGENT_OPTIONS = (
    _option("agent", list[str], ["openai"],
            help="Agent(s): openai, scripted, smolagents, oracle, direct, text-only, ... (several: scripted,openai)."),
    _option("model", list[str], [], panel=P_AGENT,
            help="Model(s) at the endpoint, for agents that take one (several: m1,m2)."),
    _option("base_url", Optional[str], None, panel=P_AGENT,
            help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."),
    _option("api_key_env", Optional[str], None, panel=P_AGENT,
            help="Environment variable holding the API key (never stored)."),
    _option("tool_mode", ToolMode, "xml", panel=P_AGENT,
            help="xml (Qwen/Hermes <tool_call>, VistaArena) or native (tools= API)."),
    _option("temperature", Optional[float], None, panel=P_AGENT, min=0.0,
            help="Sampling temperature of the agent (default: not sent, the server's default; paper: 0.7)."),
    _option("max_tokens", Optional[int], None, panel=P_AGENT, min=1, help="Max completion tokens per turn."),
    _option("token_param", TokenParam, "auto", panel=P_AGENT,
            help="Field for --max-tokens: auto (max_completion_tokens for OpenAI o-series/gpt-5, else max_tokens), "
                 "max_tokens or max_completion_tokens."),
    _option("reasoning_effort", Optional[str], None, panel=P_AGENT,
            help="reasoning_effort sent to reasoning models (low, medium, high)."),
    _option("max_images", Optional[int], None, panel=P_AGENT, min=1,
            help="Images per request: older returned images are replaced by a placeholder (default: learned from the "
                 "server's errors)."),
    _option("max_context_tokens", Optional[int], None, panel=P_AGENT, min=1,
            help="Estimated prompt tokens per request: oldest observation images, then texts, are left out."),
    _option("strict_answers", bool, False, panel=P_AGENT,
            help="Ask once for <answer> when a reply has neither a tool call nor an <answer> tag (original: the "
                 "reply is the answer)."),
    _option("parallel_tool_calls", Optional[bool], None, "--parallel-tool-calls/--no-parallel-tool-calls",
            panel=P_AGENT, help="Send parallel_tool_calls in native mode (default: not sent)."),
    _option("image_detail", Optional[ImageDetail], None, panel=P_AGENT,
            help="OpenAI image detail: low, high or auto (default: not sent)."),
    _option("timeout", float, 120.0, panel=P_AGENT, min=0.001, help="Per-request timeout in seconds."),
    _option("image_max_pixels", int, 1280 * 28 * 28, panel=P_AGENT, min=1,
            help="max_pixels of smart_resize for images sent to the model."),
    _option("script", Optional[Path], None, panel=P_AGENT, help="Action script (JSON/YAML) for --agent scripted."),
    _option("agent_option", list[str], [], panel=P_AGENT,
            help="Extra agent option key=value, JSON values allowed (every agent)."),
)
"""Agent: who plays (`AgentsSection`)."""


GRID_OPTIONS = (
    _option("setting", list[str], ["search+crop"], panel=P_GRID,
            help="no-tool, search, search+crop, or tools joined by + (several: no-tool,search)."),
    _option("max_rounds", list[str], ["10"], panel=P_GRID,
            help="Round budget(s), whole numbers >= 1, e.g. 10 or 6,8,10."),
    _option("repeats", int, 1, panel=P_GRID, min=1, help="Repeats per task (paper: 5)."),
    _option("prefix_sharing", Optional[bool], None, "--prefix-sharing/--no-prefix-sharing", panel=P_GRID,
            help="Derive smaller budgets from the largest one's trajectory (default: on unless --show-budget)."),
    _option("seed", int, 0, panel=P_GRID, help="Seed of the grid (each episode's seed derives from it)."),
    _option("final_answer_turn", Optional[bool], None, "--final-answer-turn/--no-final-answer-turn", panel=P_GRID,
            help="Ask for an answer when the budget runs out (default: on under arena, off under original)."),
    _option("stop_on_invalid", Optional[bool], None, "--stop-on-invalid/--no-stop-on-invalid", panel=P_GRID,
            help="End an episode at an invalid turn (default: off under arena, on under original)."),
    _option("show_budget", bool, False, panel=P_GRID,
            help="Tell the agent its round budget (turns prefix sharing off)."),
)
"""Grid: the cells (`GridSection`; the final-answer turn and invalid turns go to the budget)."""


TOOLS_OPTIONS = (
    _option("top_k", int, 3, panel=P_TOOLS, min=1, help="Text search results per call (paper: 3)."),
    _option("bbox_coords", BBoxCoords, "relative", panel=P_TOOLS,
            help="Crop box coordinates: relative (0-1000) or pixel."),
    _option("image_search", ImageSearchMode, "auto", panel=P_TOOLS,
            help="Reverse image search: auto, stored, index; web (text-to-image lookup on the live web); live "
                 "(Google Lens of any image in context)."),
    _option("web", WebMode, "offline", panel=P_TOOLS,
            help="offline (world/corpus), live, record, replay or refresh (cassettes)."),
    _option("cassette", Optional[Path], None, panel=P_TOOLS,
            help="Cassette file (default with --web: <run>/cassettes.sqlite)."),
    _option("tool_option", list[str], [], panel=P_TOOLS,
            help="Extra tool option key=value (options of the run's tools)."),
)
"""Tools: the tools' options (`ToolOptions`)."""


LIMITS_OPTIONS = (
    _option("max_tokens_per_episode", Optional[int], None, panel=P_LIMITS, min=1,
            help="End an episode once its prompt + completion tokens reach this."),
    _option("max_seconds_per_episode", Optional[float], None, panel=P_LIMITS, min=0.001,
            help="End an episode once it has run this many seconds."),
    _option("tool_limit", list[str], [], panel=P_LIMITS,
            help="At most K calls of a tool per episode: TOOL=K (repeatable)."),
)
"""Limits: per episode (`Budget`) and of the run (`StopsSection`), and the errors the command accepts."""


JUDGE_OPTIONS = (
    _option("judge", str, "auto", panel=P_JUDGE,
            help="auto (each task's own), normalized, mcq, llm, or a suite's judge."),
    _option("judge_model", Optional[str], None, panel=P_JUDGE, help="Model of a model-based judge."),
    _option("judge_base_url", Optional[str], None, panel=P_JUDGE,
            help="OpenAI-compatible base URL of the judge model."),
    _option("judge_api_key_env", Optional[str], None, panel=P_JUDGE,
            help="Environment variable holding the judge's API key."),
    _option("judge_with_image", Optional[str], None, panel=P_JUDGE,
            help="true (default: the LLM judge sends the task image, as the paper's did) or false (text only)."),
    _option("protocol", Optional[Protocol], None, panel=P_GRID,
            help="original (each suite's published pipeline, turn by turn) or arena (the arena's improvements); "
                 "default: original for data in a published format, arena for generated worlds."),
    _option("prompts", Optional[Path], None, panel=P_JUDGE,
            help="YAML file of prompt texts by template name (e.g. vistahop.judge.user, carv.judge.user, "
                 "agent.system.intro) replacing the arena's wording, e.g. with a paper's published judge prompt or "
                 "agent instructions; checked before the first episode (docs/protocols.md, Prompt texts)."),
)
"""Judge: who scores (`JudgeSection`); `--protocol` shows in the Grid panel."""


SCHEDULE_OPTIONS = (
    _option("concurrency", int, 8, panel=P_SCHED, min=1, help="Episodes in flight."),
    _option("backend", BackendName, "asyncio", panel=P_SCHED, help="asyncio or ray."),
    _option("ray_address", Optional[str], None, panel=P_SCHED,
            help="Ray cluster address (default: start a local one)."),
    _option("ray_workers", Optional[int], None, panel=P_SCHED, min=1,
            help="Ray worker actors (default: the cluster's CPUs)."),
    _option("ray_shared_dir", bool, False, panel=P_SCHED,
            help="The run directory is on a filesystem every Ray node mounts at the same path: actors append their "
                 "episodes' records there themselves."),
    _option("workers", Optional[int], None, panel=P_SCHED, min=1,
            help="Worker processes playing episodes on this machine (asyncio backend; default: none, this process "
                 "plays them)."),
    _option("max_parallel", Optional[int], None, panel=P_SCHED, min=1,
            help="Max requests in flight per model endpoint."),
    _option("rpm", Optional[float], None, panel=P_SCHED, min=0.001, help="Max requests per minute per model endpoint."),
    _option("endpoint_limit", list[str], [], panel=P_SCHED, help="Limits of one endpoint: URL=PARALLEL:PER_MINUTE."),
)
"""Scheduling (`ScheduleSection`)."""


OUTPUT_OPTIONS = (
    _option("run_id", Optional[str], None, panel=P_OUTPUT,
            help="Run id (default: derived from data, agents and grid)."),
    _option("out", Path, Path("logs"), panel=P_OUTPUT, help="Directory of run directories."),
    _option("force", bool, False, panel=P_OUTPUT, help="Continue a run whose configuration changed."),
    _option("transcript", bool, True, panel=P_OUTPUT,
            help="Keep every model call exactly as sent and received (calls.jsonl; arena transcript)."),
    _option("retry_errors", bool, False, panel=P_OUTPUT,
            help="Also play again episodes the server rejected (rejected, context_overflow); transient errors are "
                 "always retried."),
)
"""Output (`OutputSection`) and `--force`."""


STOPS_OPTIONS = (
    _option("fail_fast", int, 3, panel=P_LIMITS, min=0,
            help="Stop the run when the first N requests to an endpoint (agent or judge) are all refused (wrong "
                 "model, bad key, unsupported parameter); 0: never."),
    _option("price", Optional[str], None, panel=P_LIMITS,
            help="Agent price IN,OUT in dollars per million prompt/completion tokens (default: the table of known "
                 "models)."),
    _option("max_cost", Optional[float], None, panel=P_LIMITS, min=0.0,
            help="Stop the run once its recorded cost reaches this many dollars."),
    _option("max_error_share", float, 0.0, panel=P_LIMITS, min=0.0, max=1.0,
            help="Share of episodes (0-1) that may end in an error (error, rejected, context overflow: left out of "
                 "Pass@1) before the command exits 1; default 0: any."),
)
"""Limits of the run (`StopsSection`) and the errors the command accepts; in the Limits panel."""


RUN_SIGNATURE = inspect.Signature([*DATA_OPTIONS, *AGENT_OPTIONS, *GRID_OPTIONS, *TOOLS_OPTIONS, *LIMITS_OPTIONS,
                                   *JUDGE_OPTIONS, *SCHEDULE_OPTIONS, *OUTPUT_OPTIONS, *STOPS_OPTIONS],
                                  return_annotation=None)
"""The signature of `arena run`: the panels in the order `--help` lists them."""


def data_section(o: dict[str, Any]) -> DataSection:
    return DataSection(path=str(o["data"]), root=str(o["root"]) if o["root"] else None, fmt=o["fmt"],
                       corpus=str(o["corpus"]) if o["corpus"] else None, limit=o["limit"], task_ids=o["task"] or None,
                       levels=split_values(o["level"]) or None, categories=split_values(o["category"]) or None,
                       suites=split_values(o["suite"]) or None)


def agents_section(o: dict[str, Any]) -> AgentsSection:
    """The agents of `--agent` (per `--model` for those that take one), with the options offered to each."""
    offered = {"base_url": o["base_url"], "api_key_env": o["api_key_env"], "tool_mode": o["tool_mode"],
               "temperature": o["temperature"], "max_tokens": o["max_tokens"], "timeout": o["timeout"],
               "image_max_pixels": o["image_max_pixels"], "script": str(o["script"]) if o["script"] else None,
               "token_param": o["token_param"] if o["token_param"] != "auto" else None,
               "reasoning_effort": o["reasoning_effort"], "max_images": o["max_images"],
               "max_context_tokens": o["max_context_tokens"], "strict_answers": o["strict_answers"] or None,
               "parallel_tool_calls": o["parallel_tool_calls"], "image_detail": o["image_detail"]}
    choices = agent_choices(split_values(o["agent"]), split_values(o["model"]), offered,
                            parse_kv(o["agent_option"], "--agent-option"))
    return AgentsSection(agent=choices[0].agent, options=choices[0].options,
                         sweep=choices if len(choices) > 1 else [])


def grid_section(o: dict[str, Any]) -> GridSection:
    return GridSection(settings=split_values(o["setting"]), max_rounds=budgets(o["max_rounds"]), repeats=o["repeats"],
                       prefix_sharing=o["prefix_sharing"], seed=o["seed"], show_budget=o["show_budget"],
                       protocol=o["protocol"])


def tools_section(o: dict[str, Any], settings: list[str]) -> ToolOptions:
    """The tools' options; `--tool-option`s are checked against the tools of `settings`."""
    extra = parse_kv(o["tool_option"], "--tool-option")
    options = ToolOptions(**{"top_k": o["top_k"], "bbox_coords": o["bbox_coords"], "image_search": o["image_search"],
                             "web": o["web"], "cassette": str(o["cassette"]) if o["cassette"] else None, **extra})
    check_tool_options(options, settings, given=extra)
    return options


def limits_section(o: dict[str, Any]) -> Budget:
    """The per-episode budget: token, time and tool limits, and the Grid panel's final-answer / invalid-turn flags."""
    fields: dict[str, Any] = {"tool_limits": tool_limits(o["tool_limit"]), "max_tokens": o["max_tokens_per_episode"],
                              "max_seconds": o["max_seconds_per_episode"]}
    if o["final_answer_turn"] is not None:
        fields["final_answer_turn"] = o["final_answer_turn"]
    if o["stop_on_invalid"] is not None:
        fields["on_invalid"] = "stop" if o["stop_on_invalid"] else "observe"
    return Budget(**fields)


def stops_section(o: dict[str, Any]) -> StopsSection:
    return StopsSection(fail_fast=o["fail_fast"], price=list(parse_price(o["price"])) if o["price"] else None,
                        max_cost=o["max_cost"])


def judge_section(o: dict[str, Any]) -> JudgeSection:
    judge = o["judge"]
    if judge != AUTO and judge not in JUDGES:
        fail(f"--judge: unknown judge {judge!r}{did_you_mean(judge, [AUTO, *JUDGES])}; valid: auto, "
             f"{', '.join(sorted(JUDGES))}")
    options = {"model": o["judge_model"], "base_url": o["judge_base_url"], "api_key_env": o["judge_api_key_env"],
               "with_image": parse_bool(o["judge_with_image"], "--judge-with-image")}
    return JudgeSection(name=judge, options={k: v for k, v in options.items() if v is not None},
                        prompts=str(o["prompts"]) if o["prompts"] else None)


def schedule_section(o: dict[str, Any]) -> ScheduleSection:
    return ScheduleSection(concurrency=o["concurrency"], backend=o["backend"], ray_address=o["ray_address"],
                           ray_workers=o["ray_workers"], ray_shared_dir=o["ray_shared_dir"], workers=o["workers"],
                           endpoint_limits=endpoint_limits(o["max_parallel"], o["rpm"], o["endpoint_limit"]))


def output_section(o: dict[str, Any]) -> OutputSection:
    return OutputSection(run_id=o["run_id"], out=str(o["out"]), transcript=o["transcript"],
                         retry_errors=o["retry_errors"])


def run_config(o: dict[str, Any]) -> RunConfig:
    """The run's config from the command's options (`RUN_SIGNATURE`), one section at a time. Bad input ends with
    a message naming the option (`fail`, `typer.BadParameter`) or raises ValueError."""
    agents, judge = agents_section(o), judge_section(o)
    grid = grid_section(o)
    return RunConfig(data=data_section(o), agents=agents, grid=grid, tools=tools_section(o, grid.settings),
                     limits=limits_section(o), judge=judge, schedule=schedule_section(o), stops=stops_section(o),
                     output=output_section(o))
