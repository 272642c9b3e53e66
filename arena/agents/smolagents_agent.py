"""`smolagents`: a smolagents `ToolCallingAgent` playing arena episodes.

Integration. The arena's episode loop stays in charge: it asks the agent for one
turn per round, runs the tool itself (validation, limits, timeouts, error
observations, blobs, logging) and ends the episode at an answer or at the
budget. smolagents runs its own loop, so each episode gets a session that drives
`agent.run(task, stream=True)` step by step, in a worker thread, and pauses it
at the points where the arena must act:

- when smolagents yields a `ToolCall`, `act` returns it as the round's tool call
  and the generator stays paused before executing it;
- on the next `act`, the arena's observation of that call (text and images) is
  handed over, the generator resumes, and the arena tools' smolagents wrappers
  (and `execute_tool_call`, overridden so smolagents neither validates nor runs
  anything itself) return that observation as the tool output; the step
  callback attaches the returned images as the step's `observations_images`
  and, with `keep_images`, prunes those of older steps; then the next model call
  runs, up to the next pause;
- a `final_answer` call is the episode's answer; a step that ends without a
  tool call (unparsable output) is an invalid round, with smolagents' own error
  shown to the model as in any smolagents run;
- in the arena's final tool-less turn the generator is closed and smolagents'
  `provide_final_answer` is called, as its `max_steps` handling does (the
  agent's `max_steps` is the round budget, so the two always agree).

Only the first tool call of a model message is kept (the others are counted as
ignored), so there is one tool call per step. Each turn is built from the
smolagents step in progress (model output, tool call, token usage, input size),
so the episode's Steps are the smolagents memory in the arena's record format;
conversely, a session that starts on an episode with past steps (a fork, or a
runner that does not keep one asyncio task per episode) rebuilds the smolagents
memory from those Steps before going on. Sessions are found through a context
variable, i.e. one per asyncio task, checked against the episode's steps.

Limits: `max_images` and `max_context_tokens` follow the `openai` agent's context
policy (`arena.agents.context_policy`): before each model call, old returned images, then
old observation texts, are replaced in the messages smolagents built by the same
one-line placeholders, and the step's `input` records what was left out. With
`auto_limits` a refusal that states an image or context limit is learned for the
endpoint (kept in run.json) and the call sent again at once; other refusals (4xx)
end the episode `rejected`. smolagents' own silent pruning of old step images
(`keep_images=N`) is off unless asked for.

Model: `OpenAIServerModel` with the same endpoint options as the `openai` agent.
Answers given as `<answer>...</answer>` inside `final_answer` (or in the forced
final turn) are unwrapped. `CodeAgent` is not offered: smolagents' sandboxed
executors ship the tools' code into the sandbox, which would take tool
execution, budgets and logging away from the arena, and local execution of
model-written code is never acceptable here.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import json
import os
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, Callable

from PIL import Image

from arena.core.agent import Agent, AgentError, AgentTurn, EpisodeView, Prompting, register_agent
from arena.core.context_image import ContextImage
from arena.core.images import IMAGE_FACTOR, MIN_PIXELS, encode_png, fit_for_model, png_data_url
from arena.core.protocol import extract_answer
from arena.core.task import RequestLayout
from arena.core.tool import Tool as ArenaTool
from arena.core.trajectory import InputSummary, Step, Usage, clip

from arena.endpoints.client import is_refusal
from arena.endpoints.redact import redact_text, redact_url
from arena.endpoints.transcript import record_exchange

from .context_policy import (Elision, Limits, Observed, image_placeholder, learn_from_rejection, plan_elision,
                             text_placeholder)
from .prompts import BUDGET_T

DEFAULT_MAX_PIXELS = 1280 * 28 * 28
SMOL_TYPES = {"string", "boolean", "integer", "number", "array", "object", "null"}


def _smol():
    import smolagents

    return smolagents


def smol_inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """smolagents `inputs` from an arena tool's JSON schema; optional fields are marked nullable."""
    required = set(schema.get("required", []))
    inputs: dict[str, dict[str, Any]] = {}
    for name, prop in schema.get("properties", {}).items():
        spec = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
        if "type" not in spec:
            types = [t.get("type") for t in prop.get("anyOf", []) if t.get("type") in SMOL_TYPES]
            spec["type"] = types[0] if len(types) == 1 else (types or "any")
        spec.setdefault("description", name)
        if name not in required:
            spec["nullable"] = True
        inputs[name] = spec
    return inputs


