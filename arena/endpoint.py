"""An OpenAI-compatible chat endpoint with timeouts and retries, shared by agents and judges."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

import openai
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from .trajectory import Usage


class EndpointError(RuntimeError):
    """A request that failed for good (after retries, or at once for a non-transient error)."""


class EndpointConfig(BaseModel):
    """Where and how to call a model. The API key is read from the environment variable
    `api_key_env` (default OPENAI_API_KEY) at call time and never stored."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(4, ge=0)
    retry_initial: float = Field(1.0, ge=0)
    retry_max: float = Field(30.0, ge=0)
    temperature: float | None = None
    max_tokens: int | None = None
    max_parallel: int | None = Field(None, ge=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)


@dataclass
class ChatResponse:
    content: str
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


def is_transient(exc: BaseException) -> bool:
    """Connection errors, timeouts, 408/409/429 and 5xx are retried; other 4xx are not."""
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


class Endpoint:
    def __init__(self, config: EndpointConfig):
        self.config = config
        key = os.environ.get(config.api_key_env or "OPENAI_API_KEY") or "EMPTY"
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url, api_key=key, timeout=config.timeout, max_retries=0
        )
        self._slots = asyncio.Semaphore(config.max_parallel) if config.max_parallel else None

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                   **overrides: Any) -> ChatResponse:
        cfg = self.config
        params: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if cfg.temperature is not None:
            params["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            params["max_tokens"] = cfg.max_tokens
        if tools:
            params["tools"] = tools
        if cfg.extra_body:
            params["extra_body"] = cfg.extra_body
        params.update(overrides)
        attempts = 0
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(cfg.max_retries + 1),
                wait=wait_exponential_jitter(multiplier=cfg.retry_initial, max=cfg.retry_max, jitter=cfg.retry_initial),
                retry=retry_if_exception(is_transient),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    if self._slots:
                        async with self._slots:
                            completion = await self._client.chat.completions.create(**params)
                    else:
                        completion = await self._client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise EndpointError(
                f"{cfg.model} at {cfg.base_url}: {type(exc).__name__}: {_short(exc)} "
                f"(after {attempts} attempt{'s' if attempts != 1 else ''})"
            ) from None
        return _to_response(completion)

    async def aclose(self) -> None:
        await self._client.close()


def _short(exc: BaseException, limit: int = 500) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


def _to_response(completion: Any) -> ChatResponse:
    if not getattr(completion, "choices", None):
        raise EndpointError("the endpoint returned no choices")
    choice = completion.choices[0]
    message = choice.message
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    calls = []
    for call in message.tool_calls or []:
        fn = getattr(call, "function", None)
        if fn is None:
            continue
        calls.append({"id": call.id, "name": fn.name, "arguments": fn.arguments})
    usage = Usage()
    if completion.usage is not None:
        usage = Usage(prompt_tokens=completion.usage.prompt_tokens or 0,
                      completion_tokens=completion.usage.completion_tokens or 0)
    return ChatResponse(content=message.content or "", reasoning=reasoning if isinstance(reasoning, str) else None,
                        tool_calls=calls, usage=usage, finish_reason=choice.finish_reason)
