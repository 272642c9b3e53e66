"""The errors of the live-web tools, shared by every provider (ddgs, SearXNG, Serper, the Lens providers), the
address guard and the page fetcher."""

from __future__ import annotations

from arena.core.tool import ToolError


class WebConfigError(ValueError):
    """Web options that cannot work (unknown provider, missing endpoint, half a summariser)."""


class WebUnavailable(ToolError):
    """The search provider cannot be reached or refused the request for good."""


class TransientSearchError(Exception):
    """A rate limit or timeout: retried with backoff, waiting at least `retry_after` seconds when the
    provider said so (an HTTP `Retry-After` header)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class PageError(Exception):
    """A page or thumbnail that could not be loaded, or that the address guard refused (a text search then
    shows the listing's snippet instead of the page)."""
