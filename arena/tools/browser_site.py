"""Serving a world's `site/` directory to Chromium by route interception: the browser's only network.

Every request of a browser context goes through `SiteRouter.handle`. Requests to
the world's fake origin `http://world.local/` are answered from the site
directory (paths resolved inside it; a directory serves its `index.html`; a
missing file is a 404 page; a file over the size limit is a 413 page). Every
other request (any other host, scheme or port) is aborted and recorded in
`blocked`, so an observation can say what the page tried to reach. No server
socket is opened.
"""

from __future__ import annotations

import asyncio
import html
import mimetypes
from pathlib import Path
from urllib.parse import unquote, urlsplit

from arena.core.paths import PathEscapeError, resolve_inside

ORIGIN_HOST = "world.local"
ORIGIN = f"http://{ORIGIN_HOST}"
DEFAULT_MAX_BYTES = 5_000_000

mimetypes.add_type("image/svg+xml", ".svg")
mimetypes.add_type("text/javascript", ".js")


def is_world_url(url: str) -> bool:
    """True for http(s)://world.local/... (any other host, port or scheme is outside the world)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == ORIGIN_HOST


def world_url(path: str) -> str:
    """The URL of a site-relative path."""
    return f"{ORIGIN}/{path.lstrip('/')}"


def _message_page(status: int, title: str, detail: str) -> bytes:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{status} {html.escape(title)}</title></head>"
            f"<body><h1>{status} {html.escape(title)}</h1><p>{html.escape(detail)}</p></body></html>").encode()


class SiteRouter:
    """Answers a context's requests from `site`; records every request it refused."""

    def __init__(self, site: Path, max_bytes: int = DEFAULT_MAX_BYTES):
        self.site = Path(site).resolve()
        self.max_bytes = max_bytes
        self.blocked: list[str] = []
        self.served: list[str] = []
        self.blocked_navigation: str | None = None  # the last navigation refused

    def lookup(self, url: str) -> tuple[int, bytes, str]:
        """(status, body, content type) for a world URL."""
        path = unquote(urlsplit(url).path).lstrip("/")
        try:
            file = resolve_inside(self.site, path or ".", where="browser request")
        except PathEscapeError:
            return 403, _message_page(403, "Forbidden", f"{path} is outside the site"), "text/html"
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file():
            return 404, _message_page(404, "Not Found", f"/{path} does not exist in this world"), "text/html"
        size = file.stat().st_size
        if size > self.max_bytes:
            return 413, _message_page(413, "Page Too Large",
                                      f"/{path} is {size} bytes; the browser limit is {self.max_bytes}"), "text/html"
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if content_type.startswith("text/") or content_type in ("image/svg+xml", "text/javascript"):
            content_type += "; charset=utf-8"
        return 200, file.read_bytes(), content_type

    async def handle(self, route) -> None:
        url = route.request.url
        if is_world_url(url):
            status, body, content_type = await asyncio.to_thread(self.lookup, url)
            self.served.append(url)
            await route.fulfill(status=status, body=body, headers={"content-type": content_type,
                                                                    "cache-control": "no-store"})
            return
        self.blocked.append(url)
        if route.request.is_navigation_request():
            self.blocked_navigation = url
        await route.abort("blockedbyclient")
