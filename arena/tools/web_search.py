"""The live web behind `text_search_tool` and `image_search_tool`, recorded in cassettes.

Selected by `--web live|record|replay|refresh` (see `arena.tools.cassette` for the modes
and `--cassette FILE`); `--web offline` (the default) keeps the world's corpus and
image index. What one text search does, after VistaArena (PROTOCOLS.md §1):

1. a search listing of the top-k results from a provider: `ddgs` (default; the
   DuckDuckGo-search family of engines, no key needed), `searxng` (any
   SearXNG-compatible JSON endpoint, `--tool-option web_endpoint=URL`) or `serper`
   (Google, as VistaArena used; keys and rotation in `arena.tools.serper`);
2. each result's page fetched in headless Chromium (images, style sheets, fonts
   and media blocked; `page_timeout`, default 20 s; text capped at
   `page_max_chars`), falling back to the listing's snippet when the page fails;
3. each page summarised in at most five sentences with the query in mind: by a
   summariser model when `summarizer_model` and `summarizer_base_url` are set
   (OpenAI-compatible, via `arena.endpoints.client`), followed by one summary over all
   results; else extractively (the sentences sharing most query terms).

`image_search_tool` in mode `web` (`--image-search web`) is a text-to-image
lookup (the providers' image search by words); mode `live` reverse-searches an
image in context on Google Lens (`arena.tools.lens`).

Listing requests are spaced by `web_min_interval` seconds and retried with
tenacity on rate limits and timeouts (never sooner than a `Retry-After` says);
an unreachable network (no DNS, refused connection) fails at once with an error
observation, and the run goes on.
Pages and thumbnails on loopback or private addresses (IP literals and
`localhost`) are refused unless `allow_private_hosts` is set (tests use it).
Every listing, page, summary and thumbnail goes through the cassette, and the
observation is built from the recorded values only.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, Protocol
from urllib.parse import urlsplit

import bm25s
import httpx
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential, wait_random

from arena.endpoints.client import Endpoint, EndpointConfig, EndpointError
from arena.core.images import ImageError, decode_image
from arena.core.tool import ToolError, ToolOptions, ToolResult
from arena.tools.cassette import Cassette, Recorded, normalize_text, normalize_url, validate_mode
from arena.tools.chromium import SharedChromium
from arena.tools.corpus_index import summarize as extractive_summary
from arena.tools.keypool import KeyPool
from arena.tools.search_results import MAX_IMAGE_RESULTS, THUMBNAIL_SIDE, SearchResult, format_results
from arena.tools.serper import DEFAULT_ENDPOINT as SERPER_ENDPOINT
from arena.tools.serper import DEFAULT_KEY_ENV as SERPER_KEY_ENV
from arena.tools.serper import SerperClient, SerperProvider
from arena.tools.web_errors import TransientSearchError, WebConfigError, WebUnavailable

LISTING_VERSION = 1
PAGE_BACKEND = "chromium.page/1"
THUMBNAIL_BACKEND = "http.thumbnail/1"
SUMMARY_BACKEND = "summary/1"
FINAL_SUMMARY_BACKEND = "summary.final/1"
BLOCKED_RESOURCES = frozenset({"image", "stylesheet", "font", "media"})
MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024

PAGE_PROMPT = (
    "Search query: {query}\nPage title: {title}\nPage URL: {url}\n\nPage text:\n{text}\n\n"
    "Summarise the main content of this page in no more than five sentences. Keep every fact, name, number "
    "and date that could help answer the search query."
)
FINAL_PROMPT = (
    "Search query: {query}\n\nSummaries of the top search results:\n{summaries}\n\n"
    "Write one summary of these results in no more than five sentences, keeping whatever helps answer the "
    "query and saying where the sources disagree."
)
SUMMARIZER_SYSTEM = "You condense web pages for a research assistant. Be factual and brief."


class WebOptions(ToolOptions):
    """Options of the tools that can reach the live web: `web` (offline, or a cassette mode) and the
    cassette file; provider options (`web_provider`, `web_endpoint`, ...) are read by `check_web_options`."""

    web: Literal["offline", "live", "record", "replay", "refresh"] = "offline"
    cassette: str | None = None
    web_provider: str = "ddgs"
    web_endpoint: str = ""
    web_proxy: str | None = None
    web_timeout: float = 10.0
    web_region: str = "us-en"
    web_safesearch: str = "moderate"
    web_min_interval: float = 1.0
    web_retries: int = 2
    web_retry_initial: float = 1.0
    ddgs_backend: str = "auto"
    summarizer_model: str | None = None
    summarizer_base_url: str | None = None
    summarizer_api_key_env: str | None = None
    summarizer_max_tokens: int | None = 512
    summarizer_timeout: float = 60.0
    summarizer_max_retries: int = 2
    summarizer_max_chars: int = 20_000
    allow_private_hosts: bool = False
    page_timeout: float = 20.0
    page_max_chars: int = 100_000
    fetch_pages: bool = True
    web_api_key_env: str | None = None
    web_max_retry_after: float = 60.0
    serper_gl: str = "us"
    serper_hl: str = "en"
    serper_num: int = 10


class PageError(Exception):
    """A page that could not be loaded (the snippet is used instead)."""


class WebImageSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=500, description="Words describing the images to find.")


WEB_IMAGE_DESCRIPTION = ("Search the web for images matching a text query. Returns up to five results, each with a "
                         "title, the URL of the page showing the image, and a thumbnail.")


class SearchProvider(Protocol):
    """A source of search listings. Methods are blocking (run in a worker thread).

    `text` returns `{title, url, snippet}` dicts; `images` returns `{title, url,
    image, thumbnail}` dicts (url = the page showing the image). Raise
    TransientSearchError to be retried, WebUnavailable to fail the call.
    """

    name: str

    def key_params(self) -> dict[str, Any]:
        """Settings that change the listing (region, safe search...): part of the cassette key."""
        ...

    def text(self, query: str, max_results: int) -> list[dict[str, str]]: ...

    def images(self, query: str, max_results: int) -> list[dict[str, str]]: ...


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
        from ddgs import DDGS

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

    def text(self, query: str, max_results: int) -> list[dict[str, str]]:
        rows = self._call("text", query, max_results)
        return [{"title": str(r.get("title", "")), "url": str(r.get("href", "")), "snippet": str(r.get("body", ""))}
                for r in rows]

    def images(self, query: str, max_results: int) -> list[dict[str, str]]:
        rows = self._call("images", query, max_results)
        return [{"title": str(r.get("title", "")), "url": str(r.get("url", "")), "image": str(r.get("image", "")),
                 "thumbnail": str(r.get("thumbnail") or r.get("image") or "")} for r in rows]


class SearxngProvider:
    """A SearXNG-compatible JSON endpoint: `GET {endpoint}/search?q=...&format=json[&categories=images]`."""

    name = "searxng"

    def __init__(self, endpoint: str, *, timeout: float = 10.0, proxy: str | None = None,
                 safesearch: int = 1, language: str = "en"):
        if not endpoint:
            raise WebConfigError("web_provider=searxng needs --tool-option web_endpoint=URL")
        self.endpoint = endpoint.rstrip("/")
        self.timeout, self.proxy, self.safesearch, self.language = timeout, proxy, safesearch, language

    def key_params(self) -> dict[str, Any]:
        return {"safesearch": self.safesearch, "language": self.language}

    def _get(self, query: str, category: str) -> list[dict[str, Any]]:
        params = {"q": query, "format": "json", "categories": category, "safesearch": self.safesearch,
                  "language": self.language}
        try:
            with httpx.Client(timeout=self.timeout, proxy=self.proxy, follow_redirects=True) as client:
                response = client.get(f"{self.endpoint}/search", params=params)
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

    def text(self, query: str, max_results: int) -> list[dict[str, str]]:
        return [{"title": str(r.get("title", "")), "url": str(r.get("url", "")), "snippet": str(r.get("content", ""))}
                for r in self._get(query, "general")[:max_results]]

    def images(self, query: str, max_results: int) -> list[dict[str, str]]:
        return [{"title": str(r.get("title", "")), "url": str(r.get("url", "")), "image": str(r.get("img_src", "")),
                 "thumbnail": str(r.get("thumbnail_src") or r.get("img_src") or "")}
                for r in self._get(query, "images")[:max_results]]


def is_private_host(url: str) -> bool:
    """Loopback, private, link-local or unspecified IP literals, and `localhost` names."""
    host = (urlsplit(url).hostname or "").lower()
    if not host or host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified \
        or address.is_reserved or address.is_multicast


def check_fetchable(url: str, allow_private_hosts: bool) -> None:
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise PageError(f"not an http(s) URL: {url!r}")
    if not allow_private_hosts and is_private_host(url):
        raise PageError(f"refused: {url} is on a loopback or private address")


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


class Summarizer:
    """Per-page and overall summaries by an OpenAI-compatible model (temperature 0)."""

    def __init__(self, config: EndpointConfig, max_chars: int = 20_000):
        self.config, self.max_chars = config, max_chars
        self.endpoint = Endpoint(config)

    async def _ask(self, prompt: str) -> str:
        response = await self.endpoint.chat([{"role": "system", "content": SUMMARIZER_SYSTEM},
                                             {"role": "user", "content": prompt}])
        return response.content.strip()

    async def page(self, query: str, title: str, url: str, text: str) -> str:
        return await self._ask(PAGE_PROMPT.format(query=query, title=title, url=url, text=text[: self.max_chars]))

    async def overall(self, query: str, summaries: list[str]) -> str:
        listing = "\n".join(f"[{i}] {s}" for i, s in enumerate(summaries, 1))
        return await self._ask(FINAL_PROMPT.format(query=query, summaries=listing))

    async def aclose(self) -> None:
        await self.endpoint.aclose()


@dataclass
class _Hit:
    title: str
    url: str
    snippet: str


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _query_terms(query: str) -> set[str]:
    tokens = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)
    return set(tokens[0]) if tokens and tokens[0] else set(normalize_text(query).split())


class WebSearch:
    """Live text and image search for one run: provider, browser, summariser and cassette."""

    def __init__(self, cassette: Cassette, provider: SearchProvider, *, fetcher: PageFetcher | None = None,
                 summarizer: Summarizer | None = None, fetch_pages: bool = True, min_interval: float = 1.0,
                 retries: int = 2, retry_initial: float = 1.0, thumbnail_timeout: float = 10.0,
                 allow_private_hosts: bool = False, proxy: str | None = None):
        self.cassette, self.provider = cassette, provider
        self.fetcher = fetcher or PageFetcher(allow_private_hosts=allow_private_hosts)
        self.summarizer, self.fetch_pages = summarizer, fetch_pages
        self.min_interval, self.retries, self.retry_initial = min_interval, retries, retry_initial
        self.thumbnail_timeout, self.allow_private_hosts, self.proxy = thumbnail_timeout, allow_private_hosts, proxy
        self._pace = asyncio.Lock()
        self._last_request = 0.0
        self.provider_calls = 0
        self.attachments: dict[str, Any] = {}  # run-wide helpers built on this WebSearch (the live Lens search)

    @classmethod
    def from_options(cls, options: ToolOptions) -> "WebSearch":
        """Build from run options (`web`, `cassette`, and the `web_*`, `page_*`, `summarizer_*` tool options)."""
        options = WebOptions.model_validate(options.model_dump())
        get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
        cassette = Cassette(options.web, options.cassette)
        proxy = get("web_proxy")
        timeout = float(get("web_timeout", 10.0))
        provider_name = get("web_provider", "ddgs")
        if provider_name == "ddgs":
            provider: SearchProvider = DDGSProvider(timeout=timeout, proxy=proxy, backend=get("ddgs_backend", "auto"),
                                                    region=get("web_region", "us-en"),
                                                    safesearch=get("web_safesearch", "moderate"))
        elif provider_name == "searxng":
            provider = SearxngProvider(get("web_endpoint", ""), timeout=timeout, proxy=proxy)
        elif provider_name == "serper":
            provider = serper_provider(options, timeout=timeout, proxy=proxy)
        else:
            raise WebConfigError(f"unknown web_provider {provider_name!r}; known: ddgs, searxng, serper")
        summarizer = None
        if get("summarizer_model") or get("summarizer_base_url"):
            if not (get("summarizer_model") and get("summarizer_base_url")):
                raise WebConfigError("a summariser needs both summarizer_model and summarizer_base_url")
            summarizer = Summarizer(EndpointConfig(
                base_url=get("summarizer_base_url"), model=get("summarizer_model"),
                api_key_env=get("summarizer_api_key_env"), temperature=0.0,
                max_tokens=get("summarizer_max_tokens", 512), timeout=float(get("summarizer_timeout", 60.0)),
                max_retries=int(get("summarizer_max_retries", 2))), max_chars=int(get("summarizer_max_chars", 20_000)))
        allow_private = bool(get("allow_private_hosts", False))
        fetcher = PageFetcher(timeout=float(get("page_timeout", 20.0)), max_chars=int(get("page_max_chars", 100_000)),
                              allow_private_hosts=allow_private)
        return cls(cassette, provider, fetcher=fetcher, summarizer=summarizer,
                   fetch_pages=bool(get("fetch_pages", True)), min_interval=float(get("web_min_interval", 1.0)),
                   retries=int(get("web_retries", 2)), retry_initial=float(get("web_retry_initial", 1.0)),
                   allow_private_hosts=allow_private, proxy=proxy)

    # -- listings -------------------------------------------------------------------------------------------

    def _wait(self, state) -> float:
        """Exponential backoff with jitter, but never shorter than the provider's Retry-After."""
        backoff = (wait_exponential(multiplier=self.retry_initial, max=30.0) + wait_random(0, self.retry_initial))
        hinted = getattr(state.outcome.exception(), "retry_after", None) if state.outcome else None
        return max(backoff(state), hinted or 0.0)

    async def _paced(self, call: Callable[[], list[dict[str, str]]]) -> list[dict[str, str]]:
        async for attempt in AsyncRetrying(stop=stop_after_attempt(self.retries + 1), wait=self._wait,
                                           retry=retry_if_exception_type(TransientSearchError), reraise=True):
            with attempt:
                async with self._pace:
                    wait = self._last_request + self.min_interval - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    self._last_request = time.monotonic()
                self.provider_calls += 1
                return await asyncio.to_thread(call)
        raise AssertionError("unreachable")

    async def _listing(self, category: str, query: str, n: int) -> list[dict[str, str]]:
        method = getattr(self.provider, category)

        async def produce() -> Recorded:
            try:
                rows = await self._paced(lambda: method(query, n))
            except TransientSearchError as exc:
                raise WebUnavailable(f"the web search kept failing after {self.retries + 1} attempts ({exc})") \
                    from None
            return Recorded(rows)

        request = {"query": normalize_text(query), "n": n, **self.provider.key_params()}
        backend = f"{self.provider.name}.{category}/{LISTING_VERSION}"
        kind = "text_search" if category == "text" else "image_search"
        return (await self.cassette.through(kind, backend, request, produce)).data

    # -- pages and summaries ----------------------------------------------------------------------------------

    async def _page(self, url: str) -> dict[str, str]:
        async def produce() -> Recorded:
            try:
                return Recorded(await self.fetcher.fetch(url))
            except PageError as exc:
                return Recorded({"url": url, "error": str(exc)})

        request = {"url": normalize_url(url), "max_chars": self.fetcher.max_chars}
        return (await self.cassette.through("page", PAGE_BACKEND, request, produce)).data

    async def _summary(self, kind: str, backend: str, request: dict[str, Any], ask) -> str | None:
        async def produce() -> Recorded:
            try:
                return Recorded({"summary": await ask()})
            except EndpointError as exc:
                return Recorded({"error": str(exc)})

        data = (await self.cassette.through(kind, backend, request, produce)).data
        return data.get("summary") or None

    async def _result(self, query: str, terms: set[str], hit: _Hit) -> tuple[SearchResult, dict[str, Any]]:
        page: dict[str, str] = {}
        if self.fetch_pages and hit.url:
            page = await self._page(hit.url)
        text = page.get("text", "") if "error" not in page else ""
        log = {"title": hit.title, "url": hit.url, "page": page.get("error", "ok" if text else "snippet only")}
        summary = extractive_summary(text, terms, 5) if text else hit.snippet
        if self.summarizer is not None and text:
            request = {"model": self.summarizer.config.model, "query": normalize_text(query),
                       "url": normalize_url(hit.url), "text_sha256": _sha(text[: self.summarizer.max_chars])}
            summary = await self._summary("summary", SUMMARY_BACKEND, request,
                                          lambda: self.summarizer.page(query, hit.title, hit.url, text)) or summary
        return SearchResult(title=hit.title or page.get("title", ""), url=hit.url, text=summary), log

    async def text_search(self, query: str, k: int) -> ToolResult:
        """The text_search_tool observation for `query`: top-k results with page summaries."""
        query = query.strip()
        rows = await self._listing("text", query, k)
        hits = [_Hit(r.get("title", ""), r.get("url", ""), r.get("snippet", "")) for r in rows[:k]]
        if not hits:
            return ToolResult(text=f"No results for {query!r}.", data={"query": query, "backend": "web", "hits": []})
        terms = _query_terms(query)
        pairs = await asyncio.gather(*(self._result(query, terms, h) for h in hits))
        results = [p[0] for p in pairs]
        text = format_results(results)
        if self.summarizer is not None and len(results) > 1:
            request = {"model": self.summarizer.config.model, "query": normalize_text(query),
                       "summaries_sha256": _sha(json.dumps([r.text for r in results]))}
            overall = await self._summary("final_summary", FINAL_SUMMARY_BACKEND, request,
                                          lambda: self.summarizer.overall(query, [r.text for r in results]))
            if overall:
                text += f"\n\nSummary of the results:\n{overall}"
        return ToolResult(text=text, data={"query": query, "backend": "web", "provider": self.provider.name,
                                           "hits": [p[1] for p in pairs]})

    # -- images ---------------------------------------------------------------------------------------------

    async def _thumbnail(self, url: str):
        async def produce() -> Recorded:
            try:
                check_fetchable(url, self.allow_private_hosts)
                async with httpx.AsyncClient(timeout=self.thumbnail_timeout, proxy=self.proxy,
                                             follow_redirects=True) as client:
                    async with client.stream("GET", url) as response:
                        if response.status_code != 200:
                            raise PageError(f"HTTP {response.status_code}")
                        data = b""
                        async for chunk in response.aiter_bytes():
                            data += chunk
                            if len(data) > MAX_THUMBNAIL_BYTES:
                                raise PageError(f"larger than {MAX_THUMBNAIL_BYTES} bytes")
                return Recorded({"url": url, "bytes": len(data)}, data)
            except (PageError, httpx.HTTPError) as exc:
                return Recorded({"url": url, "error": f"{type(exc).__name__}: {exc}"})

        found = await self.cassette.through("thumbnail", THUMBNAIL_BACKEND, {"url": normalize_url(url)}, produce)
        if found.blob is None:
            return None
        try:
            image = await asyncio.to_thread(decode_image, found.blob, url)
        except ImageError:
            return None
        image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
        return image

    async def listing_with_thumbnails(self, rows: list[dict]) -> tuple[str, list]:
        """Image results as the model sees them: `[i] title / URL` lines and the thumbnails that could be fetched
        (a row whose thumbnail is missing or broken says "(no thumbnail)")."""
        thumbs = await asyncio.gather(*(self._thumbnail(r["thumbnail"]) if r.get("thumbnail") else _none()
                                        for r in rows))
        lines = [f"[{i}] {row.get('title', '')}\nURL: {row.get('url', '')}"
                 + ("" if thumb is not None else "\n(no thumbnail)")
                 for i, (row, thumb) in enumerate(zip(rows, thumbs), 1)]
        return "\n".join(lines), [t for t in thumbs if t is not None]

    async def image_search(self, query: str, n: int = MAX_IMAGE_RESULTS) -> ToolResult:
        """The image_search_tool observation (web mode): titles, page URLs and thumbnails."""
        query = query.strip()
        rows = (await self._listing("images", query, n))[:n]
        if not rows:
            raise ToolError(f"no images found for {query!r}")
        text, thumbs = await self.listing_with_thumbnails(rows)
        return ToolResult(text=text, images=thumbs,
                          data={"mode": "web", "query": query, "provider": self.provider.name,
                                "hits": [{"title": r.get("title", ""), "url": r.get("url", ""),
                                          "image": r.get("image", "")} for r in rows]})

    async def aclose(self) -> None:
        for attachment in self.attachments.values():
            await attachment.aclose()
        await self.fetcher.aclose()
        if self.summarizer is not None:
            await self.summarizer.aclose()
        self.cassette.close()


