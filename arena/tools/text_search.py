"""`text_search_tool`: web-style text search.

Backends (tool option `text_search_backend`) are registered in `BACKENDS`; the
default `corpus` searches the dataset's offline corpus (its world's `corpus/`,
or `--corpus DIR`) with BM25. Each of the top-k results (option `top_k`,
default 3 as in the paper) comes back as title, URL and an extractive summary
of at most five sentences of the page: the offline counterpart of VistaArena's
fetch-and-summarise step, so one call gives the same kind of evidence and no
extra page-opening tool is needed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from arena.core.dataset import Dataset, DatasetError
from arena.core.tool import RunResources, Tool, ToolContext, ToolError, ToolResult, register_tool

from .corpus_index import CorpusIndex
from .search_results import SearchResult, format_results
from .web_search import RunWeb, WebOptions, check_web_options


class TextSearchBackend(Protocol):
    name: str

    async def search(self, query: str, k: int, dataset: Dataset) -> list[SearchResult]: ...


class CorpusBackend:
    """BM25 over the dataset's local corpus."""

    name = "corpus"

    async def search(self, query: str, k: int, dataset: Dataset) -> list[SearchResult]:
        corpus = corpus_dir(dataset)
        try:  # a search made already is answered here (one stat); else one trip to a thread for the index and it
            index = CorpusIndex.built(corpus)
            hits = index.answered(query, k) if index is not None else None
            if hits is None:
                hits = await asyncio.to_thread(lambda: CorpusIndex.for_dir(corpus).search(query, k))
        except DatasetError as exc:
            raise ToolError(f"the search corpus cannot be read: {exc}") from None
        return [SearchResult(title=h.document.title, url=h.document.url, text=h.extract, score=h.score) for h in hits]


BACKENDS: dict[str, TextSearchBackend] = {"corpus": CorpusBackend()}


def corpus_dir(dataset: Dataset) -> Path:
    if dataset.corpus is not None:
        return dataset.corpus
    if dataset.world is not None and (dataset.world / "corpus").is_dir():
        return dataset.world / "corpus"
    raise ToolError("no search corpus is configured for this dataset (use a world, or pass --corpus DIR)")


class TextSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=1000, description="The search query.")


class TextSearchOptions(WebOptions):
    """`top_k`: pages per search (VistaArena: 3)."""

    top_k: int = Field(3, ge=1)
    text_search_backend: str = "corpus"


@register_tool
class TextSearchTool(Tool):
    name = "text_search_tool"
    description = ("Search the web for text. Returns the top results, each with its title, URL and a short "
                   "summary of the page's content relevant to the query.")
    Args = TextSearchArgs
    Options = TextSearchOptions

    def __init__(self, options=None):
        super().__init__(options)
        if self.options.web != "offline":
            check_web_options(self.options)
        self.web = RunWeb(self.name)

    async def open(self, run: RunResources) -> None:
        if self.options.web != "offline":
            self.web.open(run)

    async def run(self, args: TextSearchArgs, ctx: ToolContext) -> ToolResult:
        if self.options.web != "offline":
            return await self.web.get().text_search(args.query, max(1, self.options.top_k))
        backend_name = getattr(self.options, "text_search_backend", "corpus")
        backend = BACKENDS.get(backend_name)
        if backend is None:
            raise ToolError(f"unknown text search backend {backend_name!r}; known: {', '.join(BACKENDS)}")
        results = await backend.search(args.query.strip(), max(1, self.options.top_k), ctx.dataset)
        if not results:
            return ToolResult(text=f"No results for {args.query!r}.", data={"query": args.query, "hits": []})
        return ToolResult(text=format_results(results),
                          data={"query": args.query, "backend": backend_name,
                                "hits": [{"title": r.title, "url": r.url, "score": r.score} for r in results]})

    async def aclose(self) -> None:
        self.web.close()
