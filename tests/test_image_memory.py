"""Bounded image memory (reduced decoding, the byte-bounded decoded cache) and image errors that name the file."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from PIL import Image

from arena.core import images
from arena.core.blobs import BlobStore
from arena.core.context_image import DECODED, ContextImage
from arena.core.lru import LRU
from arena.core.dataset import Dataset
from arena.core.images import Decoded, ImageError, load_image, smart_resize
from arena.core.task import Task
from arena.core.tool import ToolArgumentError, ToolContext, ToolOptions
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.tools.crop import CropTool


def _scan(path: Path, size: tuple[int, int], mode: str = "L") -> Path:
    """A blank scan with a black square from 50 % to 60 % of each side."""
    image = Image.new(mode, size, 255 if mode == "L" else (255, 255, 255))
    w, h = size
    image.paste(0 if mode == "L" else (0, 0, 0), (w // 2, h // 2, w * 6 // 10, h * 6 // 10))
    image.save(path)
    return path


def test_large_png_is_decoded_reduced_and_grey_stays_grey(tmp_path, monkeypatch):
    monkeypatch.setattr(images, "MAX_SOURCE_PIXELS", 1_000_000)
    decoded = load_image(_scan(tmp_path / "scan.png", (3000, 2000)))
    assert decoded.full_size == (3000, 2000)
    assert decoded.image.mode == "L" and decoded.image.size == (1000, 667)  # reduce(3): ceil(3000/3), ceil(2000/3)
    assert decoded.image.width * decoded.image.height <= 1_000_000
    assert decoded.nbytes == 1000 * 667


def test_large_jpeg_is_decoded_downscaled_by_draft(tmp_path, monkeypatch):
    monkeypatch.setattr(images, "MAX_SOURCE_PIXELS", 1_000_000)
    path = tmp_path / "photo.jpg"
    _scan(tmp_path / "tmp.png", (4000, 3000), "RGB")
    Image.open(tmp_path / "tmp.png").save(path, quality=90)
    decoded = load_image(path)
    assert decoded.full_size == (4000, 3000) and decoded.image.mode == "RGB"
    assert decoded.image.width * decoded.image.height <= 1_000_000
    small = load_image(path, max_pixels=20_000_000)  # under the cap: kept whole
    assert small.image.size == (4000, 3000)


def test_decoded_cache_honours_its_byte_budget():
    cache: LRU[str, Decoded] = LRU(100, max_bytes=2_500_000, weigh=lambda d: d.nbytes)
    for name in "abc":
        cache.put(name, Decoded(Image.new("RGB", (1000, 333)), (1000, 333)))  # 999,000 bytes each
    assert cache.get("a") is None and cache.get("b") is not None and cache.get("c") is not None
    assert cache.bytes == 2 * 999_000 <= cache.max_bytes
    cache.put("d", Decoded(Image.new("L", (2000, 2000)), (2000, 2000)))  # over budget alone: kept alone
    assert cache.bytes == 4_000_000 and cache.get("c") is None and cache.get("d") is not None
    assert DECODED.max_bytes is not None and DECODED.max_bytes <= 1 << 30


def test_context_image_crops_full_resolution_coordinates_from_reduced_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(images, "MAX_SOURCE_PIXELS", 1_000_000)
    path = _scan(tmp_path / "scan.png", (4000, 4000))
    image = ContextImage("sha256:scan-test", source="task", path=path)
    task = Task(id="t", question="q")
    ctx = ToolContext(task=task, dataset=Dataset(name="d", root=tmp_path, tasks=[task], source=tmp_path / "x.jsonl"),
                      images=[image], blobs=BlobStore(tmp_path / "blobs"))
    tool = CropTool(ToolOptions(bbox_coords="pixel"))
    result = asyncio.run(tool({"bbox_2d": [2000, 2000, 2400, 2400]}, ctx))
    assert image.size == (4000, 4000) and result.data["source_size"] == [4000, 4000]
    assert result.data["pixel_box"] == [2000, 2000, 2400, 2400]
    zoomed = result.images[0]
    assert zoomed.mode == "RGB" and zoomed.size == (384, 384)  # what a full-resolution 400x400 crop gets
    assert smart_resize(400, 400, 32, 65_536, 8_294_400) == (384, 384)
    assert zoomed.getpixel((192, 192)) == (0, 0, 0) and zoomed.getpixel((5, 5)) == (0, 0, 0)
    decoded = asyncio.run(image.decoded())
    assert decoded.image.size == (1000, 1000) and DECODED.get(("sha256:scan-test",)) is decoded


def test_huge_crop_box_is_an_invalid_call(tmp_path):
    task = Task(id="t", question="q")
    ctx = ToolContext(task=task, dataset=Dataset(name="d", root=tmp_path, tasks=[task], source=tmp_path / "x.jsonl"),
                      images=[ContextImage("sha256:x", source="task", image=Image.new("RGB", (64, 64)))],
                      blobs=BlobStore(tmp_path / "blobs"))
    with pytest.raises(ToolArgumentError, match=r"bbox_2d.*1e\+308"):  # the generic number check sees it first
        asyncio.run(CropTool()({"bbox_2d": [0, 0, 1e308, 1e308]}, ctx))
    with pytest.raises(ToolArgumentError, match=r"out of range: \[0.0, 0.0, 1000000000.0, 1000000000.0\]"):
        asyncio.run(CropTool()({"bbox_2d": [0, 0, 1e9, 1e9]}, ctx))


def test_image_limits_are_named_with_the_file(tmp_path, monkeypatch):
    wide = tmp_path / "strip.png"
    Image.new("L", (5000, 10)).save(wide)
    with pytest.raises(ImageError, match=r"strip.png: 5000x10 has an aspect ratio of 500:1, over the limit of 200:1"):
        load_image(wide, max_ratio=200)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 40_000)
    with pytest.raises(ImageError, match=r"strip.png: 5000x10 = 50,000 pixels is over the limit of 40,000 pixels"):
        load_image(wide)
    with pytest.raises(ImageError, match=r"<bytes>: 5000x10 = 50,000 pixels is over the limit"):
        load_image(wide.read_bytes())


@pytest.mark.parametrize("kind, message", [
    ("ratio", r"scene.png: 5000x10 has an aspect ratio of 500:1, over the limit of 200:1"),
    ("bomb", r"scene.png: 1600x1000 = 1,600,000 pixels is over the limit of 1,000,000 pixels per image"),
    ("broken", r"scene.png: cannot decode image"),
])
def test_bad_task_images_end_the_episode_with_a_clear_error(tiny_data: Path, tmp_path, monkeypatch, kind, message):
    scene = tiny_data.parent / "images" / "scene.png"
    if kind == "ratio":
        Image.new("RGB", (5000, 10)).save(scene)
    elif kind == "bomb":  # new pixels, so that no earlier test's decoded copy is in the process-wide cache
        Image.new("RGB", (1600, 1000), (17, 99, 201)).save(scene)
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000_000)
    else:
        scene.write_bytes(scene.read_bytes()[:200])
    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": [{"answer": "x"}]},
                           out=str(tmp_path / "logs"), run_id=f"bad-{kind}"))
    assert result.episodes and all(e.finish_reason == "error" for e in result.episodes)
    for episode in result.episodes:
        assert episode.error is not None and "Traceback" not in episode.error
        assert len(episode.error.splitlines()) == 1 and re.search(message, episode.error), episode.error
