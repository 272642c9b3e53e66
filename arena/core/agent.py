"""The agent interface: given the episode so far, produce one action."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from .budget import Budget
from .discovery import registering
from .prompt_book import PromptBook
from .context_image import ContextImage
from .task import RequestLayout, Task
from .tool import Tool
from .trajectory import InputSummary, Step, Usage


class AgentError(RuntimeError):
    """The agent could not produce a turn. The episode ends with `finish_reason`: "error" (transient,
    retried on resume), or "rejected" / "context_overflow" (replayed only with --retry-errors)."""

    def __init__(self, message: str, finish_reason: str = "error"):
        super().__init__(message)
        self.finish_reason = finish_reason


@dataclass
class Prompting:
    """Prompt choices of a run: dataset overrides, whether the agent is told its budget, and the run's prompt book
    (`arena.core.prompt_book`: the texts of the agent's templates, the user's `--prompts` file over the arena's
    wording; a dataset's own system prompt or format instruction wins over both)."""

    system_prompt: str | None = None
    format_instruction: str | None = None
    show_budget: bool = False
    prompts: PromptBook = field(default_factory=PromptBook)
    answer_form_required: bool = False
    """`--protocol arena`: with tools offered, a native tool-mode reply that has neither a tool call nor its answer in
    the asked form (`<answer></answer>`) is not a final answer but an invalid turn (a call the server dropped leaves
    only the text before it); under `original` such a reply is the answer, as the published scripts take it."""


@dataclass
class EpisodeView:
    """Everything an agent may know when it acts.

    `images` holds every image in context: the task images first, then each image a tool returned, in order;
    `Step.observation.image_indices` point into it. `final_turn` means tools are off and an answer is required now."""

    task: Task
    images: list[ContextImage]
    n_task_images: int
    tools: list[Tool]
    steps: list[Step]
    budget: Budget
    round: int
    final_turn: bool = False
    prompting: Prompting = field(default_factory=Prompting)


@dataclass
class AgentTurn:
    """One model turn and the action parsed from it."""

    output: str
    action: Literal["tool_call", "answer", "invalid"]
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None
    raw_call: str | None = None
    answer: str | None = None
    error: str | None = None
    reasoning: str | None = None
    ignored_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    input: InputSummary = field(default_factory=InputSummary)
    finish_reason: str | None = None
    answer_tagged: bool | None = None
    provider_fields: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What the agent noticed about this turn (e.g. a server that cut the prompt); kept on the step."""


class Agent(ABC):
    """Implementations: `act` must not raise except AgentError (or cancellation)."""

    id: str = "agent"
    text_protocol: bool = False  # its turns are raw Qwen/Hermes text (a protocol's turn rule may re-read them)

    @abstractmethod
    async def act(self, view: EpisodeView) -> AgentTurn: ...

    def describe(self) -> dict[str, Any]:
        """Config recorded in run.json (never secrets)."""
        return {"id": self.id}

    def learned_limits(self) -> dict[str, Any]:
        """Limits learned from the server (e.g. images per prompt); recorded in run.json, re-applied on resume."""
        return {}

    def learned_version(self) -> Any:
        """A value equal to the last one returned only while `learned_limits()` (apart from the endpoints' learned
        request fields, `client.LearnedParams.version`) is unchanged: the run asks for the limits only when it
        differs. This one never equals an earlier one (the limits are asked for after every episode)."""
        return object()

    def apply_limits(self, limits: dict[str, Any]) -> None: ...

    def prompt_templates(self, prompting: Prompting, layout: RequestLayout, tools: bool,
                         final_turn: bool) -> list[str]:
        """The prompt templates (`arena.core.prompt_book`) this agent's requests use in an episode prompted so, with
        or without tools, with or without the final-round turn (run.json records their wording)."""
        return []

    async def aclose(self) -> None:
        """Release connections."""


AGENTS: dict[str, Callable[..., Agent]] = {}


def register_agent(name: str):
    """Decorator for an agent factory `factory(**options) -> Agent`."""
    return registering(AGENTS, name, "agent")
