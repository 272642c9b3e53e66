"""Rendering a world's own pages into screenshots and element boxes (used by world builders).

`render_site_pages(site, pages)` opens each site-relative page at
http://world.local/<path> in one Chromium context served by the same
route interception as the browser tool (nothing outside the site loads), and
returns for each page its screenshot (the whole page, or the viewport) and its
elements with boxes in that screenshot's pixels. With `only_marked=True` only
elements carrying an author `data-arena-id` are returned: the artifact elements
of an MMIR page, whose ids the builder chose.
"""

from __future__ import annotations

import asyncio
import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Coroutine, TypeVar

from PIL import Image

from .browser_dom import ELEMENTS_JS, Element, elements_from
from .browser_site import SiteRouter, world_url
from .chromium import launch_chromium, seal_context

T = TypeVar("T")


@dataclass
class RenderedPage:
    path: str
    screenshot: Image.Image
    elements: list[Element]
    title: str
    blocked: list[str]


async def render_site_pages(site: Path, pages: list[str | tuple[str, tuple[int, int]]], *,
                            viewport: tuple[int, int] = (1280, 800), full_page: bool = True,
                            only_marked: bool = False, max_elements: int = 400) -> list[RenderedPage]:
    """Render pages given as site-relative paths, or (path, (width, height)) for a page's own viewport."""
    from playwright.async_api import async_playwright

    out: list[RenderedPage] = []
    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        try:
            context = await browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                                device_scale_factor=1, locale="en-US", timezone_id="UTC",
                                                reduced_motion="reduce", color_scheme="light",
                                                service_workers="block")
            router = SiteRouter(site)
            await context.route("**/*", router.handle)
            await seal_context(context, router.blocked.append)
            page = await context.new_page()
            for entry in pages:
                path, size = (entry, viewport) if isinstance(entry, str) else entry
                await page.set_viewport_size({"width": size[0], "height": size[1]})
                blocked_from = len(router.blocked)
                response = await page.goto(world_url(path), wait_until="load")
                if response is None or response.status != 200:
                    raise RuntimeError(f"{site / path}: page did not load (HTTP "
                                       f"{response.status if response else 'none'})")
                await page.evaluate("() => document.fonts.ready.then(() => true)")
                info: dict[str, Any] = await page.evaluate(
                    ELEMENTS_JS, {"fullPage": full_page, "onlyMarked": only_marked, "maxElements": max_elements,
                                  "maxText": 2000})
                png = await page.screenshot(type="png", full_page=full_page, animations="disabled", caret="hide")
                with Image.open(io.BytesIO(png)) as im:
                    shot = im.convert("RGB")
                out.append(RenderedPage(path=path, screenshot=shot, elements=elements_from(info["elements"]),
                                        title=str(info["title"]), blocked=router.blocked[blocked_from:]))
            await context.close()
        finally:
            await browser.close()
    return out


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
