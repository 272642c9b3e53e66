"""Benchmark: the smolagents adapter's cost per round against the `openai` agent, on one scripted endpoint.

    .venv/bin/python bench/smolagents_overhead.py [--repeats 10]

Both agents play the tests' scripted policy (text search, crop, image search, an
unknown tool, a bad box, then the answer or the budget) on the tiny dataset,
against a local OpenAI-compatible stub, so the difference is the adapter: the
smolagents loop, its prompt building and image encoding, the worker-thread
hand-offs. Prints the mean model-side milliseconds per round and the wall time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.runs.plugins import load_plugins  # noqa: E402
from tests.support.openai_server import OpenAIStub  # noqa: E402
from tests.support.tiny_dataset import write_tiny_dataset  # noqa: E402
from tests.test_smolagents import run_agent, scripted_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    load_plugins()
    with tempfile.TemporaryDirectory() as tmp, OpenAIStub(scripted_model) as stub:
        data = write_tiny_dataset(Path(tmp) / "data")
        for agent in ("openai", "smolagents"):
            started = time.perf_counter()
            result = run_agent(data, Path(tmp) / agent, agent, stub.base_url, repeats=args.repeats)
            wall = time.perf_counter() - started
            per_round = [s.model_seconds * 1000 for e in result.episodes for s in e.steps]
            print(f"{agent:10s} {len(result.episodes)} episodes, {len(per_round)} rounds: model side "
                  f"mean {statistics.fmean(per_round):6.1f} ms / p50 {statistics.median(per_round):6.1f} ms per "
                  f"round; wall {wall:5.2f} s")


if __name__ == "__main__":
    main()
