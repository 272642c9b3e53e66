"""`web_provider=searxng`: any SearXNG-compatible JSON endpoint (`--tool-option web_endpoint=URL`).

The request, as SearXNG documents its search API (https://docs.searxng.org/dev/search_api.html):
`GET {endpoint}/search?q=...&format=json&categories=general|images&safesearch=...&language=...`, answered
with `{"results": [...]}`, each result carrying `title`, `url` and `content` (text) or `img_src` and
`thumbnail_src` (images). HTTP 429 and 5xx are retried, a timeout too; other failures end the call.

One HTTP client per run (opened on the first search, closed with the run).
"""

from __future__ import annotations

from typing import Any

import httpx

from arena.tools.web_errors import TransientSearchError, WebConfigError, WebUnavailable
from arena.tools.web_providers.contract import ImageHit, SearchHit


class SearxngProvider:
    """A SearXNG-compatible JSON endpoint: `GET {endpoint}/search?q=...&format=json[&categories=images]`."""

    name = "searxng"

    def __init__(self, endpoint: str, *, timeout: float = 10.0, proxy: str | None = None,
                 safesearch: int = 1, language: str = "en"):
        if not endpoint:
            raise WebConfigError("web_provider=searxng needs --tool-option web_endpoint=URL")
        self.endpoint = endpoint.rstrip("/")
        self.timeout, self.proxy, self.safesearch, self.language = timeout, proxy, safesearch, language
        self._http: httpx.AsyncClient | None = None

    def key_params(self) -> dict[str, Any]:
        return {"safesearch": self.safesearch, "language": self.language}

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.timeout, proxy=self.proxy, follow_redirects=True)
        return self._http

    async def _get(self, query: str, category: str) -> list[dict[str, Any]]:
        params = {"q": query, "format": "json", "categories": category, "safesearch": self.safesearch,
                  "language": self.language}
        try:
            response = await self._client().get(f"{self.endpoint}/search", params=params)
        except httpx.TimeoutException as exc:
            raise TransientSearchError(f"searxng: timeout ({exc})") from None
        except httpx.HTTPError as exc:
            raise WebUnavailable(f"the web search is unreachable (searxng at {self.endpoint}: "
                                 f"{type(exc).__name__}: {exc})") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientSearchError(f"searxng: HTTP {response.status_code}")
        if response.status_code != 200:
            raise WebUnavailable(f"the web search refused the request (searxng: HTTP {response.status_code})")
        try:
            results = response.json().get("results", [])
        except (ValueError, AttributeError):
            raise WebUnavailable("the web search returned something that is not SearXNG JSON") from None
        return [r for r in results if isinstance(r, dict)]

    async def search(self, query: str, n: int) -> list[SearchHit]:
        return [SearchHit(title=str(r.get("title", "")), url=str(r.get("url", "")), snippet=str(r.get("content", "")))
                for r in (await self._get(query, "general"))[:n]]

    async def search_images(self, query: str, n: int) -> list[ImageHit]:
        return [ImageHit(title=str(r.get("title", "")), url=str(r.get("url", "")), image=str(r.get("img_src", "")),
                         thumbnail=str(r.get("thumbnail_src") or r.get("img_src") or ""))
                for r in (await self._get(query, "images"))[:n]]

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()
