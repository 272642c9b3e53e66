"""Image generation for UReason: the `generate_image` tool (an OpenAI-compatible images endpoint) and the
`image_gen` agent that plays UReason's three settings with either generation tool.

`generate_image(prompt)` posts `{"model", "prompt", "n": 1, "size", "response_format"}` to
`{images_base_url}/images/generations` (OpenAI's images API; the base URL ends in `/v1`) through the model
endpoints' keep-alive client (`arena.endpoints.http`) and returns the decoded image of `data[0]` (its `b64_json`, or a `data:` `url`). Connection errors, timeouts,
408/409/429 and 5xx are retried with backoff (`images_max_retries`); any other status is a `ToolError`
naming the server's message (OpenAI's `{"error": {"message"}}` or the text), credentials masked. Tool
options: `images_base_url`, `images_model`, `images_api_key_env` (default OPENAI_API_KEY; the key goes in
the Authorization header only), `images_size` (default 1024x1024), `images_response_format` (default
b64_json; "none" leaves it out for servers that refuse it), `images_timeout`, `images_max_retries`.

The `image_gen` agent reads the setting from the task's `level` (PROTOCOLS.md §5):
- `direct`: the prompt alone conditions the image;
- `guided`: a chat model reasons and writes `refined prompt: ...`; the image is
  conditioned on the whole context (prompt, reasoning, refined prompt);
- `decontext`: the same reasoning, but only the refined prompt (UReason's marker
  rules) conditions the image.
With `generate_image` the conditioning text is the image prompt; with `render`
the chat model itself paints (writes SVG or HTML) from that context. The
reasoning of `guided` and `decontext` episodes of the same question is shared
(the n-th of each pairs with the n-th trace), as UReason derives setting 3
from setting 2's trace. The episode logs the reasoning as the model output of
the generation step.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import os
import re
from typing import Any

import orjson
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from arena.core.agent import Agent, AgentError, AgentTurn, EpisodeView
from arena.endpoints.client import (Endpoint, EndpointConfig, EndpointError, RejectedError, TransientEndpointError,
                              parse_body, status_error)
from arena.endpoints.http import HTTPPool, HTTPTransportError
from arena.endpoints.redact import redact_text
from arena.core.images import ImageError, decode_image
from arena.suites.ureason.loader import SETTINGS, extract_refined_prompt
from arena.core.tool import Tool, ToolContext, ToolError, ToolOptions, ToolResult
from arena.core.trajectory import Usage


class GenerateImageArgs(BaseModel):
    prompt: str = Field(..., min_length=1, max_length=32_000, description="What the image must show.")


class GenerateImageOptions(ToolOptions):
    """The image endpoint of `generate_image` (`images_base_url` is required to call it)."""

    images_base_url: str | None = None
    images_model: str | None = None
    images_api_key_env: str | None = None
    images_size: str = "1024x1024"
    images_timeout: float = 300.0
    images_max_retries: int = 3
    images_response_format: str = "b64_json"


class GenerateImageTool(Tool):
    name = "generate_image"
    description = "Generate an image from a text prompt with an image model; the image is returned."
    Args = GenerateImageArgs
    Options = GenerateImageOptions

    def __init__(self, options=None):
        super().__init__(options)
        self._pool: HTTPPool | None = None

    def _setting(self, name: str, default: Any = None) -> Any:
        return getattr(self.options, name, default)

    def pool(self) -> HTTPPool:
        """Keep-alive connections to `{images_base_url}/images/generations`, made on first use (the key read then)."""
        if self._pool is None:
            base_url = self._setting("images_base_url")
            if not base_url:
                raise ToolError("generate_image is not configured: set the tool option images_base_url")
            key = os.environ.get(self._setting("images_api_key_env") or "OPENAI_API_KEY") or "EMPTY"
            try:
                self._pool = HTTPPool(str(base_url).rstrip("/") + "/images/generations",
                                      {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                                      timeout=float(self._setting("images_timeout", 300.0)), max_connections=8)
            except ValueError as exc:  # not an http(s) URL, or an unsupported proxy
                raise ToolError(redact_text(f"generate_image: {exc}")) from None
        return self._pool

    @staticmethod
    async def _post(pool: HTTPPool, body: dict[str, Any]) -> Any:
        """The JSON answer of one POST; TransientEndpointError (connection, timeout, 408/409/429/5xx) or
        RejectedError for anything else, as for chat calls (`arena.endpoints.client.status_error`)."""
        try:
            response = await pool.post(orjson.dumps(body))
        except HTTPTransportError as exc:
            raise TransientEndpointError(str(exc)) from None
        if response.status != 200:
            raise status_error(response.status, response.body, response.headers, limit=300)
        try:
            return parse_body(response.body)
        except ValueError:
            raise RejectedError("HTTP 200 with a body that is not JSON", status=200) from None

    async def run(self, args: GenerateImageArgs, ctx: ToolContext) -> ToolResult:
        pool = self.pool()
        params: dict[str, Any] = {"model": self._setting("images_model") or "default", "prompt": args.prompt,
                                  "n": 1, "size": self._setting("images_size", "1024x1024")}
        response_format = self._setting("images_response_format", "b64_json")
        if response_format and response_format != "none":
            params["response_format"] = response_format
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(int(self._setting("images_max_retries", 3)) + 1),
                                               wait=wait_exponential_jitter(initial=1.0, max=30.0),
                                               retry=retry_if_exception_type(TransientEndpointError), reraise=True):
                with attempt:
                    result = await self._post(pool, params)
        except EndpointError as exc:
            raise ToolError(redact_text(f"the images endpoint failed: {exc}")) from None
        data = result.get("data") if isinstance(result, dict) else None
        item = data[0] if isinstance(data, list) and data else None
        if not isinstance(item, dict):
            raise ToolError("the images endpoint returned no image")
        b64, url = item.get("b64_json"), item.get("url")
        if not (isinstance(b64, str) and b64) and isinstance(url, str) and url.startswith("data:"):
            b64 = url.partition(",")[2]
        elif not (isinstance(b64, str) and b64):
            raise ToolError("the images endpoint returned a URL, not image data; set images_response_format=b64_json")
        try:
            raw = base64.b64decode(b64)
        except (binascii.Error, ValueError):
            raise ToolError("the images endpoint returned image data that is not base64") from None
        try:
            image = await asyncio.to_thread(decode_image, raw, "generate_image")
        except ImageError as exc:
            raise ToolError(str(exc)) from None
        return ToolResult(text=f"Generated a {image.width}x{image.height} image.", images=[image],
                          data={"prompt_chars": len(args.prompt), "revised_prompt": item.get("revised_prompt")})

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None


PAINTER = {
    "svg": ("You draw images as SVG. Reply with one complete SVG document (width 512, height 512, white "
            "background) that depicts the description exactly, and nothing else."),
    "html": ("You draw images as HTML with inline CSS. Reply with one complete HTML document (512x512 pixels, "
             "white background) that depicts the description exactly, and nothing else."),
}
DRAW_NOW = ("Now generate the image from everything above: reply with one complete {kind} document (512x512, "
            "white background) that depicts it exactly, and nothing else.")
_FENCE = re.compile(r"```(?:svg|html|xml)?\s*\n(.*?)```", re.S | re.I)
_SVG = re.compile(r"<svg\b.*</svg>", re.S | re.I)
_HTML = re.compile(r"(?:<!doctype html.*|<html\b.*</html>)", re.S | re.I)


def extract_markup(text: str) -> tuple[str, str] | None:
    """("svg" | "html", markup) found in a model reply: a fenced block, an <svg> element or an HTML document."""
    for block in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        if m := _HTML.search(block):
            return "html", m.group(0).strip()
        if m := _SVG.search(block):
            return "svg", m.group(0).strip()
    return None


class ImageGenAgent(Agent):
    def __init__(self, endpoint: EndpointConfig | None, painter_format: str = "svg", share_reasoning: bool = True,
                 id: str | None = None):
        if painter_format not in PAINTER:
            raise ValueError(f"painter_format must be 'svg' or 'html', got {painter_format!r}")
        self.config = endpoint
        self.endpoint = Endpoint(endpoint) if endpoint else None
        self.painter_format = painter_format
        self.share_reasoning = share_reasoning
        self.id = id or (f"image_gen:{endpoint.model}" if endpoint else "image_gen")
        self._thoughts: dict[str, list[asyncio.Future]] = {}
        self._taken: dict[tuple[str, str], int] = {}

    async def _chat(self, messages: list[dict[str, Any]]):
        if self.endpoint is None:
            raise AgentError("this setting needs a chat model: give the image_gen agent model and base_url")
        try:
            return await self.endpoint.chat(messages)
        except EndpointError as exc:
            raise AgentError(str(exc)) from None

    async def _reason(self, question: str, setting: str) -> tuple[str, str | None, Usage]:
        """(thought, model reasoning, usage): the trace that conditions settings 2 and 3."""
        if not self.share_reasoning:
            response = await self._chat([{"role": "user", "content": question}])
            return response.content, response.reasoning, response.usage
        key = hashlib.sha256(question.encode()).hexdigest()
        index = self._taken.get((key, setting), 0)
        self._taken[(key, setting)] = index + 1
        traces = self._thoughts.setdefault(key, [])
        fresh = index >= len(traces)
        if fresh:
            traces.append(asyncio.get_running_loop().create_future())
        future = traces[index]
        if fresh:
            try:
                response = await self._chat([{"role": "user", "content": question}])
            except BaseException as exc:
                future.set_exception(exc)
                future.exception()
                raise
            future.set_result((response.content, response.reasoning))
            return response.content, response.reasoning, response.usage
        thought, reasoning = await asyncio.shield(future)
        return thought, reasoning, Usage()

    async def _paint(self, messages: list[dict[str, Any]]) -> tuple[tuple[str, str] | None, str, Usage]:
        response = await self._chat(messages)
        return extract_markup(response.content), response.content, response.usage

    async def act(self, view: EpisodeView) -> AgentTurn:
        if view.steps or view.final_turn:
            last = next((s for s in reversed(view.steps) if s.tool), None)
            made = last is not None and last.observation is not None and not last.observation.error
            return AgentTurn(output="<answer>done</answer>" if made else "<answer>no image</answer>",
                             action="answer", answer="done" if made else "no image")
        tools = {t.name for t in view.tools}
        tool = "generate_image" if "generate_image" in tools else "render" if "render" in tools else None
        if tool is None:
            raise AgentError("the image_gen agent needs the generate_image or render tool in the setting")
        setting = view.task.level if view.task.level in SETTINGS else "direct"
        question = view.task.question
        thought, reasoning, usage = "", None, Usage()
        if setting != "direct":
            thought, reasoning, usage = await self._reason(question, setting)
        refined = extract_refined_prompt(thought)[0] if setting == "decontext" else ""
        if tool == "generate_image":
            prompt = {"direct": question, "guided": f"{question}\n\n{thought}", "decontext": refined}[setting]
            return AgentTurn(output=thought, reasoning=reasoning, action="tool_call", tool=tool,
                             arguments={"prompt": prompt}, usage=usage)
        kind = self.painter_format
        if setting == "guided":
            messages = [{"role": "user", "content": question}, {"role": "assistant", "content": thought},
                        {"role": "user", "content": DRAW_NOW.format(kind=kind.upper())}]
        else:
            messages = [{"role": "system", "content": PAINTER[kind]},
                        {"role": "user", "content": question if setting == "direct" else refined}]
        markup, painted, paint_usage = await self._paint(messages)
        usage = usage + paint_usage
        output = f"{thought}\n\n{painted}".strip()
        if markup is None:
            return AgentTurn(output=output, reasoning=reasoning, action="invalid", usage=usage,
                             error="the painter reply has no SVG or HTML document")
        return AgentTurn(output=output, reasoning=reasoning, action="tool_call", tool=tool,
                         arguments={markup[0]: markup[1]}, usage=usage)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "image_gen", "painter_format": self.painter_format,
                "share_reasoning": self.share_reasoning,
                "endpoint": self.config.model_dump(exclude={"extra_body"}) if self.config else None}

    async def aclose(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.aclose()


def image_gen(model: str | None = None, base_url: str | None = None, api_key_env: str | None = None,
              temperature: float | None = 0.7, max_tokens: int | None = None, timeout: float = 300.0,
              max_retries: int = 4, retry_initial: float = 1.0, painter_format: str = "svg",
              share_reasoning: bool = True, id: str | None = None) -> ImageGenAgent:
    endpoint = None
    if model and base_url:
        endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                                  max_retries=max_retries, retry_initial=retry_initial, temperature=temperature,
                                  max_tokens=max_tokens)
    elif model or base_url:
        raise ValueError("give the image_gen agent both model and base_url, or neither (direct generation only)")
    return ImageGenAgent(endpoint, painter_format=painter_format, share_reasoning=share_reasoning, id=id)
