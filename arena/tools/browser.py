"""`browser`: a real Chromium (Playwright) on the world's site, and a frame viewer for GUI trajectories.

One tool, one `action` argument per call:

    goto(url)                 open a page of the world (absolute http://world.local/... or site-relative)
    click(element_id)         click an element of the current page
    type(element_id, text)    replace the text of an input (press_enter=true submits)
    scroll(direction)         up | down | left | right, by 80 % of the viewport
    back                      previous page in the history
    read(element_id?)         full text of an element (or of the whole page); no screenshot
    frame(index)              show frame `index` (1 = first) of the task's GUI trajectory
    next / prev               the frame after / before the one shown last

Page observations are a screenshot of the viewport (with Set-of-Marks boxes and
ids drawn when the `browser_marks` option is on, the default) and an element
list `[id] <tag> "text" at (x, y, w, h)` in screenshot pixels; ids are stable for
the life of the document (see `arena.tools.browser_dom`). The browser reaches only the
world: requests are answered from the dataset's `site/` directory at the fake
origin http://world.local/ by route interception, everything else is aborted
and listed in the observation (`arena.tools.browser_site`). JavaScript dialogs are
dismissed and reported, pop-ups open in the same tab, downloads and service
workers are off, every action has a timeout and every served file a size limit.

Frame actions show the trajectory's recorded PNG frames (task metadata `frames`,
paths relative to the dataset root, in trajectory order) and need no page.

Resources: one Chromium per tool instance (i.e. per worker process), launched
on first use and closed by `aclose()`; one isolated browser context per episode,
keyed by the episode's id (`ctx.episode`).
`end_episode(ctx)` closes an episode's context; at most `browser_max_sessions`
contexts stay open (least recently used closed first), which bounds resources
when the episode loop does not call `end_episode`.

Options (`ToolOptions` extras): `browser_viewport` ("1280x800"), `browser_marks`
(true), `browser_action_timeout` (seconds, 15), `browser_max_page_bytes`
(5,000,000), `browser_max_elements` (150), `browser_max_sessions` (16).
"""

from __future__ import annotations

import asyncio
import io
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from PIL import Image
from pydantic import BaseModel, Field, model_validator

from arena.core.images import decode_image
from arena.core.paths import PathEscapeError
from arena.core.settings import register_setting
from arena.core.tool import Tool, ToolArgumentError, ToolContext, ToolError, ToolOptions, ToolResult, register_tool

from .browser_dom import ELEMENTS_JS, draw_marks, elements_from
from .browser_site import DEFAULT_MAX_BYTES, ORIGIN, SiteRouter, is_world_url
from .chromium import SharedChromium, seal_context

Action = Literal["goto", "click", "type", "scroll", "back", "read", "frame", "next", "prev"]
PAGE_ACTIONS = {"goto", "click", "type", "scroll", "back", "read"}
FRAME_ACTIONS = {"frame", "next", "prev"}

INIT_SCRIPT = """
window.open = (url) => { if (url) window.location.href = url; return window; };
document.addEventListener("click", (e) => {
  const a = e.target && e.target.closest ? e.target.closest("a[target]") : null;
  if (a) a.target = "_self";
}, true);
"""


class BrowserArgs(BaseModel):
    action: Action = Field(description="goto | click | type | scroll | back | read | frame | next | prev")
    url: str | None = Field(None, description="goto: the page, e.g. http://world.local/index.html or a path "
                                               "relative to the current page.")
    element_id: int | None = Field(None, description="click / type / read: the [id] of an element from the "
                                                      "element list (read without it returns the page text).")
    text: str | None = Field(None, description="type: the text to enter.")
    press_enter: bool = Field(False, description="type: press Enter after typing (submits a form).")
    direction: Literal["up", "down", "left", "right"] | None = Field(None, description="scroll: which way.")
    index: int | None = Field(None, description="frame: which frame of the GUI trajectory, 1 = the first.")

    @model_validator(mode="after")
    def _required(self) -> "BrowserArgs":
        needs = {"goto": ["url"], "click": ["element_id"], "type": ["element_id", "text"],
                 "scroll": ["direction"], "frame": ["index"]}
        missing = [name for name in needs.get(self.action, []) if getattr(self, name) is None]
        if missing:
            raise ValueError(f"action {self.action!r} needs {' and '.join(missing)}")
        return self


