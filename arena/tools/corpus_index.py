"""A BM25 index (bm25s) over a corpus directory of JSON-lines documents.

A corpus directory holds `docs.jsonl`, one `{"id", "url", "title", "text"}` per
line. The index is built in memory on first use (a few thousand pages take well
under a second) and cached per process and file version.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

import numpy as np

from arena.core.dataset import DatasetError
from arena.core.lru import LRU


@contextmanager
def _jax_hidden() -> Iterator[None]:
    """Within: `import jax` (and `jax.lax`) raises ImportError; after: whatever the process had under those names is
    back. bm25s chooses jax for its top-k wherever jax imports, and at import time runs one jax op, which starts jax's
    default backend: on a GPU machine that claims most of the GPU's memory and starts threads, and the workers' fork
    server (which preloads this module) then forks a threaded process and can deadlock (seen on a 16-core H200 host
    with jax installed). The arena's indexes are small and numpy's top-k is exact."""
    names = ("jax", "jax.lax")
    before = [sys.modules.get(name) for name in names]
    sys.modules.update(dict.fromkeys(names))  # None in sys.modules: the import raises ImportError
    try:
        yield
    finally:
        for name, module in zip(names, before):
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module


with _jax_hidden():
    import bm25s

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Document:
    id: str
    url: str
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float
    extract: str


def tokenize(texts: list[str]) -> list[list[str]]:
    """bm25s's English tokens (stopwords removed) of each text, as strings."""
    return bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=False)


def read_documents(path: Path) -> list[Document]:
    """Read docs.jsonl; a malformed line is an error naming the file and line."""
    docs = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                docs.append(Document(id=str(row["id"]), url=str(row.get("url", "")), title=str(row.get("title", "")),
                                     text=str(row["text"])))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DatasetError(f"{path}:{lineno}: bad corpus document ({type(exc).__name__}: {exc})") from None
    return docs


class CorpusIndex:
    """BM25 over title + text; `search` returns hits with an extractive summary of each page.

    Indexes are cached per process (`_cache`), not per run, on purpose: an index is a pure function of an
    immutable file version (the key is the file's device, inode, size and times, so an edited corpus is a new
    key), holds no connection or handle to release, and runs in one process (tests, sweeps) reading one world
    should not pay for its index twice."""

    _cache: dict[tuple[int, int, int, int, int], "CorpusIndex"] = {}
    _lock = threading.Lock()
    ANSWERS = 256  # searches remembered per index (the same query in every episode of a task costs one search)

    def __init__(self, documents: list[Document]):
        self.documents = documents
        self._answers: LRU[tuple[str, int, int], list[Hit]] = LRU(self.ANSWERS)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokenize([f"{d.title}\n{d.title}\n{d.text}" for d in documents]), show_progress=False)

    @classmethod
    def for_dir(cls, corpus_dir: Path) -> "CorpusIndex":
        """The index of `corpus_dir/docs.jsonl`, built once per file version: one `stat` per call, the file known by
        its device and inode (whatever path or link reaches it), size, and modification and change times."""
        index = cls._lookup(corpus_dir, build=True)
        assert index is not None
        return index

    @classmethod
    def built(cls, corpus_dir: Path) -> "CorpusIndex | None":
        """`for_dir`'s index if it is built already, else None (for a caller on the event loop: one `stat`)."""
        return cls._lookup(corpus_dir, build=False)

    @classmethod
    def _lookup(cls, corpus_dir: Path, build: bool) -> "CorpusIndex | None":
        path = os.path.join(corpus_dir, "docs.jsonl")  # (asked at every search: no Path object built)
        try:
            stat = os.stat(path)
        except OSError:
            stat = None
        if stat is None or not S_ISREG(stat.st_mode):
            raise DatasetError(f"{corpus_dir}: no docs.jsonl in the corpus directory")
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        with cls._lock:
            if key not in cls._cache:
                if not build:
                    return None
                cls._cache[key] = cls(read_documents(Path(path)))
            return cls._cache[key]

    def answered(self, query: str, k: int = 3, sentences: int = 5) -> list[Hit] | None:
        """The hits of a search made already on this index (a pure function of the index and its arguments)."""
        return self._answers.get((query, k, sentences))

    def search(self, query: str, k: int = 3, sentences: int = 5) -> list[Hit]:
        """The top `k` pages for `query` with their extracts (hits are frozen: the list is shared by the searches
        asking the same; callers must not change it)."""
        hits = self._answers.get((query, k, sentences))
        if hits is None:
            hits = self._search(query, k, sentences)
            self._answers.put((query, k, sentences), hits)
        return hits

    def _search(self, query: str, k: int, sentences: int) -> list[Hit]:
        tokens = tokenize([query])
        if not tokens[0] or not self.documents:
            return []
        k = min(k, len(self.documents))
        # n_threads=0: in this thread (any other number makes bm25s start and join a thread pool at every call)
        ids, scores = self._bm25.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        terms = set(tokens[0])
        hits = []
        for doc_id, score in zip(ids[0], scores[0]):
            if score <= 0:
                continue
            doc = self.documents[int(doc_id)]
            hits.append(Hit(doc, float(score), summarize(doc.text, terms, sentences)))
        return hits


def summarize(text: str, terms: set[str], limit: int) -> str:
    """Extractive summary: the `limit` sentences sharing most query terms (ties: earlier), in page order."""
    parts = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    if len(parts) <= limit:
        return " ".join(parts)
    overlap = np.array([len(terms & set(t)) for t in tokenize(parts)])
    chosen = sorted(np.argsort(-overlap, kind="stable")[:limit].tolist())
    return " ".join(parts[i] for i in chosen)
