"""`render`: turn SVG or HTML markup written by the agent into an image, with Chromium (UReason, PROTOCOLS.md §5).

The page is sealed: every network request it makes is aborted, and page scripts
are off unless the run sets the tool option `render_scripts: true`. With scripts
off, sealed pages are pooled and reused (`set_content` replaces the whole
document); with scripts on, each render gets a fresh browser context. SVG is
shown at its own size (a `viewBox`-only SVG fills the `width`) and captured
element-tight; HTML is laid out in a `width` x `height` viewport and captured
whole. The observation carries the image (the episode's generated image) and,
in its data, the rendered structure: for every visible element its tag, box,
fill / background / text colour, corner radius, polygon point count and own
text, which the `ureason-verify` judge reads.

Tool options: `render_scripts` (default false), `render_max_chars` (markup
limit, default 200,000), `render_timeout` (seconds per page, default 15),
`render_parallel` (pages at once, default 2).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from pydantic import BaseModel, Field

from arena.core.images import decode_image
from arena.core.tool import Tool, ToolArgumentError, ToolContext, ToolError, ToolOptions, ToolResult, register_tool

from .chromium import SharedChromium, seal_context

MAX_ELEMENTS = 600
MAX_SIDE = 1536

_STRUCTURE_JS = """(limit) => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (out.length >= limit) break;
    const tag = el.localName;
    if (tag === 'script' || tag === 'style' || tag === 'defs' || tag === 'title') continue;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) continue;
    const r = el.getBoundingClientRect();
    const svg = el instanceof SVGElement;
    let text = '';
    if (tag === 'text') text = el.textContent;
    else if (!svg) text = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join(' ');
    const rec = {tag: tag, svg: svg, x: r.left, y: r.top, w: r.width, h: r.height,
                 text: text.replace(/\\s+/g, ' ').trim(), color: cs.color};
    if (svg) {
      rec.fill = cs.fill; rec.stroke = cs.stroke;
      if (el.points) rec.points = el.points.numberOfItems;
    } else {
      rec.background = cs.backgroundColor; rec.radius = cs.borderTopLeftRadius;
    }
    out.push(rec);
  }
  return out;
}"""


class RenderArgs(BaseModel):
    svg: str | None = Field(None, description="A complete SVG document, <svg xmlns=...>...</svg>.")
    html: str | None = Field(None, description="An HTML document or fragment (inline CSS; no external resources).")
    width: int = Field(512, ge=64, le=MAX_SIDE, description="Viewport width in pixels.")
    height: int = Field(512, ge=64, le=MAX_SIDE, description="Viewport height in pixels (HTML only).")


def _round(value: Any) -> Any:
    return round(value, 1) if isinstance(value, float) else value


class RenderOptions(ToolOptions):
    """`render_parallel` pages at once, `render_scripts` (JavaScript on), `render_max_chars` of markup,
    `render_timeout` seconds per render."""

    render_parallel: int = 2
    render_scripts: bool = False
    render_max_chars: int = 200_000
    render_timeout: float = 15.0


@register_tool
class RenderTool(Tool):
    name = "render"
    description = ("Render an image from markup you write: pass `svg` (an SVG document) or `html` (an HTML page with "
                   "inline CSS). The rendered image is returned and counts as the image you generate; external "
                   "resources are not loaded.")
    Args = RenderArgs
    Options = RenderOptions

    def __init__(self, options=None):
        super().__init__(options)
        self._chromium = SharedChromium()
        self._launches = 0
        self._parallel = int(getattr(self.options, "render_parallel", 2))
        self._slots = asyncio.Semaphore(self._parallel)
        self._scripts = bool(getattr(self.options, "render_scripts", False))
        self._pool: list = []

    async def _browser_ready(self):
        browser = await self._chromium.get()
        if self._chromium.launches != self._launches:
            self._launches = self._chromium.launches
            self._pool.clear()
        return browser

    def _markup(self, args: RenderArgs) -> tuple[str, str]:
        given = [(kind, text) for kind, text in (("svg", args.svg), ("html", args.html)) if text and text.strip()]
        if len(given) != 1:
            raise ToolArgumentError("render needs exactly one of `svg` or `html`, with markup in it")
        kind, text = given[0]
        limit = int(getattr(self.options, "render_max_chars", 200_000))
        if len(text) > limit:
            raise ToolArgumentError(f"the {kind} markup has {len(text)} characters; the limit is {limit}")
        if kind == "svg" and "<svg" not in text.lower():
            raise ToolArgumentError("the `svg` argument has no <svg> element")
        return kind, text

    async def _page(self):
        """A sealed page: reused from the pool when scripts are off (nothing survives `set_content`)."""
        browser = await self._browser_ready()
        if self._pool:
            return self._pool.pop()
        context = await browser.new_context(java_script_enabled=self._scripts, device_scale_factor=1, offline=True,
                                            service_workers="block", accept_downloads=False)
        await context.route("**/*", lambda route: route.abort("blockedbyclient"))
        await seal_context(context)
        return context, await context.new_page()

    async def _release(self, held, healthy: bool) -> None:
        if healthy and not self._scripts and len(self._pool) < self._parallel:
            self._pool.append(held)
            return
        try:
            await held[0].close()
        except Exception:  # a context of a crashed browser is gone already
            pass

    async def run(self, args: RenderArgs, ctx: ToolContext) -> ToolResult:
        kind, markup = self._markup(args)
        page_html = (f'<!DOCTYPE html><html><head><meta charset="utf-8"></head>'
                     f'<body style="margin:0;background:#ffffff">{markup}</body></html>') if kind == "svg" else markup
        timeout = float(getattr(self.options, "render_timeout", 15.0)) * 1000
        async with self._slots:
            held = await self._page()
            healthy = False
            try:
                page = held[1]
                await page.set_viewport_size({"width": args.width, "height": args.height})
                try:
                    await page.set_content(page_html, timeout=timeout, wait_until="load")
                except Exception as exc:
                    raise ToolError(f"the page did not load: {type(exc).__name__}: {str(exc)[:200]}") from None
                for attempt in (1, 2):  # a page that navigates itself (a meta refresh) can be caught mid-way
                    try:
                        png = await self._capture(page, kind, args, timeout)
                        elements = await page.evaluate(_STRUCTURE_JS, MAX_ELEMENTS)
                        break
                    except ToolError:
                        raise
                    except Exception as exc:
                        if attempt == 2:
                            raise ToolError(f"the page could not be captured: {type(exc).__name__}: "
                                            f"{str(exc)[:200]}") from None
                healthy = True
            finally:
                await self._release(held, healthy)
        image = await asyncio.to_thread(decode_image, png, "render")
        structure = [{k: _round(v) for k, v in element.items()} for element in elements]
        data = {"format": kind, "width": image.width, "height": image.height, "elements": structure,
                "markup_sha256": hashlib.sha256(markup.encode()).hexdigest()}
        return ToolResult(text=f"Rendered the {kind.upper()} as a {image.width}x{image.height} image; it is the "
                               f"image you generated.", images=[image], data=data)

    async def _capture(self, page, kind: str, args: RenderArgs, timeout: float) -> bytes:
        if kind == "html":
            return await page.screenshot(timeout=timeout)
        svg = await page.query_selector("svg")
        box = await svg.bounding_box() if svg else None
        if not box or box["width"] < 1 or box["height"] < 1:
            raise ToolError("the SVG has no visible size; give it width and height or a viewBox")
        width, height = min(box["width"], MAX_SIDE), min(box["height"], MAX_SIDE)
        right, bottom = int(box["x"] + width + 1), int(box["y"] + height + 1)
        if right > args.width or bottom > args.height:
            await page.set_viewport_size({"width": max(right, args.width), "height": max(bottom, args.height)})
        return await page.screenshot(clip={"x": box["x"], "y": box["y"], "width": width, "height": height},
                                     timeout=timeout)

    async def aclose(self) -> None:
        while self._pool:
            await self._pool.pop()[0].close()
        await self._chromium.close()

