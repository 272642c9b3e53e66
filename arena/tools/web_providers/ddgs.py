"""`web_provider=ddgs` (the default): the `ddgs` metasearch library over DuckDuckGo, Bing, Brave, Mojeek, ...
engines; no key needed. Options: `ddgs_backend` (engines, default `auto`), `web_region`, `web_safesearch`,
`web_timeout`, `web_proxy`.

The library is blocking: each listing runs in a worker thread. Its rate-limit and timeout exceptions are
retried; its "No results found" is an empty listing; any other of its errors means the search is unreachable.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from arena.tools.web_errors import TransientSearchError, WebUnavailable
from arena.tools.web_providers.contract import ImageHit, SearchHit


class DDGSProvider:
    """`ddgs` (metasearch over DuckDuckGo, Bing, Brave, Mojeek, ... engines)."""

    name = "ddgs"

    def __init__(self, *, timeout: float = 10.0, proxy: str | None = None, backend: str = "auto",
                 region: str = "us-en", safesearch: str = "moderate", factory: Callable[..., Any] | None = None):
        self.timeout, self.proxy, self.backend = timeout, proxy, backend
        self.region, self.safesearch = region, safesearch
        self._factory = factory

    def key_params(self) -> dict[str, Any]:
        return {"region": self.region, "safesearch": self.safesearch, "engines": self.backend}

    def _client(self):
        if self._factory is not None:
            return self._factory(proxy=self.proxy, timeout=self.timeout)
        from ddgs import DDGS  # imported on first search: the library is heavy and only live runs need it

        return DDGS(proxy=self.proxy, timeout=int(max(1, self.timeout)))

    def _call(self, method: str, query: str, max_results: int) -> list[dict[str, Any]]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            return getattr(self._client(), method)(query, max_results=max_results, region=self.region,
                                                   safesearch=self.safesearch, backend=self.backend)
        except (RatelimitException, TimeoutException) as exc:
            raise TransientSearchError(f"ddgs: {type(exc).__name__}: {exc}") from None
        except DDGSException as exc:
            if "no results found" in str(exc).lower():
                return []
            raise WebUnavailable(f"the web search is unreachable (ddgs: {exc})") from None

    def text(self, query: str, max_results: int) -> list[SearchHit]:
        """The text results (blocking)."""
        rows = self._call("text", query, max_results)
        return [SearchHit(title=str(r.get("title", "")), url=str(r.get("href", "")), snippet=str(r.get("body", "")))
                for r in rows]

    def images(self, query: str, max_results: int) -> list[ImageHit]:
        """The image results (blocking)."""
        rows = self._call("images", query, max_results)
        return [ImageHit(title=str(r.get("title", "")), url=str(r.get("url", "")), image=str(r.get("image", "")),
                         thumbnail=str(r.get("thumbnail") or r.get("image") or "")) for r in rows]

    async def search(self, query: str, n: int) -> list[SearchHit]:
        return await asyncio.to_thread(self.text, query, n)

    async def search_images(self, query: str, n: int) -> list[ImageHit]:
        return await asyncio.to_thread(self.images, query, n)

    async def aclose(self) -> None:
        """Nothing to release: the library opens a client per search."""
