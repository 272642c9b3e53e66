"""Size and load time of the HTML viewer for 300-episode runs (target: < 30 MB, opens in Chromium in < 3 s).

Two runs over the generated vistahop-mini world (small):
- `oracle`: the gold-path policy, 30 tasks x 5 budgets (6..14) x 2 repeats = 300 episodes; crops repeat
  across budgets and repeats, so deduplication matters;
- `random-crops`: a policy that crops 4 random regions, reverse-searches the last crop and answers, 30 tasks
  x 10 repeats = 300 episodes with every crop distinct (the worst case for size).

Run: .venv/bin/python bench/viewer_size.py [--world DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from arena.core.agent import Agent, AgentTurn, EpisodeView, register_agent
from arena.runs.config import RunConfig
from arena.review.rundata import load_run
from arena.runs.plugins import load_plugins
from arena.runs.runner import run
from arena.review.viewer import viewer_data, write_viewer


class RandomCrops(Agent):
    """Crops four random regions of the task image, reverse-searches the last crop, then answers."""

    id = "random-crops"

    async def act(self, view: EpisodeView) -> AgentTurn:
        played = len([s for s in view.steps if not s.final_turn])
        if view.final_turn or played >= 5:
            return AgentTurn(output="<answer>unknown</answer>", action="answer", answer="unknown")
        if played == 4:
            arguments = {"img_idx": len(view.images) - 1}
            return AgentTurn(output=json.dumps(arguments), action="tool_call", tool="image_search_tool",
                             arguments=arguments)
        rng = random.Random()
        x, y = rng.randint(0, 800), rng.randint(0, 800)
        arguments = {"bbox_2d": [x, y, x + rng.randint(60, 200), y + rng.randint(60, 200)], "img_idx": 0}
        return AgentTurn(output=json.dumps(arguments), action="tool_call", tool="image_zoom_in_tool",
                         arguments=arguments)


@register_agent("random-crops")
def random_crops() -> RandomCrops:
    return RandomCrops()


async def load_seconds(page_path: Path) -> tuple[float, float, list[str]]:
    """(wall seconds from navigation to the viewer's ready mark, in-page ms to ready, console errors)."""
    from playwright.async_api import async_playwright

    from arena.tools.chromium import launch_chromium

    async with async_playwright() as p:
        browser = await launch_chromium(p)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            started = time.perf_counter()
            await page.goto(page_path.resolve().as_uri())
            await page.wait_for_selector("body[data-ready='1']", timeout=60000)
            wall = time.perf_counter() - started
            in_page = await page.evaluate("performance.now()")
            await page.locator("tr.row").first.click()
            await page.wait_for_selector(".detail")
            return wall, in_page, errors
        finally:
            await browser.close()


def measure(run_dir: Path) -> dict[str, object]:
    data = load_run(run_dir)
    started = time.perf_counter()
    path = write_viewer([data], run_dir / "viewer.html")
    build = time.perf_counter() - started
    _, blobs = viewer_data([data])
    references = sum(len(e.images) + sum(len(s.observation.images) for s in e.steps if s.observation)
                     for e in data.episodes)
    wall, in_page, errors = asyncio.run(load_seconds(path))
    return {"run": data.run_id, "episodes": len(data.episodes), "image_references": references,
            "unique_images": len(blobs), "size_mb": round(path.stat().st_size / 1e6, 2),
            "build_s": round(build, 2), "chromium_load_s": round(wall, 2), "in_page_ready_ms": round(in_page),
            "console_errors": len(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, help="A built vistahop-mini world (default: build one, size small).")
    parser.add_argument("--out", type=Path, help="Where the runs go (default: a temporary directory).")
    args = parser.parse_args()
    load_plugins()
    with tempfile.TemporaryDirectory(prefix="arena-viewer-bench-") as tmp:
        out = args.out or Path(tmp)
        world = args.world
        if world is None:
            from arena.core.world import WORLD_BUILDERS

            world = WORLD_BUILDERS["vistahop-mini"](out / "world", seed=0, size="small")
        common = dict(data=str(world), limit=30, out=str(out / "logs"), concurrency=4)
        oracle = run(RunConfig(agent="oracle", max_rounds=[6, 8, 10, 12, 14], repeats=2, run_id="oracle", **common))
        crops = run(RunConfig(agent="random-crops", max_rounds=[6], repeats=10, run_id="random-crops",
                              settings=["search+crop"], **common))
        for result in (oracle, crops):
            print(json.dumps(measure(result.run_dir)))


if __name__ == "__main__":
    main()