@dataclass
class _Episode:
    """Browser state of one episode."""

    task_id: str
    site: Path | None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    context: Any = None
    page: Any = None
    router: SiteRouter | None = None
    dialogs: list[str] = field(default_factory=list)
    frame: int | None = None

    async def close(self) -> None:
        if self.context is not None:
            context, self.context, self.page = self.context, None, None
            try:
                await context.close()
            except Exception:  # already gone with its browser
                pass


def _viewport(value: Any) -> tuple[int, int]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    width, _, height = str(value).lower().partition("x")
    return int(width), int(height)


def site_dir(ctx: ToolContext) -> Path | None:
    """The site a dataset's browser serves: `<world>/site`, else `meta["site"]`, else `<root>/site`."""
    dataset = ctx.dataset
    candidates = []
    if dataset.world is not None:
        candidates.append(Path(dataset.world) / "site")
    if dataset.meta.get("site"):
        candidates.append(Path(dataset.root) / str(dataset.meta["site"]))
    candidates.append(Path(dataset.root) / "site")
    return next((c for c in candidates if c.is_dir()), None)


class BrowserOptions(ToolOptions):
    """The browser's options (see the module docstring); declared so that unknown option keys can be refused."""

    browser_viewport: Any = "1280x800"
    browser_marks: bool = True
    browser_action_timeout: float = 15.0
    browser_max_page_bytes: int = DEFAULT_MAX_BYTES
    browser_max_elements: int = 150
    browser_max_sessions: int = 16


