"""The scripted model of `bench/overhead.py`, served by the benchmarks' lean server (`bench/stub_server.py`).

The script is the tiny dataset's: crop, then search (or a second crop), then answer
(`tests.support.openai_server.bench_responder`).

`tests.support.openai_server` serves the same script through the tests' `ChatServer` (a `ThreadingHTTPServer`,
every body parsed); on the benchmark's machine the stub shares the cores with the harness it answers, so it is made
to cost as little as a server can, as `bench/peers.py`'s is. The replies are the same bytes, encoded once at
start-up.

    python bench/tiny_stub.py [--delay S] [--two-crops] [--spread SIGMA --seed N] [--port P --reuse-port]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import stub_server  # noqa: E402

from tests.support.openai_server import bench_responder, bench_server_options, completion_body, delays  # noqa: E402

BODY_BUFFER = 1 << 16
"""The tiny dataset's requests are ~20 KB: 64 KiB body buffers, none made ahead (a larger body gets its own)."""


def answer_chooser(two_crops: bool = False) -> stub_server.Answer:
    """`bench_responder`'s replies as whole HTTP responses (the JSON bytes `ChatServer` sends for them, model
    "bench"), chosen by the number of assistant messages in the body."""
    respond = bench_responder(0.0, two_crops)
    turns = [stub_server.response(json.dumps(completion_body(respond({"messages": [{"role": "assistant"}] * n}),
                                                             "bench")).encode()) for n in range(3)]

    def choose(body: bytearray, length: int) -> bytes:
        return turns[min(stub_server.assistant_messages(body, length), 2)]
    return choose


def main() -> None:
    args = bench_server_options(__doc__.splitlines()[0]).parse_args()
    stub_server.serve(delays(args.delay, args.spread, args.seed), answer_chooser(args.two_crops), port=args.port,
                      reuse_port=args.reuse_port, buffer=BODY_BUFFER, ready=0)


if __name__ == "__main__":
    main()
