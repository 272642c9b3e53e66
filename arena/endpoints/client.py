"""An OpenAI-compatible chat endpoint shared by agents and judges: the body is serialised once with
orjson (pre-serialised parts such as images go in as `orjson.Fragment`s) and posted through a keep-alive
connection pool (`arena.endpoints.http`). Errors (docs/endpoints.md): `TransientEndpointError` (connection, timeout, 408,
409, 429, 5xx, a 200 that is not a completion) is retried with backoff or after `retry-after(-ms)`;
`RejectedError` (other 4xx, 429 `insufficient_quota`) never is.

An endpoint that cannot be reached (`UnreachableEndpointError`: connection refused, unknown host, TLS failure,
connect timeout) is tried `max_retries` more times when it never answered this process (a wrong URL: ~15 s with
the default backoff), and for up to `outage_seconds` (default $ARENA_OUTAGE_SECONDS or 180) when it did (an outage
in the middle of a run); its message says `endpoint unreachable (<why>) at <url>` (`unreachable_reason` reads it
back).

A 400 that names a request field the server does not take (`ParamRefusal`: OpenAI's `unsupported_parameter` /
`unsupported_value`, Gemini's `Unknown name "..."`, vLLM's pydantic `extra_forbidden`) is learned once per
endpoint during a run (`LearnedParams`, run state): the field is renamed where the server names its replacement
(`max_tokens` -> `max_completion_tokens`), else left out (the server's default); the request is sent again once,
never in a loop."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import os
import random
import re
import ssl
import time
import urllib.parse
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import orjson
from pydantic import BaseModel, Field

from . import transcript
from .http import HTTPPool, HTTPResponse, HTTPTransportError
from .redact import redact_text, redact_url
from arena.core.trajectory import Usage

logger = logging.getLogger(__name__)
MAX_RETRY_AFTER = 120.0  # seconds
# OpenAI reasoning models take `max_completion_tokens` and no `temperature` (OpenAI API reference,
# Chat Completions: max_tokens "is not compatible with o-series models"; the reasoning models guide).
REASONING_MODEL = re.compile(r"^(openai/)?(o\d|gpt-5)", re.I)


class EndpointError(RuntimeError):
    """A failed request; `server_message` is the server's own message whatever its body's shape."""

    def __init__(self, message: str, *, status: int | None = None, server_message: str = "",
                 code: str | None = None, retry_after: float | None = None, body: bytes | None = None,
                 sent_bytes: int | None = None):
        super().__init__(message)
        self.status, self.server_message, self.code, self.retry_after = status, server_message, code, retry_after
        self.body = body  # the server's response body, when it answered
        self.sent_bytes = sent_bytes  # the size of the request body it answered


class TransientEndpointError(EndpointError):
    """Connection, timeout, 408/409/429/5xx or an unreadable 200: worth trying again later."""


class RejectedError(EndpointError):
    """The server refused the request itself (4xx, quota): sending it again cannot help."""


class UnreachableEndpointError(TransientEndpointError):
    """No connection could be made to the endpoint (refused, unknown host, TLS failure, connect timeout)."""


_UNREACHABLE = re.compile(r"endpoint unreachable \(([^)]+)\) at (\S+?):? ")


def unreachable_reason(error: str | None) -> tuple[str, str] | None:
    """(why, url) of an error message written by `Endpoint.chat` for an endpoint that could not be reached (e.g. an
    episode's or a verdict's error), else None."""
    match = _UNREACHABLE.search(error or "")
    return (match.group(1), match.group(2)) if match else None


DEFAULT_OUTAGE_SECONDS = 180.0


def outage_seconds() -> float:
    """How long an endpoint that answered before is tried again once it cannot be reached: $ARENA_OUTAGE_SECONDS,
    default 180."""
    try:
        return max(0.0, float(os.environ.get("ARENA_OUTAGE_SECONDS", DEFAULT_OUTAGE_SECONDS)))
    except ValueError:
        return DEFAULT_OUTAGE_SECONDS


@dataclass(frozen=True)
class ParamRefusal:
    """A request field the server refused: `field`, the field it names instead (`rename`, else the field is left
    out), the value sent, and what it said (first 300 characters)."""

    field: str
    rename: str | None
    value: Any
    said: str

    def as_dict(self) -> dict[str, Any]:
        return {"rename": self.rename, "value": self.value, "said": self.said}

    def describe(self, who: str) -> str:
        """One line for the summary: what the arena now sends, and why."""
        if self.rename:
            return f"{who} sends {self.rename} instead of {self.field}: the server refused {self.field} ({self.said})"
        if self.field == "temperature":
            return (f"{who} ran at the server's default temperature: the server refused {self.value!r} "
                    f"({self.said})")
        return f"{who} leaves {self.field} out (the server's default): the server refused it ({self.said})"


_PARAM_PATTERNS = [
    re.compile(r"Unsupported (?:parameter|value): '([A-Za-z_][\w.]*)'"),  # OpenAI reasoning models
    re.compile(r'Unknown name "([A-Za-z_]\w*)"'),  # Gemini (OpenAI compatibility), INVALID_ARGUMENT
    re.compile(r"'extra_forbidden', 'loc': \('body', '([A-Za-z_]\w*)'\)"),  # vLLM / pydantic, repr form
    re.compile(r'"extra_forbidden", *"loc": *\["body", *"([A-Za-z_]\w*)"\]'),  # the same, JSON form
]
_REPLACEMENT = re.compile(r"Use '([A-Za-z_]\w*)' instead")
_PARAM_CODES = ("unsupported_parameter", "unsupported_value")


def param_refusal(exc: "EndpointError", params: dict[str, Any]) -> ParamRefusal | None:
    """The request field a 400 refuses, when the server names one that the request (`params`) holds, else None.
    Never the model or the messages: those are the request itself."""
    if exc.status != 400:
        return None
    said = exc.server_message
    name = None
    body = {}
    if exc.body:
        try:
            body = orjson.loads(exc.body)
        except orjson.JSONDecodeError:
            body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") in _PARAM_CODES and isinstance(error.get("param"), str):
        name = error["param"]  # OpenAI's body names the field
    for pattern in _PARAM_PATTERNS:
        if name is not None:
            break
        match = pattern.search(said)
        name = match.group(1) if match else None
    if name is None or name in ("model", "messages") or name not in params:
        return None
    replacement = _REPLACEMENT.search(said)
    rename = replacement.group(1) if replacement and replacement.group(1) != name else None
    return ParamRefusal(name, rename, params[name], said[:300])


class LearnedParams:
    """Fields each endpoint (`EndpointConfig.where()`) refused during a run, by field name: every Endpoint of that
    endpoint (agents' and judges') applies them. Run state: a run installs its own (`use_params`, from run.json's
    `learned_params`); code outside a run (a worker process, which plays one run) shares the process's."""

    def __init__(self, recorded: dict[str, dict[str, dict[str, Any]]] | None = None):
        self.by_endpoint: dict[str, dict[str, ParamRefusal]] = {}
        self.version = 0
        """Grows with every refusal learned or restored (`learn`, `restore`): what was learned is unchanged while
        it holds."""
        self.restore(recorded)

    def of(self, where: str) -> dict[str, ParamRefusal]:
        """The fields `where` refused (a live dict: `learn` adds a refusal learned to it)."""
        return self.by_endpoint.setdefault(where, {})

    def learn(self, where: str, refusal: ParamRefusal) -> None:
        """`where` refused `refusal.field`: applied from its next request on."""
        self.of(where)[refusal.field] = refusal
        self.version += 1

    def as_data(self) -> dict[str, dict[str, dict[str, Any]]]:
        """As plain data (for run.json and summary.json)."""
        return {where: {name: refusal.as_dict() for name, refusal in fields.items()}
                for where, fields in sorted(self.by_endpoint.items()) if fields}

    def restore(self, recorded: dict[str, dict[str, dict[str, Any]]] | None) -> None:
        """Apply fields refused earlier (run.json's `learned_params`) from the first request on."""
        for where, fields in (recorded or {}).items():
            for name, item in (fields or {}).items():
                self.of(where).setdefault(
                    name, ParamRefusal(name, item.get("rename"), item.get("value"), str(item.get("said") or "")))
                self.version += 1


