"""The static HTML viewer, opened in real Chromium: loads without console errors, filters work, crop
boxes are drawn, model output stays text, images are stored once."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.review.viewer import build_viewer, viewer_data, write_viewer

playwright_api = pytest.importorskip("playwright.async_api")

PAYLOAD = "<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">"
CROP = {"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 50, 1000, 250], "label": "sign"}}
SCRIPT = {
    "q1": [{"text": f"<think>{PAYLOAD}</think><tool_call>{json.dumps(CROP)}</tool_call>"},
           {"tool": "image_search_tool", "arguments": {}},
           {"answer": "Mirelle Dastrow"}],
    "q2": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}},
           {"answer": f"</script><script>window.__xss=3</script>{PAYLOAD}"}],
}


def make_run(tiny_data: Path, tmp_path: Path, run_id: str, script=SCRIPT, repeats: int = 2):
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script}, repeats=repeats,
                         out=str(tmp_path / "logs"), run_id=run_id))


async def open_page(path: Path, actions):
    from arena.tools.chromium import launch_chromium

    async with playwright_api.async_playwright() as p:
        browser = await launch_chromium(p)
        try:
            page = await browser.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            await page.goto(path.resolve().as_uri())
            await page.wait_for_selector("body[data-ready='1']", timeout=15000)
            result = await actions(page)
            return problems, result
        finally:
            await browser.close()


def test_viewer_loads_filters_and_escapes_in_chromium(tiny_data: Path, tmp_path: Path) -> None:
    result = make_run(tiny_data, tmp_path, "viewed")
    out = CliRunner().invoke(app, ["view", str(result.run_dir)])
    assert out.exit_code == 0, out.output
    page_path = result.run_dir / "viewer.html"

    async def actions(page):
        seen = {"all": await page.locator("tr.row").count()}
        await page.select_option("#f-verdict", "correct")
        seen["correct"] = await page.locator("tr.row").count()
        seen["count"] = await page.inner_text("#count")
        await page.select_option("#f-verdict", "")
        await page.select_option("#f-tool", "image_zoom_in_tool")
        seen["cropping"] = await page.locator("tr.row").count()
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .box")
        seen["box"] = await page.locator(".detail .box").first.get_attribute("style")
        seen["src"] = await page.locator(".detail .shot img").first.get_attribute("src")
        seen["detail"] = await page.inner_text(".detail")
        await page.select_option("#f-tool", "")
        await page.select_option("#f-verdict", "incorrect")
        await page.locator("tr.row").first.click()
        seen["answer"] = await page.inner_text(".detail")
        seen["xss"] = await page.evaluate("window.__xss === undefined")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert seen["all"] == 4 and seen["correct"] == 2 and seen["count"].startswith("2 of 4")
    assert seen["cropping"] == 2
    assert re.search(r"left: 70%; top: 5%; width: 30%; height: 20%", seen["box"])
    assert seen["src"].startswith("data:image/jpeg;base64,")
    assert PAYLOAD in seen["detail"] and "Title 1: Orvanta Lighthouse - Wiki" in seen["detail"]
    assert "window.__xss=3" in seen["answer"]
    assert seen["xss"] is True


def test_images_are_stored_once(tiny_data: Path, tmp_path: Path) -> None:
    result = make_run(tiny_data, tmp_path, "dedup")
    data = load_run(result.run_dir)
    _, blobs = viewer_data([data])
    page = build_viewer([data])
    assert page.count("data:image/jpeg;base64,") == len(blobs) == len(set(blobs))
    references = sum(len(e.images) + sum(len(s.observation.images) for s in e.steps if s.observation)
                     for e in data.episodes)
    assert references > len(blobs)
    assert "<script>window.__xss" not in page


def test_side_by_side_of_two_runs(tiny_data: Path, tmp_path: Path) -> None:
    first = make_run(tiny_data, tmp_path, "first", repeats=1)
    other = {"*": [{"answer": "1874"}]}
    second = make_run(tiny_data, tmp_path, "second", script=other, repeats=1)
    out = CliRunner().invoke(app, ["view", str(first.run_dir), str(second.run_dir)])
    assert out.exit_code == 0, out.output
    page_path = first.run_dir / "compare-second.html"

    async def actions(page):
        seen = {"rows": await page.locator("tr.row").count()}
        await page.select_option("#f-compare", "differ")
        seen["differ"] = await page.locator("tr.row").count()
        await page.locator("tr.row").first.click()
        seen["columns"] = await page.locator(".detail .col").count()
        seen["heads"] = await page.locator(".detail .col h3").all_inner_texts()
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert seen["rows"] == 2 and seen["differ"] == 2
    assert seen["columns"] == 2 and seen["heads"] == ["first", "second"]


MARKERS = "%JS% %CSS% %IMAGES% %DATA% %INDEX% %SHARDS% %TITLE% %SUMMARY%"


@pytest.mark.parametrize("single", [True, False])
def test_template_markers_in_model_text_render_as_text(tiny_data: Path, tmp_path: Path, single: bool) -> None:
    script = {"q1": [{"text": f"<think>{MARKERS}</think><answer>{MARKERS}</answer>"}], "q2": [{"answer": MARKERS}]}
    result = make_run(tiny_data, tmp_path, "markers", script=script)
    page_path = write_viewer([load_run(result.run_dir)], result.run_dir / "viewer.html", single=single,
                             shard_episodes=1)

    async def actions(page):
        seen = {"rows": await page.locator("tr.row").count(), "count": await page.inner_text("#count")}
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .step")
        seen["detail"] = await page.inner_text(".detail")
        seen["css"] = await page.evaluate("getComputedStyle(document.querySelector('table')).borderCollapse")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert seen["rows"] == 4 and seen["count"].startswith("4 of 4")
    assert f"answer: {MARKERS}" in seen["detail"]
    assert seen["css"] == "collapse"  # the page's own style survived


def test_large_run_layout_loads_episodes_and_images_on_demand(tiny_data: Path, tmp_path: Path) -> None:
    result = make_run(tiny_data, tmp_path, "sharded")
    page_path = write_viewer([load_run(result.run_dir)], result.run_dir / "viewer.html", single=False,
                             shard_episodes=1)
    shards = sorted(p.name for p in (result.run_dir / "viewer-view").iterdir())
    assert [n for n in shards if n.startswith("e-")] == [f"e-{i:05d}.js" for i in range(4)]
    assert any(n.startswith("i-") for n in shards)
    html_text = page_path.read_text()
    assert "data:image/jpeg" not in html_text and "Title 1: Orvanta" not in html_text  # only the index is inline

    async def actions(page):
        loaded = "[...document.scripts].filter(s => s.src).map(s => s.src.split('/').pop())"
        seen = {"before": await page.evaluate(loaded)}
        await page.select_option("#f-tool", "image_zoom_in_tool")
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .box")
        seen["src"] = await page.locator(".detail .shot img").first.get_attribute("src")
        seen["detail"] = await page.inner_text(".detail")
        seen["after"] = await page.evaluate(loaded)
        await page.select_option("#f-tool", "")
        await page.fill("#f-text", "mirelle")
        await page.wait_for_function("() => document.getElementById('count').dataset.query === 'mirelle'")
        seen["search"] = await page.inner_text("#count")
        seen["xss"] = await page.evaluate("window.__xss === undefined")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert seen["before"] == []
    assert seen["src"].startswith("data:image/jpeg;base64,")
    assert PAYLOAD in seen["detail"] and "Title 1: Orvanta Lighthouse - Wiki" in seen["detail"]
    assert len([s for s in seen["after"] if s.startswith("e-")]) == 1 and any(s.startswith("i-") for s in seen["after"])
    assert seen["search"].startswith("2 of 4")
    assert seen["xss"] is True


def test_view_serve_serves_the_page_and_its_shards(tiny_data: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    import httpx

    result = make_run(tiny_data, tmp_path, "served")
    page_path = result.run_dir / "viewer.html"
    proc = subprocess.Popen([str(Path(sys.executable).with_name("arena")), "view", str(result.run_dir), "--layout", "sharded",
                             "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for line in proc.stdout:
            if line.startswith("serving "):
                url = line.split()[1]
                break
        assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/viewer.html")
        assert httpx.get(url).text == page_path.read_text()
        shard = httpx.get(url.replace("viewer.html", "viewer-view/e-00000.js"))
        assert shard.status_code == 200 and shard.text.startswith('__arenaShard("e",0,')
        for private in ("run.json", "episodes.jsonl", "../run.json", "viewer-view/../run.json", "viewer-view/"):
            assert httpx.get(url.replace("viewer.html", private)).status_code == 404, private

        async def browse():
            from arena.tools.chromium import launch_chromium

            async with playwright_api.async_playwright() as p:
                browser = await launch_chromium(p, contained=False)  # it must reach the local server
                try:
                    page = await browser.new_page()
                    problems: list[str] = []
                    page.on("pageerror", lambda e: problems.append(str(e)))
                    await page.goto(url)
                    await page.locator("tr.row").first.click()
                    await page.wait_for_selector(".detail .step")
                    return problems, await page.locator("tr.row").count()
                finally:
                    await browser.close()

        problems, rows = asyncio.run(browse())
        assert problems == [] and rows == 4
    finally:
        proc.terminate()
        proc.wait(timeout=10)
