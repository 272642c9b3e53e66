"""Benchmark: one browser step (action + screenshot + element list) on a generated page.

    .venv/bin/python bench/browser_step.py [--steps 60] [--viewport 1280x800]

Alternates click (a counter button that re-renders part of the page) and scroll
actions through the real tool (Chromium, route interception, Set-of-Marks drawing)
and prints p50 / p90 / mean step time in milliseconds. Target: p50 < 400 ms.
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

from arena.core.blobs import BlobStore  # noqa: E402
from arena.core.dataset import Dataset  # noqa: E402
from arena.core.task import Task  # noqa: E402
from arena.core.tool import ToolContext, ToolOptions  # noqa: E402
from arena.tools.browser import BrowserTool  # noqa: E402


def page(rows: int = 60) -> str:
    items = "\n".join(
        f"<li><a href='item{i}.html'>Item {i}</a> <span>Stainless kettle model {i}</span>"
        f" <b>${10 + i}.99</b> <button onclick='bump()'>Add</button></li>" for i in range(rows))
    return f"""<!doctype html><html><head><title>Bench</title><style>
    body {{ font: 15px sans-serif; margin: 20px }} li {{ margin: 6px 0 }}</style></head><body>
    <h1>Catalogue</h1><p id='count'>Cart: 0</p>
    <script>let n = 0; function bump() {{ n += 1; document.getElementById('count').textContent = 'Cart: ' + n; }}</script>
    <ul>{items}</ul></body></html>"""


async def bench(steps: int, viewport: str) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "site").mkdir()
        (root / "site" / "index.html").write_text(page())
        task = Task(id="bench", question="q")
        ctx = ToolContext(task=task, dataset=Dataset(name="bench", root=root, tasks=[task], source=root, world=root),
                          images=[], blobs=BlobStore(root / "blobs"))
        tool = BrowserTool(ToolOptions(browser_viewport=viewport))
        try:
            first = await tool({"action": "goto", "url": "index.html"}, ctx)
            button = next(e["id"] for e in first.data["elements"] if e["tag"] == "button")
            times = []
            for i in range(steps):
                if i % 4 == 3:
                    await tool({"action": "goto", "url": "index.html"}, ctx)
                    continue
                args = ({"action": "click", "element_id": button} if i % 2 == 0
                        else {"action": "scroll", "direction": "down" if i % 8 < 4 else "up"})
                started = time.perf_counter()
                result = await tool(args, ctx)
                times.append((time.perf_counter() - started) * 1000)
                assert result.images and result.data["elements"]
            return times
        finally:
            await tool.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--viewport", default="1280x800")
    args = parser.parse_args()
    times = asyncio.run(bench(args.steps, args.viewport))
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    print(f"browser step ({args.viewport}, {len(times)} steps): p50 {statistics.median(times):.1f} ms, "
          f"p90 {p90:.1f} ms, mean {statistics.fmean(times):.1f} ms (target p50 < 400 ms)")


if __name__ == "__main__":
    main()