_PROCESS_PARAMS = LearnedParams()
_RUN_PARAMS: ContextVar[LearnedParams] = ContextVar("arena_learned_params")


def use_params(params: LearnedParams) -> LearnedParams:
    """Make `params` the learned fields of the calling task's run (and of every task it starts from then on)."""
    _RUN_PARAMS.set(params)
    return params


def run_params() -> LearnedParams:
    """The learned fields of the run the calling task belongs to (outside a run: the process's)."""
    return _RUN_PARAMS.get(_PROCESS_PARAMS)


def learned_params() -> dict[str, dict[str, dict[str, Any]]]:
    """The current run's learned fields as plain data (`run_params().as_data()`)."""
    return run_params().as_data()


def restore_params(recorded: dict[str, dict[str, dict[str, Any]]] | None) -> None:
    """Apply fields refused in an earlier run (run.json's `learned_params`) to the current run's."""
    run_params().restore(recorded)


def param_lines(recorded: dict[str, dict[str, dict[str, Any]]] | None) -> list[str]:
    """One line per field an endpoint refused (`learned_params` of a summary), for the terminal."""
    return [ParamRefusal(name, item.get("rename"), item.get("value"), str(item.get("said") or "")).describe(where)
            for where, fields in sorted((recorded or {}).items()) for name, item in sorted((fields or {}).items())]


