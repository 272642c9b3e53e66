"""A small OpenAI-compatible chat-completions server on 127.0.0.1 that tests script (the wire side is
`arena.endpoints.chat_server`, which `arena serve` uses too).

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

import argparse
import json
import math
import random
import re
import threading
from typing import Any, Callable

from arena.endpoints.chat_server import ChatServer, Reply, Responder, completion_body

__all__ = ["OpenAIStub", "Reply", "Responder", "completion_body", "last_user_text", "bench_responder", "skim"]

_ASSISTANT = re.compile(rb'"role"\s*:\s*"assistant"')


def skim(raw: bytes) -> dict[str, Any]:
    """What the benchmarks' scripted model reads of a request (how many assistant turns it holds), found in the raw
    body without parsing it: a stand-in for `json.loads` when the body carries megabytes of base64 images."""
    return {"model": "bench", "messages": [{"role": "assistant"}] * len(_ASSISTANT.findall(raw))}


class OpenAIStub(ChatServer):
    """The shared chat server (`arena.endpoints.chat_server`) answering with a test's responder, keeping (with
    `keep`) every parsed request in `requests` and every POST's raw exchange in `exchanges`."""

    def __init__(self, responder: Responder, host: str = "127.0.0.1", port: int = 0, keep: bool = True,
                 parse: Callable[[bytes], Any] = json.loads, reuse_port: bool = False):
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.exchanges: list[tuple[bytes, int, bytes]] = []
        self._lock = threading.Lock()
        super().__init__(self._respond if keep else responder, host=host, port=port, parse=parse,
                         reuse_port=reuse_port, on_exchange=self._record if keep else None)

    def _respond(self, request: dict[str, Any]) -> "Reply | str":
        with self._lock:
            self.requests.append(request)
        return self.responder(request)

    def _record(self, raw: bytes, status: int, data: bytes) -> None:
        with self._lock:
            self.exchanges.append((raw, status, data))


def last_user_text(request: dict[str, Any]) -> str:
    """The text parts of the last user (or tool) message of a request."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") in ("user", "tool"):
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return ""


def delays(delay: float, spread: float = 0.0, seed: int = 0) -> Callable[[], float]:
    """Each reply's delay: `delay`, or with `spread` > 0 `delay` times a lognormal factor of mean 1 (sigma `spread`,
    drawn from a generator seeded with `seed`, under a lock: the connections' threads draw in turn)."""
    if not spread:
        return lambda: delay
    draw, lock = random.Random(seed), threading.Lock()

    def wait() -> float:
        with lock:
            return delay * math.exp(draw.gauss(-spread * spread / 2, spread))
    return wait


def bench_responder(delay: float, two_crops: bool = False, spread: float = 0.0, seed: int = 0) -> Responder:
    """Crop, then search, then answer: the shape of a short VistaArena episode (`two_crops`: crop the sign, then a
    second box of the image, then answer, as issue 13's crop-heavy workload). Each reply waits `delays(delay,
    spread, seed)`."""
    wait = delays(delay, spread, seed)
    crop = '<think>zoom</think><tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 80, 960, 220]}}</tool_call>'
    search = '<think>search</think><tool_call>{"name": "text_search_tool", "arguments": {"query": "Orvanta Lighthouse"}}</tool_call>'
    second = '<think>zoom</think><tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [100, 450, 500, 900]}}</tool_call>'
    answer = "<think>done</think><answer>1874</answer>"
    turns = (crop, second if two_crops else search, answer)

    def respond(request: dict[str, Any]) -> Reply:
        n = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        return Reply(content=turns[min(n, 2)], delay=wait())

    return respond


def bench_server_options(description: str) -> argparse.ArgumentParser:
    """The command line of a server of `bench_responder`'s script (this module's, and `bench/tiny_stub.py`'s)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--two-crops", action="store_true", help="crop, crop, answer (else crop, search, answer)")
    parser.add_argument("--spread", type=float, default=0.0, help="lognormal sigma of the delay (0: fixed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reuse-port", action="store_true", help="share the port with other server processes")
    return parser


if __name__ == "__main__":
    args = bench_server_options("Serve the benchmark's scripted model on 127.0.0.1.").parse_args()
    server = OpenAIStub(bench_responder(args.delay, args.two_crops, args.spread, args.seed), keep=False, parse=skim,
                        port=args.port, reuse_port=args.reuse_port)
    print(server.base_url, flush=True)
    server.serve_forever()
