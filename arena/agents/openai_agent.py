"""`openai`: any OpenAI-compatible chat endpoint (vLLM, SGLang, OpenAI...) as an agent.

Tool modes:
- `xml` (default, the VistaArena protocol): tools as JSON signatures inside
  `<tools>` in the system prompt, calls as `<tool_call>` JSON in the text, tool
  results as user messages wrapped in `<tool_response>`;
- `native`: the API's `tools=` parameter and `tool_calls`; results as `tool`
  messages, returned images in a following user message (tool messages cannot
  carry images on most servers).

Images go as PNG data URLs, smart-resized as a Qwen-VL processor would
(`image_factor`, `image_min_pixels`, `image_max_pixels`); each image is encoded
once per size while cached, and its `image_url` part serialised once (an
`orjson.Fragment` sent as its own bytes, shared by the episodes that show it,
carrying the PNG for the recorder: `arena.endpoints.transcript.serialised_part`).

Limits (`arena.agents.context_policy`): `max_images` and `max_context_tokens` leave old
returned images, then old observation texts, out of the transcript (one-line
placeholders; recorded on the step's `input`). With `auto_limits` a rejection that
states an image or context limit teaches the agent that limit for the endpoint and
the turn is sent again at once.

A suite's published request (`--protocol original`, set on the task's `layout` by the suite's original dataset
rules): its sampling fields (`layout.sampling`) go as top-level JSON fields of every request, except those the agent
is given explicitly (`temperature`, `max_tokens`, or a key of `extra_body`: `explicit_sampling`); with
`layout.published_tool_results` a tool result is sent as its tool laid it out
(`Observation.data["layout"]`: text parts and image positions, already wrapped in `<tool_response>`), and a result
without one as a string `<tool_response>` message.

Replies: a reply cut at `finish_reason: "length"` without a complete action is an
invalid round ("your reply was cut at the token limit..."); with `strict_answers`
a reply with neither a tool call nor `<answer>` is asked once for `<answer>`.
Provider fields of the reply (Gemini thought signatures...) are kept on the step
and sent back verbatim.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import mimetypes
import weakref
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from arena.core.agent import Agent, AgentError, AgentTurn, EpisodeView, Prompting, register_agent
from arena.core.context_image import ContextImage
from arena.endpoints import transcript
from arena.endpoints.client import (ChatResponse, Endpoint, EndpointConfig, EndpointError, RejectedError,
                                    learned_params, restore_params)
from arena.core.images import IMAGE_FACTOR, MIN_PIXELS, smart_resize
from arena.core.protocol import json_type, parse_response, tool_name_problem
from arena.core.task import RequestLayout
from arena.core.tool import tools_prompt_block
from arena.core.trajectory import InputSummary, Step
from arena.core.untrusted import json_text_problem

from .context_policy import (Elision, Limits, Observed, image_placeholder, learn_body_limit, learn_from_rejection,
                             plan_elision, text_placeholder)
from .prompts import FINAL_T, FORMAT_T, TOOL_IMAGES_T, TOOL_RESPONSE_T, system_prompt, templates_used
from .truncation import CeilingWatch

DEFAULT_MAX_PIXELS = 1280 * 28 * 28
CUT_AT_LIMIT = "your reply was cut at the token limit; answer more briefly"
ASK_FOR_ANSWER = ("Your reply has neither a tool call nor an answer inside <answer></answer>. Call a tool, or give "
                  "your final answer inside <answer></answer>.")
NOT_AN_ANSWER = ("your reply has neither a tool call nor an answer inside <answer></answer>, so it is not a final "
                 "answer (a tool call the server could not read is dropped): call a tool, or give your final answer "
                 "inside <answer></answer>")
ELIDED_TOKENS = 8  # a text or image left out, as the turn's token estimate counts its placeholder
NOTHING_LEFT_OUT = Elision()  # (never modified)
logger = logging.getLogger(__name__)


def _tokens(text: str | None) -> int:
    return len(text or "") // 4


@functools.lru_cache(maxsize=4096)
def _image_tokens(size: tuple[int, int], factor: int, min_pixels: int, max_pixels: int) -> int:
    """The tokens of an image of `size` (width, height) as sent: its resized pixels over the factor's square (the
    transcript counts each image in context every turn: the same few sizes again and again)."""
    h, w = smart_resize(size[1], size[0], factor, min_pixels, max_pixels)
    return (h * w) // (factor * factor)


@dataclass(eq=False)
class _Rendered:
    """An episode's transcript as its last turn without limits built it: the head (system and user messages) and
    what decided it, the steps rendered (the Step objects themselves) and their messages, and the token estimate
    and images of it all. A step is complete when the next turn is played and not changed after, so the next turn
    renders only the steps played since."""

    head_key: tuple[Any, ...]
    head: list[Any]
    steps: list[Step]
    messages: list[Any]
    tokens: int
    images: int

    def leads_to(self, head_key: tuple[Any, ...], steps: list[Step]) -> bool:
        """Whether this is the start of the transcript of a view with this head and these steps (the same objects)."""
        if self.head_key != head_key or len(self.steps) > len(steps):
            return False
        for rendered, step in zip(self.steps, steps):
            if rendered is not step:
                return False
        return True


class OpenAIAgent(Agent):
    def __init__(self, endpoint: EndpointConfig, tool_mode: Literal["xml", "native"] = "xml",
                 image_factor: int = IMAGE_FACTOR, image_min_pixels: int = MIN_PIXELS,
                 image_max_pixels: int = DEFAULT_MAX_PIXELS, id: str | None = None,
                 limits: Limits | None = None, auto_limits: bool = True, strict_answers: bool = False,
                 image_detail: str | None = None):
        if tool_mode not in ("xml", "native"):
            raise ValueError(f"tool_mode must be 'xml' or 'native', got {tool_mode!r}")
        self.config = endpoint
        self.endpoint = Endpoint(endpoint)
        self.tool_mode = tool_mode
        self.text_protocol = tool_mode == "xml"
        self.image_size = (image_factor, image_min_pixels, image_max_pixels)
        self.id = id or f"openai:{endpoint.model}"
        self.limits = limits or Limits()
        self.learned = Limits()
        self.ceiling = CeilingWatch()  # a server cutting prompts to a fixed context, turn by turn
        self.auto_limits = auto_limits
        self.strict_answers = strict_answers
        self.image_detail = image_detail
        self._system_prompts: dict[bool, tuple[tuple[Any, ...], str]] = {}
        """The last system prompt built with tools (True) and without (False), with what it was built from."""
        self._parts: weakref.WeakKeyDictionary[ContextImage, orjson.Fragment] = weakref.WeakKeyDictionary()
        self._schemas: tuple[tuple[Any, ...], list[dict[str, Any]]] = ((), [])
        """The tools of the last native request, and their schemas (`_native_tools`)."""
        self._rendered: weakref.WeakKeyDictionary[ContextImage, _Rendered] = weakref.WeakKeyDictionary()
        """Each episode's transcript so far (`_extended`), by the episode's first task image (an episode's own)."""

    async def _image_part(self, view: EpisodeView, index: int) -> orjson.Fragment:
        """The image's serialised `image_url` part, computed once per episode (per ContextImage) and shared by the
        episodes that show the same image the same way while it stays cached (`transcript.shared_part`)."""
        image = view.images[index]
        part = self._parts.get(image)
        if part is not None:
            return part
        as_file = view.task.layout.images_as_files and index < view.n_task_images and image.path
        mime = (mimetypes.guess_type(image.path.name)[0] or "image/jpeg") if as_file and image.path else None
        key = (image.blob_id, mime or self.sizes(view), self.image_detail)  # all that decides the part
        part = transcript.shared_part(key)
        if part is None:
            if as_file and image.path:
                # a suite's published request (suites/*/protocol.py): the file's own bytes, the type by its name
                data = await image.file_bytes()
            else:
                data, mime = await image.model_png(*self.sizes(view)), "image/png"
            # episodes that asked at the same moment (a burst cropping one box) awaited together: the first one back
            # encodes, the others take its part (nothing awaits from here to `serialised_part`, which shares it);
            # the recorder stores `data` as it is
            part = transcript.shared_part(key)
            if part is None:
                url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
                inner = {"url": url, "detail": self.image_detail} if self.image_detail else {"url": url}
                part = transcript.serialised_part({"type": "image_url", "image_url": inner}, key, payload=data)
        self._parts[image] = part
        return part

    def sizes(self, view: EpisodeView) -> tuple[int, int, int]:
        """(factor, min pixels, max pixels) of the images sent: the agent's, or, when the agent keeps the defaults,
        a suite's published processing (`task.layout.image_size`, set by suites/*/protocol.py)."""
        published = view.task.layout.image_size
        if published and self.image_size == (IMAGE_FACTOR, MIN_PIXELS, DEFAULT_MAX_PIXELS):
            return published
        return self.image_size

    def _image_tokens(self, view: EpisodeView, index: int) -> int:
        size = view.images[index].size
        if size is None:
            return 0
        return _image_tokens(size, *self.sizes(view))

    async def messages(self, view: EpisodeView) -> list[Any]:
        """The chat transcript of the episode so far, in this agent's tool mode."""
        return (await self.transcript(view, self.limits.merged(self.learned)))[0]

    async def transcript(self, view: EpisodeView, limits: Limits) -> tuple[list[Any], InputSummary]:
        """The transcript within `limits`, and what it holds (with the elisions made). Without image or context
        limits nothing is left out and each step is rendered once per episode (`_extended`)."""
        system = self._system_prompt(view)
        steps = [s for s in view.steps if not s.final_turn]
        if limits.max_images is None and limits.max_context_tokens is None:
            rendered = await self._extended(view, system, steps)
            messages, tokens, images, elision = [*rendered.head, *rendered.messages], rendered.tokens, \
                rendered.images, NOTHING_LEFT_OUT
        else:
            messages, tokens, images, elision = await self._within_limits(view, limits, system, steps)
        if view.final_turn:
            book = view.prompting.prompts
            messages.append({"role": "user", "content": book.format(FINAL_T, max_rounds=view.budget.max_rounds)})
        summary = InputSummary(messages=len(messages), images=images, token_estimate=tokens,
                               elided_images=sorted(elision.images), elided_texts=sorted(elision.texts),
                               elision_reason=elision.reason)
        return messages, summary

    async def _extended(self, view: EpisodeView, system: str, steps: list[Step]) -> _Rendered:
        """The episode's transcript with nothing left out: the one kept from its last turn (`_Rendered`, found by
        the episode's first task image) with the steps played since rendered and added, or, when the head or any
        step it rendered is not the view's own (another system prompt in the final turn, another episode), built
        again from the start."""
        anchor = view.images[0] if view.n_task_images and view.images else None
        head_key = (view.task, view.prompting, system, bool(view.tools), view.images[1:view.n_task_images])
        kept = self._rendered.get(anchor) if anchor is not None else None
        if kept is None or not kept.leads_to(head_key, steps):
            kept = _Rendered(head_key, await self._head(view, system), [], [], self._head_tokens(view, system),
                             view.n_task_images)
            if anchor is not None:
                self._rendered[anchor] = kept
        for step in steps[len(kept.steps):]:
            kept.messages.extend(await self._step_messages(view, step, NOTHING_LEFT_OUT))
            tokens, images = self._step_size(view, step)
            kept.tokens += tokens
            kept.images += images
            kept.steps.append(step)
        return kept

    async def _within_limits(self, view: EpisodeView, limits: Limits, system: str,
                             steps: list[Step]) -> tuple[list[Any], int, int, Elision]:
        """The transcript with old returned images and observation texts left out to fit `limits`
        (`plan_elision`), its token estimate and images, and the elision made."""
        fixed = self._head_tokens(view, system) + sum(_tokens(s.output) for s in steps)
        observed = [Observed(s.round, _tokens(s.observation.text if s.observation else ""),
                             [(i, self._image_tokens(view, i)) for i in
                              (s.observation.image_indices if s.observation else [])]) for s in steps]
        elision = plan_elision(limits, view.n_task_images, fixed, observed)
        messages = await self._head(view, system)
        for step in steps:
            messages.extend(await self._step_messages(view, step, elision))
        tokens, images = fixed, view.n_task_images
        for seen in observed:
            tokens += ELIDED_TOKENS if seen.round in elision.texts else seen.text_tokens
            for index, image_tokens in seen.images:
                if index in elision.images:
                    tokens += ELIDED_TOKENS
                else:
                    images += 1
                    tokens += image_tokens
        return messages, tokens, images, elision

    def _head_tokens(self, view: EpisodeView, system: str) -> int:
        """The token estimate of the system prompt, the question and the task images."""
        tokens = _tokens(system) + _tokens(view.task.question)
        for i in range(view.n_task_images):
            tokens += self._image_tokens(view, i)
        return tokens

    def _step_size(self, view: EpisodeView, step: Step) -> tuple[int, int]:
        """The token estimate of a step shown in full (its output, observation text and images), and its images."""
        observation = step.observation
        if observation is None:
            return _tokens(step.output), 0
        tokens = _tokens(step.output) + _tokens(observation.text)
        for i in observation.image_indices:
            tokens += self._image_tokens(view, i)
        return tokens, len(observation.image_indices)

    async def _head(self, view: EpisodeView, system: str) -> list[Any]:
        """The system message (when there are tools, or the layout asks for one) and the user message: the task
        images and the question."""
        prompting = view.prompting
        question = view.task.question
        # A suite's published request layout (suites/*/protocol.py): "Image i:" labels before the task images, the
        # question sent as is (no format instruction, nothing stripped), no system message when there are no tools.
        layout = view.task.layout
        labels = layout.image_labels
        user: list[Any] = []
        for i in range(view.n_task_images):
            user += [{"type": "text", "text": labels[i]}] if i < len(labels) else []
            user.append(await self._image_part(view, i))
        if layout.question_alone_with_tools:
            # the published VistaArena script: the question alone in tool mode; without tools, the question, a line
            # break and the dataset's format instruction when it has one
            given = prompting.format_instruction or ""
            text = question if view.tools or not given else f"{question}\n{given}"
        elif layout.question_verbatim:
            text = question
        else:
            instruction = prompting.format_instruction if prompting.format_instruction is not None \
                else prompting.prompts.format(FORMAT_T)
            text = f"{question}\n\n{instruction}".strip()
        user.append({"type": "text", "text": text})
        messages: list[Any] = [{"role": "user", "content": user}]
        if view.tools or layout.system_message:
            messages.insert(0, {"role": "system", "content": system})
        return messages

    def _system_prompt(self, view: EpisodeView) -> str:
        """The episode's system prompt, built again only when what decides it changed since the last turn with (or
        without) tools: the tools, the budget's rounds, the prompting's budget note, override and prompt book."""
        prompting = view.prompting
        key = (tuple(view.tools), view.budget.max_rounds, prompting.show_budget, prompting.system_prompt,
               prompting.prompts)
        last = self._system_prompts.get(bool(view.tools))
        if last is not None and last[0] == key:
            return last[1]
        block = tools_prompt_block(view.tools) if view.tools else ""
        system = system_prompt(self.tool_mode, block, max_rounds=view.budget.max_rounds,
                               show_budget=prompting.show_budget, override=prompting.system_prompt,
                               book=prompting.prompts)
        self._system_prompts[bool(view.tools)] = (key, system)
        return system

    async def _step_messages(self, view: EpisodeView, step: Step, elision: Elision) -> list[dict[str, Any]]:
        observation = step.observation
        text = observation.text if observation else ""
        if step.round in elision.texts:
            text = text_placeholder(step.round)
        images: list[Any] = []
        for i in observation.image_indices if observation else []:
            images.append({"type": "text", "text": image_placeholder(i)} if i in elision.images
                          else await self._image_part(view, i))
        provider = step.provider_fields or {}
        if self.tool_mode == "native" and step.call_id:
            arguments = json.dumps(step.arguments) if step.arguments is not None else (step.raw_call or "{}")
            call = {"id": step.call_id, "type": "function", "function": {"name": step.tool or "", "arguments": arguments}}
            call.update((provider.get("tool_calls") or [{}])[0])
            out: list[dict[str, Any]] = [
                {"role": "assistant", "content": step.output or None, "tool_calls": [call],
                 **provider.get("message", {})},
                {"role": "tool", "tool_call_id": step.call_id, "content": text},
            ]
            if images:
                lead = view.prompting.prompts.format(TOOL_IMAGES_T, tool=step.tool)
                out.append({"role": "user", "content": [{"type": "text", "text": lead}, *images]})
            return out
        wrapped = view.prompting.prompts.format(TOOL_RESPONSE_T, text=text) if self.tool_mode == "xml" else text
        assistant = {"role": "assistant", "content": step.output, **provider.get("message", {})}
        if self.tool_mode == "xml" and view.task.layout.published_tool_results:
            layout = (observation.data.get("layout") if observation else None) or []
            if layout and step.round not in elision.texts:
                return [assistant, {"role": "user", "content": await self._laid_out(view, observation, layout,
                                                                                   elision)}]
            if not images:
                return [assistant, {"role": "user", "content": wrapped}]
        return [assistant, {"role": "user", "content": [{"type": "text", "text": wrapped}, *images]}]

    async def _laid_out(self, view: EpisodeView, observation: Any, layout: list[Any],
                        elision: Elision) -> list[Any]:
        """A tool result as its tool laid it out: each string a text part, each integer the result's image at that
        position (an elided image as its placeholder)."""
        parts: list[Any] = []
        for piece in layout:
            if isinstance(piece, str):
                parts.append({"type": "text", "text": piece})
                continue
            index = observation.image_indices[piece]
            parts.append({"type": "text", "text": image_placeholder(index)} if index in elision.images
                         else await self._image_part(view, index))
        return parts

    def explicit_sampling(self) -> dict[str, Any]:
        """The request fields this agent was given explicitly: `temperature`, `max_tokens` and `extra_body`'s keys."""
        given = dict(self.config.extra_body)
        if self.config.temperature is not None:
            given["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            given["max_tokens"] = self.config.max_tokens
        return given

    def published_fields(self, view: EpisodeView) -> dict[str, Any]:
        """The published sampling fields of the task's suite (under `--protocol original`) this agent sends: all but
        those it was given explicitly, which win."""
        published = view.task.layout.sampling
        if not published:
            return {}
        explicit = self.explicit_sampling()
        return {name: value for name, value in published.items() if name not in explicit}

    async def _within_bytes(self, view: EpisodeView, limits: Limits, tools: list[dict[str, Any]] | None,
                            messages: list[Any], summary: InputSummary) -> tuple[list[Any], InputSummary]:
        """The transcript within `limits.max_request_bytes` (a body-size limit learned from a 413): the oldest
        returned images left out (never the latest observation's) until the body fits, recorded on the step as image
        elisions are. AgentError `context_overflow` when even that cannot fit it."""
        budget = limits.max_request_bytes
        if budget is None:
            return messages, summary
        size = sum(len(piece) for piece in transcript.body_pieces({"messages": messages, "tools": tools}))
        if size <= budget:
            return messages, summary
        steps = [s for s in view.steps if not s.final_turn]
        shown = [i for s in steps for i in (s.observation.image_indices if s.observation else [])]
        latest = set(steps[-1].observation.image_indices) if steps and steps[-1].observation else set()
        last_dropped = -1
        for position, index in enumerate(shown):
            if size <= budget or index in latest:
                break
            if index not in summary.elided_images:
                size -= len(orjson.dumps(await self._image_part(view, index))) - len(image_placeholder(index)) - 40
            last_dropped = position
        if size > budget:
            raise AgentError(f"{self.config.where()}: the request (about {size} bytes) exceeds the endpoint's body "
                             f"limit (about {budget} bytes, learned from its 413) even without the earlier returned "
                             "images", finish_reason="context_overflow")
        keep = len(shown) - (last_dropped + 1)
        within = Limits(view.n_task_images + keep, limits.max_context_tokens)
        messages, trimmed = await self.transcript(view, limits.merged(within))
        reasons = [r for r in (summary.elision_reason,) if r] + [f"about {budget} request bytes (the endpoint's "
                                                               "body limit)"]
        trimmed.elision_reason = " and ".join(reasons)
        return messages, trimmed

    async def _request(self, view: EpisodeView, tools: list[dict[str, Any]] | None,
                       extra: list[dict[str, Any]] | None = None) -> tuple[ChatResponse, InputSummary]:
        """Send the turn; a rejection that states an image or context limit, or a 413 (a body-size limit), is
        learned and the turn sent again."""
        limits = self.limits.merged(self.learned)
        sampling = self.published_fields(view)  # the task's published fields the agent was not given explicitly
        for _ in range(4):
            messages, summary = await self.transcript(view, limits)
            if limits.max_request_bytes is not None:
                messages, summary = await self._within_bytes(view, limits, tools, messages, summary)
            try:
                sent = messages + extra if extra else messages  # (the transcript is a new list every turn)
                return await self.endpoint.chat(sent, tools=tools, **sampling), summary
            except RejectedError as exc:
                if exc.status == 413:
                    budget = learn_body_limit(exc.server_message, exc.sent_bytes or 0, self.endpoint.largest_accepted)
                    tighter = self.learned.merged(Limits(max_request_bytes=budget))
                    if not self.auto_limits or limits.merged(tighter) == limits:
                        raise AgentError(f"{exc} (no trimming of returned images fits it)",
                                         finish_reason="context_overflow") from None
                    self.learned = tighter
                    logger.warning("%s: the endpoint refused a %s-byte request (413); sending at most %s bytes, "
                                   "the oldest returned images left out", self.config.where(), exc.sent_bytes, budget)
                    limits = self.limits.merged(self.learned)
                    continue
                max_tokens = self.config.max_tokens or sampling.get("max_tokens") or 0
                self.learned = learn_from_rejection(str(exc), exc.server_message, summary.token_estimate, max_tokens,
                                                    self.learned, limits, self.auto_limits)
                logger.warning("%s: learned %s from the server's reply; trimming the context", self.config.where(),
                               self.learned.as_dict())
                limits = self.limits.merged(self.learned)
            except EndpointError as exc:
                raise AgentError(str(exc)) from None
        raise AgentError(f"{self.config.where()}: the request still exceeds the server's limits after trimming",
                         finish_reason="context_overflow")

    async def act(self, view: EpisodeView) -> AgentTurn:
        turn = await self._act(view)
        note = self.ceiling.note(turn.usage.prompt_tokens, turn.input.token_estimate)
        if note:
            turn.notes.append(note)
        return turn

    async def _act(self, view: EpisodeView) -> AgentTurn:
        native_tools = self._native_tools(view) if self.tool_mode == "native" and view.tools else None
        response, summary = await self._request(view, native_tools)
        usage = response.usage
        if self.strict_answers and not view.final_turn and not response.tool_calls and \
                response.finish_reason != "length":
            parsed = parse_response(response.content)
            if parsed.kind == "answer" and not parsed.tagged:
                nudge = [{"role": "assistant", "content": response.content},
                         {"role": "user", "content": ASK_FOR_ANSWER}]
                first = response.content
                response, _ = await self._request(view, native_tools, nudge)
                usage = usage + response.usage
                response.content = f"{first}\n\n[arena: {ASK_FOR_ANSWER}]\n\n{response.content}"
                response.usage = usage
                if not response.tool_calls:
                    parsed = parse_response(response.content.rpartition(ASK_FOR_ANSWER + "]")[2])
                    return self._in_answer_form(view, self._text_turn(response, parsed, summary))
        if response.tool_calls and not view.final_turn:
            return self._native_turn(response, summary)
        return self._in_answer_form(view, self._text_turn(response, parse_response(response.content), summary))

    def _native_tools(self, view: EpisodeView) -> list[dict[str, Any]]:
        """The `tools` field of a native request: the tools' schemas, listed again only when the tools change (a
        tool's schema is its instance's for the run: `Tool.cached_schema`)."""
        tools = tuple(view.tools)
        if self._schemas[0] != tools:
            self._schemas = (tools, [t.cached_schema() for t in tools])
        return self._schemas[1]

    def _in_answer_form(self, view: EpisodeView, turn: AgentTurn) -> AgentTurn:
        """Native tool mode under `--protocol arena` (`Prompting.answer_form_required`), tools offered: a reply
        with no tool call whose answer is not inside `<answer></answer>` is an invalid turn that tells the model so
        (the episode goes on within its budget, as a malformed call does in xml mode)."""
        if (self.tool_mode == "native" and view.prompting.answer_form_required and view.tools
                and not view.final_turn and turn.action == "answer" and not turn.answer_tagged):
            turn.action, turn.answer, turn.error, turn.answer_tagged = "invalid", None, NOT_AN_ANSWER, None
        return turn

    def _text_turn(self, response: ChatResponse, parsed, summary: InputSummary) -> AgentTurn:
        reasoning = "\n\n".join(r for r in (response.reasoning, parsed.reasoning) if r) or None
        turn = AgentTurn(output=response.content, action=parsed.kind, tool=parsed.tool, arguments=parsed.arguments,
                         raw_call=parsed.raw_call, answer=parsed.answer, error=parsed.error, reasoning=reasoning,
                         ignored_calls=parsed.ignored_calls + len(response.tool_calls), usage=response.usage,
                         input=summary, finish_reason=response.finish_reason,
                         answer_tagged=parsed.tagged if parsed.kind == "answer" else None,
                         provider_fields=response.provider_fields)
        if response.finish_reason == "length":
            complete = (parsed.kind == "tool_call" and "</tool_call>" in response.content) or \
                (parsed.kind == "answer" and parsed.tagged)
            if not complete:
                turn.action, turn.answer, turn.error = "invalid", None, CUT_AT_LIMIT
        return turn

    def _native_turn(self, response: ChatResponse, summary: InputSummary) -> AgentTurn:
        """The first native tool call as the round's action. Whatever JSON the server put in the call's fields
        (a name, arguments or id of any type) is data: an invalid turn whose error names the field."""
        call = response.tool_calls[0]
        name, raw, call_id = call["name"], call["arguments"] or "{}", call["id"]
        named, raw_text = isinstance(name, str), isinstance(raw, str)
        common = dict(output=response.content, tool=name if named else None,
                      call_id=call_id if isinstance(call_id, str) else json.dumps(call_id, default=str),
                      raw_call=raw if raw_text else json.dumps(raw, default=str),
                      reasoning=response.reasoning, ignored_calls=len(response.tool_calls) - 1,
                      usage=response.usage, input=summary, finish_reason=response.finish_reason,
                      provider_fields=response.provider_fields)
        if not named or not name:
            return AgentTurn(action="invalid", error=tool_name_problem(name), **common)
        problem = json_text_problem(raw, f"the arguments of {name}") if raw_text else None
        if problem:
            return AgentTurn(action="invalid", error=f"{problem}; write a smaller call", **common)
        try:
            arguments = json.loads(raw) if raw_text else raw
        except json.JSONDecodeError as exc:
            error = CUT_AT_LIMIT if response.finish_reason == "length" else (
                f"the arguments of {name} are not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno})")
            return AgentTurn(action="invalid", error=error, **common)
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            return AgentTurn(action="invalid", error=f"the arguments of {name} have a number that cannot "
                             f"be read ({exc})", **common)
        if not isinstance(arguments, dict):
            return AgentTurn(action="invalid", error=f"the arguments of {name} must be a JSON object, got "
                             f"{json_type(arguments)}", **common)
        return AgentTurn(action="tool_call", arguments=arguments, **common)

    def learned_limits(self) -> dict[str, Any]:
        """The limits learned from the server, and the request fields it refused (`params`, `client.learned_params`)."""
        params = learned_params().get(self.config.where())
        return {**self.learned.as_dict(), **({"params": params} if params else {})}

    def learned_version(self) -> Any:
        """The learned limits' object: replaced, never changed in place, when a limit is learned."""
        return self.learned

    def apply_limits(self, limits: dict[str, Any]) -> None:
        self.learned = self.learned.merged(Limits(limits.get("max_images"), limits.get("max_context_tokens"),
                                                  limits.get("max_request_bytes")))
        if limits.get("params"):
            restore_params({self.config.where(): limits["params"]})

    def prompt_templates(self, prompting: Prompting, layout: RequestLayout, tools: bool,
                         final_turn: bool) -> list[str]:
        return templates_used(self.tool_mode, tools=tools, prompting=prompting, layout=layout, final_turn=final_turn)

    def describe(self) -> dict[str, Any]:
        endpoint = self.config.model_dump(exclude={"extra_body"})
        endpoint["base_url"] = self.config.where().partition(" at ")[2]
        return {"id": self.id, "kind": "openai", "tool_mode": self.tool_mode, "endpoint": endpoint,
                "image_size": list(self.image_size), "limits": self.limits.as_dict(),
                "auto_limits": self.auto_limits, "strict_answers": self.strict_answers,
                "image_detail": self.image_detail}

    async def aclose(self) -> None:
        await self.endpoint.aclose()


@register_agent("openai")
def openai_agent(model: str, base_url: str, api_key_env: str | None = None, tool_mode: str = "xml",
                 temperature: float | None = None, max_tokens: int | None = None, timeout: float = 120.0,
                 max_retries: int = 4, retry_initial: float = 1.0, max_parallel: int | None = None,
                 extra_body: dict | None = None, image_factor: int = IMAGE_FACTOR,
                 image_min_pixels: int = MIN_PIXELS, image_max_pixels: int = DEFAULT_MAX_PIXELS,
                 id: str | None = None, max_images: int | None = None, max_context_tokens: int | None = None,
                 auto_limits: bool = True, strict_answers: bool = False, token_param: str = "auto",
                 reasoning_effort: str | None = None, parallel_tool_calls: bool | None = None,
                 image_detail: str | None = None, pool_size: int = 64) -> OpenAIAgent:
    endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                              max_retries=max_retries, retry_initial=retry_initial, temperature=temperature,
                              max_tokens=max_tokens, max_parallel=max_parallel, extra_body=extra_body or {},
                              token_param=token_param, reasoning_effort=reasoning_effort,  # type: ignore[arg-type]
                              parallel_tool_calls=parallel_tool_calls, pool_size=pool_size)
    return OpenAIAgent(endpoint, tool_mode=tool_mode, image_factor=image_factor,  # type: ignore[arg-type]
                       image_min_pixels=image_min_pixels, image_max_pixels=image_max_pixels, id=id,
                       limits=Limits(max_images, max_context_tokens), auto_limits=auto_limits,
                       strict_answers=strict_answers, image_detail=image_detail)