def is_refusal(status: int, said: str) -> bool:
    """Whether a non-200 status (with the server's code and message, `said`) is a deterministic refusal:
    not 408, 409, 429 or 5xx, except a 429 for `insufficient_quota` (billing, not rate)."""
    return (status == 429 and "insufficient_quota" in said) or not (status in (408, 409, 429) or status >= 500)


_STATUS = re.compile(r"\bHTTP (\d{3})(?: \(([^)]*)\))?: (.*)", re.S)


def refused_by_server(error: str) -> bool:
    """Whether an error message written by `Endpoint.chat` (e.g. one a judge put on its verdict) reports a
    `RejectedError`: the same classification, read back from the message's "HTTP {status} ({code}): ..."."""
    if "HTTP 200 carrying an error" in error:
        return True
    match = _STATUS.search(error)
    return bool(match) and is_refusal(int(match.group(1)), f"{match.group(2)} {match.group(3)}")


class EndpointConfig(BaseModel):
    """Where and how to call a model; the key is read from `api_key_env` (default OPENAI_API_KEY), never
    stored. Sampling parameters go out only when set; `token_param` `auto` means `max_completion_tokens`
    for OpenAI reasoning models (which never get `temperature`), else `max_tokens`."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(4, ge=0)
    retry_initial: float = Field(1.0, ge=0)
    retry_max: float = Field(30.0, ge=0)
    temperature: float | None = None
    max_tokens: int | None = None
    token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    reasoning_effort: str | None = None
    parallel_tool_calls: bool | None = None
    max_parallel: int | None = Field(None, ge=1)
    outage_seconds: float | None = Field(None, ge=0)  # None: $ARENA_OUTAGE_SECONDS, default 180
    pool_size: int = Field(64, ge=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)

    def where(self) -> str:  # for messages: credentials masked
        return f"{self.model} at {redact_url(self.base_url)}"


@dataclass
class ChatResponse:
    content: str
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    provider_fields: dict[str, Any] = field(default_factory=dict)


def parse_body(body: bytes) -> Any:
    """A JSON response body. orjson refuses escaped lone surrogates (`"\\ud800"`), which servers do send when a
    model emits invalid Unicode; the standard library reads them, and the episode loop replaces them later."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


