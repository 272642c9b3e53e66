import asyncio
import math
from pathlib import Path

import pytest
from PIL import Image

from arena.core import context_image
from arena.core.blobs import BlobStore
from arena.core.context_image import ContextImage
from arena.core.lru import LRU
from arena.core.dataset import Dataset
from arena.core.images import encode_png
from arena.core.task import Task
from arena.core.tool import ToolArgumentError, ToolContext, ToolOptions
from arena.tools import crop
from arena.tools.crop import CropTool
from arena.tools.crop import zoom as crop_zoom


def make_ctx(tmp_path: Path, size=(2000, 1000)) -> ToolContext:
    image = Image.new("RGB", size, (10, 20, 30))
    image.paste((255, 0, 0), (1000, 500, 1200, 600))
    task = Task(id="t", question="q", answers=["a"])
    dataset = Dataset(name="d", root=tmp_path, tasks=[task], source=tmp_path / "x.jsonl")
    return ToolContext(task=task, dataset=dataset, images=[ContextImage("sha256:x", source="task", image=image)],
                       blobs=BlobStore(tmp_path / "blobs"))


def call(tool, args, ctx):
    return asyncio.run(tool(args, ctx))


def test_relative_box_crops_the_right_pixels(tmp_path):
    ctx = make_ctx(tmp_path)
    result = call(CropTool(), {"bbox_2d": [500, 500, 600, 600], "label": "red"}, ctx)
    assert result.data["pixel_box"] == [1000, 500, 1200, 600]
    crop = result.images[0]
    assert crop.getpixel((crop.width // 2, crop.height // 2)) == (255, 0, 0)
    assert crop.width % 32 == 0 and crop.height % 32 == 0
    assert crop.width * crop.height >= 65_536


def test_pixel_coordinates_option(tmp_path):
    ctx = make_ctx(tmp_path)
    result = call(CropTool(ToolOptions(bbox_coords="pixel")), {"bbox_2d": [1000, 500, 1200, 600]}, ctx)
    assert result.data["pixel_box"] == [1000, 500, 1200, 600]
    assert "pixels" in CropTool(ToolOptions(bbox_coords="pixel")).schema()["function"]["parameters"]["properties"][
        "bbox_2d"]["description"]


def test_box_is_clamped_to_the_image(tmp_path):
    result = call(CropTool(), {"bbox_2d": [-50, -50, 1200, 1300]}, make_ctx(tmp_path))
    assert result.data["pixel_box"] == [0, 0, 2000, 1000]


@pytest.mark.parametrize("bbox, message", [
    ([900, 900, 100, 100], "empty or inverted"),
    ([100, 100, 100, 300], "empty or inverted"),
    ([1100, 100, 1200, 300], "empty or inverted"),
    ([math.nan, 0, 10, 10], "non-finite"),
    ([0, 0, math.inf, 10], "non-finite"),
    ([1, 2, 3], "4 numbers"),
])
def test_bad_boxes_are_argument_errors(tmp_path, bbox, message):
    with pytest.raises(ToolArgumentError, match=message):
        call(CropTool(), {"bbox_2d": bbox}, make_ctx(tmp_path))


def test_schema_violations_and_img_idx_range(tmp_path):
    ctx = make_ctx(tmp_path)
    with pytest.raises(ToolArgumentError, match="bbox_2d"):
        call(CropTool(), {"bbox_2d": "left corner"}, ctx)
    with pytest.raises(ToolArgumentError, match="img_idx 3 is out of range"):
        call(CropTool(), {"bbox_2d": [0, 0, 10, 10], "img_idx": 3}, ctx)


def test_img_idx_selects_a_returned_image(tmp_path):
    ctx = make_ctx(tmp_path)
    first = call(CropTool(), {"bbox_2d": [500, 500, 600, 600]}, ctx)
    ctx.images.append(ContextImage("sha256:y", source="crop", image=first.images[0]))
    second = call(CropTool(), {"bbox_2d": [0, 0, 500, 500], "img_idx": 1}, ctx)
    assert second.data["img_idx"] == 1
    assert second.data["source_size"] == [first.images[0].width, first.images[0].height]


def test_tiny_crop_is_upscaled_and_extreme_aspect_rejected(tmp_path):
    ctx = make_ctx(tmp_path)
    tiny = call(CropTool(ToolOptions(bbox_coords="pixel")), {"bbox_2d": [10, 10, 15, 20]}, ctx)
    assert min(tiny.images[0].size) >= 28
    with pytest.raises(ToolArgumentError, match="aspect ratio"):
        call(CropTool(ToolOptions(bbox_coords="pixel")), {"bbox_2d": [0, 0, 2000, 5]}, make_ctx(tmp_path, (2000, 1000)))


def test_a_zoom_asked_again_is_served_from_the_cache_by_content_id(tmp_path, monkeypatch):
    zooms = []
    monkeypatch.setattr(crop, "zoom", lambda *args: zooms.append(args) or crop_zoom(*args))
    monkeypatch.setattr(crop, "ZOOMS", LRU(64, 128 << 20, lambda image: 4 * image.width * image.height))
    content_id = "sha256:" + "ab" * 32 + ".png"

    def ctx(blob_id: str) -> ToolContext:
        ctx = make_ctx(tmp_path)
        ctx.images[0].blob_id = blob_id
        return ctx

    first = call(CropTool(), {"bbox_2d": [500, 500, 600, 600]}, ctx(content_id))
    again = call(CropTool(), {"bbox_2d": [500, 500, 600, 600], "label": "again"}, ctx(content_id))
    assert len(zooms) == 1 and again.images[0] is first.images[0]  # the same object: its PNG is kept too
    fresh = crop_zoom(make_ctx(tmp_path).images[0]._given.image, (1000, 500, 1200, 600))
    assert again.images[0].tobytes() == fresh.tobytes() and again.data == {**first.data}
    call(CropTool(), {"bbox_2d": [500, 500, 610, 600]}, ctx(content_id))  # another box
    call(CropTool(), {"bbox_2d": [500, 500, 600, 600]}, ctx("sha256:" + "cd" * 32 + ".png"))  # other content
    call(CropTool(), {"bbox_2d": [500, 500, 600, 600]}, ctx("sha256:x"))  # not a content address: never cached
    call(CropTool(), {"bbox_2d": [500, 500, 600, 600]}, ctx("sha256:x"))
    assert len(zooms) == 5


def test_episodes_asking_the_same_zoom_at_once_share_one_zoom_and_one_encoding(tmp_path, monkeypatch):
    zooms, encoded = [], []
    monkeypatch.setattr(crop, "zoom", lambda *args: zooms.append(args) or crop_zoom(*args))
    monkeypatch.setattr(crop, "ZOOMS", LRU(64, 128 << 20, lambda image: 4 * image.width * image.height))
    monkeypatch.setattr(context_image, "encode_png", lambda image, *a, **k: encoded.append(image.size) or
                        encode_png(image, *a, **k))
    ctx = make_ctx(tmp_path)
    ctx.images[0].blob_id = "sha256:" + "ef" * 32 + ".png"

    async def episodes():
        results = await asyncio.gather(*(CropTool()({"bbox_2d": [500, 500, 600, 600]}, ctx) for _ in range(8)))
        return results, await asyncio.gather(*(asyncio.to_thread(ctx.blobs.put_image, r.images[0]) for r in results))

    results, blob_ids = asyncio.run(episodes())
    assert len(zooms) == 1 and len(encoded) == 1 and len(set(blob_ids)) == 1
    assert all(r.images[0] is results[0].images[0] for r in results)
