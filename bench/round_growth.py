"""Does a round cost more as the conversation grows? (issue 38: round 10 no more than round 1 beyond its new bytes)

The workload of `bench/peers.py` with `--rounds R` (crops and searches in turn, then the answer; every crop stays in
context, so each request is larger than the one before), the arena at concurrency 1 in this process, against the same
stub server. The arena's CPU of round k is the process CPU from the start of its model call to the start of the next
one (the call, its record, the step, the tool, the next request's building; the last round: to the episode's end),
median over the tasks; the floor's (`bench/floor.py`) is its encode + push + parse of the same request. What the arena
adds over the floor should not grow with k.

    PYTHONPATH=. python bench/round_growth.py [--tasks 16] [--rounds 10] [--world DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]


def arena_rounds(data: Path, url: str, out: Path) -> dict[int, list[float]]:
    """CPU seconds of each round (by its number in the episode) of one arena run at concurrency 1."""
    import peers
    from arena.endpoints.client import Endpoint
    from arena.runs.plugins import load_plugins

    load_plugins()
    starts: list[tuple[int, float]] = []
    chat = Endpoint.chat

    async def timed(self, messages, *args, **kwargs):
        starts.append((sum(m.get("role") == "assistant" for m in messages if isinstance(m, dict)) + 1,
                       time.process_time()))
        return await chat(self, messages, *args, **kwargs)

    Endpoint.chat = timed  # type: ignore[method-assign]
    try:
        peers.run_arena(data, url, 1, out)
        starts.append((1, time.process_time()))  # the last round ends where the run's summary begins
    finally:
        Endpoint.chat = chat  # type: ignore[method-assign]
    rounds: dict[int, list[float]] = {}
    for (k, began), (_, ended) in zip(starts, starts[1:]):
        rounds.setdefault(k, []).append(ended - began)
    return rounds


def floor_rounds(run_dir: Path, url: str) -> dict[int, list[float]]:
    """CPU seconds of the floor's encode + push + parse of each recorded request, by its round number."""
    import floor

    requests = floor.recorded_requests(run_dir)
    floor.measure(requests, url)  # once to warm up, then measured
    rounds: dict[int, list[float]] = {}
    for request, cpu in zip(requests, floor.measure(requests, url)["each"]):
        k = sum(m.get("role") == "assistant" for m in request["messages"]) + 1
        rounds.setdefault(k, []).append(cpu)
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--size", default="1316x728")
    parser.add_argument("--noise", type=int, default=12, help="amplitude of the task image's noise (bench/peers.py)")
    parser.add_argument("--world", type=Path)
    args = parser.parse_args()
    if os.environ.get("ARENA_BENCH_ROUNDS") != str(args.rounds):  # the stub server reads it at import
        os.environ["ARENA_BENCH_ROUNDS"] = str(args.rounds)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    import peers

    with tempfile.TemporaryDirectory() as tmp:
        world = args.world or Path(tmp) / "world"
        size = tuple(map(int, args.size.split("x")))
        data = peers.kept_world(world, peers.workload(args.tasks, 1, size, args.noise))
        if data is None:
            data = peers.write_world(world, args.tasks, 1, size, args.noise)
            time.sleep(2.1)
        proc, url = peers._server(0.0)
        try:
            arena_rounds(data, url, Path(tmp) / "warm")  # imports, caches: not part of a round
            arena = arena_rounds(data, url, Path(tmp) / "run")
            base = floor_rounds(Path(tmp) / "run" / "peers", url)
        finally:
            proc.terminate()
    print(f"| round | arena CPU, ms (median of {args.tasks}) | floor, ms | arena − floor, ms |")
    print("|---|---|---|---|")
    for k in sorted(arena):
        a, f = statistics.median(arena[k]) * 1000, statistics.median(base[k]) * 1000
        print(f"| {k} | {a:.2f} | {f:.2f} | {a - f:.2f} |")


if __name__ == "__main__":
    main()