def server_message(body: bytes, limit: int = 1000) -> tuple[str, str | None]:
    """(message, code) of `{"error": {...}}`, Gemini's `[{"error": ...}]`, `{"message"|"detail": ...}` or text."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = body.decode("utf-8", "replace").strip() or "(empty body)"
        title = _HTML_TITLE.search(data)
        if title:  # an HTML error page (a proxy's, e.g. nginx's 413): its title says it
            data = " ".join(title.group(1).split()) + " (an HTML page: a proxy's or the server's own)"
    messages, code = [], None
    for item in data if isinstance(data, list) else [data]:
        error = item.get("error", item) if isinstance(item, dict) else item
        if isinstance(error, dict):
            text = error.get("message") or error.get("detail") or error.get("msg")
            code = code or next((str(error[k]) for k in ("code", "type", "status") if error.get(k)), None)
            messages.append(text if isinstance(text, str) else orjson.dumps(error).decode())
        else:
            messages.append(str(error))
    text = "; ".join(messages)
    return text[:limit] + ("..." if len(text) > limit else ""), code


_HTML_TITLE = re.compile(r"<title>(.*?)</title>", re.I | re.S)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms` (OpenAI) or `retry-after` (seconds or a date)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        try:
            seconds = float(value) / scale if value is not None else None
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                seconds = None
        if seconds is not None:
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
    return None


def status_error(status: int, body: bytes, headers: Mapping[str, str], limit: int = 1000) -> EndpointError:
    """The error a non-200 answer stands for, quoting the server's message and code: TransientEndpointError for
    408/409/429/5xx (with the wait the server asked for), else RejectedError."""
    message, code = server_message(body, limit)
    text = f"HTTP {status}{f' ({code})' if code and code != str(status) else ''}: {message}"
    if not is_refusal(status, f"{code} {message}"):
        return TransientEndpointError(text, status=status, server_message=message, code=code,
                                      retry_after=retry_after(headers))
    return RejectedError(text, status=status, server_message=message, code=code)


_UNLIMITED = contextlib.nullcontext()  # the slots of an endpoint without `max_parallel`


class Endpoint:
    """Chat completions from one configured endpoint. What follows from the config alone (the URL, the sampling
    fields, `config.where()`) is worked out once, when the Endpoint is made."""

    def __init__(self, config: EndpointConfig):
        self.config = config
        url = urllib.parse.urlsplit(config.base_url)
        self._url = urllib.parse.urlunsplit(url._replace(path=url.path.rstrip("/") + "/chat/completions"))
        self._where = config.where()
        self._reasoning_model = bool(REASONING_MODEL.match(config.model))
        token_param = config.token_param if config.token_param != "auto" else \
            "max_completion_tokens" if self._reasoning_model else "max_tokens"
        # the config's sampling fields in their place in every body (None: left out unless an override sets it)
        self._sampling = {"temperature": None if self._reasoning_model else config.temperature,
                          token_param: config.max_tokens, "reasoning_effort": config.reasoning_effort}
        self._pool: HTTPPool | None = None
        self._slots = asyncio.Semaphore(config.max_parallel) if config.max_parallel else _UNLIMITED
        self.answered = False  # the server answered a request of this endpoint (any status)
        self.largest_accepted = 0  # bytes of the largest request body the server answered with a completion

    def body(self, messages: list[Any], tools: list[dict[str, Any]] | None = None, **overrides: Any) -> bytes:
        """The JSON request body (`params` serialised)."""
        return orjson.dumps(self.params(messages, tools, **overrides))

    def params(self, messages: list[Any], tools: list[dict[str, Any]] | None = None,
               **overrides: Any) -> dict[str, Any]:
        """The request body's fields (None left out); `overrides` win over the config (None removes a field)."""
        cfg = self.config
        params: dict[str, Any] = {"model": cfg.model, "messages": messages, **self._sampling, "tools": tools or None,
                                  "parallel_tool_calls": cfg.parallel_tool_calls if tools else None, **cfg.extra_body}
        if overrides:
            if self._reasoning_model:
                overrides.pop("temperature", None)
            params.update(overrides)
        params = {k: v for k, v in params.items() if v is not None}
        refused = run_params().by_endpoint.get(self._where)
        if refused:  # (most endpoints refuse nothing)
            for name, refusal in refused.items():
                if name in params:
                    value = params.pop(name)
                    if refusal.rename and refusal.rename not in params:
                        params[refusal.rename] = value
        return params

    async def chat(self, messages: list[Any], tools: list[dict[str, Any]] | None = None,
                   **overrides: Any) -> ChatResponse:
        """One chat completion. Raises TransientEndpointError after the retries, RejectedError at once."""
        cfg = self.config
        messages, tools = transcript.resent(messages, tools)
        params = self.params(messages, tools, **overrides)
        body = transcript.body_pieces(params)
        attempts = 0
        unreachable_since: float | None = None
        try:
            while True:
                attempts += 1
                try:
                    async with self._slots:
                        reply, data = await self._post(body)
                except UnreachableEndpointError:
                    now = time.monotonic()
                    unreachable_since = unreachable_since if unreachable_since is not None else now
                    budget = cfg.outage_seconds if cfg.outage_seconds is not None else outage_seconds()
                    if (attempts > cfg.max_retries) if not self.answered else (now - unreachable_since >= budget):
                        raise
                    await asyncio.sleep(min(self.backoff(attempts), max(budget - (now - unreachable_since), 0.0))
                                        if self.answered else self.backoff(attempts))
                    continue
                except TransientEndpointError as exc:
                    if attempts > cfg.max_retries:
                        raise
                    await asyncio.sleep(exc.retry_after if exc.retry_after is not None else self.backoff(attempts))
                    continue
                except RejectedError as exc:
                    refusal = param_refusal(exc, params)
                    learned = run_params()
                    if refusal is None or refusal.field in learned.of(self._where):
                        raise  # nothing to learn, or learned already and still refused: never a loop
                    learned.learn(self._where, refusal)
                    logger.warning("%s", redact_text(refusal.describe(self._where)))
                    if exc.body is not None:  # the refused call is part of the transcript
                        transcript.record_params(params, transcript.error_body(exc.body),
                                                 {"status": exc.status, "error": redact_text(str(exc))})
                    params = self.params(messages, tools, **overrides)
                    body = transcript.body_pieces(params)
                    continue
                transcript.record_params(params, data)
                self.largest_accepted = max(self.largest_accepted, sum(map(len, body)))
                return reply
        except EndpointError as exc:
            if exc.body is not None:  # the server answered: the failed call is part of the transcript
                transcript.record_params(params, transcript.error_body(exc.body),
                                         {"status": exc.status, "error": redact_text(str(exc))})
            raise type(exc)(redact_text(f"{self._where}: {exc} (after {attempts} attempt{'s' * (attempts != 1)})"),
                            status=exc.status, server_message=exc.server_message, code=exc.code,
                            sent_bytes=sum(map(len, body))) from None

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (from 1) when the server named no wait:
        exponential from `retry_initial`, plus up to `retry_initial` of jitter, at most `retry_max`."""
        cfg = self.config
        return min(cfg.retry_initial * 2 ** (attempt - 1) + random.uniform(0, cfg.retry_initial), cfg.retry_max)

    def _connections(self) -> HTTPPool:
        """The keep-alive pool, made on first use (the key is read then, from the environment)."""
        key = os.environ.get(self.config.api_key_env or "OPENAI_API_KEY") or "EMPTY"
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Accept": "application/json", "User-Agent": "arena"}
        return HTTPPool(self._url, headers, timeout=self.config.timeout,
                        max_connections=max(self.config.pool_size, self.config.max_parallel or 0),
                        ssl_context=_ssl_context() if self._url.startswith("https:") else None)

    async def _post(self, body: list[bytes]) -> tuple[ChatResponse, Any]:
        """One attempt: the completion and its parsed body, or an EndpointError carrying the server's body."""
        self._pool = self._pool or self._connections()
        try:
            response = await self._pool.post(body)
        except HTTPTransportError as exc:  # timeouts included
            if exc.unreachable:
                raise UnreachableEndpointError(f"endpoint unreachable ({exc.unreachable}) at "
                                               f"{redact_url(self.config.base_url.rstrip('/'))}: {exc}")
            raise TransientEndpointError(f"connection failed or timed out (timeout {self.config.timeout:g} s): {exc}")
        self.answered = True
        try:
            return self._answer(response)
        except EndpointError as exc:
            exc.body = response.body
            raise

    @staticmethod
    def _answer(response: HTTPResponse) -> tuple[ChatResponse, Any]:
        """The completion of a response, and its parsed body; an EndpointError for anything else."""
        status, content = response.status, response.body
        if status != 200:
            raise status_error(status, content, response.headers)
        try:
            data = parse_body(content)
        except ValueError:
            text = content[:200].decode("utf-8", "replace")
            raise TransientEndpointError(f"HTTP 200 with a body that is not JSON: {text!r}", status=200)
        if isinstance(data, dict) and "error" in data and not data.get("choices"):
            message, code = server_message(content)
            raise RejectedError(f"HTTP 200 carrying an error: {message}", status=200, server_message=message,
                                code=code)
        return to_response(data), data

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:  # one for every pool: loading the CA bundle takes ~60 ms; SSL_CERT_FILE honoured
    return httpx.create_ssl_context()


