"""Task images decoded only when needed: a PNG checked chunk by chunk when its episode starts, sent as its own bytes
when it needs no resizing, decoded only down to the lowest row a crop needs."""

from __future__ import annotations

import asyncio
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from arena.core import context_image
from arena.core.blobs import BlobStore
from arena.core.context_image import CHECKED, DECODED, ContextImage
from arena.core.dataset import Dataset
from arena.core.images import ImageError, check_image, load_image
from arena.core.task import Task
from arena.core.tool import ToolContext, ToolOptions
from arena.tools.crop import CropTool


def _noise(size: tuple[int, int], seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _counting_loads(monkeypatch) -> list[int | None]:
    """Record the `rows` of every decode a ContextImage starts."""
    seen: list[int | None] = []

    def counted(path, *args, rows=None, **kwargs):
        seen.append(rows)
        return load_image(path, *args, rows=rows, **kwargs)
    monkeypatch.setattr(context_image, "load_image", counted)
    return seen


@pytest.mark.parametrize("mode", ["RGB", "L", "P", "RGBA"])
def test_a_png_decoded_down_to_a_row_holds_exactly_the_whole_images_top_rows(tmp_path, mode):
    path = tmp_path / f"{mode}.png"
    image = _noise((301, 200)) if mode != "P" else _noise((301, 200)).quantize(64)
    image.convert(mode).save(path)
    whole = load_image(path)
    for rows in (1, 57, 199):
        top = load_image(path, rows=rows)
        assert top.rows == rows and top.full_size == (301, 200) and top.image.size == (301, rows)
        assert top.image.mode == whole.image.mode
        assert top.image.tobytes() == whole.image.crop((0, 0, 301, rows)).tobytes()
    assert load_image(path, rows=200).rows is None and load_image(path, rows=500).rows is None  # all of it: whole


def _adam7_png(image: Image.Image) -> bytes:
    """`image` (RGB) as an interlaced PNG (Adam7, every row unfiltered): Pillow writes none."""
    pixels = np.asarray(image)
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b"".join(b"\0" + row.tobytes() for x0, y0, dx, dy in passes
                   for row in pixels[y0::dy, x0::dx] if pixels[y0::dy, x0::dx].size)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", image.width, image.height, 8, 2, 0, 0, 1)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_interlaced_animated_and_other_formats_are_decoded_whole_when_rows_are_asked(tmp_path):
    interlaced, animated, jpeg = tmp_path / "interlaced.png", tmp_path / "animated.png", tmp_path / "photo.jpg"
    interlaced.write_bytes(_adam7_png(_noise((120, 90))))
    frames = [_noise((120, 90), seed) for seed in (1, 2)]
    frames[0].save(animated, save_all=True, append_images=frames[1:])
    _noise((120, 90)).save(jpeg)
    assert Image.open(interlaced).info.get("interlace") == 1 and Image.open(animated).is_animated
    for path in (interlaced, animated, jpeg):
        decoded = load_image(path, rows=10)
        assert decoded.rows is None and decoded.image.size == (120, 90)
    assert load_image(interlaced, rows=10).image.tobytes() == _noise((120, 90)).tobytes()


def test_the_check_reads_every_chunks_checksum_and_names_a_damaged_file(tmp_path):
    good, flipped, cut = tmp_path / "good.png", tmp_path / "flipped.png", tmp_path / "cut.png"
    _noise((200, 150)).save(good)
    assert check_image(good) == (200, 150)
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x40  # one bit in the middle of the pixel data
    flipped.write_bytes(bytes(data))
    cut.write_bytes(good.read_bytes()[:-30])
    with pytest.raises(ImageError, match=r"flipped.png: cannot decode image \(broken PNG file"):
        check_image(flipped)
    with pytest.raises(ImageError, match=r"cut.png: cannot decode image"):
        check_image(cut)
    Image.new("RGB", (2010, 10)).save(tmp_path / "strip.png")
    with pytest.raises(ImageError, match=r"over the limit of 200:1"):
        check_image(tmp_path / "strip.png", max_ratio=200)
    _noise((200, 150)).save(tmp_path / "photo.jpg")
    assert check_image(tmp_path / "photo.jpg") is None  # no checksums to read: decoding is its check


def _ctx(tmp_path: Path, image: ContextImage) -> ToolContext:
    task = Task(id="t", question="q")
    return ToolContext(task=task, dataset=Dataset(name="d", root=tmp_path, tasks=[task], source=tmp_path / "x.jsonl"),
                       images=[image], blobs=BlobStore(tmp_path / "blobs"))


def test_a_task_png_is_checked_undecoded_sent_as_its_bytes_and_crops_decode_only_the_rows_above_them(
        tmp_path, monkeypatch):
    path = tmp_path / "scene.png"
    full = _noise((1316, 728), seed=3)  # a size the model takes as it is (47x26 patches of 28)
    full.save(path)
    loads = _counting_loads(monkeypatch)
    image = ContextImage("sha256:lazy-scene", source="task", path=path)
    asyncio.run(image.check())
    assert image.size == (1316, 728) and CHECKED.get(("sha256:lazy-scene",)) == (1316, 728)
    assert asyncio.run(image.model_png(28, 4 * 28 * 28, 1280 * 28 * 28)) == path.read_bytes()
    assert loads == []  # checked and sent with no pixel decoded

    tool, given = CropTool(ToolOptions(bbox_coords="pixel")), ContextImage("sha256:lazy-given", source="task",
                                                                            image=full)
    for box, decoded_rows in (([700, 58, 960, 161], [161]), ([100, 20, 300, 120], [161]),
                              ([100, 200, 500, 300], [161, 300]), ([0, 500, 400, 700], [161, 300, None])):
        result = asyncio.run(tool({"bbox_2d": box}, _ctx(tmp_path, image)))
        expected = asyncio.run(tool({"bbox_2d": box}, _ctx(tmp_path, given)))
        assert result.images[0].tobytes() == expected.images[0].tobytes() and result.data == expected.data
        assert loads == decoded_rows  # down to the box's bottom row, again only deeper, whole past half the height
    assert DECODED.get(("sha256:lazy-scene",)).rows is None  # the whole image kept for what comes next
    assert DECODED.get(("sha256:lazy-scene", "top")) is None  # and its top rows let go
    asyncio.run(tool({"bbox_2d": [0, 0, 50, 50]}, _ctx(tmp_path, image)))
    assert loads == [161, 300, None]


def test_a_png_that_passes_the_check_but_cannot_be_decoded_fails_the_crop_with_its_name(tmp_path):
    path = tmp_path / "crafted.png"
    _noise((400, 300), seed=4).save(path)
    data = bytearray(path.read_bytes())
    start = data.index(b"IDAT") + 4
    length = struct.unpack(">I", data[start - 8:start - 4])[0]
    data[start:start + length] = b"\xff" * length  # no longer a zlib stream, but its checksum made good again
    data[start + length:start + length + 4] = struct.pack(">I", zlib.crc32(b"IDAT" + bytes(data[start:start + length])))
    path.write_bytes(bytes(data))
    image = ContextImage("sha256:crafted", source="task", path=path)
    asyncio.run(image.check())  # every chunk's checksum is good: what can be known without inflating it
    with pytest.raises(ImageError, match="crafted.png: cannot decode image"):
        asyncio.run(CropTool()({"bbox_2d": [0, 0, 500, 200]}, _ctx(tmp_path, image)))


def test_a_jpeg_task_image_is_decoded_by_its_check(tmp_path, monkeypatch):
    path = tmp_path / "photo.jpg"
    _noise((320, 240), seed=5).save(path)
    loads = _counting_loads(monkeypatch)
    image = ContextImage("sha256:lazy-jpeg", source="task", path=path)
    asyncio.run(image.check())
    assert loads == [None] and image.size == (320, 240) and DECODED.get(("sha256:lazy-jpeg",)) is not None
