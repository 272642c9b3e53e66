"""The episode loop: one agent, one task, one tool call per round, within a budget.

Every failure becomes data: a malformed call, an unknown tool, bad arguments, a tool that raises or times out all
become error observations the model sees, and the episode goes on. Only a failing agent (endpoint down after retries),
a task whose images cannot be read, or a tool outage (`ToolOutage`: e.g. every API key spent) ends an episode with
finish_reason "error"."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Awaitable, Literal

from .agent import Agent, AgentError, AgentTurn, EpisodeView, Prompting
from .blobs import BlobStore
from .budget import Budget
from .context_image import ContextImage, single_flight
from .dataset import Dataset
from .images import ImageError
from .paths import PathEscapeError
from .protocol import TurnRule, extract_answer, tool_name_problem
from .task import Task, TaskRef
from .tool import Tool, ToolArgumentError, ToolContext, ToolError, ToolOutage, ToolResult
from .trajectory import Episode, Observation, Step, Totals, Usage, clip, episode_key, plus_tokens
from .untrusted import MAX_ARGUMENT_CHARS, clean_text, clean_value

MAX_OBSERVATION_CHARS = 32_000
_ARGUMENTS_JSON = json.JSONEncoder(default=str)
"""How arguments are measured against MAX_ARGUMENT_CHARS: `json.dumps(arguments, default=str)`, its encoder made once."""
logger = logging.getLogger(__name__)


@dataclass
class EpisodeSpec:
    """One cell of a run grid.

    `prefix` holds recorded steps (rounds 1..K: tool calls and invalid turns, no answer) played before the agent takes
    over at round K+1, for forks and for budget sweeps that share a trajectory prefix. `prefix_mode="reuse"` keeps
    their observations (their images must be in the episode's blob store); `"replay"` runs their tool calls again
    against the world. `turn_rule`: a protocol's reading of text turns."""

    run_id: str
    task: Task
    dataset: Dataset
    agent: Agent
    tools: list[Tool]
    setting: str
    budget: Budget = field(default_factory=Budget)
    repeat: int = 0
    seed: int = 0
    prompting: Prompting = field(default_factory=Prompting)
    prefix: list[Step] = field(default_factory=list)
    prefix_mode: Literal["reuse", "replay"] = "reuse"
    turn_rule: TurnRule | None = None

    @property
    def key(self) -> str:
        return episode_key(self.task.id, self.setting, self.budget.max_rounds, self.repeat, self.agent.id)


class _Run:
    def __init__(self, spec: EpisodeSpec, blobs: BlobStore):
        self.spec = spec
        self.blobs = blobs
        self.id = uuid.uuid4().hex
        """The episode's id: its record's, and its tools' key for per-episode state (`ToolContext.episode`)."""
        self.steps: list[Step] = []
        self.images: list[ContextImage] = []
        self.tool_calls, self.invalid_calls, self.ignored_calls = 0, 0, 0
        self.calls_per_tool: dict[str, int] = {}
        """The counts of `Totals`, kept as plain numbers until the episode's record is made (`totals`)."""
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.reasoning_tokens: int | None = None
        """The sums of the turns' `Usage` (None while no turn reported that count), plain numbers until `totals`."""
        self.tools = {tool.name: tool for tool in spec.tools}
        self.context = ToolContext(task=spec.task, dataset=spec.dataset, images=self.images, blobs=blobs,
                                   episode=self.id)
        """What the episode's tools are given: its images (the list itself, growing), its blob store and its id."""

    def view(self, round_: int, final: bool) -> EpisodeView:
        spec = self.spec
        return EpisodeView(task=spec.task, images=list(self.images), n_task_images=len(spec.task.images),
                           tools=[] if final else spec.tools, steps=list(self.steps), budget=spec.budget,
                           round=round_, final_turn=final, prompting=spec.prompting)

    async def load_task_images(self) -> None:
        task, dataset = self.spec.task, self.spec.dataset
        if task.metadata.get("unplayable"):
            raise ImageError(f"{dataset.source}: task {task.id!r}: {task.metadata['unplayable']}")
        for i, rel in enumerate(task.images):
            if dataset.embedded is not None and dataset.embedded.owns(rel):
                data, ext = await asyncio.to_thread(dataset.embedded.read, rel)
                blob_id = await asyncio.to_thread(self.blobs.put, data, ext)
                image = ContextImage(blob_id, source="task", path=self.blobs.path(blob_id),
                                     stored=self.blobs.content_file(blob_id))
                await image.check()
                self.images.append(image)
                continue
            path = dataset.resolve(rel, where=f"{dataset.source}: task {task.id!r} field images[{i}]")
            blob_id = self.blobs.held_file(path)  # (a file stored before, unchanged since: no is_file needed)
            if blob_id is None:
                if not path.is_file():
                    raise ImageError(f"{dataset.source}: task {task.id!r} field images[{i}]: no such file {path}")
                # stored once for the episodes of a task that start together (each would otherwise take an
                # executor thread and a turn of the run writer's queue, and hold the image's first decode back)
                blobs = self.blobs
                blob_id = await single_flight(("task file", id(blobs), os.fspath(path)), None,
                                              lambda: blobs.put_file(path))
            image = ContextImage(blob_id, source="task", path=path, stored=self.blobs.content_file(blob_id))
            await image.check()
            self.images.append(image)

    def step_from(self, turn: AgentTurn, round_: int, seconds: float, final: bool) -> Step:
        """The turn as a step that always serialises: text clipped, invalid Unicode replaced (and
        noted), arguments that are not a bounded JSON object turned into an invalid action."""
        turn = typed_turn(turn)
        self.add_usage(turn.usage)
        rule = self.spec.turn_rule
        if rule is not None and turn.call_id is None:
            parsed = rule(turn.output or "")
            turn = dataclasses.replace(turn, action=parsed.kind, tool=parsed.tool, arguments=parsed.arguments,
                                       raw_call=parsed.raw_call, answer=parsed.answer, error=parsed.error,
                                       ignored_calls=parsed.ignored_calls)
        notes: list[str] = [n for n in (clean_text(clip(n, 2048), "note", []) for n in turn.notes) if n]

        def text(value: str | None, name: str, limit: int = 65_536) -> str | None:
            return clean_text(clip(value, limit), name, notes)

        action, arguments, error = turn.action, None, text(turn.error, "error", 8192)
        try:
            arguments = clean_value(turn.arguments, "arguments", notes)
            if arguments is not None and not isinstance(arguments, dict):
                raise ValueError(f"the arguments must be a JSON object, got {type(arguments).__name__}")
            if arguments and len(_ARGUMENTS_JSON.encode(arguments)) > MAX_ARGUMENT_CHARS:
                raise ValueError(f"the arguments are over the limit of {MAX_ARGUMENT_CHARS:,} characters")
        except (ValueError, TypeError) as exc:
            action, arguments, error = "invalid", None, f"{text(turn.tool, 'tool')}: {exc}"
        return Step(round=round_, final_turn=final, input=turn.input, output=text(turn.output, "output") or "",
                    reasoning=text(turn.reasoning, "reasoning"), action=action, tool=text(turn.tool, "tool", 256),
                    arguments=arguments, call_id=text(turn.call_id, "call_id", 256),
                    raw_call=text(turn.raw_call, "raw_call", 8192), answer=text(turn.answer, "answer", 8192),
                    error=error, ignored_calls=turn.ignored_calls, model_seconds=seconds, usage=turn.usage,
                    notes=notes, finish_reason=turn.finish_reason, answer_tagged=turn.answer_tagged,
                    provider_fields=(clean_value(turn.provider_fields, "provider_fields", notes) or {})
                    if turn.provider_fields else {})

    async def call_tool(self, step: Step) -> None:
        name = step.tool or ""
        tool = self.tools.get(name)
        limit = self.spec.budget.tool_limits.get(name)
        if tool is None:
            available = ", ".join(self.tools) or "none in this setting; answer inside <answer></answer>"
            return self.invalid(step, f"unknown tool {name!r}; available tools: {available}")
        if limit is not None and self.calls_per_tool.get(name, 0) >= limit:
            return self.invalid(step, f"{name} may be called at most {limit} times in this episode")
        started = time.perf_counter()
        try:
            result = await within(tool(step.arguments or {}, self.context), tool.options.tool_timeout)
        except ToolArgumentError as exc:
            step.tool_seconds = time.perf_counter() - started
            return self.invalid(step, str(exc))
        except (ToolError, ImageError) as exc:  # an unusable image in the world is data, not a tool bug
            step.error = str(exc)
            step.observation = Observation(text=f"Error: {exc}", error=True)
        except ToolOutage as exc:
            step.tool_seconds = time.perf_counter() - started
            step.error = str(exc)
            step.observation = Observation(text=f"Error: {exc}", error=True)
            self.count_call(name)
            raise
        except asyncio.TimeoutError:
            step.error = f"{name} timed out after {tool.options.tool_timeout:g} s"
            step.observation = Observation(text=f"Error: {step.error}", error=True)
        except Exception as exc:  # a tool bug must not end the run
            step.error = f"{name} failed: {type(exc).__name__}: {exc}"
            step.observation = Observation(text=f"Error: {step.error}", error=True,
                                           data={"traceback": traceback.format_exc(limit=5)})
        else:
            indices, blob_ids = [], []
            for image in result.images:
                # an image whose PNG and id are known (a zoom, made with them; the same crop in another round or
                # episode) goes to the store with no trip to a thread, and no wait for its write
                blob_id = self.blobs.known_image(image) or await asyncio.to_thread(self.blobs.put_image, image)
                self.images.append(ContextImage(blob_id, source=name, image=image))
                indices.append(len(self.images) - 1)
                blob_ids.append(blob_id)
            text = clean_text(clip(result.text, MAX_OBSERVATION_CHARS), "observation", step.notes) or ""
            if indices:
                label = ", ".join(map(str, indices))
                text += f"\n(Returned image{'s' if len(indices) > 1 else ''}: img_idx {label}.)"
            step.observation = Observation(text=text.strip(), images=blob_ids, image_indices=indices,
                                           data=clean_value(result.data, "observation data", step.notes))
        step.tool_seconds = time.perf_counter() - started
        self.count_call(name)

    def add_usage(self, usage: Usage) -> None:
        """Add a turn's tokens to the episode's sums, as `Usage.__add__` would (a count not reported adds nothing)."""
        self.prompt_tokens = plus_tokens(self.prompt_tokens, usage.prompt_tokens)
        self.completion_tokens = plus_tokens(self.completion_tokens, usage.completion_tokens)
        self.cached_tokens = plus_tokens(self.cached_tokens, usage.cached_tokens)
        self.reasoning_tokens = plus_tokens(self.reasoning_tokens, usage.reasoning_tokens)

    def count_call(self, name: str) -> None:
        """Count one executed call of tool `name`."""
        self.tool_calls += 1
        self.calls_per_tool[name] = self.calls_per_tool.get(name, 0) + 1

    def invalid(self, step: Step, message: str) -> None:
        step.error = message
        step.observation = Observation(text=f"Error: {message}", error=True, data={"invalid": True})
        self.invalid_calls += 1

    async def play_prefix(self) -> None:
        """Append the spec's recorded steps, counting them as if they had just happened."""
        for recorded in self.spec.prefix:
            where = f"prefix step {len(self.steps) + 1}"
            if recorded.final_turn or recorded.action == "answer":
                raise ValueError(f"{where} is an answer; a prefix holds only tool calls and invalid turns")
            if recorded.round != len(self.steps) + 1:
                raise ValueError(f"{where} has round {recorded.round}; prefix rounds must run 1, 2, 3...")
            if len(self.steps) >= self.spec.budget.max_rounds:
                raise ValueError(f"the prefix has {len(self.spec.prefix)} steps, more than the budget of "
                                 f"{self.spec.budget.max_rounds} rounds")
            step = recorded.model_copy(deep=True)
            self.add_usage(step.usage)
            self.ignored_calls += step.ignored_calls
            self.steps.append(step)
            if self.spec.prefix_mode == "replay":
                step.observation = None
                if step.action == "invalid":
                    self.invalid(step, step.error or "invalid response")
                else:
                    step.error = None
                    await self.call_tool(step)
            elif step.action == "invalid":
                self.invalid_calls += 1
            else:
                await self.reuse_observation(step, where)

    async def reuse_observation(self, step: Step, where: str) -> None:
        observation = step.observation
        if observation is None:
            raise ValueError(f"{where} ({step.tool}) has no recorded observation to reuse")
        indices = []
        for blob_id in observation.images:
            image = await asyncio.to_thread(self.blobs.get_image, blob_id)
            self.images.append(ContextImage(blob_id, source=step.tool or "tool", image=image))
            indices.append(len(self.images) - 1)
        observation.image_indices = indices
        if observation.data.get("invalid"):
            self.invalid_calls += 1
            return
        self.count_call(step.tool or "")

    async def end_episode(self) -> None:
        """Let every tool release its per-episode state; a failure there is logged, never raised."""
        ctx = self.context
        for tool in self.spec.tools:
            try:
                await tool.end_episode(ctx)
            except Exception as exc:  # cleanup must not lose the episode
                logger.warning("%s.end_episode failed: %s: %s", tool.name, type(exc).__name__, exc)

    def totals(self, seconds: float) -> Totals:
        """The episode's totals: its counts, tokens and times."""
        steps = self.steps
        return Totals(rounds=len([s for s in steps if not s.final_turn]), tool_calls=self.tool_calls,
                      calls_per_tool=self.calls_per_tool, invalid_calls=self.invalid_calls,
                      ignored_calls=self.ignored_calls, prompt_tokens=self.prompt_tokens,
                      completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens,
                      reasoning_tokens=self.reasoning_tokens, model_seconds=sum([s.model_seconds for s in steps]),
                      tool_seconds=sum([s.tool_seconds for s in steps]), seconds=seconds)

    def out_of_budget(self, started: float) -> str | None:
        budget = self.spec.budget
        if budget.max_seconds is not None and time.perf_counter() - started >= budget.max_seconds:
            return f"wall-time limit of {budget.max_seconds:g} s reached"
        if budget.max_tokens is None:
            return None
        total = (self.prompt_tokens or 0) + (self.completion_tokens or 0)
        if total >= budget.max_tokens:
            return f"token limit of {budget.max_tokens} reached ({total} used)"
        return None


async def within(call: Awaitable[ToolResult], seconds: float) -> ToolResult:
    """`await call`, cancelled after `seconds` (then asyncio.TimeoutError). Since Python 3.11 in the episode's own
    task (`asyncio.timeout`); `asyncio.wait_for` of 3.10 and 3.11 runs it in a task of its own, a task and a loop
    iteration more per tool call."""
    if _TIMEOUT is None:
        return await asyncio.wait_for(call, seconds)
    async with _TIMEOUT(seconds):
        return await call


_TIMEOUT = getattr(asyncio, "timeout", None)
_TEXTS = ("output", "tool", "call_id", "raw_call", "answer", "error", "reasoning")


def typed_turn(turn: AgentTurn) -> AgentTurn:
    """The turn with every text field a string: whatever JSON an agent passed on from a model (a tool name that is a
    list, a call id that is a number) is shown as its JSON, and a tool name that is not a string makes the turn an
    invalid one whose error says so (any agent: the OpenAI agent checks its own calls, plug-ins may not)."""
    texts = (turn.output, turn.tool, turn.call_id, turn.raw_call, turn.answer, turn.error, turn.reasoning)
    for value in texts:
        if value is not None and type(value) is not str:  # (a subclass of str is looked at below)
            break
    else:
        return turn
    odd = {name: value for name, value in zip(_TEXTS, texts) if value is not None and not isinstance(value, str)}
    if not odd:
        return turn
    shown = {name: json.dumps(value, default=str) for name, value in odd.items()}
    turn = dataclasses.replace(turn, **shown)
    if "tool" in odd and turn.action == "tool_call":
        turn = dataclasses.replace(turn, action="invalid", tool=None, arguments=None,
                                   error=tool_name_problem(odd["tool"]))
    return turn


async def run_episode(spec: EpisodeSpec, blobs: BlobStore) -> Episode:
    """Play one episode to the end and return its record (never raises for agent, tool or data faults)."""
    run = _Run(spec, blobs)
    started_wall = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    answer: str | None = None
    finish: str | None = None
    error: str | None = None
    try:
        await run.load_task_images()
        await run.play_prefix()
        for round_ in range(len(run.steps) + 1, spec.budget.max_rounds + 1):
            if (error := run.out_of_budget(started)) is not None:
                finish = "budget"
                break
            asked = time.perf_counter()
            turn = await spec.agent.act(run.view(round_, final=False))
            step = run.step_from(turn, round_, time.perf_counter() - asked, final=False)
            run.ignored_calls += step.ignored_calls
            run.steps.append(step)
            if step.action == "answer":
                answer, finish = step.answer, "answered"
                break
            if step.action == "invalid":
                run.invalid(step, step.error or "invalid response")
                if spec.budget.on_invalid == "stop":
                    finish = "invalid"
                    break
                continue
            await run.call_tool(step)
        else:
            finish = "budget"
        if finish == "budget" and spec.budget.final_answer_turn:
            asked = time.perf_counter()
            turn = await spec.agent.act(run.view(spec.budget.max_rounds + 1, final=True))
            step = run.step_from(turn, spec.budget.max_rounds + 1, time.perf_counter() - asked, final=True)
            run.steps.append(step)
            if step.action == "answer":
                answer = step.answer
            else:
                answer, tagged = extract_answer(step.output)
                if not tagged:
                    answer = None
                    step.error = step.error or "no answer in the final turn"
                    run.ignored_calls += 1 if step.action == "tool_call" else 0
    except AgentError as exc:
        finish, error = exc.finish_reason, str(exc)
    except (ImageError, PathEscapeError, ToolOutage) as exc:
        finish, error = "error", str(exc)
    except Exception as exc:  # an arena bug: record it, keep the run going
        finish, error = "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    await run.end_episode()
    totals = run.totals(time.perf_counter() - started)
    return Episode(
        id=run.id, run_id=spec.run_id, key=spec.key, task=TaskRef.of(spec.task),
        agent=spec.agent.id, setting=spec.setting, tools=[t.name for t in spec.tools], budget=spec.budget,
        seed=spec.seed, repeat=spec.repeat, images=[img.blob_id for img in run.images[: len(spec.task.images)]],
        steps=run.steps, answer=answer, finish_reason=finish or "error", error=error, totals=totals,
        started_at=started_wall,
    )
