"""The tool interface: typed arguments, a JSON schema for the model, errors as observations."""

from __future__ import annotations

import json
import math
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

import orjson
from PIL import Image
from pydantic import BaseModel, ConfigDict, ValidationError

from .blobs import BlobStore
from .discovery import claim
from .context_image import ContextImage
from .task import Task

if TYPE_CHECKING:
    from .dataset import Dataset


class ToolError(Exception):
    """A failure the model should see as the observation (no results, page not found, ...)."""


class ToolArgumentError(ToolError):
    """The call itself is wrong (schema violation, empty or inverted box): counted as an invalid call."""


class ToolOutage(Exception):
    """The tool can serve no more calls in this run (e.g. every API key is spent): the episode ends with
    finish_reason `error` and this message, so `arena resume` re-runs it once the cause is fixed."""


@dataclass
class ToolResult:
    """Text for the model, images to add to the context, structured data for the log."""

    text: str
    images: list[Image.Image] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    """What a tool may touch during one episode."""

    task: Task
    dataset: "Dataset"
    images: list[ContextImage]
    blobs: BlobStore
    episode: str = field(default_factory=lambda: uuid.uuid4().hex)
    """The episode being played: the id its record will have (one per playing; a retry is another), under which a
    tool keeps per-episode state (`Tool.end_episode` releases it). A context made without one is its own episode."""


def validation_problems(exc: ValidationError, whole: str) -> str:
    """A pydantic error as `field.path: message; ...` (`whole` names an error of the object itself)."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or whole}: {err['msg']}" for err in exc.errors())


class ToolOptions(BaseModel):
    """Run-wide tool options (`--tool-option key=value`), shared by every tool of a run.

    The core knows only the per-call timeout; each tool declares the options it reads (with their
    defaults and checks) in a subclass named by its `Options`, and ignores the others."""

    model_config = ConfigDict(extra="allow")

    tool_timeout: float = 60.0


Resource = TypeVar("Resource")


class RunResources:
    """What the tools of one run share in one process (the driver, each worker process, each Ray worker):
    resources built on first request (a web-search backend with its cassette, headless Chromium, HTTP clients) and
    closed, newest first, when the run ends.

    The run's workbench makes one, opens every tool with it (`Tool.open`) before the first episode, and closes
    it (`aclose`) after the tools. Two runs in one process never share one: nothing run-scoped lives in a
    module."""

    def __init__(self, options: ToolOptions):
        self.options = options
        """The run-wide tool options."""
        self._resources: dict[str, Any] = {}
        self.closed = False

    def shared(self, key: str, build: Callable[[], Resource]) -> Resource:
        """The resource named `key`, built by `build()` the first time it is asked for. A resource with an
        `aclose()` coroutine method is closed by `aclose` of this object."""
        if self.closed:
            raise RuntimeError(f"the run's resources are closed; {key!r} cannot be opened again")
        if key not in self._resources:
            self._resources[key] = build()
        return self._resources[key]

    async def aclose(self) -> None:
        """Close every resource built, newest first (one may use an older one), each even when another's close
        failed (the first failure is raised at the end); idempotent."""
        self.closed = True
        resources, self._resources = list(self._resources.values()), {}
        failure: BaseException | None = None
        for resource in reversed(resources):
            close = getattr(resource, "aclose", None)
            try:
                if close is not None:
                    await close()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


class Tool(ABC):
    """A function the agent can call. Subclasses set `name`, `description`, `Args` and `run`.

    Life cycle: built once per run and process (`Tool(options)`: checks the options, holds nothing that needs
    closing), opened once (`await tool.open(run)`: acquires run-scoped resources, alone or shared with the
    other tools of the run through `run`), called concurrently by many episodes (per-episode state lives in
    the ToolContext; `end_episode` releases it), closed once (`await tool.aclose()`) when the run ends.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    Options: ClassVar[type[ToolOptions]] = ToolOptions

    def __init__(self, options: ToolOptions | None = None):
        self.run_options = options or ToolOptions()
        """The run-wide options object, shared by every tool of the run."""
        given = self.run_options.model_dump()
        try:
            self.options = self.Options.model_validate(given)
        except ValidationError as exc:
            problems = validation_problems(exc, "options")
            raise ValueError(f"tool {self.name}: invalid tool option(s): {problems}") from None

    def arguments_model(self) -> type[BaseModel]:
        """The arguments this instance takes (`Args`, unless its options choose another form)."""
        return self.Args

    def describe(self) -> str:
        """The description the model reads (`description`, unless the options choose another)."""
        return self.description

    def schema(self) -> dict[str, Any]:
        """OpenAI function-tool schema (also used inside the Hermes `<tools>` block)."""
        return {"type": "function", "function": {"name": self.name, "description": self.describe(),
                                                 "parameters": parameters_schema(self.arguments_model())}}

    def cached_schema(self) -> dict[str, Any]:
        """`schema()`, computed once per tool instance (options do not change during a run)."""
        try:
            return self._schema
        except AttributeError:
            self._schema: dict[str, Any] = self.schema()
            return self._schema

    def prompt_line(self) -> str:
        """The schema as its line of the tools prompt block, rendered once per instance (asked on every request)."""
        try:
            return self._prompt_line
        except AttributeError:
            self._prompt_line = json.dumps(self.cached_schema(), ensure_ascii=False)
            return self._prompt_line

    def parse_args(self, arguments: Any) -> BaseModel:
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"arguments of {self.name} must be a JSON object, got {type(arguments).__name__}")
        _check_numbers(self.name, arguments, "arguments")
        try:
            return self.arguments_model().model_validate(arguments)
        except ValidationError as exc:
            problems = validation_problems(exc, "arguments")
            raise ToolArgumentError(f"invalid arguments for {self.name}: {problems}") from None

    async def __call__(self, arguments: Any, ctx: ToolContext) -> ToolResult:
        return await self.run(self.parse_args(arguments), ctx)

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...

    async def open(self, run: RunResources) -> None:
        """Acquire what the tool needs for one run (caches, Chromium contexts, HTTP clients), alone or shared
        with the run's other tools through `run.shared`. Called once per run and process, before the first
        call; resources taken from `run` are closed by the run, not by the tool."""

    async def end_episode(self, ctx: ToolContext) -> None:
        """Release what this tool holds for one episode; called once when the episode ends
        (with the episode's own `images` list, which identifies the episode)."""

    async def aclose(self) -> None:
        """Release what the tool itself holds for the run (processes, connections); called once when the run
        ends, before the run's shared resources are closed."""


