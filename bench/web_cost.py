"""Benchmark: what the paid live web costs per 100 episodes, counted on the loopback stand-ins.

    .venv/bin/python bench/web_cost.py [--episodes 20] [--price-per-1k 1.00]

Runs VistaArena-shaped Search+Crop episodes (scripted: 4 text searches, 2 crops, 2 image searches = 8 tool
calls, the paper's average being 8.02) twice on the tests' fake Serper/Lens server, a local S3 server and a
summariser stub: once in the VistaArena setting (`--image-search stored`: only text search is paid) and once
with `--image-search live` (each crop reverse-searched on the Serper lens). Every episode asks its own
queries and crops its own regions, so nothing is shared between episodes except pages the results have in
common. Prints the provider calls the fakes answered, the summariser calls, and the cost per 100 episodes
at `--price-per-1k` dollars per 1,000 Serper credits (one credit per call, as the fake's `credits` field
says; check a real key's dashboard for the lens price).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.tool import ToolOptions  # noqa: E402
from arena.runs.config import RunConfig  # noqa: E402
from arena.runs.runner import run  # noqa: E402
from tests.support.fake_serper import FakeGoogleApis  # noqa: E402
from tests.support.local_s3 import local_s3  # noqa: E402
from tests.support.openai_server import OpenAIStub, last_user_text  # noqa: E402
from tests.support.tiny_dataset import write_tiny_dataset  # noqa: E402

KEY = "serper-bench-key-000000"


def script(episodes: int, live: bool) -> dict:
    """Per episode: search, crop the sign, image search, search, search, crop the door, search, image search,
    answer. Live image searches look at the crops (img_idx 1, then 4 after the first search's two
    thumbnails); stored ones at the task image, as VistaArena's tool does."""
    steps = {}
    for i in range(1, episodes + 1):
        def search(j: int) -> dict:
            return {"tool": "text_search_tool", "arguments": {"query": f"episode {i} question {j} about Orvanta"}}

        def crop(box: list[int]) -> dict:
            return {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": box}}

        def image(idx: int) -> dict:
            return {"tool": "image_search_tool", "arguments": {"img_idx": idx if live else 0}}

        steps[f"q{i}"] = [search(0), crop([700 + i, 90, 950, 210 + i]), image(1), search(1), search(2),
                          crop([70 + i, 610, 240, 890 - i]), search(3), image(4), {"answer": "1874"}]
    return steps


def measure(episodes: int, live: bool, tmp: Path) -> dict:
    fake = FakeGoogleApis({KEY: None})
    data = write_tiny_dataset(tmp / "data", n_items=episodes)
    path = tmp / f"script-{live}.json"
    path.write_text(json.dumps(script(episodes, live)))
    summaries = []

    def summarise(request: dict) -> str:
        summaries.append(len(last_user_text(request)))
        return "A short summary."

    options = dict(web="record", cassette=str(tmp / f"c-{live}.sqlite"), web_provider="serper",
                   web_endpoint=fake.base, lens_endpoint=fake.base, allow_private_hosts=True, web_min_interval=0.0,
                   image_search="live" if live else "stored", image_host="s3://arena-bench/crops")
    try:
        with local_s3("arena-bench"), OpenAIStub(summarise) as summariser:
            os.environ["SERPER_API_KEY"] = KEY
            config = RunConfig(data=str(data), agent="scripted", agent_options={"script": str(path)},
                               settings=["search+crop"], max_rounds=[10], judge="normalized",
                               tool_options=ToolOptions(**options, summarizer_model="qwen3-32b",
                                                        summarizer_base_url=summariser.base_url),
                               out=str(tmp / f"out-{live}"), concurrency=4)
            result = run(config)
    finally:
        fake.stop()
    calls = sum(sum(e.totals.calls_per_tool.values()) for e in result.episodes)
    return {"episodes": len(result.episodes), "tool_calls": calls, "search": fake.calls["/search"],
            "lens": fake.calls["/lens"], "pages": sum(1 for p in fake.paths if p.startswith("/pages/")),
            "summaries": len(summaries), "summary_chars": sum(summaries) / max(1, len(summaries))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--price-per-1k", type=float, default=1.00, help="dollars per 1,000 Serper credits")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for live in (False, True):
            m = measure(args.episodes, live, Path(tmp) / str(live))
            credits = m["search"] + m["lens"]
            per100 = credits / m["episodes"] * 100
            print(f"{'live lens' if live else 'VistaArena (stored image search)':34s} {m['episodes']} episodes, "
                  f"{m['tool_calls'] / m['episodes']:.1f} tool calls/episode: serper search {m['search']}, lens "
                  f"{m['lens']}, pages fetched {m['pages']}, summariser calls {m['summaries']} "
                  f"-> {per100:.0f} credits per 100 episodes = ${per100 * args.price_per_1k / 1000:.2f} "
                  f"at ${args.price_per_1k:.2f}/1k")


if __name__ == "__main__":
    main()
