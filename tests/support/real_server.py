"""A local OpenAI-compatible server that behaves like the real ones when a request breaks their rules.

    server = RealServer(policy, Rules(flavour="vllm", models={"qwen"}, max_images=4))
    with server:
        ... point the arena at server.base_url ...

`policy(request) -> Reply | str` plays the model (as in `openai_server`); before it
runs, the request is checked the way the imitated server checks it, and a broken
rule gets that server's status code and exact error body. Prompt tokens are counted
by the server's own rule (text: one token per 3.2 characters, denser than the
arena's 4; images: one token per 28x28 pixels of the PNG actually sent, as Qwen2.5-VL),
so the arena's estimate and the server's count differ as they do in life.

Sources of the wordings (each quoted below where it is built):
- vLLM 0.11: `vllm/entrypoints/openai/serving_engine.py` (`_check_model`,
  `_validate_input`), `vllm/multimodal/processing.py` (per-prompt limit); error body
  `{"error": {"message", "type", "param", "code"}}` (`ErrorResponse`, 0.10+);
- SGLang: `python/sglang/srt/managers/tokenizer_manager.py`; flat body
  `{"object": "error", "message", "type", "param", "code"}` (`ErrorResponse` in
  `sglang/srt/entrypoints/openai/protocol.py`);
- OpenAI API: "Error codes" guide and the reasoning-model guide (unsupported
  `temperature` / `max_tokens`, `insufficient_quota`, `model_not_found`);
- Gemini OpenAI compatibility: list-shaped errors `[{"error": {"code", "message",
  "status"}}]` and the thought-signature rule ("Thought signatures" page of the
  Gemini API docs);
- Ollama OpenAI compatibility (`openai/openai.go`): `{"error": {"message", "type",
  "param", "code"}}`, and a prompt longer than `num_ctx` silently truncated; mllama
  models take one image (`server/prompt.go`);
- vLLM 0.6 (`vllm06`): the per-prompt image limit said "in one request" and the body was
  the flat `{"object": "error", ...}` (vllm-project/vllm#9739, #17092);
- vLLM V1 engine (`vllm-v1`, vLLM 0.8-0.10, `vllm/v1/engine/processor.py`,
  `Processor._validate_model_input`): "The decoder prompt (length N) is longer than the
  maximum model length of M. ...", 400 `BadRequestError`;
- TGI (`router/src/validation.rs`, `ValidationError`): 422 `{"error", "error_type"}`;
- llama.cpp server (`llamacpp`, `exceed_context_size_error` with `n_prompt_tokens` and
  `n_ctx`; `llamacpp-old`: the same refusal without numbers);
- LM Studio 0.3 (`lmstudio`): `{"error": "<text>"}`;
- Azure OpenAI (`azure`, Azure/azure-rest-api-specs#46145) and Anthropic (`anthropic`,
  anthropics/claude-code#24541) image-count refusals.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Callable

from arena.endpoints.chat_server import JsonHandler
from tests.support.openai_server import Reply, completion_body

Policy = Callable[[dict[str, Any]], "Reply | str"]


@dataclass
class Rules:
    """What the imitated server enforces. `flavour`: vllm, sglang, openai, gemini or ollama."""

    flavour: str = "vllm"
    models: set[str] = field(default_factory=lambda: {"qwen"})
    max_images: int | None = None
    max_context: int | None = None
    reject_params: set[str] = field(default_factory=set)
    quota_exhausted: bool = False
    api_key: str | None = None
    require_thought_signatures: bool = False
    rate_limit_first: int = 0
    retry_after: str | None = None
    retry_after_ms: str | None = None
    send_usage: bool = True
    down_after: int | None = None  # after answering this many requests, the server goes away (an outage): the
    # connection closes and nothing listens at the port any more (connection refused)


def png_size(url: str) -> tuple[int, int]:
    """(width, height) from a PNG data URL's IHDR chunk."""
    head = base64.b64decode(url.split(",", 1)[1][:64] + "==")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def count_tokens(request: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, images) by this server's rule."""
    # the chat template renders the tool schemas into the prompt
    chars, image_tokens, images = len(json.dumps(request["tools"])) if request.get("tools") else 0, 0, 0
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "text":
                chars += len(part.get("text", ""))
            elif part.get("type") == "image_url":
                images += 1
                w, h = png_size(part["image_url"]["url"])
                image_tokens += (w * h) // (28 * 28)
    return int(chars / 3.2) + image_tokens, images


def _vllm(status: int, message: str, type_: str = "BadRequestError") -> tuple[int, Any]:
    return status, {"error": {"message": message, "type": type_, "param": None, "code": status}}


def _openai(status: int, message: str, type_: str, param: str | None, code: str | None) -> tuple[int, Any]:
    return status, {"error": {"message": message, "type": type_, "param": param, "code": code}}