_STANDARD_MESSAGE_KEYS = {"role", "content", "tool_calls", "reasoning_content", "reasoning", "refusal",
                          "annotations", "audio", "function_call"}
_STANDARD_CALL_KEYS = {"id", "type", "function", "index"}


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    prompt, completion = raw.get("prompt_tokens_details"), raw.get("completion_tokens_details")
    return Usage(prompt_tokens=raw.get("prompt_tokens"), completion_tokens=raw.get("completion_tokens"),
                 cached_tokens=prompt.get("cached_tokens") if prompt else None,
                 reasoning_tokens=completion.get("reasoning_tokens") if completion else None)


def _tool_calls(raw: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The function calls of a message's `tool_calls` (an entry that is not one is skipped), and the provider
    extras of each (None when no call carries any)."""
    calls, extras = [], []
    for call in raw:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        calls.append({"id": call.get("id") or "", "name": fn.get("name") or "", "arguments": fn.get("arguments")})
        extras.append({} if call.keys() <= _STANDARD_CALL_KEYS else  # (most replies: nothing to look for)
                      {k: v for k, v in call.items() if k not in _STANDARD_CALL_KEYS and v is not None})
    return calls, extras if any(extras) else None


def to_response(data: Any) -> ChatResponse:
    """A ChatResponse from a completion's JSON; provider extras (e.g. Gemini's `extra_content`
    thought signatures) are kept in `provider_fields` to be sent back verbatim."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise TransientEndpointError(f"HTTP 200 without choices: {orjson.dumps(data)[:200].decode()!r}", status=200)
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content")  # (a message that is not an object fails here)
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    calls, call_extras = _tool_calls(message.get("tool_calls") or [])
    extras = {} if message.keys() <= _STANDARD_MESSAGE_KEYS else \
        {k: v for k, v in message.items() if k not in _STANDARD_MESSAGE_KEYS and v is not None}
    provider: dict[str, Any] = {"message": extras} if extras else {}
    if call_extras:
        provider["tool_calls"] = call_extras
    return ChatResponse(content=content if isinstance(content, str) else "",
                        reasoning=reasoning if isinstance(reasoning, str) else None, tool_calls=calls,
                        usage=_usage(data.get("usage")),
                        finish_reason=choice.get("finish_reason"), provider_fields=provider)
