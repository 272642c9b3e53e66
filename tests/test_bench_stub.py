"""The benchmarks' model stub (`bench/stub_server.py`, as `bench/peers.py --serve` runs it) answers every body as the
reference `peers._reply` does, byte for byte, and counts the requests and their bytes (issue 38)."""

from __future__ import annotations

import http.client
import importlib.util
import json
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]


def _peers():
    spec = importlib.util.spec_from_file_location("peers", ROOT / "bench" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bodies() -> list[bytes]:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "QUJD" * 300_000}}
    user = {"role": "user", "content": [image, {"type": "text", "text": 'say "assistant" and "role": "user"'}]}
    turn = {"role": "assistant", "content": "", "tool_calls": []}
    tool = {"role": "tool", "content": "1. Orvanta Lighthouse ... built in 1874"}
    bodies = []
    for n in range(4):
        request = {"model": "bench", "messages": [user] + [turn, tool] * n, "tools": []}
        bodies.append(orjson.dumps(request))  # compact, as the arena sends
        bodies.append(json.dumps(request).encode())  # ", " and ": ", as the openai SDK sends
        bodies.append(json.dumps(request, indent=1).encode())  # a line break before a value
        bodies.append(orjson.dumps({**request, "tools": [{"function": {"name": "final_answer"}}]}))
    bodies.append(b'{"messages":[{"role" :\t"assistant"},{"x":"assistant"},{"role":"assistant "}]}')
    bodies.append(b'{"messages":[{"role":"user","content":"x;base64,y"},{"role":"assistant"},{"role":"assistant"}]}')
    return bodies


def test_stub_answers_as_the_reference_and_counts_bytes():
    peers = _peers()
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "peers.py"), "--serve", "0"],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = urllib.parse.urlsplit(server.stdout.readline().strip())
        connection = http.client.HTTPConnection(url.hostname, url.port)
        bodies = _bodies()
        assert {len(re.findall(rb'"role"\s*:\s*"assistant"', b)) for b in bodies} == {0, 1, 2, 3}
        for body in bodies:  # one keep-alive connection, body after body
            connection.request("POST", url.path + "/chat/completions", body,
                               {"Content-Type": "application/json"})
            answer = connection.getresponse()
            assert answer.status == 200
            assert answer.read() == json.dumps(peers._reply(body)).encode(), body[-200:]
        connection.request("GET", url.path.rsplit("/v1", 1)[0] + "/stats")
        stats = json.loads(connection.getresponse().read())
        assert (stats["requests"], stats["bytes"]) == (len(bodies), sum(map(len, bodies))) and stats["cpu"] > 0
    finally:
        server.terminate()
        server.wait()
