"""Live reverse image search (`--image-search live`): any image in context, crops included, searched on
Google Lens through a paid API, after publishing it at a URL the API can fetch (`arena.tools.image_host`).

Providers (`--tool-option lens_provider=...`, base URL `lens_endpoint`):

- `serper` (default): `POST {endpoint}/lens` with `{"url", "gl", "hl"}` and the `X-API-KEY` header
  (https://serper.dev). Answer: `organic`, a list of `{title, source, link, imageUrl, thumbnailUrl}`.
  Keys: the Serper pool (`lens_api_key_env`, default the search's `web_api_key_env`, else
  `SERPER_API_KEY`); the pool is shared with Serper text search when both use the same variable.
- `serpapi`: `GET {endpoint}/search.json?engine=google_lens&url=...&hl=...&api_key=...`
  (https://serpapi.com/google-lens-api). Answer: `visual_matches`, a list of `{position, title, link,
  source, source_icon, thumbnail, image, ...}`; a search Google found nothing for answers 200 with an
  `error` field. Errors (https://serpapi.com/api-status-and-error-codes) are JSON `{"error": ...}`:
  401 invalid key and 403 deleted account rotate keys, 429 "Your account has run out of searches."
  rotates, other 429s (hourly throughput) are retried. Keys from `lens_api_key_env` (default
  `SERPAPI_API_KEY`).

One search: the image's bytes are hashed; the cassette is asked for `(provider, image sha256, n)`;
only on a miss is the image published (once per hash) and the provider called. Up to five results
(title, page URL, thumbnail) come back; thumbnails go through the cassette as blobs, so they are
fetched once and a replay needs no network. The image URL (a presigned one) is never recorded.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import httpx

from arena.core.context_image import ContextImage
from arena.core.tool import RunResources, ToolError, ToolOptions, ToolResult

from arena.tools.cassette import Recorded
from arena.tools.image_host import ImageHost, image_host
from arena.tools.keypool import KeyPool, scrub
from arena.tools.search_results import MAX_IMAGE_RESULTS
from arena.tools.web_errors import TransientSearchError, WebConfigError, WebUnavailable
from arena.tools.web_providers.serper import DEFAULT_ENDPOINT as SERPER_ENDPOINT
from arena.tools.web_providers.serper import DEFAULT_KEY_ENV as SERPER_KEY_ENV
from arena.tools.web_providers.serper import SerperClient, check_retry_after, error_message
from arena.tools.web_search import WebSearch, web_search_of

LENS_VERSION = 1
SERPAPI_ENDPOINT = "https://serpapi.com"
SERPAPI_KEY_ENV = "SERPAPI_API_KEY"
SERPAPI_NO_RESULTS = "hasn't returned any results"


class LensProvider(Protocol):
    """Reverse image search by image URL. Blocking (run in a worker thread).

    `lens` returns `{title, url, image, thumbnail, source}` dicts (url = the page showing the image). Raise
    TransientSearchError to be retried, WebUnavailable to fail the call, KeysExhausted to stop.
    """

    name: str

    def key_params(self) -> dict[str, Any]:
        """Settings that change the results (language, country): part of the cassette key."""
        ...

    def lens(self, image_url: str, max_results: int) -> list[dict[str, str]]: ...


class SerperLens:
    name = "serper"

    def __init__(self, client: SerperClient, *, gl: str = "us", hl: str = "en"):
        self.client, self.gl, self.hl = client, gl, hl

    def key_params(self) -> dict[str, Any]:
        return {"gl": self.gl, "hl": self.hl}

    def lens(self, image_url: str, max_results: int) -> list[dict[str, str]]:
        data = self.client.post("lens", {"url": image_url, "gl": self.gl, "hl": self.hl})
        rows = data.get("organic") if isinstance(data.get("organic"), list) else []
        return [{"title": str(r.get("title", "")), "url": str(r.get("link", "")), "image": str(r.get("imageUrl", "")),
                 "thumbnail": str(r.get("thumbnailUrl") or r.get("imageUrl") or ""), "source": str(r.get("source", ""))}
                for r in rows if isinstance(r, dict)][:max_results]


class SerpApiLens:
    name = "serpapi"

    def __init__(self, pool: KeyPool, *, endpoint: str = SERPAPI_ENDPOINT, hl: str = "en", country: str = "us",
                 timeout: float = 30.0, proxy: str | None = None, max_retry_after: float = 60.0):
        self.pool, self.endpoint = pool, (endpoint or SERPAPI_ENDPOINT).rstrip("/")
        self.hl, self.country, self.timeout, self.proxy = hl, country, timeout, proxy
        self.max_retry_after = max_retry_after
        self.requests = 0

    def key_params(self) -> dict[str, Any]:
        return {"hl": self.hl, "country": self.country}

    def lens(self, image_url: str, max_results: int) -> list[dict[str, str]]:
        while True:
            index, key = self.pool.current()
            params = {"engine": "google_lens", "url": image_url, "hl": self.hl, "country": self.country,
                      "api_key": key}
            try:
                with httpx.Client(timeout=self.timeout, proxy=self.proxy) as client:
                    self.requests += 1
                    response = client.get(f"{self.endpoint}/search.json", params=params)
            except httpx.TimeoutException:
                raise TransientSearchError(f"serpapi google_lens: timeout after {self.timeout:g} s") from None
            except httpx.HTTPError as exc:
                raise WebUnavailable(f"the reverse image search is unreachable (serpapi at {scrub(self.endpoint)}: "
                                     f"{type(exc).__name__})") from None
            message = error_message(response)
            if response.status_code in (401, 403) or (response.status_code == 429
                                                         and "run out of searches" in message):
                self.pool.spend(index, message)
                continue
            if response.status_code == 429 or response.status_code >= 500:
                raise TransientSearchError(f"serpapi google_lens: {message}",
                                           check_retry_after("serpapi", response, self.max_retry_after))
            if response.status_code != 200:
                raise WebUnavailable(f"the reverse image search refused the request (serpapi: {message})")
            try:
                data = response.json()
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise WebUnavailable("serpapi google_lens answered something that is not a JSON object")
            if data.get("error"):
                if SERPAPI_NO_RESULTS in str(data["error"]):
                    return []
                raise WebUnavailable(f"serpapi google_lens: {scrub(str(data['error']))}")
            rows = data.get("visual_matches") if isinstance(data.get("visual_matches"), list) else []
            return [{"title": str(r.get("title", "")), "url": str(r.get("link", "")), "image": str(r.get("image", "")),
                     "thumbnail": str(r.get("thumbnail") or r.get("image") or ""), "source": str(r.get("source", ""))}
                    for r in rows if isinstance(r, dict)][:max_results]


def lens_provider(options: ToolOptions, web: WebSearch | None = None) -> LensProvider:
    """The provider named by `lens_provider` (default serper), sharing the search's Serper key pool."""
    get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
    name = get("lens_provider", "serper")
    required = options.web != "replay"
    timeout = float(get("lens_timeout", 30.0))
    max_wait = float(get("web_max_retry_after", 60.0))
    if name == "serper":
        env = get("lens_api_key_env") or get("web_api_key_env") or SERPER_KEY_ENV
        client = getattr(getattr(web, "provider", None), "client", None)
        if not isinstance(client, SerperClient) or client.pool.env != env:
            client = None
        pool = client.pool if client is not None else KeyPool.from_env(env, "serper", required=required)
        return SerperLens(SerperClient(pool, endpoint=get("lens_endpoint") or SERPER_ENDPOINT, timeout=timeout,
                                       proxy=get("web_proxy"), max_retry_after=max_wait),
                          gl=get("serper_gl", "us"), hl=get("serper_hl", "en"))
    if name == "serpapi":
        pool = KeyPool.from_env(get("lens_api_key_env") or SERPAPI_KEY_ENV, "serpapi", required=required)
        return SerpApiLens(pool, endpoint=get("lens_endpoint") or SERPAPI_ENDPOINT, hl=get("serper_hl", "en"),
                           country=get("serper_gl", "us"), timeout=timeout, proxy=get("web_proxy"),
                           max_retry_after=max_wait)
    raise WebConfigError(f"unknown lens_provider {name!r}; known: serper, serpapi")


