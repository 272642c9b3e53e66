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
once per episode.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from arena.agent import Agent, AgentError, AgentTurn, EpisodeView, register_agent
from arena.endpoint import Endpoint, EndpointConfig, EndpointError
from arena.images import IMAGE_FACTOR, MIN_PIXELS, smart_resize
from arena.prompts import FINAL_ANSWER, FORMAT_INSTRUCTION, TOOL_RESPONSE, system_prompt
from arena.protocol import parse_response
from arena.tool import tools_prompt_block
from arena.trajectory import InputSummary, Step
from arena.untrusted import json_text_problem

DEFAULT_MAX_PIXELS = 1280 * 28 * 28


class OpenAIAgent(Agent):
    def __init__(self, endpoint: EndpointConfig, tool_mode: Literal["xml", "native"] = "xml",
                 image_factor: int = IMAGE_FACTOR, image_min_pixels: int = MIN_PIXELS,
                 image_max_pixels: int = DEFAULT_MAX_PIXELS, id: str | None = None):
        if tool_mode not in ("xml", "native"):
            raise ValueError(f"tool_mode must be 'xml' or 'native', got {tool_mode!r}")
        self.config = endpoint
        self.endpoint = Endpoint(endpoint)
        self.tool_mode = tool_mode
        self.image_size = (image_factor, image_min_pixels, image_max_pixels)
        self.id = id or f"openai:{endpoint.model}"

    async def _image_part(self, view: EpisodeView, index: int) -> dict[str, Any]:
        url = await view.images[index].data_url(*self.image_size)
        return {"type": "image_url", "image_url": {"url": url}}

    async def messages(self, view: EpisodeView) -> list[dict[str, Any]]:
        """The chat transcript of the episode so far, in this agent's tool mode."""
        prompting = view.prompting
        block = tools_prompt_block(view.tools) if view.tools else ""
        system = system_prompt(self.tool_mode, block, max_rounds=view.budget.max_rounds,
                               show_budget=prompting.show_budget, override=prompting.system_prompt)
        question = view.task.question
        instruction = prompting.format_instruction if prompting.format_instruction is not None else FORMAT_INSTRUCTION
        user: list[dict[str, Any]] = [await self._image_part(view, i) for i in range(view.n_task_images)]
        user.append({"type": "text", "text": f"{question}\n\n{instruction}".strip()})
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for step in view.steps:
            if step.final_turn:
                continue
            messages.extend(await self._step_messages(view, step))
        if view.final_turn:
            messages.append({"role": "user", "content": FINAL_ANSWER.format(max_rounds=view.budget.max_rounds)})
        return messages

    async def _step_messages(self, view: EpisodeView, step: Step) -> list[dict[str, Any]]:
        observation = step.observation
        text = observation.text if observation else ""
        images = [await self._image_part(view, i) for i in (observation.image_indices if observation else [])]
        if self.tool_mode == "native" and step.call_id:
            arguments = json.dumps(step.arguments) if step.arguments is not None else (step.raw_call or "{}")
            out: list[dict[str, Any]] = [
                {"role": "assistant", "content": step.output or None,
                 "tool_calls": [{"id": step.call_id, "type": "function",
                                 "function": {"name": step.tool or "", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": step.call_id, "content": text},
            ]
            if images:
                out.append({"role": "user", "content": [{"type": "text", "text": f"Images returned by {step.tool}:"},
                                                        *images]})
            return out
        wrapped = TOOL_RESPONSE.format(text=text) if self.tool_mode == "xml" else text
        return [{"role": "assistant", "content": step.output},
                {"role": "user", "content": [{"type": "text", "text": wrapped}, *images]}]

    async def act(self, view: EpisodeView) -> AgentTurn:
        messages = await self.messages(view)
        native_tools = [t.cached_schema() for t in view.tools] if self.tool_mode == "native" and view.tools else None
        try:
            response = await self.endpoint.chat(messages, tools=native_tools)
        except EndpointError as exc:
            raise AgentError(str(exc)) from None
        summary = self._summary(view, messages)
        if response.tool_calls and not view.final_turn:
            return self._native_turn(response, summary)
        parsed = parse_response(response.content)
        reasoning = "\n\n".join(r for r in (response.reasoning, parsed.reasoning) if r) or None
        return AgentTurn(output=response.content, action=parsed.kind, tool=parsed.tool, arguments=parsed.arguments,
                         raw_call=parsed.raw_call, answer=parsed.answer, error=parsed.error, reasoning=reasoning,
                         ignored_calls=parsed.ignored_calls + len(response.tool_calls), usage=response.usage,
                         input=summary)

    def _native_turn(self, response, summary: InputSummary) -> AgentTurn:
        call = response.tool_calls[0]
        raw = call["arguments"] or "{}"
        common = dict(output=response.content, tool=call["name"], call_id=call["id"], raw_call=raw,
                      reasoning=response.reasoning, ignored_calls=len(response.tool_calls) - 1,
                      usage=response.usage, input=summary)
        problem = json_text_problem(raw, f"the arguments of {call['name']}") if isinstance(raw, str) else None
        if problem:
            return AgentTurn(action="invalid", error=f"{problem}; write a smaller call", **common)
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as exc:
            return AgentTurn(action="invalid", error=f"the arguments of {call['name']} are not valid JSON "
                             f"({exc.msg} at line {exc.lineno} column {exc.colno})", **common)
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            return AgentTurn(action="invalid", error=f"the arguments of {call['name']} have a number that cannot "
                             f"be read ({exc})", **common)
        if not isinstance(arguments, dict):
            return AgentTurn(action="invalid", error=f"the arguments of {call['name']} must be a JSON object",
                             **common)
        return AgentTurn(action="tool_call", arguments=arguments, **common)

    def _summary(self, view: EpisodeView, messages: list[dict[str, Any]]) -> InputSummary:
        chars, images = 0, 0
        for message in messages:
            content = message.get("content")
            if isinstance(content, str):
                chars += len(content)
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "text":
                    chars += len(part["text"])
                else:
                    images += 1
        factor, lo, hi = self.image_size
        image_tokens = 0
        for image in view.images:
            if image.size is not None:
                h, w = smart_resize(image.size[1], image.size[0], factor, lo, hi)
                image_tokens += (h * w) // (factor * factor)
        return InputSummary(messages=len(messages), images=images, token_estimate=chars // 4 + image_tokens)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "openai", "tool_mode": self.tool_mode,
                "endpoint": self.config.model_dump(exclude={"extra_body"}), "image_size": list(self.image_size)}

    async def aclose(self) -> None:
        await self.endpoint.aclose()


@register_agent("openai")
def openai_agent(model: str, base_url: str, api_key_env: str | None = None, tool_mode: str = "xml",
                 temperature: float | None = 0.7, max_tokens: int | None = None, timeout: float = 120.0,
                 max_retries: int = 4, retry_initial: float = 1.0, max_parallel: int | None = None,
                 extra_body: dict | None = None, image_factor: int = IMAGE_FACTOR,
                 image_min_pixels: int = MIN_PIXELS, image_max_pixels: int = DEFAULT_MAX_PIXELS,
                 id: str | None = None) -> OpenAIAgent:
    endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                              max_retries=max_retries, retry_initial=retry_initial, temperature=temperature,
                              max_tokens=max_tokens, max_parallel=max_parallel, extra_body=extra_body or {})
    return OpenAIAgent(endpoint, tool_mode=tool_mode, image_factor=image_factor,  # type: ignore[arg-type]
                       image_min_pixels=image_min_pixels, image_max_pixels=image_max_pixels, id=id)
