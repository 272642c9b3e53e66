"""Checks of a run's configuration made before anything runs or is written.

- Tool options: every key must be declared by some registered tool's `Options` model (or the core's
  `ToolOptions`), and every tool of the run must accept the values (its `Options` validates them), so
  `--tool-option bogus=1` or `bbox_coords=pix` fail before the first episode, naming the option.
- Judges: each task's judge is asked what it lacks to score that task (`Judge.missing`, e.g. MMIR's
  open-ended items without a judge model); any gap refuses the run, naming how many tasks and why.
"""

from __future__ import annotations

from typing import Any, Iterable

from pydantic import ValidationError

from arena.core.judge import Judge
from arena.core.settings import tools_for_setting
from arena.core.task import Task
from arena.core.tool import TOOLS, ToolOptions

from .names import did_you_mean, setting_did_you_mean


def declared_tool_options(tool_names: Iterable[str] | None = None) -> set[str]:
    """Option keys declared by the `Options` of these tools (default: every registered tool) and the core."""
    names = TOOLS if tool_names is None else tool_names
    keys = set(ToolOptions.model_fields)
    for name in names:
        keys |= set(TOOLS[name].Options.model_fields)
    return keys


def setting_tools(setting: str) -> list[str]:
    """The tool names of one setting; an unknown tool in it is a ValueError saying which setting was meant."""
    try:
        return tools_for_setting(setting, set(TOOLS))
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message.replace(";", setting_did_you_mean(setting) + ";", 1)) from None


def run_tools(settings: list[str]) -> list[str]:
    """The tool names the run's settings use, in order."""
    return list(dict.fromkeys(n for s in settings for n in setting_tools(s)))


def check_tool_options(options: ToolOptions, settings: list[str], given: Iterable[str] | None = None) -> None:
    """Refuse option keys no tool declares and values a tool of the run rejects (ValueError naming both).

    `given`: keys the user set explicitly (`--tool-option`); they must be options of the run's own tools."""
    tools = run_tools(settings)
    extras = set(options.model_extra or {})
    unknown = sorted(extras - declared_tool_options())
    own = declared_tool_options(tools)
    unused = sorted(set(given or ()) - own - set(unknown))
    if unknown or unused:
        bad = ", ".join(f"{key}{did_you_mean(key, own)}" for key in unknown + unused)
        raise ValueError(f"unknown tool option(s) {bad}: the tools of this run ({', '.join(tools) or 'none'}) take "
                         f"{', '.join(sorted(own))}")
    dumped = options.model_dump()
    for name in tools:
        try:
            TOOLS[name].Options.model_validate(dumped)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"tool {name}: invalid tool option(s): {problems}") from None


def check_judges(judge_of: Any, tasks: Iterable[Task]) -> None:
    """Refuse a run whose judges cannot score some of its tasks. `judge_of(task) -> Judge`."""
    gaps: dict[tuple[str, str], list[str]] = {}
    for task in tasks:
        judge: Judge = judge_of(task)
        reason = judge.missing(task)
        if reason:
            gaps.setdefault((judge.id, reason), []).append(task.id)
    if gaps:
        lines = [f"judge {jid!r} cannot score {len(ids)} task(s) (e.g. {ids[0]}): {reason}"
                 for (jid, reason), ids in sorted(gaps.items())]
        raise ValueError("; ".join(lines) + " — give --judge-model and --judge-base-url, or pick another --judge")
