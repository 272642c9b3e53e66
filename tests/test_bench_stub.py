"""The benchmarks' model stub (`bench/stub_server.py`, as `bench/peers.py --serve` runs it) answers every body as the
reference `peers._reply` does, byte for byte, counts the requests and their bytes, and tells when each arrived
(issue 38)."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
import urllib.parse
from pathlib import Path

import orjson

from tests.support.bench_scripts import bench_script

ROOT = Path(__file__).resolve().parents[1]


def _peers():
    return bench_script("peers", "peers")


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
        # connections side by side share the stub's body buffers; a body over their 4 MiB gets a larger one
        large = bodies[3].replace(b"QUJD" * 300_000, b"QUJD" * 1_300_000)
        crowd = [large, *bodies[:15]] * 2

        def one(body: bytes) -> bool:
            side = http.client.HTTPConnection(url.hostname, url.port)
            side.request("POST", url.path + "/chat/completions", body, {"Content-Type": "application/json"})
            answered = side.getresponse().read() == json.dumps(peers._reply(body)).encode()
            side.close()
            return answered
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(one, crowd))
        connection.request("GET", url.path.rsplit("/v1", 1)[0] + "/stats")
        stats = json.loads(connection.getresponse().read())
        sent = bodies + crowd
        assert (stats["requests"], stats["bytes"]) == (len(sent), sum(map(len, sent))) and stats["cpu"] > 0
        connection.request("GET", url.path.rsplit("/v1", 1)[0] + "/timeline")
        arrivals = json.loads(connection.getresponse().read())  # [connection, head whole, body read] per request
        assert len(arrivals) == len(sent) and all(head <= read for _, head, read in arrivals)
        assert len({number for number, _, _ in arrivals}) == 1 + len(crowd)  # the keep-alive one, then one each
    finally:
        server.terminate()
        server.wait()


def test_overheads_lean_stub_answers_as_the_tests_stub_and_draws_the_same_delays():
    """`bench/tiny_stub.py` (the lean server `bench/overhead.py` now starts) answers the tiny dataset's script as the
    tests' `ChatServer` stub (`python -m tests.support.openai_server`) does, byte for byte, crop-search-answer and
    crop-crop-answer; two processes share one port (`--reuse-port`); its lognormal delays (`delays`, which both
    servers draw from) are the tests' stub's, draw for draw."""
    from tests.support.openai_server import bench_responder, delays

    bodies = _bodies()
    for two_crops in (False, True):
        flag = ["--two-crops"] if two_crops else []
        lean = subprocess.Popen([sys.executable, str(ROOT / "bench" / "tiny_stub.py"), "--reuse-port", *flag],
                                stdout=subprocess.PIPE, text=True, cwd=ROOT)
        tests = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", *flag],
                                 stdout=subprocess.PIPE, text=True, cwd=ROOT)
        second = None
        try:
            url = urllib.parse.urlsplit(lean.stdout.readline().strip())
            second = subprocess.Popen([sys.executable, str(ROOT / "bench" / "tiny_stub.py"), "--reuse-port",
                                       "--port", str(url.port), *flag], stdout=subprocess.PIPE, text=True, cwd=ROOT)
            assert second.stdout.readline().strip() == f"http://127.0.0.1:{url.port}/v1"  # the same port
            reference = urllib.parse.urlsplit(tests.stdout.readline().strip())
            answers = []
            for where in (url, reference):
                answered = []
                for body in bodies:  # a new connection each: SO_REUSEPORT spreads them over both processes
                    connection = http.client.HTTPConnection(where.hostname, where.port)
                    connection.request("POST", where.path + "/chat/completions", body,
                                       {"Content-Type": "application/json"})
                    response = connection.getresponse()
                    answered.append((response.status, response.read()))
                    connection.close()
                answers.append(answered)
            assert answers[0] == answers[1]
            contents = {json.loads(data)["choices"][0]["message"]["content"] for _, data in answers[0]}
            assert len(contents) == 3 and any(("[100, 450" in c) == two_crops for c in contents if "bbox_2d" in c)
        finally:
            for proc in (lean, tests, second):
                if proc is not None:
                    proc.terminate()
    respond, wait = bench_responder(0.2, spread=0.5, seed=3), delays(0.2, 0.5, 3)
    draws = [wait() for _ in range(50)]
    assert draws == [respond({"messages": []}).delay for _ in range(50)] and len(set(draws)) == 50
    assert delays(0.2)() == 0.2
