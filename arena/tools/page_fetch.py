"""Reading web pages for the live text search: headless Chromium returning a page's title and visible text.

One browser context per run (new contexts cost ~0.3 s of CPU each) with tabs reused across fetches; images,
style sheets, fonts and media are blocked, and every request (redirects and sub-resources included) passes
the address guard (`arena.tools.address_guard`). Timeout `page_timeout` (default 20 s); text capped at
`page_max_chars`.
"""

from __future__ import annotations

import asyncio

from arena.core.tool import ToolError
from arena.tools.address_guard import check_fetchable, is_private_host
from arena.tools.chromium import SharedChromium
from arena.tools.web_errors import PageError

BLOCKED_RESOURCES = frozenset({"image", "stylesheet", "font", "media"})


class PageFetcher:
    """Headless Chromium (one browser, launched on first use) that returns a page's title and visible text."""

    def __init__(self, *, timeout: float = 20.0, max_chars: int = 100_000, allow_private_hosts: bool = False,
                 max_pages: int = 4):
        self.timeout, self.max_chars, self.allow_private_hosts = timeout, max_chars, allow_private_hosts
        self._slots = asyncio.Semaphore(max_pages)
        self._lock = asyncio.Lock()
        self._chromium = SharedChromium(contained=False)  # reading the live web is its job; `_route` filters
        self._context_ = None
        self._idle: list = []
        self.launches = 0

    async def _context(self):
        """The shared browser context (one page per fetch in it: new contexts cost ~0.3 s of CPU each)."""
        async with self._lock:
            if self._context_ is None:
                try:
                    browser = await self._chromium.get()
                    self._context_ = await browser.new_context(java_script_enabled=True, accept_downloads=False)
                    await self._context_.route("**/*", self._route)
                except Exception as exc:
                    await self.aclose()
                    raise ToolError(f"cannot start Chromium to read pages: {type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
                self.launches += 1
        return self._context_

    async def _route(self, route) -> None:
        request = route.request
        blocked = request.resource_type in BLOCKED_RESOURCES or (
            not self.allow_private_hosts and is_private_host(request.url))
        if blocked:
            await route.abort()
        else:
            await route.continue_()

    async def fetch(self, url: str) -> dict[str, str]:
        """`{url, title, text}` of the page after redirects; PageError when it cannot be read.

        Tabs are reused (opening one costs a renderer start); a tab that failed is closed, not reused.
        """
        check_fetchable(url, self.allow_private_hosts)
        context = await self._context()
        async with self._slots:
            page = self._idle.pop() if self._idle else await context.new_page()
            healthy = False
            try:
                try:
                    response = await page.goto(url, timeout=self.timeout * 1000, wait_until="domcontentloaded")
                except Exception as exc:  # playwright raises its own Error/TimeoutError
                    raise PageError(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
                if response is not None and response.status >= 400:
                    healthy = True
                    raise PageError(f"HTTP {response.status}")
                title = await page.title()
                text = await page.evaluate("() => document.body ? document.body.innerText : ''")
                final_url = page.url
                healthy = True
            finally:
                if healthy and not page.is_closed():
                    self._idle.append(page)
                else:
                    await page.close()
        text = "\n".join(line.strip() for line in str(text).splitlines() if line.strip())
        return {"url": final_url, "title": title, "text": text[: self.max_chars]}

    async def aclose(self) -> None:
        self._context_ = None
        self._idle = []
        await self._chromium.close()
