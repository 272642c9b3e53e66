"""Web search providers, one module each (`ddgs`, `searxng`, `serper`), behind one contract
(`arena.tools.web_providers.contract.SearchProvider`).

Cassette replay is not a provider here: the cassette (`arena.tools.cassette`) sits around every request of
the live search (listings, pages, summaries, thumbnails) whatever the provider, and a replay answers all of
them from the recording without building a connection to the provider.
"""

from __future__ import annotations

from typing import Any

from arena.tools.web_errors import WebConfigError
from arena.tools.web_providers.contract import ImageHit, SearchHit, SearchProvider
from arena.tools.web_providers.ddgs import DDGSProvider
from arena.tools.web_providers.searxng import SearxngProvider
from arena.tools.web_providers.serper import serper_provider

PROVIDERS = ("ddgs", "searxng", "serper")

__all__ = ["DDGSProvider", "ImageHit", "PROVIDERS", "SearchHit", "SearchProvider", "SearxngProvider", "provider_for"]


def provider_for(options: Any) -> SearchProvider:
    """The provider named by `web_provider` (default `ddgs`), configured from the run's tool options."""
    get = lambda name, default=None: getattr(options, name, default)  # noqa: E731
    proxy, timeout = get("web_proxy"), float(get("web_timeout", 10.0))
    name = get("web_provider", "ddgs")
    if name == "ddgs":
        return DDGSProvider(timeout=timeout, proxy=proxy, backend=get("ddgs_backend", "auto"),
                            region=get("web_region", "us-en"), safesearch=get("web_safesearch", "moderate"))
    if name == "searxng":
        return SearxngProvider(get("web_endpoint", ""), timeout=timeout, proxy=proxy)
    if name == "serper":
        return serper_provider(options, timeout=timeout, proxy=proxy)
    raise WebConfigError(f"unknown web_provider {name!r}; known: {', '.join(PROVIDERS)}")
