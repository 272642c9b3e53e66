"""A small OpenAI-compatible chat-completions HTTP server: the wire side shared by `arena serve`
(`arena.runs.policy_server`) and the tests' scripted stand-in (`tests/support/openai_server.py`).

`ChatServer(respond, models=...)` listens on `host:port` (port 0: any free one) and answers
- `GET .../models`: the model ids it was given, as `/v1/models` lists them;
- `POST .../chat/completions` (any POST path unless `chat_path_only`): the JSON body handed to `respond(request)`,
  which returns a `Reply` (or a string, the assistant content); the reply goes back as a chat completion
  (`completion_body`), or as an OpenAI-style error body when its status is not 200;
- a body that is not JSON: 400 with an error body saying so.

`on_exchange(raw_body, status, answered_bytes)` sees every POST (the tests' recorder); `parse` turns the raw body
into the request (default `json.loads`). A port that is taken is a `ServerStartError` naming the address.
"""

from __future__ import annotations

import errno
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    """One answer of the server: content, native tool calls, reasoning, usage, a status (not 200: an error body with
    `error`), a delay before answering, or a raw `body` sent as it is."""

    content: str | None = ""
    tool_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    status: int = 200
    delay: float = 0.0
    body: dict[str, Any] | None = None
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"
    error: str = "scripted failure"
    model: str | None = None
    """The model id answered with (default: the one the request named)."""


Responder = Callable[[dict[str, Any]], "Reply | str"]


class ServerStartError(OSError):
    """The server cannot listen where it was asked (the message names the address and what to do)."""


def completion_body(reply: Reply, model: str, reply_id: str = "chatcmpl-stub") -> dict[str, Any]:
    """The chat-completion JSON of `reply`, answered as model `model` with id `reply_id`."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call.get("id", f"call_{i}"), "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"] if isinstance(call["arguments"], str)
                          else json.dumps(call["arguments"])}}
            for i, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": reply_id, "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if reply.tool_calls else reply.finish_reason}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


class _Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True


class _SharedPortServer(_Server):
    allow_reuse_port = True  # SO_REUSEPORT: several processes serve one port


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that answers JSON (`send_json`); the base of this server's handler and of the
    tests' imitations of real servers."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> bytes:
        """Answer `body` (JSON-encoded unless bytes) with `status` and `headers`; the bytes sent. A client that
        hung up meanwhile is not an error."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return data


class ChatServer:
    """The HTTP server; `start()` serves from a daemon thread, `serve_forever()` from the caller's."""

    def __init__(self, respond: Responder, host: str = "127.0.0.1", port: int = 0, models: tuple[str, ...] = ("stub",),
                 parse: Callable[[bytes], Any] = json.loads, reuse_port: bool = False, chat_path_only: bool = False,
                 on_exchange: Callable[[bytes, int, bytes], None] | None = None, reply_id: str = "chatcmpl-stub"):
        self.respond, self.models, self.parse, self.reply_id = respond, models, parse, reply_id
        self.chat_path_only, self.on_exchange = chat_path_only, on_exchange
        try:
            self._server = (_SharedPortServer if reuse_port else _Server)((host, port), self._handler())
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServerStartError(exc.errno, f"{host}:{port} is already in use (another server listens "
                                                  "there); choose another --port") from None
            raise ServerStartError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self) -> type[JsonHandler]:
        server = self

        class Handler(JsonHandler):
            def _send(self, status: int, body: dict[str, Any], raw: bytes | None = None) -> None:
                data = json.dumps(body).encode()
                if raw is not None and server.on_exchange is not None:
                    server.on_exchange(raw, status, data)  # before the client can see the answer
                self.send_json(status, data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "arena"}
                                                                for m in server.models]})
                else:
                    self._send(404, {"error": {"message": f"no such path {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if server.chat_path_only and not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no such path {self.path} (this server answers "
                                                          "POST /v1/chat/completions)", "type": "not_found"}}, raw)
                    return
                try:
                    request = server.parse(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._send(400, {"error": {"message": f"bad json: {exc}", "type": "invalid_request_error"}}, raw)
                    return
                reply = server.respond(request)
                if isinstance(reply, str):
                    reply = Reply(content=reply)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    kind = "invalid_request_error" if reply.status < 500 else "server_error"
                    self._send(reply.status, {"error": {"message": reply.error, "type": kind}}, raw)
                    return
                model = reply.model or (request.get("model", "stub") if isinstance(request, dict) else "stub")
                self._send(200, reply.body or completion_body(reply, model, server.reply_id), raw)

        return Handler

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ChatServer":
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
