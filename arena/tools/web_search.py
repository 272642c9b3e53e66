"""The live web behind `text_search_tool` and `image_search_tool`, recorded in cassettes: one `WebSearch` per run.

Selected by `--web live|record|replay|refresh` (see `arena.tools.cassette` for the modes
and `--cassette FILE`); `--web offline` (the default) keeps the world's corpus and
image index. What one text search does, after VistaArena (PROTOCOLS.md §1):

1. a search listing of the top-k results from a provider (`arena.tools.web_providers`:
   `ddgs`, the default, no key needed; `searxng`, any SearXNG-compatible JSON endpoint,
   `--tool-option web_endpoint=URL`; `serper`, Google as VistaArena used, with key pools);
2. each result's page read in headless Chromium (`arena.tools.page_fetch`), falling back
   to the listing's snippet when the page fails or the address guard
   (`arena.tools.address_guard`) refuses it;
3. each page summarised in at most five sentences with the query in mind, by a
   summariser model when one is configured (`arena.tools.summarise`), followed by one
   summary over all results; else extractively (the sentences sharing most query terms).

`image_search_tool` in mode `web` (`--image-search web`) is a text-to-image
lookup (the providers' image search by words); mode `live` reverse-searches an
image in context on Google Lens (`arena.tools.lens`).

Listing requests are spaced by `web_min_interval` seconds and retried with
tenacity on rate limits and timeouts (never sooner than a `Retry-After` says);
an unreachable network (no DNS, refused connection) fails at once with an error
observation, and the run goes on.
Every listing, page, summary and thumbnail goes through the cassette, and the
observation is built from the recorded values only.

The run's `WebSearch` (provider, browser, summariser, cassette) is a run-scoped resource
(`web_search_of(run)`): built when the first tool of the run that needs it is opened, shared by the
run's tools, closed when the run ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal

import httpx
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential, wait_random

from arena.core.images import ImageError, decode_image
from arena.core.tool import RunResources, ToolError, ToolOptions, ToolResult
from arena.endpoints.client import EndpointConfig, EndpointError
from arena.tools.address_guard import check_fetchable
from arena.tools.cassette import Cassette, Recorded, normalize_text, normalize_url, validate_mode
from arena.tools.corpus_index import summarize as extractive_summary, tokenize
from arena.tools.keypool import KeyPool
from arena.tools.page_fetch import PageFetcher
from arena.tools.search_results import MAX_IMAGE_RESULTS, THUMBNAIL_SIDE, SearchResult, format_results
from arena.tools.summarise import Summarizer
from arena.tools.web_errors import PageError, TransientSearchError, WebConfigError, WebUnavailable
from arena.tools.web_providers import SearchProvider, provider_for
from arena.tools.web_providers.serper import DEFAULT_KEY_ENV as SERPER_KEY_ENV

LISTING_VERSION = 1
PAGE_BACKEND = "chromium.page/1"
THUMBNAIL_BACKEND = "http.thumbnail/1"
SUMMARY_BACKEND = "summary/1"
FINAL_SUMMARY_BACKEND = "summary.final/1"
MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024


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


class WebImageSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=500, description="Words describing the images to find.")


WEB_IMAGE_DESCRIPTION = ("Search the web for images matching a text query. Returns up to five results, each with a "
                         "title, the URL of the page showing the image, and a thumbnail.")


@dataclass
class _Hit:
    title: str
    url: str
    snippet: str


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _query_terms(query: str) -> set[str]:
    tokens = tokenize([query])
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

    @classmethod
    def from_options(cls, options: ToolOptions) -> "WebSearch":
        """Build from run options (`web`, `cassette`, and the `web_*`, `page_*`, `summarizer_*` tool options)."""
        options = WebOptions.model_validate(options.model_dump())
        get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
        proxy = get("web_proxy")
        provider = provider_for(options)
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
        return cls(Cassette(options.web, options.cassette), provider, fetcher=fetcher, summarizer=summarizer,
                   fetch_pages=bool(get("fetch_pages", True)), min_interval=float(get("web_min_interval", 1.0)),
                   retries=int(get("web_retries", 2)), retry_initial=float(get("web_retry_initial", 1.0)),
                   allow_private_hosts=allow_private, proxy=proxy)

    # -- listings -------------------------------------------------------------------------------------------

    def _wait(self, state) -> float:
        """Exponential backoff with jitter, but never shorter than the provider's Retry-After."""
        backoff = (wait_exponential(multiplier=self.retry_initial, max=30.0) + wait_random(0, self.retry_initial))
        hinted = getattr(state.outcome.exception(), "retry_after", None) if state.outcome else None
        return max(backoff(state), hinted or 0.0)

    async def _paced(self, call: Callable[[], Awaitable[list[Any]]]) -> list[Any]:
        """`call()` (one provider request) spaced `min_interval` after the previous one and retried on
        TransientSearchError."""
        async for attempt in AsyncRetrying(stop=stop_after_attempt(self.retries + 1), wait=self._wait,
                                           retry=retry_if_exception_type(TransientSearchError), reraise=True):
            with attempt:
                async with self._pace:
                    wait = self._last_request + self.min_interval - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    self._last_request = time.monotonic()
                self.provider_calls += 1
                return await call()
        raise AssertionError("unreachable")

    async def _listing(self, category: Literal["text", "images"], query: str, n: int) -> list[dict[str, str]]:
        method = self.provider.search if category == "text" else self.provider.search_images

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
        await self.provider.aclose()
        await self.fetcher.aclose()
        if self.summarizer is not None:
            await self.summarizer.aclose()
        self.cassette.close()


async def _none() -> None:
    return None


def web_search_of(run: RunResources) -> WebSearch:
    """The run's WebSearch, built from its tool options the first time a tool of the run asks (one cassette
    connection, one page fetcher per run and process), closed with the run. ValueError (WebConfigError) on
    options that cannot work."""
    return run.shared("web_search", lambda: WebSearch.from_options(run.options))


class RunWeb:
    """A tool's handle on its run's WebSearch, taken when the tool is opened.

    A web configuration that cannot work (unknown provider, SearXNG without an endpoint, half a summariser)
    does not stop the run: each call of the tool answers with the problem as its error observation."""

    def __init__(self, tool_name: str):
        self.tool_name = tool_name
        self._web: WebSearch | None = None
        self._problem: str | None = None

    def open(self, run: RunResources) -> None:
        try:
            self._web = web_search_of(run)
        except ValueError as exc:
            self._problem = str(exc)

    def get(self) -> WebSearch:
        """The run's WebSearch; ToolError when it could not be built or the tool was never opened."""
        if self._web is None:
            raise ToolError(self._problem or f"{self.tool_name} was not opened for a run (Tool.open) and cannot "
                            "reach the web")
        return self._web

    def close(self) -> None:
        """Forget the WebSearch (the run closes it)."""
        self._web = None


def check_web_options(options: ToolOptions) -> None:
    """Fail at tool construction, with a clear message, on a web configuration that cannot work."""
    options = WebOptions.model_validate(options.model_dump())
    if options.web != "offline":
        validate_mode(options.web, options.cassette)
        if getattr(options, "web_provider", "ddgs") == "serper" and options.web != "replay":
            KeyPool.from_env(getattr(options, "web_api_key_env", None) or SERPER_KEY_ENV, "serper")
