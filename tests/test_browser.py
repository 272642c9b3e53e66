"""The browser tool against a generated world site, in a real Chromium."""

import asyncio
from pathlib import Path

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.core.dataset import Dataset
from arena.core.task import Task
from arena.core.tool import ToolArgumentError, ToolContext, ToolError, ToolOptions
from arena.tools.browser import BrowserTool
from arena.tools.browser_dom import mark_color

INDEX = """<!doctype html><html><head><title>Shop</title>
<style>body{margin:0;font:16px sans-serif} .box{position:absolute} #pad{height:2400px}</style></head><body>
<h1 class="box" style="left:20px;top:10px;width:300px">Kettle Shop</h1>
<button class="box" style="left:20px;top:90px;width:160px;height:40px"
  onclick="document.getElementById('status').textContent='In cart: 1'">Add to cart</button>
<p id="status" class="box" style="left:220px;top:90px;width:200px">In cart: 0</p>
<a class="box" style="left:20px;top:160px" href="page2.html">Details</a>
<input id="q" class="box" style="left:20px;top:210px;width:200px" placeholder="Search">
<button class="box" style="left:260px;top:210px" onclick="alert('hello from the page')">Alert</button>
<img class="box" style="left:460px;top:20px;width:40px;height:40px" src="http://tracker.example.com/pixel.png" alt="pixel">
<img class="box" style="left:520px;top:20px;width:40px;height:40px" src="logo.png" alt="logo">
<div id="pad"></div><p class="box" style="left:20px;top:2000px">Footer text</p>
</body></html>"""

PAGE2 = """<!doctype html><html><head><title>Details</title></head><body>
<p data-arena-id="42">Made of stainless steel.</p><script>fetch('https://evil.example.org/x')</script></body></html>"""


