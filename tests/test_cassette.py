"""Cassette modes, keys, concurrency and the `arena cassette` commands."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.core.tool import ToolError
from arena.tools.cassette import (Cassette, CassetteError, CassetteMiss, CassetteStore, Recorded, normalize_text,
                            normalize_url, validate_mode)


class Producer:
    """Counts network calls; returns a value that says which call it was."""

    def __init__(self):
        self.calls = 0

    async def __call__(self) -> Recorded:
        self.calls += 1
        await asyncio.sleep(0.01)
        return Recorded({"call": self.calls}, blob=b"\x89PNG" if self.calls == 1 else None)


def through(cassette: Cassette, produce: Producer, query: str = "Orvanta  Lighthouse") -> Recorded:
    request = {"query": normalize_text(query), "n": 3}
    return asyncio.run(cassette.through("text_search", "ddgs.text/1", request, produce))


def test_record_fetches_a_miss_once_then_replays_it(tmp_path: Path):
    path = tmp_path / "c.sqlite"
    produce = Producer()
    cassette = Cassette("record", path)
    first = through(cassette, produce)
    second = through(cassette, produce, query="orvanta lighthouse ")
    assert produce.calls == 1
    assert first.data == second.data == {"call": 1}
    assert second.blob == b"\x89PNG"
    cassette.close()
    again = Cassette("record", path)
    assert through(again, produce, query="ORVANTA lighthouse").data == {"call": 1}
    assert produce.calls == 1


def test_replay_never_produces_and_a_miss_names_the_request_and_file(tmp_path: Path):
    path = tmp_path / "c.sqlite"
    through(Cassette("record", path), Producer())
    produce = Producer()
    replay = Cassette("replay", path)
    assert through(replay, produce).data == {"call": 1}
    with pytest.raises(CassetteMiss) as miss:
        through(replay, produce, query="who built it")
    assert produce.calls == 0
    assert isinstance(miss.value, ToolError)
    assert '"who built it"' in str(miss.value) and str(path) in str(miss.value) and "ddgs.text/1" in str(miss.value)


def test_refresh_fetches_each_request_anew_once(tmp_path: Path):
    path = tmp_path / "c.sqlite"
    through(Cassette("record", path), Producer())
    produce = Producer()
    produce.calls = 10
    refresh = Cassette("refresh", path)
    assert through(refresh, produce).data == {"call": 11}
    assert through(refresh, produce).data == {"call": 11}
    assert produce.calls == 11
    assert through(Cassette("replay", path), Producer()).data == {"call": 11}


def test_live_without_a_file_always_fetches_and_with_one_records(tmp_path: Path):
    produce = Producer()
    live = Cassette("live")
    through(live, produce)
    through(live, produce)
    assert produce.calls == 2
    recording = Cassette("live", tmp_path / "c.sqlite")
    assert recording.mode == "record"
    through(recording, produce)
    through(recording, produce)
    assert produce.calls == 3


def test_concurrent_identical_requests_share_one_fetch(tmp_path: Path):
    cassette = Cassette("record", tmp_path / "c.sqlite")
    produce = Producer()

    async def many():
        request = {"query": "q", "n": 3}
        return await asyncio.gather(*(cassette.through("page", "chromium.page/1", request, produce)
                                      for _ in range(5)))

    results = asyncio.run(many())
    assert produce.calls == 1
    assert {json.dumps(r.data) for r in results} == {'{"call": 1}'}


def test_a_failed_fetch_is_not_recorded(tmp_path: Path):
    path = tmp_path / "c.sqlite"
    cassette = Cassette("record", path)

    async def failing() -> Recorded:
        raise ToolError("the web search is unreachable")

    with pytest.raises(ToolError):
        asyncio.run(cassette.through("text_search", "ddgs.text/1", {"query": "q"}, failing))
    assert CassetteStore(path).stats()["entries"] == 0


def test_modes_and_files_are_checked(tmp_path: Path):
    with pytest.raises(CassetteError, match="needs a cassette file"):
        validate_mode("replay", None)
    with pytest.raises(CassetteError, match="no such cassette"):
        validate_mode("replay", tmp_path / "missing.sqlite")
    with pytest.raises(CassetteError, match="unknown web mode"):
        validate_mode("sometimes", None)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CassetteError, match="not a cassette"):
        CassetteStore(junk)
    future = tmp_path / "future.sqlite"
    CassetteStore(future).close()
    with sqlite3.connect(future) as db:
        db.execute("UPDATE meta SET value='99' WHERE name='format'")
    with pytest.raises(CassetteError, match="format 99"):
        CassetteStore(future)


def test_normalisation():
    assert normalize_text("  Orvanta\u00a0LIGHTHOUSE \n") == "orvanta lighthouse"
    assert normalize_url("HTTPS://Wiki.Local:443/Orvanta#history") == "https://wiki.local/Orvanta"
    assert normalize_url("http://127.0.0.1:8080/a?b=1") == "http://127.0.0.1:8080/a?b=1"


def _filled(path: Path, entries: dict[str, str], when: str) -> Path:
    store = CassetteStore(path)
    for query, value in entries.items():
        store.put("text_search", "ddgs.text/1", {"query": query}, Recorded({"v": value}), recorded_at=when)
    store.close()
    return path


def test_cli_stats_export_and_merge(tmp_path: Path):
    old = _filled(tmp_path / "old.sqlite", {"a": "old-a", "b": "old-b"}, "2025-01-01T00:00:00+00:00")
    new = _filled(tmp_path / "new.sqlite", {"b": "new-b", "c": "new-c"}, "2026-01-01T00:00:00+00:00")
    runner = CliRunner()

    stats = runner.invoke(app, ["cassette", "stats", str(old), "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)["entries"] == 2

    merged = tmp_path / "merged.sqlite"
    result = runner.invoke(app, ["cassette", "merge", str(merged), str(old), str(new)])
    assert result.exit_code == 0, result.output
    assert "2 added" in result.output and "1 kept" in result.output
    values = {e.request["query"]: e.response["v"] for e in CassetteStore(merged).entries()}
    assert values == {"a": "old-a", "b": "old-b", "c": "new-c"}

    newer = tmp_path / "newer.sqlite"
    runner.invoke(app, ["cassette", "merge", str(newer), str(old)])
    result = runner.invoke(app, ["cassette", "merge", str(newer), str(new), "--prefer", "newer"])
    assert "1 replaced" in result.output
    assert {e.request["query"]: e.response["v"] for e in CassetteStore(newer).entries()}["b"] == "new-b"

    out = tmp_path / "export.jsonl"
    result = runner.invoke(app, ["cassette", "export", str(merged), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["request"]["query"] for line in lines) == ["a", "b", "c"]

    missing = runner.invoke(app, ["cassette", "stats", str(tmp_path / "nope.sqlite")])
    assert missing.exit_code == 2 and "no such cassette" in missing.output
    same = runner.invoke(app, ["cassette", "merge", str(old), str(old)])
    assert same.exit_code == 2
