"""Serper as the text/image search provider, against a loopback stand-in speaking its documented JSON:
field mapping, key rotation on refused and spent keys, one clear stop, Retry-After, keys kept secret."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from arena.core.tool import ToolOptions, ToolOutage
from tests.support.fake_serper import FakeGoogleApis
from arena.tools.keypool import KeyPool, KeysExhausted, scrub
from arena.tools.web_providers.serper import SerperClient, SerperProvider, retry_after_seconds
from arena.tools.web_search import WebSearch, WebUnavailable, check_web_options

KEY_A = "serper-test-key-aaaa-1111"
KEY_B = "serper-test-key-bbbb-2222"
KEY_BAD = "serper-test-key-revoked-0000"


@pytest.fixture
def fake():
    server = FakeGoogleApis({KEY_A: None})
    yield server
    server.stop()


def provider(fake: FakeGoogleApis, *keys: str) -> SerperProvider:
    pool = KeyPool(env="SERPER_API_KEY", provider="serper", keys=list(keys))
    return SerperProvider(SerperClient(pool, endpoint=fake.base, timeout=5))


def test_organic_results_and_images_map_to_title_url_snippet_and_thumbnails(fake: FakeGoogleApis):
    serper = provider(fake, KEY_A)
    rows = serper.text("Who built Orvanta Lighthouse?", 3)
    assert [r["title"] for r in rows] == ["Orvanta Lighthouse", "Mirelle Dastrow", "Velmora"]
    assert rows[0] == {"title": "Orvanta Lighthouse", "url": f"{fake.base}/pages/orvanta",
                       "snippet": "Orvanta Lighthouse (snippet for who built orvanta lighthouse?)."}
    assert [r["url"] for r in serper.text("orvanta", 2)] == [r["url"] for r in rows[:2]]
    images = serper.images("orvanta lighthouse", 5)
    assert images[1] == {"title": "Velmora boathouse photo", "url": f"{fake.base}/pages/boathouse",
                         "image": f"{fake.base}/img/red.png", "thumbnail": f"{fake.base}/img/red.png"}
    assert fake.calls == {"/search": 2, "/images": 1} and fake.keys_used == [KEY_A] * 3


def test_refused_and_spent_keys_rotate_then_stop_with_one_clear_message(caplog):
    fake = FakeGoogleApis({KEY_A: 1, KEY_B: 1})
    try:
        serper = provider(fake, KEY_BAD, KEY_A, KEY_B)
        caplog.set_level(logging.WARNING, logger="arena.tools.keypool")
        assert serper.text("orvanta", 1)[0]["title"] == "Orvanta Lighthouse"   # revoked key -> key 2
        assert serper.text("velmora", 1)                                       # key 2 spent -> key 3
        with pytest.raises(KeysExhausted) as first:
            serper.text("dastrow", 1)                                          # key 3 spent: stop
        requests = len(fake.paths)
        with pytest.raises(KeysExhausted) as again:
            serper.text("kites", 1)
        assert len(fake.paths) == requests, "a spent pool makes no more requests"
    finally:
        fake.stop()
    message = str(first.value)
    assert message == str(again.value)
    assert message.startswith("serper: all 3 API key(s) in $SERPER_API_KEY are spent (key 1: HTTP 403: Unauthorized.; "
                              "key 2: HTTP 400: Not enough credits; key 3: HTTP 400: Not enough credits)")
    assert "arena resume" in message and isinstance(first.value, ToolOutage)
    assert fake.keys_used == [KEY_A, KEY_B] and fake.refusals == {"auth": 1, "credits": 2}
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "arena.tools.keypool"]
    assert [level for level, _ in records] == ["WARNING", "WARNING", "ERROR"]
    assert records[0][1] == ("serper: key 1 of 3 in $SERPER_API_KEY is spent (HTTP 403: Unauthorized.); "
                             "rotating to key 2 of 3 in $SERPER_API_KEY")
    for secret in (KEY_A, KEY_B, KEY_BAD):
        assert secret not in caplog.text and secret not in message


def web(fake: FakeGoogleApis, tmp_path: Path, **extra) -> WebSearch:
    options = dict(web="record", cassette=str(tmp_path / "c.sqlite"), web_provider="serper", web_endpoint=fake.base,
                   fetch_pages=False, web_min_interval=0.0, web_retry_initial=0.01, allow_private_hosts=True)
    options.update(extra)
    return WebSearch.from_options(ToolOptions(**options))


def test_retry_after_is_honoured_and_a_too_long_wait_fails_clearly(fake: FakeGoogleApis, tmp_path: Path,
                                                                    monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", KEY_A)

    async def search(query: str, **extra):
        search = web(fake, tmp_path, **extra)
        try:
            started = time.monotonic()
            result = await search.text_search(query, 3)
            return result, time.monotonic() - started, search.provider_calls
        finally:
            await search.aclose()

    fake.rate_limit, fake.retry_after = 1, "1"
    result, seconds, calls = asyncio.run(search("orvanta"))
    assert calls == 2 and seconds >= 1.0, "the backoff alone would be ~0.01 s; Retry-After asked for 1 s"
    assert result.text.startswith("[1] Orvanta Lighthouse\nURL: ")

    fake.rate_limit, fake.retry_after = 1, "120"
    with pytest.raises(WebUnavailable, match="serper asks to retry after 120 s .*web_max_retry_after=5"):
        asyncio.run(search("velmora", web_max_retry_after=5))
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0 and retry_after_seconds(None) is None


def test_the_key_is_recorded_nowhere_and_a_replay_needs_none(fake: FakeGoogleApis, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", f"{KEY_A}")

    async def go(mode: str):
        search = web(fake, tmp_path, web=mode)
        try:
            return (await search.text_search("Who built Orvanta Lighthouse?", 3)).text
        finally:
            await search.aclose()

    recorded = asyncio.run(go("record"))
    monkeypatch.delenv("SERPER_API_KEY")
    fake.stop()
    assert asyncio.run(go("replay")) == recorded
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert KEY_A.encode() not in data and b"X-API-KEY" not in data
    with pytest.raises(ValueError, match="serper needs an API key: set the environment variable SERPER_API_KEY"):
        check_web_options(ToolOptions(web="record", cassette=str(tmp_path / "c.sqlite"), web_provider="serper"))
    check_web_options(ToolOptions(web="replay", cassette=str(tmp_path / "c.sqlite"), web_provider="serper"))


def test_scrub_masks_keys_signatures_and_userinfo():
    KeyPool(env="X", provider="serper", keys=["a-secret-key-123456"])
    text = ("GET https://bob:hunter2@cdn.example/x.png?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123 "
            "key=a-secret-key-123456 https://serpapi.com/search.json?engine=google_lens&api_key=zzz")
    assert scrub(text) == ("GET https://***@cdn.example/x.png?X-Amz-Credential=***&X-Amz-Signature=*** "
                           "key=*** https://serpapi.com/search.json?engine=google_lens&api_key=***")
    assert "a-secret-key-123456" not in repr(KeyPool(env="X", provider="serper", keys=["a-secret-key-123456"]))
