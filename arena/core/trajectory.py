"""Trajectory records: the steps of an episode and the episode itself (JSON lines on disk)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .budget import Budget
from .task import TaskRef

ActionKind = Literal["tool_call", "answer", "invalid"]
FinishReason = Literal["answered", "budget", "invalid", "error", "rejected", "context_overflow"]

MAX_LOGGED_CHARS = 65_536


def clip(text: str | None, limit: int = MAX_LOGGED_CHARS) -> str | None:
    """Cap text kept in logs and history; the cut is marked with the number of characters dropped."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut by the arena]"


class Usage(BaseModel):
    """Tokens as the server reported them; None = the server did not say (not zero)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: "Usage") -> "Usage":
        """The field-wise sum (None only where both are None). Built as any usage is: pydantic-core's check of four
        counts costs less than `model_construct`'s Python (this runs for every model call)."""
        return Usage(prompt_tokens=plus_tokens(self.prompt_tokens, other.prompt_tokens),
                     completion_tokens=plus_tokens(self.completion_tokens, other.completion_tokens),
                     cached_tokens=plus_tokens(self.cached_tokens, other.cached_tokens),
                     reasoning_tokens=plus_tokens(self.reasoning_tokens, other.reasoning_tokens))


def plus_tokens(a: int | None, b: int | None) -> int | None:
    """The sum of two token counts, None when neither was reported (a count not reported adds nothing): how every
    sum of usages is made (`Usage.__add__`, an episode's running totals, the costs summed from steps)."""
    return None if a is None and b is None else (a or 0) + (b or 0)


class InputSummary(BaseModel):
    """What the model was shown for this turn, in size only."""

    messages: int = 0
    images: int = 0
    token_estimate: int = 0
    elided_images: list[int] = Field(default_factory=list)
    elided_texts: list[int] = Field(default_factory=list)
    elision_reason: str | None = None


class Observation(BaseModel):
    """What a tool (or the arena, for an error) returned; images by blob id, never inline."""

    text: str = ""
    images: list[str] = Field(default_factory=list)
    image_indices: list[int] = Field(default_factory=list)
    error: bool = False
    data: dict[str, Any] = Field(default_factory=dict)


class Step(BaseModel):
    """One round: the model's output, the parsed action, and what came back."""

    round: int
    final_turn: bool = False
    input: InputSummary = Field(default_factory=InputSummary)
    output: str = ""
    reasoning: str | None = None
    action: ActionKind
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None
    raw_call: str | None = None
    answer: str | None = None
    observation: Observation | None = None
    error: str | None = None
    ignored_calls: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    notes: list[str] = Field(default_factory=list)
    """What the arena changed in the model's output to keep it storable (e.g. invalid Unicode replaced)."""
    finish_reason: str | None = None
    answer_tagged: bool | None = None
    provider_fields: dict[str, Any] = Field(default_factory=dict)


class Totals(BaseModel):
    rounds: int = 0
    tool_calls: int = 0
    calls_per_tool: dict[str, int] = Field(default_factory=dict)
    invalid_calls: int = 0
    ignored_calls: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    seconds: float = 0.0


def episode_key(task_id: str, setting: str, max_rounds: int, repeat: int, agent: str) -> str:
    """The identity of an episode in a run grid; resume skips keys already finished."""
    return f"{task_id}|{setting}|{max_rounds}|{repeat}|{agent}"


class Episode(BaseModel):
    """A finished (or failed) attempt of one agent at one task under one setting and budget."""

    id: str
    run_id: str
    key: str
    task: TaskRef
    agent: str
    setting: str
    tools: list[str] = Field(default_factory=list)
    budget: Budget
    seed: int = 0
    repeat: int = 0
    images: list[str] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    answer: str | None = None
    finish_reason: FinishReason
    error: str | None = None
    totals: Totals = Field(default_factory=Totals)
    started_at: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    format: int = 1
    """The run-directory format the record was written in (set by the store: `arena.store.records.FORMAT_VERSION`);
    records from before the format was versioned read as 1."""


def played_rounds(episode: Episode) -> list[Step]:
    """The episode's rounds (its steps without the final tool-less answer turn)."""
    return [s for s in episode.steps if not s.final_turn]
