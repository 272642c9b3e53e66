"""The `render` tool: SVG and HTML to an image with real Chromium, sealed from the network, structure extracted."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from arena.core.tool import ToolArgumentError, ToolError, ToolOptions
from arena.tools.render import RenderTool


async def _render(tool: RenderTool, arguments: dict):
    return await tool(arguments, None)


def test_svg_and_html_render_with_their_structure():
    async def scenario():
        tool = RenderTool(ToolOptions())
        try:
            svg = await _render(tool, {"svg": '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200">'
                                              '<rect width="300" height="200" fill="white"/>'
                                              '<circle cx="60" cy="60" r="30" fill="red"/>'
                                              '<polygon points="150,20 120,80 180,80" fill="#0000ff"/>'
                                              '<text x="200" y="150" fill="green">HELLO</text></svg>'})
            html = await _render(tool, {"html": '<div style="width:40px;height:40px;background:purple;'
                                                'border-radius:50%"></div><p>Hi there</p>',
                                        "width": 200, "height": 120})
            large = await _render(tool, {"svg": '<svg xmlns="http://www.w3.org/2000/svg" width="900" height="700">'
                                                '<rect x="880" y="680" width="20" height="20" fill="blue"/></svg>'})
        finally:
            await tool.aclose()
        return svg, html, large

    svg, html, large = asyncio.run(scenario())
    assert large.images[0].size == (900, 700) and large.images[0].getpixel((890, 690)) == (0, 0, 255)
    assert svg.images[0].size == (300, 200)
    assert svg.images[0].getpixel((60, 60)) == (255, 0, 0)
    assert svg.images[0].getpixel((5, 5)) == (255, 255, 255)
    tags = {e["tag"]: e for e in svg.data["elements"]}
    assert tags["circle"]["fill"] == "rgb(255, 0, 0)" and (tags["circle"]["w"], tags["circle"]["h"]) == (60, 60)
    assert tags["polygon"]["points"] == 3 and tags["text"]["text"] == "HELLO"
    assert html.images[0].size == (200, 120)
    div = next(e for e in html.data["elements"] if e["tag"] == "div")
    assert div["background"] == "rgb(128, 0, 128)" and div["radius"] == "50%"
    assert any(e["text"] == "Hi there" for e in html.data["elements"])
    assert html.data["format"] == "html" and svg.data["format"] == "svg"


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_rendered_pages_reach_no_network_no_files_and_run_no_scripts(tmp_path):
    red = tmp_path / "red.png"
    Image.new("RGB", (64, 64), (255, 0, 0)).save(red)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    page = (f'<img src="{red.as_uri()}" width="64" height="64"><img src="{url}/img.png"><div style="background:url({url}/bg.png);width:20px;height:20px"></div>'
            f'<link rel="stylesheet" href="{url}/style.css"><iframe src="{url}/frame"></iframe>'
            f'<p id="p">static</p><script>document.getElementById("p").textContent = "SCRIPT RAN";'
            f'fetch("{url}/fetch")</script>')

    async def scenario():
        tool = RenderTool(ToolOptions())
        try:
            html = await _render(tool, {"html": page})
            svg = await _render(tool, {"svg": f'<svg xmlns="http://www.w3.org/2000/svg" width="50" height="50">'
                                              f'<image href="{url}/svg.png" width="50" height="50"/></svg>'})
        finally:
            await tool.aclose()
        return html, svg

    try:
        html, _ = asyncio.run(scenario())
    finally:
        server.shutdown()
    texts = [e["text"] for e in html.data["elements"]]
    assert "static" in texts and "SCRIPT RAN" not in texts
    assert _Counter.hits == []
    assert (255, 0, 0) not in {color for _, color in html.images[0].getcolors(1 << 16)}


def test_bad_arguments_are_invalid_calls_and_empty_svg_is_an_error():
    tool = RenderTool(ToolOptions(render_max_chars=100))
    for arguments, message in (({}, "exactly one"), ({"svg": "<svg/>", "html": "<p>x</p>"}, "exactly one"),
                               ({"svg": "<rect/>"}, "no <svg>"), ({"html": "x" * 101}, "limit is 100"),
                               ({"svg": "<svg/>", "width": 10}, "width")):
        with pytest.raises(ToolArgumentError, match=message):
            asyncio.run(_render(tool, arguments))

    async def empty():
        try:
            return await _render(tool, {"svg": '<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0"/>'})
        finally:
            await tool.aclose()

    with pytest.raises(ToolError, match="no visible size"):
        asyncio.run(empty())


def test_a_page_caught_navigating_as_it_is_captured_is_captured_again_then_an_error(monkeypatch):
    # (a meta refresh can start a navigation while Chromium takes the screenshot: "Unable to capture screenshot")
    from playwright.async_api import Error as PlaywrightError

    real = RenderTool._capture
    failures: list[int] = []

    async def flaky(self, page, kind, args, timeout):
        if len(failures) < self.failing:
            failures.append(1)
            raise PlaywrightError("Protocol error (Page.captureScreenshot): Unable to capture screenshot")
        return await real(self, page, kind, args, timeout)
    monkeypatch.setattr(RenderTool, "_capture", flaky)

    async def scenario(failing: int):
        tool = RenderTool(ToolOptions())
        tool.failing = failing  # type: ignore[attr-defined]
        try:
            return await _render(tool, {"html": "<p>Hi there</p>"})
        finally:
            await tool.aclose()

    assert asyncio.run(scenario(1)).images[0].size == (512, 512) and len(failures) == 1
    failures.clear()
    with pytest.raises(ToolError, match="could not be captured: Error: Protocol error"):
        asyncio.run(scenario(2))