def _parts(message) -> list[dict[str, Any]]:
    """The content parts of a smolagents message (a plain string as one text part)."""
    content = message.content if hasattr(message, "content") else message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content or ""}]


class _Bridge:
    """What smolagents' side of a session needs: the arena's observation of the pending call, the
    images to attach to the step, and the image pruning. Holds no reference to the session, so a
    session left paused can be finalised (see `_shutdown`)."""

    def __init__(self, keep_images: int | None) -> None:
        self.keep_images = keep_images
        self.pending: tuple[str, list[Image.Image]] | None = None
        self.step_images: list[Image.Image] = []
        self.awaiting = False
        self.memory = None

    def deliver(self, text: str, images: list[Image.Image]) -> None:
        self.pending = (text, images)
        self.awaiting = False

    def take(self, tool_name: str) -> str:
        if self.pending is None:
            raise RuntimeError(f"no arena observation is waiting for {tool_name}")
        text, self.step_images = self.pending
        self.pending = None
        return text

    def on_step(self, step, agent=None) -> None:
        """Step callback (before smolagents appends the step to memory): this step's images, older ones pruned."""
        step.observations_images = self.step_images or None
        self.step_images = []
        self.prune(current=step)

    def prune(self, current=None) -> None:
        if self.keep_images is None:
            return
        smol = _smol()
        steps = [*(self.memory.steps if self.memory is not None else []), *([current] if current else [])]
        with_images = [s for s in steps if isinstance(s, smol.ActionStep) and s.observations_images]
        for old in with_images[: max(0, len(with_images) - self.keep_images)]:
            old.observations_images = None


def _shutdown(gen, bridge: _Bridge) -> None:
    """End a paused smolagents run without model calls (a generator closed in the middle of a tool
    call would run smolagents' step-finishing code, which yields, and Python reports that)."""
    smol = _smol()
    try:
        if bridge.awaiting:
            bridge.deliver("(the episode has ended)", [])
            for event in gen:
                if isinstance(event, smol.ActionStep):
                    break
        gen.close()
    except Exception:
        pass


@functools.cache
def _tool_classes():
    """The smolagents classes the adapter needs (built lazily: smolagents imports are slow)."""
    smol = _smol()
    return (*_bridge_classes(smol), _recording_model_class(smol))


def _bridge_classes(smol):
    """The tool proxy and the agent whose tool calls (other than `final_answer`) the arena answers."""

    class ArenaToolProxy(smol.Tool):
        """An arena tool as seen by smolagents: its schema, and the arena's observation as its output."""

        skip_forward_signature_validation = True
        output_type = "string"

        def __init__(self, tool: ArenaTool, bridge: _Bridge):
            schema = tool.schema()["function"]
            self.name = tool.name
            self.description = schema["description"]
            self.inputs = smol_inputs(schema.get("parameters", {}))
            self.bridge = bridge
            super().__init__()

        def forward(self, **kwargs: Any) -> str:
            return self.bridge.take(self.name)

    class ArenaToolCallingAgent(smol.ToolCallingAgent):
        """Tool calls other than `final_answer` are answered by the arena (through the bridge)."""

        bridge: _Bridge

        def execute_tool_call(self, tool_name: str, arguments: Any) -> Any:
            if tool_name == "final_answer":
                return super().execute_tool_call(tool_name, arguments)
            return self.bridge.take(tool_name)

    return ArenaToolProxy, ArenaToolCallingAgent


