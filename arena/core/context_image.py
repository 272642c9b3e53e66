"""Images in an episode's context: decoded at most once and only when needed, encoded for a model at most once per
size.

A task PNG is checked without decoding when its episode starts (`ContextImage.check`), goes to a model as its own
bytes when it needs no resizing, and is decoded when its pixels are first needed, only down to the lowest row a crop
needs while crops stay in its top half. Decoded task images (reduced past `images.MAX_SOURCE_PIXELS`) and model
encodings are cached process-wide by blob id in byte-bounded LRUs (`ARENA_IMAGE_CACHE_MB`, default 768); episodes
do not pin decoded pixels (an evicted image is decoded again). Cached images are shared: never modify one in place.
`MODEL_PNGS` keeps the PNG sent to a model per content and size setting (the agent makes the data URL, and hands these
bytes to the recorder with it: `arena.endpoints.transcript.serialised_part`). `PNGS` keeps an image object's PNG
(`png_of`) by id(image); its entry holds the image, so the id is not reused."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Callable

from PIL import Image

from .content_ids import vouch
from .images import (Decoded, ImageError, MAX_RATIO, check_image, encode_png, fit_for_model, load_image,
                     smart_resize)
from .lru import LRU

DECODED: LRU[tuple, Decoded] = LRU(256, int(os.environ.get("ARENA_IMAGE_CACHE_MB", "768")) << 20,
                                   lambda d: d.nbytes)
MODEL_PNGS: LRU[tuple, bytes] = LRU(256, 192 << 20, len)
CHECKED: LRU[tuple, tuple[int, int]] = LRU(4096)
"""The size of each PNG file checked without decoding (`check_image`), by blob id (a content address)."""
PNGS: LRU[int, tuple[Image.Image, bytes]] = LRU(64, 96 << 20, lambda k: len(k[1]) + 4 * k[0].width * k[0].height)
_INFLIGHT: dict[tuple, asyncio.Future] = {}


def png_of(image: Image.Image) -> bytes:
    """PNG (level 1, Z_RLE) of an image never modified in place, encoded once per object while it stays in `PNGS`."""
    png = known_png(image)
    if png is None:
        PNGS.put(id(image), (image, png := encode_png(image, 1, rle=True)))
    return png


def known_png(image: Image.Image) -> bytes | None:
    """`png_of(image)` if `PNGS` holds it (no encoding), else None."""
    kept = PNGS.get(id(image))
    return kept[1] if kept is not None and kept[0] is image else None


async def single_flight(key: tuple, cache: LRU | None, compute):
    """`cache.get(key[1:])`, else `compute()` in a thread, once even when many episodes ask at the same moment (its
    value then kept in `cache`, unless it is None: nothing to keep; with no cache, only shared by those asking while it
    is computed)."""
    value = cache.get(key[1:]) if cache is not None else None
    if value is not None:
        return value
    pending = _INFLIGHT.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    future = asyncio.get_running_loop().create_future()
    _INFLIGHT[key] = future
    try:
        value = await asyncio.to_thread(compute)
        if cache is not None and value is not None:
            cache.put(key[1:], value)
        future.set_result(value)
        return value
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()
        raise
    finally:
        del _INFLIGHT[key]


def model_png(image: Image.Image, factor: int, min_pixels: int, max_pixels: int,
              full_size: tuple[int, int] | None = None) -> bytes:
    """The PNG of `image` smart-resized the way a Qwen-VL processor would (from `full_size` if reduced)."""
    fitted = fit_for_model(image, factor, min_pixels, max_pixels, full_size)  # `image` itself if it fits:
    return png_of(image) if fitted is image else encode_png(fitted, 1, rle=True)  # its blob's bytes, if kept


def file_png(path: Path, factor: int, min_pixels: int, max_pixels: int) -> bytes | None:
    """The bytes of PNG file `path` when they can go to a model as they are, with no decoding: plain 8-bit RGB or
    grey pixels (no transparency, no colour profile) at a size a Qwen-VL processor keeps (`smart_resize`). None
    otherwise, and for a file that cannot be opened as an image (decoding it then says why)."""
    try:
        with Image.open(path) as im:
            (width, height), info = im.size, set(im.info)
            plain = im.format == "PNG" and im.mode in ("RGB", "L") and not {"transparency", "icc_profile"} & info
            if not plain or smart_resize(height, width, factor, min_pixels, max_pixels) != (height, width):
                return None
        return path.read_bytes()
    except (OSError, SyntaxError, ValueError):  # (ImageError, from smart_resize, is a ValueError)
        return None


class ContextImage:
    """One image the agent has seen: a task image (from a file) or one a tool returned.

    `blob_id` is its content address in the run's blob store; `source` says where it came from (`task`, or the tool
    name). Decoding and model encoding run in a worker thread and are cached, so a 4K task image is decoded once
    however often it is cropped, and once for all the episodes that show it while it stays in the cache. A task
    image's pixels may be reduced (see `decoded()`); `size` is the file's."""

    def __init__(self, blob_id: str, *, source: str, image: Image.Image | None = None, path: Path | None = None,
                 stored: Path | None = None):
        if image is None and path is None:
            raise ValueError("ContextImage needs an image or a path")
        self.blob_id = blob_id
        self.source = source
        self.path = path
        self.stored = stored
        """The run's copy of the file under its content address (`BlobStore.content_file`), or None: the bytes sent as
        they are come from it, so they are known to be `blob_id`'s without hashing them (`content_ids.vouch`)."""
        self._full_size: tuple[int, int] | None = image.size if image is not None else None
        self._given = Decoded(image, self._full_size) if image is not None else None

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) of the full image once checked or decoded, else None."""
        return self._full_size

    async def check(self) -> None:
        """Make sure the image can be shown before a request shows it: its size known and within the limits. A PNG
        file is checked chunk by chunk (`check_image`, once per content while `CHECKED` holds it) and decoded when
        its pixels are first needed; a file of another format is decoded now (and kept, as `decoded()` keeps it).
        ImageError names the file."""
        if self._full_size is not None:
            return
        path = self.path
        size = await single_flight(("check", self.blob_id), CHECKED, lambda: check_image(path, MAX_RATIO))
        if size is None:  # not a PNG: decoded (which knows its size)
            await self.decoded()
            return
        self._full_size = size

    async def decoded(self, rows: int | None = None) -> Decoded:
        """The pixels (reduced if the file is large) and the full size of the file.

        `rows`: only the image's top `rows` rows are needed (a crop above that line). Unless the whole image is at
        hand, its size is not known yet (`check`) or `rows` is over half its height (then it is decoded whole, for
        what comes next), a PNG that allows it is decoded down to that row and no further (`Decoded.rows`, kept
        until a crop needs more)."""
        if self._given is not None:
            return self._given
        path = self.path
        decoded = DECODED.get((self.blob_id,))
        if decoded is None and rows is not None and self._full_size is not None and rows <= self._full_size[1] // 2:
            top = DECODED.get((self.blob_id, "top"))
            if top is None or (top.rows or 0) < rows:
                top = await single_flight(("top", self.blob_id, rows), None,
                                          lambda: load_image(path, max_ratio=MAX_RATIO, rows=rows))
                DECODED.put((self.blob_id, "top") if top.rows is not None else (self.blob_id,), top)
            return top
        if decoded is None:
            decoded = await single_flight(("decode", self.blob_id), DECODED,
                                          lambda: load_image(path, max_ratio=MAX_RATIO))
            DECODED.get((self.blob_id, "top"), pop=True)  # (the whole image serves every crop from now on)
        self._full_size = decoded.full_size
        return decoded

    async def pil(self) -> Image.Image:
        return (await self.decoded()).image

    async def file_bytes(self) -> bytes:
        """The file's own bytes (an image from a file): read from the run's copy where there is one."""
        if self.path is None:
            raise ValueError(f"image {self.blob_id} from {self.source} has no file")
        data = await asyncio.to_thread(self._read_file, Path.read_bytes)
        assert data is not None  # (read_bytes gives bytes or raises)
        return data

    def _read_file(self, read: Callable[..., bytes | None], *args: object) -> bytes | None:
        """`read(file, *args)` of the run's copy, the bytes it gives vouched for as `blob_id`'s; of `path` when there
        is no copy (none kept, or gone) or reading it raises OSError."""
        if self.stored is not None and self.stored.is_file():
            try:
                data = read(self.stored, *args)
            except OSError:  # (the copy gone: the file as without one)
                pass
            else:
                if data is not None:
                    vouch(data, self.blob_id)
                return data
        assert self.path is not None
        return read(self.path, *args)

    async def model_png(self, factor: int, min_pixels: int, max_pixels: int) -> bytes:
        """The PNG of the image smart-resized for the model: a PNG file that needs nothing done goes as its own
        bytes, undecoded (`file_png`), any other image through `model_png`; cached per content and size setting."""
        key = (self.blob_id, factor, min_pixels, max_pixels)
        png = MODEL_PNGS.get(key)
        if png is None and self.path is not None:
            png = await single_flight(("file png", *key), MODEL_PNGS,
                                      lambda: self._read_file(file_png, factor, min_pixels, max_pixels))
        if png is None:
            decoded = await self.decoded()
            try:
                png = await single_flight(("png", *key), MODEL_PNGS, lambda: model_png(
                    decoded.image, factor, min_pixels, max_pixels, decoded.full_size))
            except ImageError as exc:
                raise ImageError(f"{self.path or f'image {self.blob_id} from {self.source}'}: {exc}") from None
        return png