async def _none() -> None:
    return None


def serper_provider(options: ToolOptions, *, timeout: float, proxy: str | None) -> SerperProvider:
    """`web_provider=serper` from the run options (`web_endpoint`, `web_api_key_env`, `serper_gl`, ...)."""
    get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
    pool = KeyPool.from_env(get("web_api_key_env") or SERPER_KEY_ENV, "serper", required=options.web != "replay")
    client = SerperClient(pool, endpoint=get("web_endpoint") or SERPER_ENDPOINT, timeout=timeout, proxy=proxy,
                          max_retry_after=float(get("web_max_retry_after", 60.0)))
    return SerperProvider(client, gl=get("serper_gl", "us"), hl=get("serper_hl", "en"),
                          num=int(get("serper_num", 10)))


_SHARED: dict[int, tuple[ToolOptions, WebSearch]] = {}


def web_for(tool) -> WebSearch:
    """The WebSearch of a run, built on first use from its tool options and shared by every tool built
    with those options (one cassette connection, one page fetcher per run and process)."""
    entry = _SHARED.get(id(tool.run_options))
    if entry is None or entry[0] is not tool.run_options:
        try:
            entry = (tool.run_options, WebSearch.from_options(tool.run_options))
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        _SHARED[id(tool.run_options)] = entry
    return entry[1]


async def close_web_for(tool) -> None:
    """Close the run's WebSearch (the first tool to close does it; later calls find nothing)."""
    entry = _SHARED.get(id(tool.run_options))
    if entry is not None and entry[0] is tool.run_options:
        del _SHARED[id(tool.run_options)]
        await entry[1].aclose()


def check_web_options(options: ToolOptions) -> None:
    """Fail at tool construction, with a clear message, on a web configuration that cannot work."""
    options = WebOptions.model_validate(options.model_dump())
    if options.web != "offline":
        validate_mode(options.web, options.cassette)
        if getattr(options, "web_provider", "ddgs") == "serper" and options.web != "replay":
            KeyPool.from_env(getattr(options, "web_api_key_env", None) or SERPER_KEY_ENV, "serper")
