"""Serper (Google results as JSON): the search provider VistaArena's own text search used.

`--tool-option web_provider=serper`; the key (or a comma-separated pool) comes from the variable named
by `web_api_key_env` (default `SERPER_API_KEY`), `web_endpoint` overrides the public base URL
`https://google.serper.dev` (tests point it at a loopback stand-in).

The API, as documented at https://serper.dev and its playground (request and response fields):
- every call is `POST {endpoint}/{search|images|lens}` with the key in the `X-API-KEY` header and a
  JSON body: `{"q", "num", "gl", "hl"}` for search and images, `{"url", "gl", "hl"}` for lens;
- `/search` answers `{"searchParameters", "organic": [{"title", "link", "snippet", "position", ...}],
  "credits"}` (plus answer boxes and knowledge graphs, unused here);
- `/images` answers `{"images": [{"title", "imageUrl", "thumbnailUrl", "link", "source", "domain",
  "position", ...}]}`;
- `/lens` answers `{"organic": [{"title", "source", "link", "imageUrl", "thumbnailUrl"}]}`;
- errors are JSON `{"message", "statusCode"}`: HTTP 403 `Unauthorized.` for a wrong key, HTTP 400
  `Not enough credits` for a spent one (both rotate to the next key of the pool; these bodies are the
  ones users report verbatim, Serper publishes no error reference), HTTP 429 when requests exceed the
  package's queries per second (retried with backoff; Serper documents no `Retry-After`, but one sent
  by the service or a proxy in front of it is honoured).
- billing (serper.dev pricing table): one credit per successful query of up to 10 results; `num=100`
  costs two. Failed requests cost nothing.

Only `{title, url, snippet}` (search) or `{title, url, image, thumbnail}` (images, lens) of each result
is kept, so that is what the cassette records; the key is sent in a header and recorded nowhere.

`SerperClient` is blocking (one request at a time per call, keys rotated in place); the provider runs it in a
worker thread. The live Lens search (`arena.tools.lens`) uses the same client and key pool.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import httpx

from arena.tools.keypool import KeyPool, scrub
from arena.tools.web_errors import TransientSearchError, WebUnavailable
from arena.tools.web_providers.contract import ImageHit, SearchHit

DEFAULT_ENDPOINT = "https://google.serper.dev"
DEFAULT_KEY_ENV = "SERPER_API_KEY"
ROTATE_STATUSES = (401, 402, 403)


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from an HTTP `Retry-After` header (delta-seconds or an HTTP date); None if absent."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_message(response: httpx.Response) -> str:
    """`HTTP <status>: <message>` from a provider's JSON error (`message` for Serper, `error` for SerpAPI)."""
    try:
        body = response.json()
        text = body.get("message") or body.get("error") if isinstance(body, dict) else None
    except ValueError:
        text = None
    text = text or response.text[:200].strip() or response.reason_phrase
    return scrub(f"HTTP {response.status_code}: {text}")


def check_retry_after(provider: str, response: httpx.Response, max_wait: float) -> float | None:
    """The Retry-After of a 429/503, or WebUnavailable when the provider asks for more than `max_wait` s."""
    wait = retry_after_seconds(response.headers.get("retry-after"))
    if wait is not None and wait > max_wait:
        raise WebUnavailable(f"{provider} asks to retry after {wait:.0f} s ({error_message(response)}), longer "
                             f"than web_max_retry_after={max_wait:g} s")
    return wait


