"""Live web backends against a local imitation of the web (SearXNG JSON, pages, thumbnails) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from PIL import Image

from arena.core.tool import ToolError, ToolOptions
from arena.tools.address_guard import is_private_host
from arena.tools.cassette import Cassette
from arena.tools.page_fetch import PageFetcher
from arena.tools.web_errors import PageError, TransientSearchError, WebUnavailable
from arena.tools.web_providers import DDGSProvider, SearxngProvider
from arena.tools.web_search import WebSearch

PAGES = {
    "orvanta": ("Orvanta Lighthouse",
                "<p>Orvanta Lighthouse is a stone tower on the Keltic coast.</p>"
                "<p>It was built in 1874 by the engineer Mirelle Dastrow.</p><p>The tower is 42 metres tall.</p>"),
    "dastrow": ("Mirelle Dastrow", "<p>Mirelle Dastrow was an engineer born in Velmora.</p>"
                "<script>document.write('<p>She founded the Dastrow Works in 1869.</p>')</script>"),
}


def png(color: tuple[int, int, int], size: tuple[int, int] = (80, 60)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


class FakeWeb:
    """A search engine (SearXNG JSON API), web pages that pull images, CSS and fonts, and thumbnails.

    `paths` lists every path requested, in order; `rate_limit` makes that many
    next /search requests answer 429. With `distinct_urls`, result URLs carry the query (`?q=`), so
    every query leads to pages not seen before.
    """

    def __init__(self, distinct_urls: bool = False):
        self.distinct_urls = distinct_urls
        self.paths: list[str] = []
        self.rate_limit = 0
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                web.paths.append(parts.path)
                if parts.path == "/search":
                    if web.rate_limit > 0:
                        web.rate_limit -= 1
                        return self._send(429, b"slow down", "text/plain")
                    query = parse_qs(parts.query)
                    words = query.get("q", [""])[0]
                    body = web.images() if query.get("categories") == ["images"] else web.listing(words)
                    return self._send(200, json.dumps({"results": body}).encode(), "application/json")
                if parts.path.startswith("/pages/"):
                    name = parts.path.rsplit("/", 1)[-1]
                    if name == "slow":
                        time.sleep(3)
                    if name not in PAGES:
                        return self._send(404, b"<h1>not found</h1>", "text/html")
                    title, body = PAGES[name]
                    html = (f"<html><head><title>{title}</title><link rel='stylesheet' href='/static/site.css'>"
                            "<style>@font-face {font-family: F; src: url(/static/font.woff2);} "
                            "body {font-family: F}</style></head>"
                            f"<body><img src='/img/photo.png'>{body}</body></html>")
                    return self._send(200, html.encode(), "text/html; charset=utf-8")
                if parts.path.startswith("/img/"):
                    colors = {"red.png": (200, 30, 30), "blue.png": (30, 30, 200)}
                    name = parts.path.rsplit("/", 1)[-1]
                    if name in colors:
                        return self._send(200, png(colors[name]), "image/png")
                    return self._send(200, png((0, 0, 0)), "image/png")
                return self._send(404, b"not found", "text/plain")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def listing(self, query: str = "") -> list[dict[str, str]]:
        suffix = f"?q={quote(query)}" if self.distinct_urls else ""
        return [
            {"title": "Orvanta Lighthouse", "url": f"{self.base}/pages/orvanta{suffix}",
             "content": "A lighthouse (snippet)."},
            {"title": "Mirelle Dastrow", "url": f"{self.base}/pages/dastrow{suffix}",
             "content": "An engineer (snippet)."},
            {"title": "Gone", "url": f"{self.base}/pages/gone{suffix}", "content": "The gone page's snippet."},
        ]

    def images(self) -> list[dict[str, str]]:
        return [
            {"title": "Orvanta at dusk", "url": f"{self.base}/pages/orvanta", "img_src": f"{self.base}/img/red.png",
             "thumbnail_src": f"{self.base}/img/red.png"},
            {"title": "Keltic coast", "url": f"{self.base}/pages/coast", "img_src": f"{self.base}/img/blue.png",
             "thumbnail_src": f"{self.base}/img/blue.png"},
        ]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake_web():
    web = FakeWeb()
    yield web
    web.stop()


def web_options(web: FakeWeb, **extra: Any) -> ToolOptions:
    options = dict(web="live", web_provider="searxng", web_endpoint=web.base, allow_private_hosts=True,
                   web_min_interval=0.0, web_retry_initial=0.05)
    options.update(extra)
    return ToolOptions(**options)


def test_text_search_reads_pages_in_chromium_without_images_css_or_fonts(fake_web: FakeWeb):
    async def go():
        web = WebSearch.from_options(web_options(fake_web))
        try:
            return await web.text_search("Who built Orvanta lighthouse?", 3), web.fetcher.launches
        finally:
            await web.aclose()

    before = len(fake_web.paths)
    result, launches = asyncio.run(go())
    seen = fake_web.paths[before:]
    assert launches == 1
    assert sorted(p for p in seen if p.startswith("/pages/")) == ["/pages/dastrow", "/pages/gone", "/pages/orvanta"]
    assert not [p for p in seen if p.startswith(("/img/", "/static/"))], seen
    blocks = result.text.split("\n\n")
    assert blocks[0].startswith("[1] Orvanta Lighthouse\nURL: ")
    assert "built in 1874 by the engineer Mirelle Dastrow" in blocks[0]
    assert "She founded the Dastrow Works in 1869." in blocks[1], "script-written text comes from the rendered page"
    assert blocks[2].endswith("The gone page's snippet."), "a page that fails falls back to its snippet"
    assert [h["page"] for h in result.data["hits"]] == ["ok", "ok", "HTTP 404"]


def test_private_addresses_are_refused_unless_allowed(fake_web: FakeWeb):
    async def go():
        web = WebSearch.from_options(web_options(fake_web, allow_private_hosts=False))
        try:
            return await web.text_search("orvanta", 3), web.fetcher.launches
        finally:
            await web.aclose()

    before = len(fake_web.paths)
    result, launches = asyncio.run(go())
    assert launches == 0
    assert fake_web.paths[before:] == ["/search"]
    assert "A lighthouse (snippet)." in result.text
    assert all(h["page"].startswith("refused") for h in result.data["hits"])
    assert is_private_host("http://10.1.2.3/x") and is_private_host("http://localhost:8000/")
    assert not is_private_host("https://en.wikipedia.org/wiki/Lighthouse")


def test_a_page_that_does_not_load_in_time_is_a_page_error(fake_web: FakeWeb):
    async def go():
        fetcher = PageFetcher(timeout=0.5, allow_private_hosts=True)
        try:
            with pytest.raises(Exception) as failure:
                await fetcher.fetch(f"{fake_web.base}/pages/slow")
            return failure.value
        finally:
            await fetcher.aclose()

    error = asyncio.run(go())
    assert isinstance(error, PageError) and "Timeout" in str(error)


def test_rate_limits_are_retried(fake_web: FakeWeb):
    async def go():
        web = WebSearch.from_options(web_options(fake_web, fetch_pages=False))
        try:
            return await web.text_search("orvanta", 2), web.provider_calls
        finally:
            await web.aclose()

    fake_web.rate_limit = 2
    result, calls = asyncio.run(go())
    assert calls == 3
    assert result.text.startswith("[1] Orvanta Lighthouse")
    assert "[3]" not in result.text

    fake_web.rate_limit = 10

    async def gives_up():
        web = WebSearch.from_options(web_options(fake_web, fetch_pages=False, web_retries=1))
        try:
            await web.text_search("orvanta", 2)
        finally:
            await web.aclose()

    with pytest.raises(WebUnavailable, match="kept failing after 2 attempts"):
        asyncio.run(gives_up())
    fake_web.rate_limit = 0


def test_image_search_returns_titles_page_urls_and_thumbnails(fake_web: FakeWeb):
    async def go():
        web = WebSearch.from_options(web_options(fake_web))
        try:
            return await web.image_search("orvanta lighthouse")
        finally:
            await web.aclose()

    result = asyncio.run(go())
    assert result.text.splitlines()[0] == "[1] Orvanta at dusk"
    assert f"URL: {fake_web.base}/pages/coast" in result.text
    assert [im.getpixel((5, 5)) for im in result.images] == [(200, 30, 30), (30, 30, 200)]


class FakeDDGS:
    """Stands in for ddgs.DDGS: scripted outcomes, one per call."""

    outcomes: list[Any] = []
    calls: list[tuple[str, dict[str, Any]]] = []

    def __init__(self, proxy=None, timeout=None):
        pass

    def _next(self, method: str, query: str, **kwargs: Any):
        FakeDDGS.calls.append((method, {"query": query, **kwargs}))
        outcome = FakeDDGS.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def text(self, query: str, **kwargs: Any):
        return self._next("text", query, **kwargs)

    def images(self, query: str, **kwargs: Any):
        return self._next("images", query, **kwargs)


def test_ddgs_provider_maps_results_retries_rate_limits_and_fails_fast_offline():
    from ddgs.exceptions import DDGSException, RatelimitException

    provider = DDGSProvider(factory=FakeDDGS, region="uk-en")
    FakeDDGS.calls = []
    FakeDDGS.outcomes = [RatelimitException("202 Ratelimit"),
                         [{"title": "Orvanta", "href": "https://wiki.example/Orvanta", "body": "A lighthouse."}]]
    with pytest.raises(TransientSearchError):
        provider.text("orvanta", 3)
    assert provider.text("orvanta", 3) == [{"title": "Orvanta", "url": "https://wiki.example/Orvanta",
                                             "snippet": "A lighthouse."}]
    assert FakeDDGS.calls[-1] == ("text", {"query": "orvanta", "max_results": 3, "region": "uk-en",
                                           "safesearch": "moderate", "backend": "auto"})

    FakeDDGS.outcomes = [[{"title": "Dusk", "url": "https://p.example/1", "image": "https://i.example/1.jpg",
                           "thumbnail": "https://t.example/1.jpg"}],
                         DDGSException("No results found."),
                         DDGSException("DNSError: error resolving DNS")]
    assert provider.images("orvanta", 5)[0]["thumbnail"] == "https://t.example/1.jpg"
    assert provider.text("zzzz", 3) == []
    with pytest.raises(WebUnavailable, match="unreachable.*DNSError"):
        provider.text("orvanta", 3)


def test_web_search_over_ddgs_retries_then_reports_unreachable_at_once(tmp_path: Path):
    from ddgs.exceptions import DDGSException, RatelimitException

    FakeDDGS.calls = []
    FakeDDGS.outcomes = [RatelimitException("ratelimit"),
                         [{"title": "T", "href": "https://x.example/", "body": "Snippet body."}],
                         DDGSException("ConnectError: Connection refused")]
    web = WebSearch(cassette=Cassette("live"),
                    provider=DDGSProvider(factory=FakeDDGS), fetch_pages=False, min_interval=0, retry_initial=0.01)

    async def go():
        try:
            first = await web.text_search("orvanta", 1)
            with pytest.raises(ToolError) as failure:
                await web.text_search("velmora", 1)
            return first, failure.value
        finally:
            await web.aclose()

    first, failure = asyncio.run(go())
    assert first.text == "[1] T\nURL: https://x.example/\nSnippet body."
    assert len(FakeDDGS.calls) == 3, "one retry after the rate limit, no retry when unreachable"
    assert "unreachable" in str(failure)


def test_searxng_needs_an_endpoint():
    with pytest.raises(ValueError, match="web_endpoint"):
        SearxngProvider("")
