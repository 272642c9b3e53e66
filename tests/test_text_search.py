import asyncio
import json

import pytest

from arena.core.dataset import load_datasets
from arena.core.tool import ToolContext, ToolError, ToolOptions
from arena.tools.corpus_index import CorpusIndex
from arena.tools.text_search import TextSearchTool


def ctx_for(dataset):
    return ToolContext(task=dataset.tasks[0], dataset=dataset, images=[], blobs=None)


def test_bm25_ranks_and_summarises(tiny_data):
    [ds] = load_datasets(tiny_data)
    result = asyncio.run(TextSearchTool()({"query": "Orvanta Lighthouse tower height"}, ctx_for(ds)))
    assert result.text.startswith("[1] Orvanta Lighthouse\nURL: https://wiki.local/Orvanta")
    assert "42 metres" in result.text
    designer = asyncio.run(TextSearchTool()({"query": "who designed Orvanta Lighthouse"}, ctx_for(ds)))
    assert designer.data["hits"][0]["title"] == "Mirelle Dastrow"
    assert 1 < len(designer.data["hits"]) <= 3


def test_top_k_and_no_results(tiny_data):
    [ds] = load_datasets(tiny_data)
    one = asyncio.run(TextSearchTool(ToolOptions(top_k=1))({"query": "Velmora kite festival"}, ctx_for(ds)))
    assert len(one.data["hits"]) == 1 and one.data["hits"][0]["title"] == "Velmora"
    none = asyncio.run(TextSearchTool()({"query": "zzzz qqqq"}, ctx_for(ds)))
    assert none.text.startswith("No results")


def test_summary_keeps_at_most_five_relevant_sentences(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = " ".join(f"Filler sentence number {i}." for i in range(20)) + " The Zarkon bridge opened in 1901."
    (corpus / "docs.jsonl").write_text(json.dumps({"id": "1", "url": "u", "title": "Zarkon", "text": text}) + "\n")
    [hit] = CorpusIndex.for_dir(corpus).search("Zarkon bridge opened", k=3)
    assert "opened in 1901" in hit.extract
    assert hit.extract.count(".") <= 5


def test_missing_or_broken_corpus_is_a_tool_error(tmp_path, tiny_data):
    [ds] = load_datasets(tiny_data)
    ds.corpus = None
    with pytest.raises(ToolError, match="no search corpus"):
        asyncio.run(TextSearchTool()({"query": "x"}, ctx_for(ds)))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "docs.jsonl").write_text('{"id": "1", "text": "ok"}\n{"id": 2}\n')
    ds.corpus = broken
    with pytest.raises(ToolError, match=r"docs.jsonl:2"):
        asyncio.run(TextSearchTool()({"query": "x"}, ctx_for(ds)))
    (tmp_path / "dir" / "docs.jsonl").mkdir(parents=True)  # a directory where the file should be
    ds.corpus = tmp_path / "dir"
    with pytest.raises(ToolError, match="no docs.jsonl"):
        asyncio.run(TextSearchTool()({"query": "x"}, ctx_for(ds)))


def test_the_index_is_built_once_per_file_version_whatever_path_reaches_it(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = corpus / "docs.jsonl"
    docs.write_text(json.dumps({"id": "1", "url": "u", "title": "Zarkon", "text": "The Zarkon bridge."}) + "\n")
    (tmp_path / "link").symlink_to(corpus)
    first = CorpusIndex.for_dir(corpus)
    assert CorpusIndex.for_dir(tmp_path / "link") is first
    docs.write_text(json.dumps({"id": "2", "url": "v", "title": "Quellin", "text": "The Quellin tower."}) + "\n")
    again = CorpusIndex.for_dir(corpus)
    assert again is not first and [h.document.id for h in again.search("Quellin tower")] == ["2"]


def test_a_search_made_already_is_answered_without_bm25_or_a_thread(tiny_data, monkeypatch):
    import arena.tools.text_search as text_search

    [ds] = load_datasets(tiny_data)
    index = CorpusIndex.for_dir(ds.corpus)
    retrieved, hops = [], []
    retrieve = index._bm25.retrieve
    monkeypatch.setattr(index._bm25, "retrieve", lambda *a, **k: retrieved.append(a) or retrieve(*a, **k))
    to_thread = asyncio.to_thread
    monkeypatch.setattr(text_search.asyncio, "to_thread", lambda fn, *a: hops.append(fn) or to_thread(fn, *a))
    query = {"query": "who designed Orvanta Lighthouse"}
    first = asyncio.run(TextSearchTool()(query, ctx_for(ds)))
    assert len(retrieved) == 1 and len(hops) == 1
    again = asyncio.run(TextSearchTool()(query, ctx_for(ds)))
    assert (again.text, again.data) == (first.text, first.data)
    assert len(retrieved) == 1 and len(hops) == 1  # the same query on the same file version: searched once
    other = asyncio.run(TextSearchTool(ToolOptions(top_k=1))(query, ctx_for(ds)))
    assert len(other.data["hits"]) == 1 and len(retrieved) == 2  # another k is another search
