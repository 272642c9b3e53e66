"""Summaries of web pages for the live text search, by an OpenAI-compatible model at temperature 0
(`summarizer_model`, `summarizer_base_url`, via `arena.endpoints.client`): each page in at most five sentences
with the query in mind, then one summary over all results, as VistaArena's search tool does (PROTOCOLS.md §1).
Without a summariser model the search summarises extractively (`arena.tools.corpus_index.summarize`).
"""

from __future__ import annotations

from arena.endpoints.client import Endpoint, EndpointConfig

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
