"""The viewer's small defects a newcomer sees first (issue 31), checked in real Chromium: one task's budget
variants sit together in the table, the finish cell of an episode without failure labels ends without a stray
separator, and an episode whose agent reports no token usage (a scripted policy) shows no "? in / ? out"."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from arena.runs.config import RunConfig
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.review.viewer import write_viewer
from tests.test_viewer import open_page

pytest.importorskip("playwright.async_api")


def test_variants_grouped_clean_finish_cell_and_no_unknown_tokens(tiny_data: Path, tmp_path: Path) -> None:
    script = {"*": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}},
                    {"tool": "text_search_tool", "arguments": {"query": "Mirelle Dastrow"}}, {"answer": "1874"}]}
    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                           settings=["search"], max_rounds=[1, 3], judge="normalized", out=str(tmp_path / "logs"),
                           run_id="variants"))
    stored = [json.loads(line)["key"] for line in (result.run_dir / "episodes.jsonl").read_text().splitlines()]
    stored_tasks = [key.split("|")[0] for key in stored]
    assert stored_tasks != sorted(stored_tasks), "the store interleaves the tasks' variants (what the table fixes)"
    page_path = write_viewer([load_run(result.run_dir)], tmp_path / "viewer.html")

    async def actions(page):
        rows = page.locator("tr.row")
        seen = {"tasks": await page.locator("tr.row td:nth-child(1)").all_inner_texts(),
                "budgets": await page.locator("tr.row td:nth-child(4)").all_inner_texts(),
                "finish": await page.locator("tr.row td:last-child").all_inner_texts()}
        await rows.first.click()
        await page.wait_for_selector(".detail .head")
        seen["head"] = await page.inner_text(".detail .head")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert seen["tasks"] == ["q1", "q1", "q2", "q2"] and seen["budgets"] == ["1", "3", "1", "3"]
    assert all(not cell.rstrip().endswith("·") for cell in seen["finish"]), seen["finish"]
    assert "budget · 1" in seen["finish"] or any(cell.startswith("budget · ") for cell in seen["finish"])
    assert "finish: " in seen["head"] and "?" not in seen["head"] and "tokens" not in seen["head"], seen["head"]
