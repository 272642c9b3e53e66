"""Launching Chromium for Playwright: Debian's package when present, Playwright's own otherwise."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

_CANDIDATES = ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium-browser")


def chromium_executable() -> str | None:
    """ARENA_CHROMIUM if set, else a system Chromium, else None (Playwright's bundled browser)."""
    explicit = os.environ.get("ARENA_CHROMIUM")
    if explicit:
        return explicit
    for candidate in _CANDIDATES:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


async def launch_chromium(playwright):
    """Launch a headless Chromium with the arena's flags; the caller closes it."""
    return await playwright.chromium.launch(
        executable_path=chromium_executable(), args=LAUNCH_ARGS, headless=True
    )


class SharedChromium:
    """One Chromium for a tool: launched on first use, relaunched if it died, and bound to the
    running event loop (a run in a new loop gets a new browser). `launches` counts launches,
    so an owner can drop pages it pooled from an earlier browser."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self.launches = 0

    async def get(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._lock = loop, asyncio.Lock()
            self._playwright = self._browser = None
        assert self._lock is not None
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                from playwright.async_api import async_playwright

                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await launch_chromium(self._playwright)
                self.launches += 1
        return self._browser

    async def close(self) -> None:
        """Close the browser and stop Playwright; errors of an already dead browser are ignored."""
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        for closing in (browser.close if browser else None, playwright.stop if playwright else None):
            if closing is None:
                continue
            try:
                await closing()
            except Exception:
                pass