class LiveImageSearch:
    """Reverse search of images in context through a Lens provider, an image host and the run's cassette."""

    def __init__(self, web: WebSearch, provider: LensProvider, host: ImageHost | None):
        self.web, self.provider, self.host = web, provider, host
        self._published: dict[str, asyncio.Future] = {}
        self.searches = 0

    @classmethod
    def from_options(cls, options: ToolOptions, web: WebSearch) -> "LiveImageSearch":
        get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
        host = None
        if options.web != "replay" or get("image_host"):
            host = image_host(get("image_host"), directory=get("image_host_dir"),
                              expires=int(get("image_host_expires", 3600)))
        return cls(web, lens_provider(options, web), host)

    async def _publish(self, digest: str, data: bytes, ext: str) -> str:
        """The image's URL, publishing it at most once per run (concurrent episodes share the upload)."""
        if self.host is None:
            raise ToolError("no image host is configured (image_host=...): this reverse search is not in the "
                            "cassette and cannot be made live")
        pending = self._published.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self.host.publish(digest, data, ext))
            self._published[digest] = pending
        try:
            return await asyncio.shield(pending)
        except Exception:
            if self._published.get(digest) is pending:
                del self._published[digest]
            raise

    async def search(self, image: ContextImage, blobs, n: int = MAX_IMAGE_RESULTS) -> ToolResult:
        """The image_search_tool observation (live mode) for one image in context."""
        algo, _, name = image.blob_id.partition(":")
        digest, _, ext = name.partition(".")

        async def produce() -> Recorded:
            data = await asyncio.to_thread(blobs.get, image.blob_id)
            url = await self._publish(digest, data, ext or "png")
            self.searches += 1
            try:
                rows = await self.web._paced(lambda: asyncio.to_thread(self.provider.lens, url, n))
            except TransientSearchError as exc:
                raise WebUnavailable(f"the reverse image search kept failing after {self.web.retries + 1} "
                                     f"attempts ({exc})") from None
            return Recorded(rows)

        request = {"image_sha256": digest, "n": n, **self.provider.key_params()}
        backend = f"{self.provider.name}.lens/{LENS_VERSION}"
        rows = (await self.web.cassette.through("image_search", backend, request, produce)).data[:n]
        if not rows:
            raise ToolError("no matching images found on the web")
        text, thumbs = await self.web.listing_with_thumbnails(rows)
        return ToolResult(text=text, images=thumbs,
                          data={"mode": "live", "provider": self.provider.name, "image_sha256": digest,
                                "hits": [{"title": r.get("title", ""), "url": r.get("url", ""),
                                          "source": r.get("source", "")} for r in rows]})

    async def aclose(self) -> None:
        self._published.clear()


def lens_of(run: RunResources, options: ToolOptions) -> LiveImageSearch:
    """The run's LiveImageSearch on the run's WebSearch (both run-scoped resources, built on first request;
    the run closes the Lens search before the web search it uses). ToolError on options that cannot work."""
    try:
        web = web_search_of(run)
        return run.shared("lens", lambda: LiveImageSearch.from_options(options, web))
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def check_live_options(options: ToolOptions) -> None:
    """Fail at tool construction, with a clear message, on a live image-search setup that cannot work."""
    if options.web == "offline":
        raise WebConfigError("image_search=live needs the live web: --web live|record|replay|refresh")
    if options.web != "replay":
        image_host(getattr(options, "image_host", None), directory=getattr(options, "image_host_dir", None))
        lens_provider(options)