class _RecordedMessages:
    """What RecordingModel does to the messages smolagents sends, without smolagents: the context policy's
    placeholders put in, images as data URLs encoded once, the input summarised, HTTP refusals classified. Mixed
    into `RecordingModel` (`_recording_model_class`), whose attributes it reads."""

    def _classified(self, exc: Exception) -> Exception:
        """An HTTP refusal as an AgentError naming the endpoint (`rejected` for 4xx, quota); else `exc`."""
        import openai

        if not isinstance(exc, openai.APIStatusError):
            return exc
        body = exc.body if exc.body is not None else exc.message
        said = body.get("message", body) if isinstance(body, dict) else body
        text = redact_text(f"{self.owner.where()}: HTTP {exc.status_code}: {said}")
        finish = "rejected" if is_refusal(exc.status_code, f"{body}") else "error"
        return AgentError(text, finish_reason=finish)

    def _fitted(self, messages, limits: Limits) -> tuple[list, InputSummary]:
        """The messages within `limits` (the context policy's placeholders put in) and their summary.

        smolagents writes each past step as: model output, tool call, a user message with the step's
        images, then "Observation:\n..." (a tool-response); the i-th observation is the i-th past
        round that has one (`observed_rounds`)."""
        rounds = self.observed_rounds()
        fixed, observed, pending = 0, [], []
        image_at: dict[tuple[int, int], int] = {}
        round_at: dict[int, int] = {}
        for m, message in enumerate(messages):
            parts = _parts(message)
            text = sum(len(p.get("text") or "") for p in parts if p.get("type") == "text") // 4
            for p, part in enumerate(parts):
                if part.get("type") != "image":
                    continue
                index = self.image_index.get(id(part.get("image")), (None, None))[1]
                if index is None or index < self.n_task_images:
                    fixed += self._tokens(part.get("image"))
                else:
                    image_at[(m, p)] = index
                    pending.append((index, self._tokens(part.get("image"))))
            role = getattr(message, "role", None) or (message.get("role") if isinstance(message, dict) else None)
            if getattr(role, "value", role) == "tool-response" and parts and \
                    str(parts[0].get("text", "")).startswith("Observation:"):
                round_at[m] = rounds[len(observed)] if len(observed) < len(rounds) else len(observed) + 1
                observed.append(Observed(round_at[m], text, pending))
                pending = []
            else:
                fixed += text
        fixed += sum(tokens for _, tokens in pending)
        elision = Elision()
        if limits.max_images is not None or limits.max_context_tokens is not None:
            elision = plan_elision(limits, self.n_task_images, fixed, observed)
        sent = []
        for m, message in enumerate(messages):
            parts = _parts(message)
            changed = []
            for p, part in enumerate(parts):
                if image_at.get((m, p)) in elision.images:
                    part = {"type": "text", "text": image_placeholder(image_at[(m, p)])}
                elif p == 0 and round_at.get(m) in elision.texts:
                    part = {"type": "text", "text": f"Observation:\n{text_placeholder(round_at[m])}"}
                changed.append(part)
            if changed != parts:
                message = dataclasses.replace(message, content=changed) if dataclasses.is_dataclass(message) \
                    else {**message, "content": changed}
            sent.append(message)
        summary = self._summary(sent)
        summary.elided_images, summary.elided_texts = sorted(elision.images), sorted(elision.texts)
        summary.elision_reason = elision.reason
        return sent, summary

    def _tokens(self, image: Any) -> int:
        return image.width * image.height // (self.image_factor ** 2) if isinstance(image, Image.Image) else 0

    def _with_image_urls(self, message):
        """Images as PNG data URLs encoded once per session (smolagents would deep-copy and re-encode
        every image of the history at every call)."""
        content = getattr(message, "content", None)
        if not isinstance(content, list) or not any(p.get("type") == "image" for p in content):
            return message
        parts = []
        for part in content:
            if part.get("type") == "image" and isinstance(part.get("image"), Image.Image):
                image = part["image"]
                if id(image) not in self.image_urls:
                    self.image_urls[id(image)] = (image, png_data_url(encode_png(image, 1, rle=True)))
                part = {"type": "image_url", "image_url": {"url": self.image_urls[id(image)][1]}}
            parts.append(part)
        return dataclasses.replace(message, content=parts)

    def _summary(self, messages) -> InputSummary:
        chars, images, image_tokens = 0, 0, 0
        for message in messages:
            content = message.content if hasattr(message, "content") else message.get("content")
            for part in content if isinstance(content, list) else [{"type": "text", "text": content or ""}]:
                if part.get("type") == "text":
                    chars += len(part.get("text") or "")
                elif part.get("type") == "image":
                    images += 1
                    image = part.get("image")
                    if isinstance(image, Image.Image):
                        image_tokens += image.width * image.height // (self.image_factor ** 2)
        return InputSummary(messages=len(messages), images=images, token_estimate=chars // 4 + image_tokens)


def _recording_model_class(smol):
    """`RecordingModel`: smolagents' OpenAI model that keeps the last model message and input size, fits every
    request within the learned limits (`_RecordedMessages`) and keeps only the first tool call of a message."""

    class RecordingModel(_RecordedMessages, smol.OpenAIServerModel):
        """Keeps the last model message and input size; keeps only the first tool call of a message."""

        def __init__(self, *, tool_choice: str | None, image_factor: int, owner: "SmolagentsAgent", **kwargs: Any):
            super().__init__(**kwargs)
            self.tool_choice = tool_choice
            self.image_factor = image_factor
            self.owner = owner
            self.last = None
            self.last_input = InputSummary()
            self.ignored_calls = 0
            self.error: Exception | None = None
            self.image_urls: dict[int, tuple[Image.Image, str]] = {}
            # arena image index of each image smolagents holds (the object kept, so its id stays its own)
            self.image_index: dict[int, tuple[Image.Image, int]] = {}
            self.n_task_images = 0
            self.observed_rounds: Callable[[], list[int]] = list

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
            self.error = None
            if tools_to_call_from:
                kwargs.setdefault("tool_choice", self.tool_choice)
            owner = self.owner
            applied = owner.limits.merged(owner.learned)
            for _ in range(4):
                sent, self.last_input = self._fitted(messages, applied)
                try:
                    message = super().generate([self._with_image_urls(m) for m in sent], stop_sequences=stop_sequences,
                                               response_format=response_format, tools_to_call_from=tools_to_call_from,
                                               **kwargs)
                    break
                except Exception as exc:
                    self.error = self._classified(exc)
                    if not (isinstance(self.error, AgentError) and self.error.finish_reason == "rejected"):
                        raise self.error from None
                    try:
                        owner.learned = learn_from_rejection(str(self.error), str(exc), self.last_input.token_estimate,
                                                             owner.max_tokens or 0, owner.learned, applied,
                                                             owner.auto_limits)
                    except AgentError as final:
                        self.error = final
                        raise final from None
                    applied = owner.limits.merged(owner.learned)
            else:
                self.error = AgentError(f"{owner.where()}: the request still exceeds the server's limits after "
                                        "trimming", finish_reason="context_overflow")
                raise self.error
            self.error = None
            calls = list(message.tool_calls or [])
            self.ignored_calls = max(0, len(calls) - 1)
            if len(calls) > 1:
                message.tool_calls = calls[:1]
            self.last = message
            return message

    return RecordingModel


_SESSION: ContextVar["_Session | None"] = ContextVar("arena_smolagents_session", default=None)


def _usage(message) -> Usage:
    usage = getattr(message, "token_usage", None)
    if usage is None:
        return Usage()
    return Usage(prompt_tokens=usage.input_tokens or 0, completion_tokens=usage.output_tokens or 0)


def _reasoning(message) -> str | None:
    raw = getattr(message, "raw", None)
    try:
        msg = raw.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    value = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
    return value if isinstance(value, str) else None


def _text(message) -> str:
    content = getattr(message, "content", None)
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content or ""


def _answer_text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    answer, _ = extract_answer(text)
    return answer


class _Session:
    """One episode's smolagents run, paused between the arena's rounds."""

    def __init__(self, owner: "SmolagentsAgent", view: EpisodeView):
        proxy_cls, agent_cls, model_cls = _tool_classes()
        self.owner = owner
        self.bridge = _Bridge(owner.keep_images)
        self.model = model_cls(owner=owner, **owner.model_kwargs())
        self.model.n_task_images = view.n_task_images
        instructions = owner.instructions
        if view.prompting.show_budget:
            budget = view.prompting.prompts.format(BUDGET_T, max_rounds=view.budget.max_rounds)
            instructions = f"{instructions}\n\n{budget}" if instructions else budget
        smol = _smol()
        self.agent = agent_cls(tools=[proxy_cls(t, self.bridge) for t in view.tools], model=self.model,
                               max_steps=view.budget.max_rounds, verbosity_level=smol.LogLevel.OFF,
                               instructions=instructions, step_callbacks={smol.ActionStep: self.bridge.on_step})
        self.agent.bridge = self.bridge
        self.bridge.memory = self.agent.memory
        self.model.observed_rounds = lambda: [s.step_number for s in self.agent.memory.steps
                                              if isinstance(s, smol.ActionStep) and s.observations is not None]
        self.task_id = view.task.id
        self.turns = 0
        self.finished = False
        self.last_step_key: tuple[Any, ...] | None = None
        self.gen = None

    # -- continuity ------------------------------------------------------------------------------------------

    def continues(self, view: EpisodeView) -> bool:
        """True when `view` is the episode this session has been playing, one round later."""
        if self.finished or view.task.id != self.task_id or len(view.steps) != self.turns:
            return False
        return not view.steps or self._key(view.steps[-1]) == self.last_step_key

    @staticmethod
    def _key(step: Step | AgentTurn) -> tuple[Any, ...]:
        return (step.action, step.tool, step.call_id, clip(step.output) or "")

    # -- driving smolagents ----------------------------------------------------------------------------------

    async def _in_thread(self, fn: Callable[[], Any]) -> Any:
        # the episode's context (its transcript scope) goes along into the worker thread
        return await asyncio.get_running_loop().run_in_executor(self.owner.pool, contextvars.copy_context().run, fn)

    async def _fit(self, view: EpisodeView, index: int) -> Image.Image:
        """Image `index` of the episode as sent to the model (its arena index remembered for the context policy)."""
        image: ContextImage = view.images[index]
        decoded = await image.decoded()
        factor, lo, hi = self.owner.image_size
        fitted = await asyncio.to_thread(fit_for_model, decoded.image, factor, lo, hi, decoded.full_size)
        self.model.image_index[id(fitted)] = (fitted, index)
        return fitted

    async def start(self, view: EpisodeView) -> None:
        """Start the smolagents run; past steps of the episode (if any) become its memory."""
        images = [await self._fit(view, i) for i in range(view.n_task_images)]
        past = [s for s in view.steps if not s.final_turn]
        past_images = [[await self._fit(view, i) for i in (s.observation.image_indices if s.observation else [])]
                       for s in past]
        task = view.task.question
        if view.prompting.format_instruction:
            task = f"{task}\n\n{view.prompting.format_instruction}"
        steps_left = max(1, view.budget.max_rounds - len(past))

        def begin():
            gen = self.agent.run(task, stream=True, images=images or None, max_steps=steps_left)
            for number, (step, step_images) in enumerate(zip(past, past_images), 1):
                self.agent.memory.steps.append(self._memory_step(number, step, step_images))
            self.bridge.prune()
            return gen

        self.gen = await self._in_thread(begin)
        weakref.finalize(self, _shutdown, self.gen, self.bridge)
        self.turns = len(view.steps)
        self.last_step_key = self._key(view.steps[-1]) if view.steps else None

    def _memory_step(self, number: int, step: Step, images: list[Image.Image]):
        """An arena Step as a smolagents ActionStep (for a session resumed mid-episode)."""
        smol = _smol()
        from smolagents.memory import ToolCall
        from smolagents.monitoring import Timing

        memory = smol.ActionStep(step_number=number, timing=Timing(start_time=time.time(), end_time=time.time()),
                                 model_output=step.output or None, observations_images=images or None)
        if step.tool:
            memory.tool_calls = [ToolCall(name=step.tool, arguments=step.arguments or {},
                                          id=step.call_id or f"call_{number}")]
        if step.observation is not None and step.tool:
            memory.observations = step.observation.text
        elif step.error:
            memory.error = smol.AgentError(step.error, self.agent.logger)
        return memory

    def _until(self, stop: Callable[[Any], bool]) -> Any:
        """Resume the run until an event satisfies `stop`; None when the run is over."""
        while True:
            try:
                event = next(self.gen)
            except StopIteration:
                return None
            if stop(event):
                return event

    def _next_event(self):
        """The next pause: a tool call, a step that ended without one, or the end of the run.

        A `final_answer` call is run through to the end of its step, to learn whether smolagents accepted it.
        """
        smol = _smol()
        from smolagents.agents import ActionOutput
        from smolagents.memory import FinalAnswerStep, ToolCall

        event = self._until(lambda e: isinstance(e, (ToolCall, smol.ActionStep, FinalAnswerStep)))
        if not (isinstance(event, ToolCall) and event.name == "final_answer"):
            return event, None, None
        seen: list[Any] = []
        end = self._until(lambda e: seen.append(e) or isinstance(e, smol.ActionStep))
        final = next((e for e in seen if isinstance(e, ActionOutput) and e.is_final_answer), None)
        return event, end, final

    async def advance(self, view: EpisodeView) -> AgentTurn:
        smol = _smol()
        if self.bridge.awaiting:
            observation = view.steps[-1].observation
            images = [await self._fit(view, i) for i in (observation.image_indices if observation else [])]
            self.bridge.deliver(observation.text if observation else "", images)
            await self._in_thread(lambda: self._until(lambda e: isinstance(e, smol.ActionStep)))
        if view.final_turn:
            turn = await self._in_thread(self._final_answer)
        else:
            event, end, final = await self._in_thread(self._next_event)
            error = self.model.error
            if error is not None:  # smolagents yields the failed step before raising the model's error
                self.finished = True
                raise error if isinstance(error, AgentError) else AgentError(
                    redact_text(f"{self.owner.id}: {type(error).__name__}: {error}"))
            turn = self._turn(event, end, final)
        self.turns += 1
        self.last_step_key = self._key(turn)
        return turn

    def _final_answer(self) -> AgentTurn:
        smol = _smol()
        from smolagents.monitoring import Timing

        self.gen.close()
        started = time.time()
        message = self.agent.provide_final_answer(self.agent.task)
        error = self.model.error
        if error is not None:
            raise AgentError(f"{self.owner.id}: the final-answer call failed: {error}",
                             finish_reason=getattr(error, "finish_reason", "error"))
        memory = smol.ActionStep(step_number=self.agent.step_number, timing=Timing(start_time=started,
                                 end_time=time.time()), token_usage=message.token_usage,
                                 error=smol.AgentMaxStepsError("Reached max steps.", self.agent.logger))
        memory.action_output = message.content
        self.agent.memory.steps.append(memory)
        self.finished = True
        output = _text(message)
        answer, tagged = extract_answer(output)
        common = dict(output=output, reasoning=_reasoning(message), usage=_usage(message),
                      input=self.model.last_input)
        if answer is None:
            return AgentTurn(action="invalid", error="the final answer is empty", **common)
        return AgentTurn(action="answer", answer=answer, **common)

    def _turn(self, event, end, final) -> AgentTurn:
        smol = _smol()
        from smolagents.memory import FinalAnswerStep, ToolCall

        message = self.model.last
        common = dict(output=_text(message), reasoning=_reasoning(message), usage=_usage(message),
                      input=self.model.last_input, ignored_calls=self.model.ignored_calls)
        if event is None or isinstance(event, FinalAnswerStep):
            self.finished = True
            output = getattr(event, "output", None)
            if output is None:
                return AgentTurn(action="invalid", error="smolagents ended the run without an answer", **common)
            return AgentTurn(action="answer", answer=_answer_text(output), **common)
        if isinstance(event, smol.ActionStep):
            return AgentTurn(action="invalid", error=str(event.error or "the model called no tool"), **common)
        assert isinstance(event, ToolCall)
        raw = json.dumps({"name": event.name, "arguments": event.arguments}, ensure_ascii=False, default=str)
        common.update(call_id=event.id, raw_call=raw)
        if event.name == "final_answer":
            answer = _answer_text(final.output) if final is not None else None
            if answer is not None:
                self.finished = True
                return AgentTurn(action="answer", answer=answer, **common)
            common["tool"] = event.name
            if final is not None:
                return AgentTurn(action="invalid", error="final_answer was called with an empty answer", **common)
            error = str(getattr(end, "error", None) or "final_answer failed")
            return AgentTurn(action="invalid", error=error, **common)
        self.bridge.awaiting = True
        common["tool"] = event.name
        if not isinstance(event.arguments, dict):
            return AgentTurn(action="invalid", error=f"the arguments of {event.name} must be a JSON object",
                             **common)
        return AgentTurn(action="tool_call", arguments=event.arguments, **common)


class SmolagentsAgent(Agent):
    def __init__(self, model: str, base_url: str, api_key_env: str | None = None, temperature: float | None = None,
                 max_tokens: int | None = None, timeout: float = 120.0, max_retries: int = 4,
                 extra_body: dict | None = None, tool_choice: str | None = "required", keep_images: int | None = None,
                 instructions: str | None = None, image_factor: int = IMAGE_FACTOR,
                 image_min_pixels: int = MIN_PIXELS, image_max_pixels: int = DEFAULT_MAX_PIXELS,
                 max_threads: int = 16, id: str | None = None, limits: Limits | None = None,
                 auto_limits: bool = True):
        import openai

        if keep_images is not None and keep_images < 0:
            raise ValueError(f"keep_images must be >= 0, got {keep_images}")
        self.limits, self.learned, self.auto_limits = limits or Limits(), Limits(), auto_limits
        self.model, self.base_url, self.api_key_env = model, base_url, api_key_env
        self.temperature, self.max_tokens, self.extra_body = temperature, max_tokens, extra_body or {}
        self.timeout, self.max_retries, self.tool_choice = timeout, max_retries, tool_choice
        self.keep_images, self.instructions = keep_images, instructions
        self.image_size = (image_factor, image_min_pixels, image_max_pixels)
        self.id = id or f"smolagents:{model}"
        key = os.environ.get(api_key_env or "OPENAI_API_KEY") or "EMPTY"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries,
                                    http_client=openai.DefaultHttpxClient(event_hooks={"response": [record_exchange]}))
        self.pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="smolagents")

    def model_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model_id": self.model, "client": self.client, "retry": False,
                                  "tool_choice": self.tool_choice, "image_factor": self.image_size[0]}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def where(self) -> str:  # for messages: credentials masked
        return f"{self.model} at {redact_url(self.base_url)}"

    async def act(self, view: EpisodeView) -> AgentTurn:
        session = _SESSION.get()
        try:
            if session is None or not session.continues(view):
                session = _Session(self, view)
                _SESSION.set(session)
                await session.start(view)
            return await session.advance(view)
        except AgentError:
            raise
        except Exception as exc:
            if session is not None and isinstance(session.model.error, AgentError):
                raise session.model.error from None
            message = str(exc).strip().splitlines()
            raise AgentError(redact_text(f"{self.id}: {type(exc).__name__}: {message[-1] if message else ''}")) \
                from None

    def learned_limits(self) -> dict[str, Any]:
        return self.learned.as_dict()

    def learned_version(self) -> Any:
        return self.learned  # (replaced, never changed in place, when a limit is learned)

    def apply_limits(self, limits: dict[str, Any]) -> None:
        self.learned = self.learned.merged(Limits(limits.get("max_images"), limits.get("max_context_tokens")))

    def prompt_templates(self, prompting: Prompting, layout: RequestLayout, tools: bool,
                         final_turn: bool) -> list[str]:
        return [BUDGET_T] if prompting.show_budget else []

    def describe(self) -> dict[str, Any]:
        try:
            from importlib.metadata import version

            smol_version = version("smolagents")
        except Exception:
            smol_version = None
        return {"id": self.id, "kind": "smolagents", "agent_type": "ToolCallingAgent", "smolagents": smol_version,
                "endpoint": {"base_url": redact_url(self.base_url), "model": self.model, "api_key_env": self.api_key_env,
                             "temperature": self.temperature, "max_tokens": self.max_tokens,
                             "timeout": self.timeout, "max_retries": self.max_retries},
                "tool_choice": self.tool_choice, "keep_images": self.keep_images,
                "image_size": list(self.image_size), "limits": self.limits.as_dict(), "auto_limits": self.auto_limits}

    async def aclose(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


@register_agent("smolagents")
def smolagents_agent(model: str, base_url: str, api_key_env: str | None = None, temperature: float | None = None,
                     max_tokens: int | None = None, timeout: float = 120.0, max_retries: int = 4,
                     extra_body: dict | None = None, tool_choice: str | None = "required",
                     keep_images: int | None = None, instructions: str | None = None, agent_type: str = "tool_calling",
                     image_factor: int = IMAGE_FACTOR, image_min_pixels: int = MIN_PIXELS,
                     image_max_pixels: int = DEFAULT_MAX_PIXELS, id: str | None = None,
                     max_images: int | None = None, max_context_tokens: int | None = None,
                     auto_limits: bool = True) -> SmolagentsAgent:
    """`max_images` and `max_context_tokens` (and the limits learned from the server) apply the arena's
    context policy, as for the `openai` agent; `keep_images=N` adds smolagents' own silent pruning of the
    images of all but the last N steps (off by default)."""
    if agent_type != "tool_calling":
        raise ValueError(f"agent_type {agent_type!r} is not offered: only 'tool_calling' (a CodeAgent would run "
                         "model-written code and take tool execution away from the arena; see the module docstring)")
    return SmolagentsAgent(model=model, base_url=base_url, api_key_env=api_key_env, temperature=temperature,
                           max_tokens=max_tokens, timeout=timeout, max_retries=max_retries, extra_body=extra_body,
                           tool_choice=tool_choice, keep_images=keep_images, instructions=instructions,
                           image_factor=image_factor, image_min_pixels=image_min_pixels,
                           image_max_pixels=image_max_pixels, id=id, limits=Limits(max_images, max_context_tokens),
                           auto_limits=auto_limits)
