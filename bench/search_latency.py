"""Latency of the offline search backends on a generated world (targets: text p50 < 20 ms, image p50 < 100 ms).

    .venv/bin/python bench/search_latency.py [--world DIR] [--queries N]

Without `--world`, the full `vistahop-mini` world (seed 0) is built into
`worlds/vistahop-mini-full` first (once). Text queries are the gold paths'
queries with the true entity names filled in; image queries are the gold crops
of anchors (made with the crop tool's own zoom) and whole scenes. Only the
search call is timed; index construction is reported separately.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.images import decode_image  # noqa: E402
from arena.core.world import WORLD_BUILDERS, is_world  # noqa: E402
from arena.runs.plugins import load_plugins  # noqa: E402
from arena.suites.vistahop.world.gold import fill  # noqa: E402
from arena.tools.corpus_index import CorpusIndex  # noqa: E402
from arena.tools.crop import pixel_box, zoom  # noqa: E402
from arena.tools.image_index import CACHE_DIR, ReverseImageIndex  # noqa: E402


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"p50 {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   n={len(ms)}"


def text_queries(tasks: list[dict]) -> list[str]:
    queries = []
    for task in tasks:
        for chain in task["metadata"]["gold_chain"]:
            n = chain["chain"]
            bindings = {f"c{n}_e0": chain["seed"], **{f"c{n}_e{h['step']}": h["target"] for h in chain["hops"]}}
            for step in task["metadata"]["gold_path"]["steps"]:
                if step["tool"] == "text_search_tool" and step["chain"] == n:
                    queries.append(fill(step["arguments"]["query"], bindings))
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=Path("worlds/vistahop-mini-full"))
    parser.add_argument("--queries", type=int, default=300, help="image queries (text: all gold queries)")
    args = parser.parse_args()
    world: Path = args.world
    if not is_world(world):
        started = time.perf_counter()
        load_plugins()  # the suites' worlds are registered by their entry points
        WORLD_BUILDERS["vistahop-mini"](world, seed=0, size="full")
        print(f"built {world} in {time.perf_counter() - started:.1f} s")
    tasks = [json.loads(line) for line in (world / "tasks.jsonl").read_text().splitlines()]

    started = time.perf_counter()
    corpus = CorpusIndex.for_dir(world / "corpus")
    print(f"text index (bm25s) over {len(corpus.documents)} pages built in {time.perf_counter() - started:.2f} s")
    queries = text_queries(tasks)
    corpus.search(queries[0], 3)
    samples = []
    for query in queries:
        started = time.perf_counter()
        corpus.search(query, 3)
        samples.append(time.perf_counter() - started)
    print(f"text search (top 3 + extracts)    {percentiles(samples)}")

    shutil.rmtree(world / CACHE_DIR, ignore_errors=True)
    started = time.perf_counter()
    index = ReverseImageIndex.load(world)
    print(f"image index: {len(index.entries)} entries, {len(index.owners)} descriptors, "
          f"built in {time.perf_counter() - started:.1f} s", end="")
    started = time.perf_counter()
    index = ReverseImageIndex.load(world)
    print(f", loaded from cache in {time.perf_counter() - started:.2f} s")
    scenes = [json.loads(line) for line in (world / "images/scenes.jsonl").read_text().splitlines()]
    rng = random.Random(0)
    picked = rng.sample(scenes, min(len(scenes), max(1, args.queries // 4)))
    crops, whole, found = [], [], 0
    for scene in picked:
        image = decode_image(world / scene["image"])
        for anchor in scene["anchors"]:
            crop = zoom(image, pixel_box([float(v) for v in anchor["bbox_2d"]], image.width, image.height, True))
            started = time.perf_counter()
            hits = index.search(crop, 5)
            crops.append(time.perf_counter() - started)
            found += hits[0].title == anchor["name"]
        started = time.perf_counter()
        index.search(image, 5)
        whole.append(time.perf_counter() - started)
    print(f"image search, anchor crops        {percentiles(crops)}   top-1 = entity: {found}/{len(crops)}")
    print(f"image search, whole 4K scenes     {percentiles(whole)}")
    print(f"image search, all                 {percentiles(crops + whole)}")


if __name__ == "__main__":
    main()
