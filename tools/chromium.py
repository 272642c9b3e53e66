"""Launching Chromium for Playwright: Debian's package when present, Playwright's own otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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
