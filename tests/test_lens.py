"""Live reverse image search parts: SerpAPI's google_lens engine through a public-directory image host,
the Serper lens through S3, hash deduplication, and the configuration errors a user can meet."""

from __future__ import annotations

import asyncio
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.core.context_image import ContextImage
from arena.core.tool import RunResources, ToolError, ToolOptions
from tests.support.fake_serper import COLORS, FakeGoogleApis
from tests.support.local_s3 import local_s3, object_keys
from arena.tools.cassette import CassetteStore
from arena.tools.image_search import ImageSearchTool
from arena.tools.keypool import KeysExhausted
from arena.tools.lens import LiveImageSearch, lens_of
from arena.tools.web_search import WebSearch

SERPAPI_GOOD = "serpapi-good-key-5555555"
SERPAPI_REVOKED = "serpapi-revoked-key-0000"


class PublicDir:
    """A static web server for one directory: the 'https://PUBLIC/BASE' a user would run."""

    def __init__(self, directory: Path):
        handler = functools.partial(SimpleHTTPRequestHandler, directory=str(directory))
        handler.log_message = lambda *args: None
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/crops"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def context_image(blobs: BlobStore, color: str) -> ContextImage:
    image = Image.new("RGB", (120, 80), COLORS[color])
    return ContextImage(blobs.put_image(image), source="image_zoom_in_tool", image=image)


async def searches(options: ToolOptions, blobs: BlobStore, images: list[ContextImage]):
    run = RunResources(options)
    live = lens_of(run, options)
    results = []
    try:
        for image in images:
            try:
                results.append(await live.search(image, blobs))
            except (ToolError, KeysExhausted) as exc:
                results.append(exc)
        return results, live
    finally:
        await run.aclose()


def test_serpapi_lens_through_a_public_directory_rotates_dedupes_and_stops(tmp_path: Path, monkeypatch):
    fake = FakeGoogleApis({SERPAPI_GOOD: 2})
    public = PublicDir(tmp_path / "www")
    monkeypatch.setenv("SERPAPI_API_KEY", f"{SERPAPI_REVOKED},{SERPAPI_GOOD}")
    blobs = BlobStore(tmp_path / "blobs")
    red, white, blue = (context_image(blobs, c) for c in ("red", "white", "blue"))
    options = ToolOptions(web="record", cassette=str(tmp_path / "c.sqlite"), image_search="live",
                          lens_provider="serpapi", lens_endpoint=fake.base, image_host=public.base,
                          image_host_dir=str(tmp_path / "www" / "crops"), allow_private_hosts=True,
                          web_min_interval=0.0)
    try:
        results, live = asyncio.run(searches(options, blobs, [red, white, red, blue]))
    finally:
        public.stop()
        fake.stop()
    first, second, again, spent = results
    assert first.text.splitlines()[0] == "[1] Velmora boathouse door" and len(first.images) == 2
    assert first.data == {"mode": "live", "provider": "serpapi", "image_sha256": red.blob_id[7:71],
                          "hits": [{"title": "Velmora boathouse door", "url": f"{fake.base}/pages/boathouse",
                                    "source": "Velmora boathouse"},
                                   {"title": "Velmora", "url": f"{fake.base}/pages/velmora", "source": "Velmora"}]}
    assert second.text.startswith("[1] Orvanta Lighthouse sign")
    assert again.text == first.text, "the same crop: answered from the cassette"
    assert isinstance(spent, KeysExhausted)
    assert str(spent).startswith("serpapi: all 2 API key(s) in $SERPAPI_API_KEY are spent (key 1: HTTP 401: Invalid "
                                 "API key. Your API key should be here: https://serpapi.com/manage-api-key; key 2: "
                                 "HTTP 429: Your account has run out of searches.)")
    assert live.host.uploads == 3 and sorted(p.name for p in (tmp_path / "www" / "crops").iterdir()) == sorted(
        f"{img.blob_id[7:]}" for img in (red, white, blue))
    assert fake.calls["/search.json"] == 2 and live.searches == 3
    assert [u.rsplit("/", 1)[1] for u in fake.lens_images] == [red.blob_id[7:], white.blob_id[7:]]


def test_serper_lens_uploads_each_crop_once_even_when_searched_concurrently(tmp_path: Path, monkeypatch):
    key = "serper-lens-key-77777777"
    fake = FakeGoogleApis({key: None})
    monkeypatch.setenv("SERPER_API_KEY", key)
    blobs = BlobStore(tmp_path / "blobs")
    crop = context_image(blobs, "white")
    options = ToolOptions(web="record", cassette=str(tmp_path / "c.sqlite"), image_search="live",
                          lens_endpoint=fake.base, image_host="s3://arena-crops/x",
                          allow_private_hosts=True, web_min_interval=0.0)

    async def together():
        web = WebSearch.from_options(options)
        live = LiveImageSearch.from_options(options, web)
        try:
            return await asyncio.gather(*(live.search(crop, blobs) for _ in range(3))), live
        finally:
            await web.aclose()

    try:
        with local_s3("arena-crops"):
            (a, b, c), live = asyncio.run(together())
            stored = object_keys("arena-crops")
    finally:
        fake.stop()
    assert a.text == b.text == c.text and a.text.startswith("[1] Orvanta Lighthouse sign")
    assert stored == [f"x/{crop.blob_id[7:]}"] and live.host.uploads == 1
    assert fake.calls["/lens"] == 1, "one search per image, however many episodes ask at once"


def test_live_mode_configuration_errors_are_clear(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "serper-config-key-999999")
    cassette = str(tmp_path / "c.sqlite")
    with pytest.raises(ValueError, match="image_search=live needs the live web"):
        ImageSearchTool(ToolOptions(image_search="live"))
    with pytest.raises(ValueError, match="needs an image host: --tool-option image_host=s3://BUCKET/PREFIX"):
        ImageSearchTool(ToolOptions(image_search="live", web="record", cassette=cassette))
    with pytest.raises(ValueError, match="needs image_host_dir=DIR"):
        ImageSearchTool(ToolOptions(image_search="live", web="record", cassette=cassette,
                                    image_host="https://alice:pw@cdn.example/crops"))
    with pytest.raises(ValueError, match="unknown lens_provider 'bing'; known: serper, serpapi"):
        ImageSearchTool(ToolOptions(image_search="live", web="record", cassette=cassette, image_host="s3://b/p",
                                    lens_provider="bing"))
    with pytest.raises(ValueError, match=r"serpapi needs an API key: set the environment variable SERPAPI_API_KEY"):
        ImageSearchTool(ToolOptions(image_search="live", web="record", cassette=cassette, image_host="s3://b/p",
                                    lens_provider="serpapi"))
    try:
        ImageSearchTool(ToolOptions(image_search="live", web="record", cassette=cassette,
                                    image_host="https://alice:pw@cdn.example/crops"))
    except ValueError as exc:
        assert "alice" not in str(exc) and "pw@" not in str(exc)
    CassetteStore(cassette).close()
    monkeypatch.delenv("SERPER_API_KEY")
    ImageSearchTool(ToolOptions(image_search="live", web="replay", cassette=cassette))  # a replay needs no host, no key
