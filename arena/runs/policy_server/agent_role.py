"""`arena serve`'s agent role: a scripted policy (a suite's `oracle`, `direct`, `text-only`, ...) answering the
arena's agent requests turn by turn.

The task is recognised by its question: the task of the served data whose question (stripped) is the longest one
found in the request's first user message (read as it was loaded and as `--protocol original` reads it; with two
tasks of the same question, the first in the data). The episode so far is read back from the conversation
(`conversation.read_conversation`), the policy plays the next turn on it (`Agent.act`, as in a run), and the turn
goes back as the model's reply: text in the arena's xml protocol (`<tool_call>` / `<answer>`), or, when the request
offers native `tools`, the call as `tool_calls`. Images in the request are counted (`usage`), not decoded: no
registered policy looks at pixels.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from typing import Any

from arena.core.agent import Agent, AgentTurn, EpisodeView
from arena.core.budget import Budget
from arena.core.dataset import Dataset
from arena.core.task import Task
from arena.core.tool import TOOLS, Tool
from arena.judges.protocols import apply_original_dataset_rules

from .conversation import Conversation


class UnknownTask(LookupError):
    """No task of the served data has its question in the request."""


class TaskIndex:
    """The served data's tasks by question: as loaded, and as the suites' original rules read them."""

    def __init__(self, datasets: list[Dataset]):
        original = copy.deepcopy(datasets)
        try:
            apply_original_dataset_rules(original)
        except ValueError:
            original = []
        seen: dict[str, Task] = {}
        for dataset in [*datasets, *original]:
            for task in dataset.tasks:
                seen.setdefault(task.question.strip(), task)
        self.by_question = sorted(seen.items(), key=lambda item: -len(item[0]))
        self.count = sum(len(d.tasks) for d in datasets)

    def find(self, text: str) -> Task:
        for question, task in self.by_question:
            if question and question in text:
                return task
        raise UnknownTask(f"no task of the served data ({self.count} task(s)) has its question in the request's "
                          "first user message")


@dataclass
class PolicyTurn:
    """The policy's reply to one request: the text, the native call if any, and the task it played."""

    content: str
    tool_call: dict[str, Any] | None
    task: Task
    turn: AgentTurn


def _tools(names: list[str]) -> list[Tool]:
    """Instances of the offered tools the arena knows (a policy reads only their names)."""
    return [TOOLS[name]() for name in names if name in TOOLS]


def play_turn(policy: Agent, tasks: TaskIndex, conversation: Conversation) -> PolicyTurn:
    """The policy's next turn in the episode the conversation continues."""
    task = tasks.find(conversation.task_text)
    played = len(conversation.steps)
    view = EpisodeView(task=task, images=[], n_task_images=conversation.task_images,
                       tools=[] if conversation.final_turn else _tools(conversation.tools),
                       steps=conversation.steps, budget=Budget(max_rounds=played + 1), round=played + 1,
                       final_turn=conversation.final_turn)
    turn = asyncio.run(policy.act(view))
    if turn.action == "tool_call" and conversation.native and not conversation.final_turn:
        thought = f"<think>{turn.reasoning}</think>" if turn.reasoning else ""
        call = {"id": f"call_{played + 1}", "name": turn.tool or "", "arguments": turn.arguments or {}}
        return PolicyTurn(thought, call, task, turn)
    return PolicyTurn(turn.output, None, task, turn)
