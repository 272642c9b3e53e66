"""A small OpenAI-compatible chat-completions server on 127.0.0.1 that tests script.

    def respond(request: dict) -> Reply | str: ...
    with OpenAIStub(respond) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="x")

`request` is the JSON body the client sent (messages, tools, model, ...). The
responder may return a string (the assistant content) or a Reply (status codes,
delays, native tool calls, reasoning, usage, or a raw body). Every request is kept
in `server.requests`; every POST's raw body and the raw bytes answered (status, body) in `server.exchanges`.

The benchmarks' server (`python -m tests.support.openai_server`) keeps nothing (a run of 15 MB requests would
hold gigabytes) and skims each body for what its scripted model needs (`skim`) instead of parsing megabytes of
images in Python on the cores the harness is measured on. `--spread S` draws each reply's delay from a lognormal
distribution with mean `--delay` (sigma S, seeded by `--seed`), so replies do not all arrive at the same instant;
`--port P --reuse-port` lets several server processes share one port (Linux SO_REUSEPORT spreads connections over
them), so that the server is not the bottleneck of a benchmark.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
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


Responder = Callable[[dict[str, Any]], "Reply | str"]


class _Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
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
        "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if reply.tool_calls else reply.finish_reason}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


_ASSISTANT = re.compile(rb'"role"\s*:\s*"assistant"')


def skim(raw: bytes) -> dict[str, Any]:
    """What the benchmarks' scripted model reads of a request (how many assistant turns it holds), found in the raw
    body without parsing it: a stand-in for `json.loads` when the body carries megabytes of base64 images."""
    return {"model": "bench", "messages": [{"role": "assistant"}] * len(_ASSISTANT.findall(raw))}


class _SharedPortServer(_Server):
    allow_reuse_port = True  # SO_REUSEPORT: several processes serve one port


class OpenAIStub:
    def __init__(self, responder: Responder, host: str = "127.0.0.1", port: int = 0, keep: bool = True,
                 parse: Callable[[bytes], Any] = json.loads, reuse_port: bool = False):
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.exchanges: list[tuple[bytes, int, bytes]] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if getattr(self, "_raw", None) is not None:
                    with stub._lock:
                        stub.exchanges.append((self._raw, status, data))
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._raw = None
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                self._raw = raw if keep else None
                try:
                    request = parse(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "bad json"}})
                    return
                if keep:
                    with stub._lock:
                        stub.requests.append(request)
                reply = stub.responder(request)
                if isinstance(reply, str):
                    reply = Reply(content=reply)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.error, "type": "server_error"}})
                    return
                self._send(200, reply.body or completion_body(reply, request.get("model", "stub")))

        self._server = (_SharedPortServer if reuse_port else _Server)((host, port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "OpenAIStub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "OpenAIStub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def last_user_text(request: dict[str, Any]) -> str:
    """The text parts of the last user (or tool) message of a request."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") in ("user", "tool"):
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return ""


def bench_responder(delay: float, two_crops: bool = False, spread: float = 0.0, seed: int = 0) -> Responder:
    """Crop, then search, then answer: the shape of a short VistaArena episode (`two_crops`: crop the sign, then a
    second box of the image, then answer, as issue 13's crop-heavy workload). With `spread` > 0 each reply waits
    `delay` times a lognormal factor of mean 1 (sigma `spread`, from a generator seeded with `seed`)."""
    draw = random.Random(seed)
    lock = threading.Lock()

    def wait() -> float:
        if not spread:
            return delay
        with lock:
            return delay * math.exp(draw.gauss(-spread * spread / 2, spread))
    crop = '<think>zoom</think><tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 80, 960, 220]}}</tool_call>'
    search = '<think>search</think><tool_call>{"name": "text_search_tool", "arguments": {"query": "Orvanta Lighthouse"}}</tool_call>'
    second = '<think>zoom</think><tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [100, 450, 500, 900]}}</tool_call>'
    answer = "<think>done</think><answer>1874</answer>"
    turns = (crop, second if two_crops else search, answer)

    def respond(request: dict[str, Any]) -> Reply:
        n = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        return Reply(content=turns[min(n, 2)], delay=wait())

    return respond


if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="Serve the benchmark's scripted model on 127.0.0.1.")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--two-crops", action="store_true", help="crop, crop, answer (else crop, search, answer)")
    parser.add_argument("--spread", type=float, default=0.0, help="lognormal sigma of the delay (0: fixed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reuse-port", action="store_true", help="share the port with other server processes")
    args = parser.parse_args()
    server = OpenAIStub(bench_responder(args.delay, args.two_crops, args.spread, args.seed), keep=False, parse=skim,
                        port=args.port, reuse_port=args.reuse_port)
    print(server.base_url, flush=True)
    sys.stdout.flush()
    server._server.serve_forever()
