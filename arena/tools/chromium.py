"""Launching Chromium for Playwright, contained by construction: nothing it does can leave the machine's arena.

Every Chromium of the arena (the `browser` and `render` tools, world builders)
is launched by `launch_chromium` with a deny-by-default network:

- Its only proxy is a *black hole*: a loopback TCP port this process has bound
  and never listens on, so a connection to it is refused at once and no other
  program can take the port. `--proxy-bypass-list=<-loopback>` removes Chromium's
  implicit loopback bypass, so 127.0.0.1 and localhost go to the black hole too.
  A request the tools answer by route interception never reaches the proxy;
  every other request of any kind (navigations, iframes, forms, preconnects,
  speculative prefetches, WebSockets, TURN over TCP) dies there.
- `--host-resolver-rules` maps every host name to "not found": no DNS query is
  ever sent (DNS prefetch included).
- WebRTC may not use UDP that does not go through the proxy
  (`--webrtc-ip-handling-policy=disable_non_proxied_udp`), so STUN, TURN
  over UDP and ICE checks to a remote candidate send nothing; QUIC (and with it
  WebTransport) is off.
- Background services that fetch on their own (component updates, sync,
  translation, domain reliability, hyperlink pings, DNS-over-HTTPS,
  prerendering) are off.

The one exception is the live-web page fetcher of `web_search` (`--web live`, and
recording cassettes), whose job is to read the web: it launches with
`contained=False` (no proxy, real DNS) and filters requests itself.

`seal_context` adds the per-context layer: every WebSocket is closed before it
connects, RTCPeerConnection and WebTransport are removed from every frame, and
service workers are blocked at context creation by the callers. Tests in
tests/test_containment.py attack all of it against a TCP+UDP sink; the flags
alone hold every vector there (checked with `seal_context` disabled), so the
script layer is defence in depth.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from pathlib import Path
from typing import Any, Callable

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--no-pings",
    "--no-first-run",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-features=DnsOverHttps,NetworkPrediction,Prerender2,"
    "PreloadingHeuristics,OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
]

SEAL_JS = """(() => {
  for (const name of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'WebTransport']) {
    try { delete globalThis[name]; } catch (e) {}
    try { Object.defineProperty(globalThis, name, {value: undefined, configurable: false, writable: false}); }
    catch (e) {}
  }
})();"""

_BLACK_HOLE: socket.socket | None = None


def black_hole_proxy() -> str:
    """`http://127.0.0.1:<port>` of a TCP port bound by this process and never listened on (refuses everything)."""
    global _BLACK_HOLE
    if _BLACK_HOLE is None:
        hole = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        hole.bind(("127.0.0.1", 0))
        _BLACK_HOLE = hole
    return f"http://127.0.0.1:{_BLACK_HOLE.getsockname()[1]}"


def launch_args(contained: bool = True) -> list[str]:
    """The arena's Chromium flags; `contained` adds the black-hole proxy and the unresolvable host names."""
    if not contained:
        return list(LAUNCH_ARGS)
    return [*LAUNCH_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND", f"--proxy-server={black_hole_proxy()}",
            "--proxy-bypass-list=<-loopback>"]

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


async def launch_chromium(playwright, contained: bool = True):
    """Launch a headless Chromium with the arena's flags (contained unless told otherwise); the caller closes it."""
    return await playwright.chromium.launch(
        executable_path=chromium_executable(), args=launch_args(contained), headless=True
    )


async def seal_context(context: Any, on_blocked: Callable[[str], None] | None = None) -> None:
    """Close every WebSocket of `context` before it connects (reporting its URL) and remove WebRTC and
    WebTransport from its frames. Create the context with `service_workers="block"`."""

    async def refuse(ws: Any) -> None:
        if on_blocked is not None:
            on_blocked(ws.url)
        await ws.close(code=1008, reason="outside the world")

    await context.route_web_socket("**/*", refuse)
    await context.add_init_script(SEAL_JS)


class SharedChromium:
    """One Chromium for a tool: launched on first use, relaunched if it died, and bound to the
    running event loop (a run in a new loop gets a new browser). `launches` counts launches,
    so an owner can drop pages it pooled from an earlier browser. Contained unless `contained=False`."""

    def __init__(self, contained: bool = True) -> None:
        self.contained = contained
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
                self._browser = await launch_chromium(self._playwright, self.contained)
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
