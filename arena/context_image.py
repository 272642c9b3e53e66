"""Images in an episode's context: decoded at most once, encoded for a model at most once per size.

Decoded images and model encodings are also cached process-wide by content hash
(blob id), so repeats, settings and budgets of the same task share the work.
Cached images are shared: never modify one in place.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Generic, TypeVar

from PIL import Image

from .images import encode_png, fit_for_model, open_image, png_data_url

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A small thread-safe least-recently-used cache."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return None

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)


DECODED: LRU[str, Image.Image] = LRU(8)
DATA_URLS: LRU[tuple[str, int, int, int], str] = LRU(64)
_INFLIGHT: dict[tuple, asyncio.Future] = {}


async def _single_flight(key: tuple, cache: LRU, compute):
    """Compute a cache entry once even when many episodes ask for it at the same moment."""
    value = cache.get(key[1:])
    if value is not None:
        return value
    pending = _INFLIGHT.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    future = asyncio.get_running_loop().create_future()
    _INFLIGHT[key] = future
    try:
        value = await asyncio.to_thread(compute)
        cache.put(key[1:], value)
        future.set_result(value)
        return value
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()
        raise
    finally:
        del _INFLIGHT[key]


def model_data_url(image: Image.Image, factor: int, min_pixels: int, max_pixels: int) -> str:
    """PNG data URL of `image` smart-resized the way a Qwen-VL processor would."""
    return png_data_url(encode_png(fit_for_model(image, factor, min_pixels, max_pixels), level=3))


class ContextImage:
    """One image the agent has seen: a task image (from a file) or one a tool returned.

    `blob_id` is its content address in the run's blob store; `source` says where it
    came from (`task`, or the tool name). Decoding and model encoding run in a worker
    thread and are cached, so a 4K task image is decoded once however often it is
    cropped, and once for all the episodes that show it while it stays in the cache.
    """

    def __init__(
        self,
        blob_id: str,
        *,
        source: str,
        image: Image.Image | None = None,
        path: Path | None = None,
    ):
        if image is None and path is None:
            raise ValueError("ContextImage needs an image or a path")
        self.blob_id = blob_id
        self.source = source
        self.path = path
        self._image = image
        self._lock = asyncio.Lock()

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) once decoded, else None."""
        return self._image.size if self._image is not None else None

    async def pil(self) -> Image.Image:
        if self._image is None:
            async with self._lock:
                if self._image is None:
                    path = self.path
                    self._image = await _single_flight(("decode", self.blob_id), DECODED,
                                                       lambda: open_image(path))
        return self._image

    async def data_url(self, factor: int, min_pixels: int, max_pixels: int) -> str:
        """PNG data URL of the image smart-resized for the model; cached per content and size setting."""
        key = (self.blob_id, factor, min_pixels, max_pixels)
        url = DATA_URLS.get(key)
        if url is None:
            image = await self.pil()
            url = await _single_flight(("url", *key), DATA_URLS,
                                       lambda: model_data_url(image, factor, min_pixels, max_pixels))
        return url
