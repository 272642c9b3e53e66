"""The contract of a web search provider: a listing of hits for a query, nothing else.

A provider is one module of `arena.tools.web_providers`, selected by `--tool-option web_provider=NAME`. What
the live search does with a listing (fetching pages, summarising, recording in the cassette, pacing and
retrying requests) is `arena.tools.web_search`'s, the same for every provider.
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict


class SearchHit(TypedDict):
    """One text-search result as recorded in the cassette."""

    title: str
    url: str
    snippet: str


class ImageHit(TypedDict):
    """One image-search result: `url` is the page showing the image, `image` the image itself."""

    title: str
    url: str
    image: str
    thumbnail: str


class SearchProvider(Protocol):
    """A source of search listings.

    Raise `TransientSearchError` (rate limit, timeout) to have the call retried with backoff,
    `WebUnavailable` to fail it at once with the message as the observation; an empty list means no results.
    A provider holding connections closes them in `aclose` (called when the run ends)."""

    name: str

    def key_params(self) -> dict[str, Any]:
        """Settings that change the listing (region, safe search, ...): part of the cassette key."""
        ...

    async def search(self, query: str, n: int) -> list[SearchHit]:
        """The top `n` text results for `query`."""
        ...

    async def search_images(self, query: str, n: int) -> list[ImageHit]:
        """The top `n` image results for the words of `query`."""
        ...

    async def aclose(self) -> None: ...
