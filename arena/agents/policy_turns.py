"""Turns of scripted reference policies (world-check oracles and baselines): an answer, or one tool call,
written as a Qwen/Hermes reply would be so that logs and viewers show them like a model's."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from arena.core.agent import AgentTurn, EpisodeView
from arena.core.trajectory import InputSummary


def _summary(view: EpisodeView) -> InputSummary:
    return InputSummary(messages=2 + 2 * len(view.steps), images=len(view.images))


def answer_turn(answer: str, view: EpisodeView, note: str | None = None, output: str | None = None) -> AgentTurn:
    """Answer `answer`; `output` is the reply text (default `<answer>answer</answer>`)."""
    thought = f"<think>{note}</think>" if note else ""
    return AgentTurn(output=thought + (output or f"<answer>{answer}</answer>"), action="answer", answer=answer,
                     reasoning=note, input=_summary(view))


def call_turn(tool: str, arguments: dict[str, Any], view: EpisodeView) -> AgentTurn:
    call = json.dumps({"name": tool, "arguments": arguments}, ensure_ascii=False)
    return AgentTurn(output=f"<tool_call>{call}</tool_call>", action="tool_call", tool=tool, arguments=arguments,
                     raw_call=call, input=_summary(view))


def task_rng(view: EpisodeView, salt: str) -> random.Random:
    """A random generator fixed by the task id and repeat-independent salt (resumed runs draw the same)."""
    return random.Random(hashlib.sha256(f"{salt}:{view.task.id}".encode()).digest())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def world_dir(world: str | None, policy: str) -> Path:
    """The world directory a world-reading policy was given (`--agent-option world=DIR`)."""
    if not world:
        raise ValueError(f"the {policy} policy reads the world: give it world=DIR (arena world check does)")
    path = Path(world)
    if not path.is_dir():
        raise ValueError(f"{policy}: world {path} is not a directory")
    return path