class RealServer:
    def __init__(self, policy: Policy, rules: Rules | None = None):
        self.policy = policy
        self.rules = rules or Rules()
        self.requests: list[dict[str, Any]] = []
        self.refused: list[tuple[int, Any]] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                self.send_json(status, body, headers)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(request)
                    server.times.append(time.monotonic())
                    n = len(server.requests)
                auth = self.headers.get("Authorization", "")
                refusal = server.check(request, auth, n)
                if refusal is not None:
                    status, body, headers = refusal
                    with server._lock:
                        server.refused.append((status, body))
                    self._send(status, body, headers)
                    return
                reply = server.policy(request)
                if isinstance(reply, str):
                    reply = Reply(content=reply)
                prompt, _ = count_tokens(request)
                if server.rules.flavour == "ollama" and server.rules.max_context:
                    # Ollama truncates a prompt longer than num_ctx and answers anyway; its usage
                    # reports the truncated length (ollama/ollama issues on silent truncation).
                    prompt = min(prompt, server.rules.max_context)
                reply.prompt_tokens = prompt
                body = reply.body or completion_body(reply, request.get("model", "?"))
                if not server.rules.send_usage:
                    body.pop("usage", None)
                if server.rules.down_after is not None and n >= server.rules.down_after:
                    # stop listening before this reply leaves, so that the client's next request is refused however
                    # late this machine schedules a thread (a thread started after the reply could lose that race
                    # under load, and the next request was answered)
                    server.go_down()
                    self.close_connection = True
                    self._send(200, body, {"Connection": "close"})
                    return
                self._send(200, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def check(self, request: dict[str, Any], auth: str, n: int) -> tuple[int, Any, dict[str, str]] | None:
        """The refusal the imitated server would send, or None."""
        rules, flavour = self.rules, self.rules.flavour
        model = request.get("model", "")
        if rules.api_key is not None and auth != f"Bearer {rules.api_key}":
            key = auth.removeprefix("Bearer ")
            # OpenAI "Error codes" guide: 401 invalid_api_key.
            return (*_openai(401, f"Incorrect API key provided: {key[:3]}***{key[-4:]}. You can find your API key "
                             "at https://platform.openai.com/account/api-keys.", "invalid_request_error", None,
                             "invalid_api_key"), {})
        if model not in rules.models:
            if flavour == "vllm":  # vLLM 0.11 serving_engine.py _check_model
                return (*_vllm(404, f"The model `{model}` does not exist.", "NotFoundError"), {})
            if flavour == "sglang":
                return 400, {"object": "error", "message": f"The model `{model}` does not exist.",
                             "type": "BadRequestError", "param": None, "code": 400}, {}
            if flavour == "gemini":  # Gemini OpenAI compatibility: a list of error objects
                return 404, [{"error": {"code": 404, "message": f"models/{model} is not found for API version "
                                        "v1main, or is not supported for generateContent.",
                                        "status": "NOT_FOUND"}}], {}
            if flavour == "ollama":  # ollama openai/openai.go
                return 404, {"error": {"message": f"model \"{model}\" not found, try pulling it first",
                                       "type": "api_error", "param": None, "code": None}}, {}
            # OpenAI "Error codes" guide: model_not_found.
            return (*_openai(404, f"The model `{model}` does not exist or you do not have access to it.",
                             "invalid_request_error", None, "model_not_found"), {})
        if rules.quota_exhausted:
            # OpenAI "Error codes" guide: 429 "You exceeded your current quota..." (billing, permanent).
            return (*_openai(429, "You exceeded your current quota, please check your plan and billing details. "
                             "For more information on this error, read the docs: "
                             "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                             "insufficient_quota", None, "insufficient_quota"), {})
        if n <= rules.rate_limit_first:
            headers = {k: v for k, v in (("retry-after", rules.retry_after),
                                         ("retry-after-ms", rules.retry_after_ms)) if v is not None}
            return (*_openai(429, "Rate limit reached for requests", "requests", None, "rate_limit_exceeded"),
                    headers)
        for param in sorted(rules.reject_params):
            if param in request:
                if param == "temperature":
                    # OpenAI reasoning models: 400 unsupported_value on a non-default temperature.
                    return (*_openai(400, f"Unsupported value: 'temperature' does not support "
                                     f"{request['temperature']} with this model. Only the default (1) value is "
                                     "supported.", "invalid_request_error", "temperature", "unsupported_value"), {})
                # OpenAI reasoning models: max_tokens is replaced by max_completion_tokens.
                return (*_openai(400, f"Unsupported parameter: '{param}' is not supported with this model. Use "
                                 "'max_completion_tokens' instead.", "invalid_request_error", param,
                                 "unsupported_parameter"), {})
        if rules.require_thought_signatures:
            for message in request.get("messages", []):
                for call in message.get("tool_calls") or []:
                    signature = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
                    if not signature:
                        # Gemini API docs, "Thought signatures": a function call sent back without its
                        # signature is a 400 INVALID_ARGUMENT (list-shaped body on the OpenAI endpoint).
                        name = call.get("function", {}).get("name")
                        return 400, [{"error": {"code": 400, "message": "Function call is missing a "
                                                f"thought_signature in functionCall parts. Function call `{name}`.",
                                                "status": "INVALID_ARGUMENT"}}], {}
        tokens, images = count_tokens(request)
        if rules.max_images is not None and images > rules.max_images:
            return (*self.too_many_images(images), {})
        limit = request.get("max_tokens") or request.get("max_completion_tokens")
        if flavour == "vllm" and rules.max_context is not None and limit and tokens + limit > rules.max_context:
            # vLLM 0.10-0.11 serving_engine.py _validate_input: the completion limit must fit the context.
            return (*_vllm(400, f"'max_tokens' or 'max_completion_tokens' is too large: {limit}. This model's "
                           f"maximum context length is {rules.max_context} tokens and your request has {tokens} "
                           f"input tokens ({limit} > {rules.max_context} - {tokens})."), {})
        if rules.max_context is not None and tokens + (limit or 0) > rules.max_context and flavour == "tgi":
            return 422, {"error": f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
                         f"{rules.max_context}. Given: {tokens} `inputs` tokens and {limit or 0} `max_new_tokens`",
                         "error_type": "validation"}, {}
        if rules.max_context is not None and tokens > rules.max_context and flavour != "ollama":
            n = rules.max_context
            if flavour == "llamacpp":
                return 400, {"error": {"code": 400, "message": f"request ({tokens} tokens) exceeds the available "
                                       f"context size ({n} tokens), try increasing it",
                                       "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": n}}, {}
            if flavour == "llamacpp-old":
                return 400, {"error": {"code": 400, "message": "the request exceeds the available context size, "
                                       "try increasing it", "type": "invalid_request_error"}}, {}
            if flavour == "lmstudio":
                return 400, {"error": f"Trying to keep the first {tokens} tokens when context the overflows. However, "
                             f"the model is loaded with context length of only {n} tokens, which is not enough. Try "
                             "to load the model with a larger context length, or provide a shorter input"}, {}
            if flavour == "vllm-v1":
                # vLLM V1 engine (0.8-0.10), vllm/v1/engine/processor.py Processor._validate_model_input: a
                # ValueError the OpenAI server turns into a 400 BadRequestError; the suggestion for a multimodal
                # model names text plus multimodal tokens.
                return (*_vllm(400, f"The decoder prompt (length {tokens}) is longer than the maximum model length "
                               f"of {n}. Make sure that `max_model_len` is no smaller than the number of text tokens "
                               "plus multimodal tokens. For image inputs, the number of image tokens depends on the "
                               "number of images, and possibly their aspect ratios as well."), {})
            if flavour == "sglang":  # sglang tokenizer_manager.py
                return 400, {"object": "error", "message": f"The input ({tokens} tokens) is longer than the model's "
                             f"context length ({rules.max_context} tokens).", "type": "BadRequestError",
                             "param": None, "code": 400}, {}
            if flavour == "openai":  # OpenAI "Error codes" guide: context_length_exceeded
                return (*_openai(400, f"This model's maximum context length is {rules.max_context} tokens. However, "
                                 f"your messages resulted in {tokens} tokens. Please reduce the length of the "
                                 "messages.", "invalid_request_error", "messages", "context_length_exceeded"), {})
            # vLLM 0.11 serving_engine.py _validate_input
            return (*_vllm(400, f"This model's maximum context length is {rules.max_context} tokens. However, your "
                           f"request has {tokens} input tokens. Please reduce the length of the input messages."), {})
        return None

    def too_many_images(self, images: int) -> tuple[int, Any]:
        """The imitated server's refusal of a request with more images than it takes."""
        n, flavour = self.rules.max_images, self.rules.flavour
        if flavour == "vllm06":
            return 400, {"object": "error", "message": f"At most {n} image(s) may be provided in one request.",
                         "type": "BadRequestError", "param": None, "code": 400}
        if flavour == "ollama":  # a limit of 1 (mllama)
            return 400, {"error": {"message": "this model only supports one image while more than one image "
                                   "requested", "type": "api_error", "param": None, "code": None}}
        if flavour == "azure":
            return _openai(400, f"Exceeded maximum number of images ({n}) allowed in the request.",
                           "invalid_request_error", None, None)
        if flavour == "anthropic":
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": f"too many images and documents: {images} + 0 > {n}"}}
        # vLLM 0.11 vllm/multimodal/processing.py: the --limit-mm-per-prompt check.
        return _vllm(400, f"At most {n} image(s) may be provided in one prompt.")

    def go_down(self) -> None:
        """Stop listening (an outage): later connections are refused. Callable from a request's handler thread
        (the listening socket is closed directly: `server_close` would join the calling thread)."""
        self._server.shutdown()
        self._server.socket.close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "RealServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