@pytest.fixture()
def world(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(INDEX)
    (site / "page2.html").write_text(PAGE2)
    Image.new("RGB", (40, 40), (0, 90, 200)).save(site / "logo.png")
    frames = tmp_path / "trajectories" / "t1"
    frames.mkdir(parents=True)
    for i, color in ((1, (255, 0, 0)), (2, (0, 255, 0)), (10, (0, 0, 255))):
        Image.new("RGB", (32, 24), color).save(frames / f"step_{i}.png")
    (tmp_path / "outside.html").write_text("secret")
    return tmp_path


def make_ctx(root: Path, tmp: Path, **metadata) -> ToolContext:
    task = Task(id="t1", question="q", metadata=metadata)
    dataset = Dataset(name="w", root=root, tasks=[task], source=root / "tasks.jsonl", world=root)
    return ToolContext(task=task, dataset=dataset, images=[], blobs=BlobStore(tmp / "blobs"))


def by_text(result, text):
    return next(e for e in result.data["elements"] if text in e["text"])


def test_browser_click_state_blocking_and_marks(world: Path, tmp_path: Path):
    async def scenario():
        tool = BrowserTool(ToolOptions(browser_viewport="640x400"))
        ctx = make_ctx(world, tmp_path)
        try:
            first = await tool({"action": "goto", "url": "http://world.local/index.html"}, ctx)
            assert "URL: http://world.local/index.html" in first.text
            assert "In cart: 0" in first.text
            # the tracker image was aborted and reported; the world's own image was served
            assert first.data["blocked"] == ["http://tracker.example.com/pixel.png"]
            assert "Blocked 1 request(s) outside the world" in first.text
            # Set-of-Marks: every listed box is outlined in its id's colour
            marked = first.images[0]
            assert marked.size == (640, 400)
            for el in first.data["elements"]:
                right_mid = (el["x"] + el["w"] - 1, el["y"] + el["h"] // 2)
                assert marked.getpixel(right_mid) == mark_color(el["id"]), el
            button = by_text(first, "Add to cart")
            assert f'[{button["id"]}] <button> "Add to cart" at ({button["x"]}, {button["y"]}, ' in first.text
            assert (button["x"], button["y"], button["w"], button["h"]) == (20, 90, 160, 40)

            clicked = await tool({"action": "click", "element_id": button["id"]}, ctx)
            assert by_text(clicked, "In cart").get("text") == "In cart: 1"
            assert by_text(clicked, "Add to cart")["id"] == button["id"]  # ids are stable

            field = by_text(clicked, "Search")
            typed = await tool({"action": "type", "element_id": field["id"], "text": "steel kettle"}, ctx)
            assert by_text(typed, "steel kettle")["id"] == field["id"]

            alert = by_text(typed, "Alert")
            dialog = await tool({"action": "click", "element_id": alert["id"]}, ctx)
            assert dialog.data["dialogs"] == ["alert: hello from the page"]

            scrolled = await tool({"action": "scroll", "direction": "down"}, ctx)
            assert scrolled.data["scroll"] == [0, 320]

            link_page = await tool({"action": "goto", "url": "/"}, ctx)
            link = by_text(link_page, "Details")
            second = await tool({"action": "click", "element_id": link["id"]}, ctx)
            assert second.data["url"] == "http://world.local/page2.html"
            assert '[42] <p> "Made of stainless steel."' in second.text  # author ids are kept
            await asyncio.sleep(0.2)
            read = await tool({"action": "read", "element_id": 42}, ctx)
            assert read.text.endswith("Made of stainless steel.") and not read.images
            back = await tool({"action": "back"}, ctx)
            assert back.data["url"] == "http://world.local/"
            assert "https://evil.example.org/x" in tool._episodes[ctx.episode].router.blocked

            with pytest.raises(ToolError, match="outside the world"):
                await tool({"action": "goto", "url": "https://example.com/"}, ctx)
            missing = await tool({"action": "goto", "url": "../outside.html"}, ctx)
            assert "404" in missing.text and "secret" not in missing.text
            with pytest.raises(ToolError, match="no element \\[999\\]"):
                await tool({"action": "click", "element_id": 999}, ctx)
            with pytest.raises(ToolArgumentError, match="needs element_id"):
                await tool({"action": "click"}, ctx)

            other = make_ctx(world, tmp_path)
            with pytest.raises(ToolError, match="no page is open yet"):
                await tool({"action": "scroll", "direction": "down"}, other)
            await tool.end_episode(ctx)
            assert id(ctx.images) not in tool._episodes
        finally:
            await tool.aclose()

    asyncio.run(scenario())


def test_browser_frames_are_in_numeric_order(world: Path, tmp_path: Path):
    frames = ["trajectories/t1/step_1.png", "trajectories/t1/step_2.png", "trajectories/t1/step_10.png"]

    async def scenario():
        tool = BrowserTool()
        ctx = make_ctx(world, tmp_path, frames=frames)
        try:
            first = await tool({"action": "next"}, ctx)
            assert first.text == "Frame 1 of 3 (step_1.png)."
            assert first.images[0].getpixel((0, 0)) == (255, 0, 0)
            last = await tool({"action": "frame", "index": 3}, ctx)
            assert last.images[0].getpixel((0, 0)) == (0, 0, 255)
            prev = await tool({"action": "prev"}, ctx)
            assert prev.data["frame"] == 2 and prev.images[0].getpixel((0, 0)) == (0, 255, 0)
            with pytest.raises(ToolArgumentError, match="frames 1..3"):
                await tool({"action": "frame", "index": 4}, ctx)
            assert tool._chromium.launches == 0  # frames need no Chromium
        finally:
            await tool.aclose()

    asyncio.run(scenario())


def test_browser_state_is_kept_per_episode_of_the_tool_context(world: Path, tmp_path: Path):
    """Per-episode browser state is keyed by `ctx.episode` (the id of the episode being played), not by the identity
    of the context's image list: two contexts of one episode share it; another episode's context, even one sharing
    the image list, has its own; `end_episode` releases only its own."""
    async def scenario():
        tool = BrowserTool(ToolOptions())
        first = make_ctx(world, tmp_path)
        same = ToolContext(task=first.task, dataset=first.dataset, images=[], blobs=first.blobs, episode=first.episode)
        other = ToolContext(task=first.task, dataset=first.dataset, images=first.images, blobs=first.blobs)
        assert first.episode != other.episode
        assert tool._episode(first) is tool._episode(same)
        assert tool._episode(other) is not tool._episode(first)
        await tool.end_episode(other)
        assert set(tool._episodes) == {first.episode}
        await tool.aclose()

    asyncio.run(scenario())
