"""Speed of the UReason/CARV pieces: render-tool throughput (Chromium) and world builds.

    .venv/bin/python bench/render.py [--renders 40]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from arena.core.tool import ToolOptions
from arena.suites.carv import world as carv
from arena.suites.ureason import world as ureason
from arena.tools.render import RenderTool


async def render_rate(n: int, parallel: int) -> tuple[float, float]:
    """(seconds to launch + first render, renders per second afterwards) with `parallel` pages."""
    criteria = [item.criterion for item in ureason.generate(seed=0, per_family=4)]
    markups = [ureason.gold_svg(criteria[i % len(criteria)]) for i in range(n)]
    tool = RenderTool(ToolOptions(render_parallel=parallel))
    try:
        started = time.perf_counter()
        await tool({"svg": markups[0]}, None)
        first = time.perf_counter() - started
        started = time.perf_counter()
        await asyncio.gather(*(tool({"svg": m}, None) for m in markups))
        return first, n / (time.perf_counter() - started)
    finally:
        await tool.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--renders", type=int, default=40)
    args = parser.parse_args()
    for parallel in (1, 2):
        first, rate = asyncio.run(render_rate(args.renders, parallel))
        print(f"render: launch + first {first:.2f} s; {rate:.1f} renders/s with {parallel} page(s)")
    with tempfile.TemporaryDirectory() as tmp:
        for size in ("small", "full"):
            started = time.perf_counter()
            carv.build(Path(tmp) / f"carv-{size}", seed=0, size=size)
            print(f"carv-mini {size}: built in {time.perf_counter() - started:.2f} s")
        started = time.perf_counter()
        ureason.build(Path(tmp) / "ureason", seed=0, size="full")
        print(f"ureason-mini full: built in {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