class SerperClient:
    """POSTs to Serper with the pool's current key, rotating on spent or refused keys. Blocking."""

    def __init__(self, pool: KeyPool, *, endpoint: str = DEFAULT_ENDPOINT, timeout: float = 10.0,
                 proxy: str | None = None, max_retry_after: float = 60.0):
        self.pool, self.endpoint = pool, (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.timeout, self.proxy, self.max_retry_after = timeout, proxy, max_retry_after
        self.requests = 0

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer of `POST {endpoint}/{path}`; rotates keys until one works or none is left."""
        while True:
            index, key = self.pool.current()
            try:
                with httpx.Client(timeout=self.timeout, proxy=self.proxy) as client:
                    self.requests += 1
                    response = client.post(f"{self.endpoint}/{path}", json=body,
                                           headers={"X-API-KEY": key, "Content-Type": "application/json"})
            except httpx.TimeoutException:
                raise TransientSearchError(f"serper /{path}: timeout after {self.timeout:g} s") from None
            except httpx.HTTPError as exc:
                raise WebUnavailable(f"the web search is unreachable (serper at {scrub(self.endpoint)}: "
                                     f"{type(exc).__name__}: {scrub(str(exc))})") from None
            if response.status_code == 200:
                try:
                    data = response.json()
                except ValueError:
                    data = None
                if not isinstance(data, dict):
                    raise WebUnavailable(f"serper /{path} answered something that is not a JSON object")
                return data
            message = error_message(response)
            if response.status_code in ROTATE_STATUSES or (
                    response.status_code == 400 and "credit" in message.lower()):
                self.pool.spend(index, message)
                continue
            if response.status_code == 429 or response.status_code >= 500:
                raise TransientSearchError(f"serper /{path}: {message}",
                                           check_retry_after("serper", response, self.max_retry_after))
            raise WebUnavailable(f"the web search refused the request (serper /{path}: {message})")


def _rows(data: dict[str, Any], field: str) -> list[dict[str, Any]]:
    rows = data.get(field)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


class SerperProvider:
    """`web_provider=serper`: Google organic results and Google Images through Serper."""

    name = "serper"

    def __init__(self, client: SerperClient, *, gl: str = "us", hl: str = "en", num: int = 10):
        self.client, self.gl, self.hl, self.num = client, gl, hl, num

    def key_params(self) -> dict[str, Any]:
        return {"gl": self.gl, "hl": self.hl, "num": self.num}

    def text(self, query: str, max_results: int) -> list[SearchHit]:
        """The organic results (blocking)."""
        data = self.client.post("search", {"q": query, "num": max(self.num, max_results), "gl": self.gl,
                                           "hl": self.hl})
        return [SearchHit(title=str(r.get("title", "")), url=str(r.get("link", "")), snippet=str(r.get("snippet", "")))
                for r in _rows(data, "organic")[:max_results]]

    def images(self, query: str, max_results: int) -> list[ImageHit]:
        """The Google Images results (blocking)."""
        data = self.client.post("images", {"q": query, "num": max(self.num, max_results), "gl": self.gl,
                                           "hl": self.hl})
        return [ImageHit(title=str(r.get("title", "")), url=str(r.get("link", "")), image=str(r.get("imageUrl", "")),
                         thumbnail=str(r.get("thumbnailUrl") or r.get("imageUrl") or ""))
                for r in _rows(data, "images")[:max_results]]

    async def search(self, query: str, n: int) -> list[SearchHit]:
        return await asyncio.to_thread(self.text, query, n)

    async def search_images(self, query: str, n: int) -> list[ImageHit]:
        return await asyncio.to_thread(self.images, query, n)

    async def aclose(self) -> None:
        """Nothing to release: the client opens a connection per request."""


def serper_provider(options: Any, *, timeout: float, proxy: str | None) -> SerperProvider:
    """`web_provider=serper` from the run options (`web_endpoint`, `web_api_key_env`, `serper_gl`, ...); a
    replay (`web=replay`) needs no key."""
    get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
    pool = KeyPool.from_env(get("web_api_key_env") or DEFAULT_KEY_ENV, "serper", required=get("web") != "replay")
    client = SerperClient(pool, endpoint=get("web_endpoint") or DEFAULT_ENDPOINT, timeout=timeout, proxy=proxy,
                          max_retry_after=float(get("web_max_retry_after", 60.0)))
    return SerperProvider(client, gl=get("serper_gl", "us"), hl=get("serper_hl", "en"),
                          num=int(get("serper_num", 10)))
