import asyncio
import json
import shutil
from pathlib import Path

import pytest

from arena.core.blobs import BlobStore
from arena.core.context_image import ContextImage
from arena.core.dataset import DatasetError, load_datasets
from arena.core.images import decode_image
from arena.core.tool import ToolContext, ToolOptions
from arena.core.world import WORLD_BUILDERS
from arena.tools.crop import pixel_box, zoom
from arena.tools.image_index import CACHE_DIR, ReverseImageIndex
from arena.tools.image_search import ImageSearchTool


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return WORLD_BUILDERS["vistahop-mini"](tmp_path_factory.mktemp("vh-index") / "world", seed=3, size="tiny")


def scenes_of(world: Path) -> list[dict]:
    return [json.loads(line) for line in (world / "images/scenes.jsonl").read_text().splitlines()]


def test_a_crop_of_any_anchor_finds_its_entity_first(world):
    index = ReverseImageIndex.for_world(world)
    checked = 0
    for scene in scenes_of(world):
        image = decode_image(world / scene["image"])
        for anchor in scene["anchors"]:
            gold = pixel_box([float(v) for v in anchor["bbox_2d"]], image.width, image.height, True)
            x1, y1, x2, y2 = anchor["box"]
            dx, dy = (x2 - x1) // 4, (y2 - y1) // 4
            loose = pixel_box([x1 - dx, y1 - dy, x2 + dx, y2 + dy], image.width, image.height, False)
            for box in (gold, loose):
                hits = index.search(zoom(image, box), k=5)
                assert hits[0].title == anchor["name"], (anchor["id"], box, [h.title for h in hits])
                assert hits[0].url.endswith("/" + anchor["name"].replace(" ", "_"))
                assert hits[0].thumbnail.is_absolute() and hits[0].thumbnail.is_file()
                assert len({h.title for h in hits}) == len(hits) <= 5
                assert hits[0].score >= hits[-1].score
            checked += 1
    assert checked >= 8


def test_the_whole_scene_finds_its_photograph(world):
    index = ReverseImageIndex.for_world(world)
    for scene in scenes_of(world)[:3]:
        hits = index.search(decode_image(world / scene["image"]), k=3)
        assert hits[0].title == scene["title"] and hits[0].kind == "scene"


def test_for_world_is_cached_and_none_without_an_index(world, tmp_path):
    assert ReverseImageIndex.for_world(world) is ReverseImageIndex.for_world(world)
    assert ReverseImageIndex.for_world(tmp_path) is None
    assert list((world / CACHE_DIR).glob("*.npz"))


def test_the_feature_cache_is_used_and_keyed_by_the_manifest(world, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(world, copy)
    first = ReverseImageIndex.load(copy)
    shutil.rmtree(copy / "images" / "anchors")
    again = ReverseImageIndex.load(copy)
    assert len(again.entries) == len(first.entries) and (again.features.layout == first.features.layout).all()
    manifest = copy / "images" / "index.jsonl"
    manifest.write_text(manifest.read_text() + "\n")
    with pytest.raises(Exception, match="anchors"):
        ReverseImageIndex.load(copy)


def test_image_search_tool_uses_the_index_on_a_crop(world, tmp_path):
    [dataset] = load_datasets(world)
    task = dataset.tasks[0]
    anchor = task.metadata["anchors"][0]
    image = decode_image(world / task.images[0])
    crop = zoom(image, pixel_box([float(v) for v in anchor["bbox_2d"]], image.width, image.height, True))
    images = [ContextImage("sha256:task", source="task", image=image),
              ContextImage("sha256:crop", source="image_zoom_in_tool", image=crop)]
    ctx = ToolContext(task=task, dataset=dataset, images=images, blobs=BlobStore(tmp_path / "blobs"))
    result = asyncio.run(ImageSearchTool(ToolOptions(image_search="index"))({"img_idx": 1}, ctx))
    assert result.text.startswith(f"[1] {anchor['name']}\nURL: ")
    assert result.data["mode"] == "index" and len(result.images) == len(result.data["hits"])
    stored = asyncio.run(ImageSearchTool(ToolOptions(image_search="stored"))({"img_idx": 0}, ctx))
    assert anchor["name"] not in stored.text and stored.text.startswith("Title 1: ")


def test_a_manifest_path_leaving_the_world_is_refused(world, tmp_path):
    copy = tmp_path / "evil"
    shutil.copytree(world, copy, ignore=shutil.ignore_patterns(".cache"))
    manifest = copy / "images" / "index.jsonl"
    lines = manifest.read_text().splitlines()
    entry = json.loads(lines[0])
    entry["thumbnail"] = "../../../etc/passwd"
    manifest.write_text("\n".join([json.dumps(entry)] + lines[1:]) + "\n")
    with pytest.raises(DatasetError, match="index.jsonl:1: .*escapes"):
        ReverseImageIndex.load(copy)
