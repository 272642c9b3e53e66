"""What the search tools return, whichever backend found it (offline index or live web)."""

from __future__ import annotations

from pydantic import BaseModel

MAX_IMAGE_RESULTS = 5
THUMBNAIL_SIDE = 256


class SearchResult(BaseModel):
    """One text-search hit: the page's title, its URL, the text shown to the model, and the backend's score."""

    title: str
    url: str
    text: str
    score: float | None = None


def format_results(results: list[SearchResult]) -> str:
    """The observation text of a list of hits, numbered from 1."""
    return "\n\n".join([f"[{i}] {r.title}\nURL: {r.url}\n{r.text}" for i, r in enumerate(results, 1)])