@register_tool
class BrowserTool(Tool):
    name = "browser"
    description = (
        "Use a web browser on the pages of this world (http://world.local/) or step through the frames of a GUI "
        "trajectory. One action per call: goto(url), click(element_id), type(element_id, text, press_enter), "
        "scroll(direction), back, read(element_id, optional) for the full text, frame(index) with 1 = first frame, "
        "next, prev. Page actions return a screenshot with numbered boxes and the list of elements as "
        "[id] <tag> \"text\" at (x, y, w, h). If the task has a page of its own, the first action other than "
        "goto opens it."
    )
    Args = BrowserArgs
    Options = BrowserOptions

    def __init__(self, options=None):
        super().__init__(options)
        self._chromium = SharedChromium()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()

    def option(self, name: str, default: Any) -> Any:
        value = getattr(self.options, name, None)
        return default if value is None else value

    @property
    def viewport(self) -> tuple[int, int]:
        return _viewport(self.option("browser_viewport", "1280x800"))

    @property
    def action_timeout(self) -> float:
        return float(self.option("browser_action_timeout", 15.0))

    # -- resources -----------------------------------------------------------------

    def _check_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._episodes.clear()

    async def browser(self) -> Any:
        """The worker's Chromium, launched on first use."""
        self._check_loop()
        return await self._chromium.get()

    def _episode(self, ctx: ToolContext) -> _Episode:
        self._check_loop()
        key = ctx.episode
        state = self._episodes.get(key)
        if state is None:
            state = _Episode(task_id=ctx.task.id, site=site_dir(ctx))
            self._episodes[key] = state
            limit = int(self.option("browser_max_sessions", 16))
            while len(self._episodes) > limit:
                _, oldest = self._episodes.popitem(last=False)
                asyncio.ensure_future(oldest.close())
        self._episodes.move_to_end(key)
        return state

    async def end_episode(self, ctx: ToolContext) -> None:
        """Close the episode's browser context (call once the episode is over)."""
        state = self._episodes.pop(ctx.episode, None)
        if state is not None:
            await state.close()

    async def aclose(self) -> None:
        episodes, self._episodes = list(self._episodes.values()), OrderedDict()
        for state in episodes:
            await state.close()
        await self._chromium.close()

    async def _open_page(self, state: _Episode) -> Any:
        if state.page is not None:
            return state.page
        if state.site is None:
            raise ToolError("this dataset has no site/ directory, so there are no pages to browse")
        browser = await self.browser()
        width, height = self.viewport
        context = await browser.new_context(
            viewport={"width": width, "height": height}, device_scale_factor=1, locale="en-US", timezone_id="UTC",
            accept_downloads=False, service_workers="block", reduced_motion="reduce", color_scheme="light",
        )
        context.set_default_timeout(self.action_timeout * 1000)
        context.set_default_navigation_timeout(self.action_timeout * 1000)
        router = SiteRouter(state.site, int(self.option("browser_max_page_bytes", DEFAULT_MAX_BYTES)))
        await context.route("**/*", router.handle)
        await seal_context(context, router.blocked.append)
        await context.add_init_script(INIT_SCRIPT)
        page = await context.new_page()

        def on_dialog(dialog: Any) -> None:
            state.dialogs.append(f"{dialog.type}: {dialog.message}"[:300])
            asyncio.ensure_future(dialog.dismiss())

        def on_page(extra: Any) -> None:
            if extra is not page:
                asyncio.ensure_future(extra.close())

        page.on("dialog", on_dialog)
        context.on("page", on_page)
        state.context, state.page, state.router = context, page, router
        return page

    # -- actions -------------------------------------------------------------------

    async def run(self, args: BrowserArgs, ctx: ToolContext) -> ToolResult:
        state = self._episode(ctx)
        async with state.lock:
            if args.action in FRAME_ACTIONS:
                return await self._frame(args, ctx, state)
            try:
                return await asyncio.wait_for(self._page_action(args, ctx, state), self.action_timeout + 5)
            except asyncio.TimeoutError:
                raise ToolError(f"browser action {args.action} timed out after {self.action_timeout:g} s") from None

    async def _page_action(self, args: BrowserArgs, ctx: ToolContext, state: _Episode) -> ToolResult:
        from playwright.async_api import Error as PlaywrightError

        page = await self._open_page(state)
        assert state.router is not None
        blocked_from, dialogs_from = len(state.router.blocked), len(state.dialogs)
        state.router.blocked_navigation = None
        notes: list[str] = []
        try:
            if args.action != "goto" and page.url in ("about:blank", ""):
                start = ctx.task.metadata.get("start_url")
                if not start:
                    raise ToolError("no page is open yet; use goto with a URL of the world first")
                await self._goto(page, state, str(start))
                notes.append(f"Opened the task's start page {start}.")
            if args.action == "read":
                result = await self._read(page, args.element_id)
                result.text = "\n".join([*notes, result.text])
                return result
            notes.append(await self._act(page, state, args))
            return await self._observe_in_world(page, state, notes, blocked_from, dialogs_from)
        except PlaywrightError as exc:
            message = str(exc).split("\n")[0]
            if "Timeout" in type(exc).__name__ or "Timeout" in message:
                raise ToolError(f"browser action {args.action} timed out after {self.action_timeout:g} s") from None
            raise ToolError(f"browser action {args.action} failed: {message}") from None

    async def _observe_in_world(self, page: Any, state: _Episode, notes: list[str], blocked_from: int,
                                dialogs_from: int) -> ToolResult:
        """The observation once the tab is in the world: a page that navigates by itself (meta refresh, timers)
        may leave, or destroy the document being read, while it is observed; the last try is taken as it is."""
        from playwright.async_api import Error as PlaywrightError

        for _ in range(2):
            await self._guard(page, state, notes)
            try:
                result = await self.observe(page, state, notes, blocked_from, dialogs_from)
            except PlaywrightError as exc:
                if "context was destroyed" not in str(exc):
                    raise
                await page.wait_for_load_state("load")
                continue
            if is_world_url(result.data["url"]) or result.data["url"] == "about:blank":
                return result
        await self._guard(page, state, notes)
        return await self.observe(page, state, notes, blocked_from, dialogs_from)

    async def _guard(self, page: Any, state: _Episode, notes: list[str]) -> None:
        """Navigation guard: a tab that ended outside the world (an error page of a refused navigation, any
        other scheme) is emptied, and the observation says where the page tried to go."""
        if is_world_url(page.url) or page.url == "about:blank":
            return
        assert state.router is not None
        target = state.router.blocked_navigation or page.url
        await page.goto("about:blank")
        notes.append(f"The page tried to navigate outside the world to {target}; the navigation was blocked and "
                     "the tab is empty (use back or goto).")

    async def _goto(self, page: Any, state: _Episode, url: str) -> int | None:
        target = url.strip()
        if target.startswith("world.local"):
            target = "http://" + target
        base = page.url if is_world_url(page.url) else ORIGIN + "/"
        target = urljoin(base, target)
        if not is_world_url(target):
            assert state.router is not None
            state.router.blocked.append(target)
            raise ToolError(f"{url} is outside the world; the browser only opens pages under {ORIGIN}/")
        parts = urlsplit(target)
        target = parts._replace(scheme="http").geturl()
        response = await page.goto(target, wait_until="load")
        return response.status if response is not None else None

    async def _element(self, page: Any, element_id: int) -> Any:
        locator = page.locator(f'[data-arena-id="{int(element_id)}"]')
        if await locator.count() == 0:
            raise ToolError(f"there is no element [{element_id}] on this page; use an id from the latest element list")
        return locator.first

    async def _act(self, page: Any, state: _Episode, args: BrowserArgs) -> str:
        if args.action == "goto":
            status = await self._goto(page, state, args.url or "")
            shown = page.url if is_world_url(page.url) else args.url
            return f"Opened {shown}" + (f" (HTTP {status})." if status and status != 200 else ".")
        if args.action == "click":
            element = await self._element(page, args.element_id or 0)
            await element.click()
            await page.wait_for_load_state("load")
            return f"Clicked [{args.element_id}]."
        if args.action == "type":
            element = await self._element(page, args.element_id or 0)
            try:
                await element.fill(args.text or "")
            except Exception as exc:
                if "not an <input>" in str(exc) or "Element is not" in str(exc):
                    raise ToolError(f"element [{args.element_id}] does not take text input") from None
                raise
            if args.press_enter:
                await element.press("Enter")
                await page.wait_for_load_state("load")
            return f"Typed into [{args.element_id}]" + (" and pressed Enter." if args.press_enter else ".")
        if args.action == "scroll":
            width, height = self.viewport
            dx, dy = {"up": (0, -0.8 * height), "down": (0, 0.8 * height),
                      "left": (-0.8 * width, 0), "right": (0.8 * width, 0)}[args.direction or "down"]
            moved = await page.evaluate(
                "([dx, dy]) => { const x = scrollX, y = scrollY; window.scrollBy(dx, dy);"
                " return [scrollX - x, scrollY - y]; }", [dx, dy])
            if moved == [0, 0]:
                return f"Cannot scroll {args.direction}: already at the edge of the page."
            return f"Scrolled {args.direction}."
        if args.action == "back":
            response = await page.go_back(wait_until="load")
            if response is None and page.url in ("about:blank", ""):
                raise ToolError("there is no previous page")
            return f"Went back to {page.url}."
        raise ToolArgumentError(f"unknown browser action {args.action!r}")

    async def _read(self, page: Any, element_id: int | None) -> ToolResult:
        if element_id is None:
            text = await page.evaluate("() => document.body ? document.body.innerText : ''")
            what = f"Text of {page.url}"
        else:
            element = await self._element(page, element_id)
            text = await element.evaluate(
                "(el) => (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') ? el.value"
                " : el.tagName === 'SELECT' ? (el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : '')"
                " : (el.innerText || el.textContent || el.getAttribute('alt') || '')")
            what = f"Text of element [{element_id}]"
        text = (text or "").strip()
        limit = 8000
        shown = text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"
        return ToolResult(text=f"{what}:\n{shown}", data={"action": "read", "url": page.url, "element_id": element_id,
                                                          "chars": len(text)})

    async def observe(self, page: Any, state: _Episode, notes: list[str], blocked_from: int = 0,
                      dialogs_from: int = 0) -> ToolResult:
        """Screenshot + element list of the current viewport (the observation of every page action)."""
        info = await page.evaluate(ELEMENTS_JS, {"fullPage": False, "onlyMarked": False,
                                                 "maxElements": int(self.option("browser_max_elements", 150)),
                                                 "maxText": 200})
        png = await page.screenshot(type="png", animations="disabled", caret="hide")
        elements = elements_from(info["elements"])
        marks = bool(self.option("browser_marks", True))

        def render() -> Image.Image:
            with Image.open(io.BytesIO(png)) as im:
                shot = im.convert("RGB")
            return draw_marks(shot, elements) if marks else shot

        image = await asyncio.to_thread(render)
        assert state.router is not None
        blocked = state.router.blocked[blocked_from:]
        dialogs = state.dialogs[dialogs_from:]
        lines = [*notes, f"URL: {page.url}", f"Title: {info['title']}",
                 f"Viewport {info['viewportWidth']}x{info['viewportHeight']} at scroll ({info['scrollX']}, "
                 f"{info['scrollY']}) of a {info['pageWidth']}x{info['pageHeight']} page."]
        if dialogs:
            lines.append("Dismissed dialogs: " + "; ".join(dialogs))
        if blocked:
            lines.append(f"Blocked {len(blocked)} request(s) outside the world: " + ", ".join(blocked[:5])
                         + (" ..." if len(blocked) > 5 else ""))
        lines.append("Elements:" if elements else "Elements: none visible.")
        lines.extend(e.line() for e in elements)
        data = {"url": page.url, "title": info["title"], "scroll": [info["scrollX"], info["scrollY"]],
                "page_size": [info["pageWidth"], info["pageHeight"]], "marks": marks,
                "elements": [e.to_dict() for e in elements], "blocked": blocked, "dialogs": dialogs}
        return ToolResult(text="\n".join(lines), images=[image], data=data)

    async def _frame(self, args: BrowserArgs, ctx: ToolContext, state: _Episode) -> ToolResult:
        frames = ctx.task.metadata.get("frames") or []
        if not frames:
            raise ToolError("this task has no GUI trajectory frames; frame, next and prev need one")
        count = len(frames)
        if args.action == "frame":
            index = int(args.index or 0)
            if not 1 <= index <= count:
                raise ToolArgumentError(f"frame index {index} is out of range: the trajectory has frames 1..{count}")
        elif args.action == "next":
            index = 1 if state.frame is None else state.frame + 1
            if index > count:
                raise ToolError(f"frame {count} is the last frame of the trajectory")
        else:
            if state.frame is None or state.frame <= 1:
                raise ToolError("there is no frame before this one" if state.frame else "no frame shown yet; "
                                "use frame or next first")
            index = state.frame - 1
        rel = str(frames[index - 1])
        try:
            path = ctx.dataset.resolve(rel, where=f"task {ctx.task.id!r} metadata.frames[{index - 1}]")
        except PathEscapeError as exc:
            raise ToolError(str(exc)) from None
        image = await asyncio.to_thread(decode_image, path)
        state.frame = index
        return ToolResult(text=f"Frame {index} of {count} ({Path(rel).name}).", images=[image],
                          data={"action": args.action, "frame": index, "frames": count, "path": rel})


register_setting("browser", ["browser"])
