"""Benchmark: a live text search (listing + 3 pages in Chromium) against replaying it from a cassette.

    .venv/bin/python bench/web_cassette.py [--queries 20]

Serves a local imitation of the web (the tests' SearXNG-style engine and pages
on 127.0.0.1), records `--queries` distinct searches, then replays them with the
network path unused (every query leads to new pages), and prints p50 / mean milliseconds per search for both,
plus the cassette's size. The observation texts must be identical.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.tool import ToolOptions  # noqa: E402
from tests.test_web_search import FakeWeb  # noqa: E402
from arena.tools.web_search import WebSearch  # noqa: E402


async def searches(options: ToolOptions, queries: list[str]) -> tuple[list[float], list[str]]:
    web = WebSearch.from_options(options)
    times, texts = [], []
    try:
        for query in queries:
            started = time.perf_counter()
            texts.append((await web.text_search(query, 3)).text)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await web.aclose()
    return times, texts


def report(name: str, times: list[float]) -> None:
    print(f"{name:8s} p50 {statistics.median(times):8.1f} ms   mean {statistics.fmean(times):8.1f} ms   "
          f"({len(times)} searches)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    queries = [f"orvanta lighthouse question {i}" for i in range(args.queries)]
    server = FakeWeb(distinct_urls=True)
    with tempfile.TemporaryDirectory() as tmp:
        cassette = Path(tmp) / "bench.sqlite"
        common = dict(web_provider="searxng", web_endpoint=server.base, allow_private_hosts=True,
                      web_min_interval=0.0)
        recorded, live_texts = asyncio.run(searches(ToolOptions(web="record", cassette=str(cassette), **common),
                                                    queries))
        server.stop()
        replayed, replay_texts = asyncio.run(searches(ToolOptions(web="replay", cassette=str(cassette), **common),
                                                      queries))
        assert replay_texts == live_texts, "replayed observations differ from the recorded ones"
        report("record", recorded[1:])
        report("replay", replayed)
        print(f"cassette {cassette.stat().st_size / 1024:.0f} KiB for {len(queries)} searches "
              f"(first recorded search, with the Chromium launch: {recorded[0]:.0f} ms)")


if __name__ == "__main__":
    main()