MAX_ARGUMENT_NUMBER = 1e15


def _check_numbers(tool: str, value: dict[str, Any] | list[Any], where: str) -> None:
    """Reject a non-finite or absurdly large number anywhere in the arguments (a JSON object or array), naming where
    it is."""
    named = isinstance(value, dict)
    for key, item in value.items() if named else enumerate(value):
        kind = type(item)
        if kind is str or (kind is float or kind is int) and -MAX_ARGUMENT_NUMBER <= item <= MAX_ARGUMENT_NUMBER:
            continue  # (the common items, told by their exact type; any other goes through the checks below)
        at = f"{where}.{key}" if named else f"{where}[{key}]"
        if isinstance(item, (dict, list)):
            _check_numbers(tool, item, at)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and not abs(item) <= MAX_ARGUMENT_NUMBER:
            problem = "is a non-finite number" if isinstance(item, float) and not math.isfinite(item) else "is too large"
            raise ToolArgumentError(f"invalid arguments for {tool}: {at} {problem} ({str(item)[:24]}; numbers in tool "
                                    f"arguments must be finite and at most {MAX_ARGUMENT_NUMBER:g} in magnitude)")


_PARAMETERS: dict[type[BaseModel], bytes] = {}
"""Each arguments model's cleaned JSON schema, serialised: pydantic builds it once per model class and process."""


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of arguments `model` without pydantic's titles, a fresh dict the caller may change (a tool
    adjusts a description); pydantic's schema generation runs once per model class and process."""
    serialised = _PARAMETERS.get(model)
    if serialised is None:
        serialised = _PARAMETERS[model] = orjson.dumps(_clean_schema(model.model_json_schema()))
    return orjson.loads(serialised)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's `title` noise so the prompt shows a compact, standard schema."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if isinstance(value, dict):
            value = _clean_schema(value) if key != "properties" else {k: _clean_schema(v) for k, v in value.items()}
        out[key] = value
    return out


TOOLS: dict[str, type[Tool]] = {}


def register_tool(cls: type[Tool]) -> type[Tool]:
    """Class decorator: make a tool available by its `name`."""
    claim(TOOLS, cls.name, cls, "tool")
    return cls


def tools_prompt_block(tools: list[Tool]) -> str:
    return "\n".join([t.prompt_line() for t in tools])
