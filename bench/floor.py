"""The floor of a round (issue 38): the least CPU a client can spend on the same model call, measured op by op.

For each request the arena sent in a recorded run (its calls.jsonl, read back by `arena.store.calls.read_calls`: the
exact bodies, images included, which is also a check of the transcript), the floor
1. encodes the request with orjson (its image data URLs are ready-made strings: the arena caches identical crops and
   model-size encodings, so no image work is in the floor),
2. pushes the body through a loopback socket to the same local server (one keep-alive connection, a blocking
   `sendall`, the reply read by its Content-Length),
3. parses the reply with orjson.
CPU is this process's (user + system) over all the rounds; at a concurrency above 1, that many threads play whole
episodes side by side (`measure_episodes`), which also gives the floor's own wall time against the ideal with a slow
server. The server's byte count for the floor's requests must equal the arena's (see `bench/peers.py`).

    PYTHONPATH=. python bench/floor.py RUN_DIR URL     # prints one JSON line
"""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def recorded_episodes(run_dir: Path) -> list[list[dict[str, Any]]]:
    """The agent requests of each episode of a recorded run, as the server got them (parsed), in order."""
    from arena.store.calls import CALLS_FILE, read_calls

    episodes: dict[str, None] = {}
    with (run_dir / CALLS_FILE).open("rb") as lines:
        for line in lines:
            episodes.setdefault(orjson.loads(line)["episode"], None)
    return [[call["request"] for call in read_calls(run_dir, key) if call["role"] == "agent"] for key in episodes]


def recorded_requests(run_dir: Path) -> list[dict[str, Any]]:
    """The agent requests of every episode of a recorded run, one episode after the other."""
    return [request for episode in recorded_episodes(run_dir) for request in episode]


class LoopbackClient:
    """One keep-alive HTTP/1.1 connection, blocking: the least a client can do to post a body and read a reply."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        self.head = (f"POST {parts.path.rstrip('/')}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                     "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: ").encode()
        self.sock = socket.create_connection((parts.hostname, parts.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, body: bytes) -> bytes:
        self.sock.sendall(self.head + str(len(body)).encode() + b"\r\n\r\n")
        self.sock.sendall(body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(1 << 16)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += self.sock.recv(1 << 16)
        return rest

    def close(self) -> None:
        self.sock.close()


def exchange(client: LoopbackClient, request: dict[str, Any]) -> tuple[float, float, float, bool]:
    """One round of the floor: (encode, push, parse) CPU seconds of this thread, and whether it answered 1874."""
    t0 = time.thread_time()
    body = orjson.dumps(request)
    t1 = time.thread_time()
    raw = client.post(body)
    t2 = time.thread_time()
    reply = orjson.loads(raw)
    t3 = time.thread_time()
    return t1 - t0, t2 - t1, t3 - t2, "1874" in (reply["choices"][0]["message"].get("content") or "")


def measure(requests: list[dict[str, Any]], url: str) -> dict[str, Any]:
    """The floor over `requests`, one after the other on one connection: process CPU seconds (all of it, per op,
    and per request: `each`), wall seconds, and the number of replies that answered 1874 (the workload's answer)."""
    return measure_episodes([requests], url, 1)


def measure_episodes(episodes: list[list[dict[str, Any]]], url: str, concurrency: int) -> dict[str, Any]:
    """The floor at `concurrency`: that many threads, each with its own connection, each playing whole episodes
    (their requests one after the other, as an agent must); the kernel copies run in parallel (no GIL in
    `sendall`), the rest takes turns. Process CPU seconds, per op (the threads' sum), per request, wall, correct."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()
    clients: list[LoopbackClient] = []

    def play(episode: list[dict[str, Any]]) -> list[tuple[float, float, float, bool]]:
        if not hasattr(local, "client"):
            local.client = LoopbackClient(url)
            clients.append(local.client)
        return [exchange(local.client, request) for request in episode]

    started, cpu = time.perf_counter(), time.process_time()
    if concurrency == 1:
        rounds = [r for episode in episodes for r in play(episode)]
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            rounds = [r for done in pool.map(play, episodes) for r in done]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - started
    for client in clients:
        client.close()
    return {"cpu": cpu, "wall": wall, "encode": sum(r[0] for r in rounds), "push": sum(r[1] for r in rounds),
            "parse": sum(r[2] for r in rounds), "correct": sum(r[3] for r in rounds),
            "each": [r[0] + r[1] + r[2] for r in rounds]}


def main() -> None:
    run_dir, url = Path(sys.argv[1]), sys.argv[2]
    print(json.dumps(measure(recorded_requests(run_dir), url)))


if __name__ == "__main__":
    main()
