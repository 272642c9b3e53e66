import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from arena.core.dataset import load_datasets
from arena.core.world import WORLD_BUILDERS, read_world
from arena.suites.vistahop.world import WorldBuildError
from arena.suites.vistahop.world.chains import answer_in_question
from arena.suites.vistahop.world.fusion import apply, format_number
from arena.suites.vistahop.world.legibility import (ILLEGIBLE_BELOW_PX, LEGIBLE_FROM_PX, AnchorRuleError, check,
                                              crop_pixels, crop_scale, measure, model_scale, relative_box)
from arena.suites.vistahop.world.schema import ATTRIBUTE_BY_NAME, CATEGORIES, RELATIONS
from arena.tools.crop import pixel_box, zoom

SEED = 7


def build(out: Path, seed: int = SEED, size: str = "tiny") -> Path:
    return WORLD_BUILDERS["vistahop-mini"](out, seed=seed, size=size)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("vh") / "world")


def tasks_of(world: Path) -> list[dict]:
    return [json.loads(line) for line in (world / "tasks.jsonl").read_text().splitlines()]


def test_same_seed_gives_byte_identical_world(world, tmp_path):
    code = (f"from pathlib import Path; from arena.runs.plugins import load_plugins; load_plugins(); "
            f"from arena.core.world import WORLD_BUILDERS; WORLD_BUILDERS['vistahop-mini'](Path({str(tmp_path / 'again')!r}), seed={SEED}, size='tiny')")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=Path(__file__).resolve().parents[3])
    again = tmp_path / "again"
    for name in ("tasks.jsonl", "vistaarena/annotations.jsonl", "corpus/docs.jsonl", "images/index.jsonl",
                 "images/scenes.jsonl", "graph/entities.jsonl"):
        assert (again / name).read_bytes() == (world / name).read_bytes(), name
    assert read_world(again).content_hash == read_world(world).content_hash
    other = build(tmp_path / "other", seed=SEED + 1)
    assert (other / "tasks.jsonl").read_bytes() != (world / "tasks.jsonl").read_bytes()


def test_tiny_world_has_single_and_fused_items_at_every_level(world):
    tasks = tasks_of(world)
    assert {t["metadata"]["type"] for t in tasks} == {"single", "fused"}
    assert {t["level"] for t in tasks} == {"L1", "L2", "L3"}
    for t in tasks:
        chains = t["metadata"]["gold_chain"]
        assert t["hops"] == sum(len(c["hops"]) for c in chains)
        if t["metadata"]["type"] == "single":
            assert len(chains) == 1 and len(chains[0]["hops"]) >= 5
        else:
            assert len(chains) >= 2 and t["metadata"]["fusion"]["op"]
    info = read_world(world)
    assert info.counts["tasks"] == len(tasks) and info.name == "vistahop-mini" and info.seed == SEED


def test_questions_name_the_seed_only_visually_and_never_contain_the_answer(world):
    entities = [json.loads(line)["name"] for line in (world / "graph/entities.jsonl").read_text().splitlines()]
    for t in tasks_of(world):
        assert answer_in_question(t["question"], t["answers"]) is None
        assert not [name for name in entities if name in t["question"]], t["question"]
        for anchor in t["metadata"]["anchors"]:
            assert anchor["description"] in t["question"]
            assert anchor["colour"] in anchor["description"] and anchor["kind"] in anchor["description"]


def test_gold_chains_agree_with_the_knowledge_graph(world):
    graph = {}
    for line in (world / "graph/entities.jsonl").read_text().splitlines():
        record = json.loads(line)
        graph[record["id"]] = record
    for t in tasks_of(world):
        for chain in t["metadata"]["gold_chain"]:
            for hop in chain["hops"]:
                source = graph[hop["source_id"]]
                if hop["kind"] == "entity":
                    assert source["rels"][hop["relation"]] == hop["target_id"]
                    assert hop["category"] in CATEGORIES
                else:
                    assert str(source["attrs"][hop["relation"]]) == hop["target"]
        if t["metadata"]["type"] == "fused":
            values = [float(c["answer"]) for c in t["metadata"]["gold_chain"]]
            assert t["answers"][0] == format_number(apply(t["metadata"]["fusion"]["op"], values))
        else:
            assert t["answers"] == [str(t["metadata"]["gold_chain"][0]["answer"])]


def test_each_page_states_each_fact_once_in_its_sentence(world):
    docs = {json.loads(line)["id"]: json.loads(line) for line in (world / "corpus/docs.jsonl").read_text().splitlines()}
    entities = [json.loads(line) for line in (world / "graph/entities.jsonl").read_text().splitlines()]
    names = {e["id"]: e["name"] for e in entities}
    relations = {r.name: r for r in RELATIONS}
    for entity in entities:
        text = docs[entity["id"]]["text"]
        for rel, target in entity["rels"].items():
            sentence = relations[rel].sentence.replace("{S}", entity["name"]).replace("{s}", entity["name"])
            assert text.count(sentence.replace("{o}", names[target])) == 1
        for attr, value in entity["attrs"].items():
            sentence = ATTRIBUTE_BY_NAME[attr].sentence.replace("{S}", entity["name"]).replace("{s}", entity["name"])
            assert text.count(sentence.replace("{v}", str(value))) == 1


def test_scenes_are_4k_pngs_with_at_least_two_legible_anchors(world):
    scenes = [json.loads(line) for line in (world / "images/scenes.jsonl").read_text().splitlines()]
    assert scenes
    for scene in scenes:
        with Image.open(world / scene["image"]) as im:
            assert im.format == "PNG" and im.size[0] >= 3840 and im.size[1] >= 2160
        assert len(scene["anchors"]) >= 2
        assert len({(a["kind"], a["colour"]) for a in scene["anchors"]}) == len(scene["anchors"])
        for anchor in scene["anchors"]:
            heights = anchor["legibility"]
            assert heights["model_px"] < ILLEGIBLE_BELOW_PX <= LEGIBLE_FROM_PX <= heights["crop_px"]
            x1, y1, x2, y2 = anchor["box"]
            r1, s1, r2, s2 = crop_pixels(anchor["bbox_2d"], scene["width"], scene["height"])
            assert r1 <= x1 and s1 <= y1 and r2 >= x2 and s2 >= y2


def test_legibility_rule_matches_the_crop_tool_and_rejects_bad_anchors():
    image = Image.new("RGB", (3840, 2160), "white")
    box = (1000, 800, 1300, 884)
    rel = relative_box(box, 3840, 2160)
    crop_box = crop_pixels(rel, 3840, 2160)
    assert crop_box == pixel_box([float(v) for v in rel], 3840, 2160, True)
    zoomed = zoom(image, crop_box)
    assert zoomed.height / (crop_box[3] - crop_box[1]) == pytest.approx(crop_scale(crop_box[2] - crop_box[0],
                                                                                   crop_box[3] - crop_box[1]))
    assert model_scale(3840, 2160) == pytest.approx(728 / 2160)
    assert check(measure(18, rel, 3840, 2160), "ok").ok
    with pytest.raises(AnchorRuleError, match="model's view"):
        check(measure(30, rel, 3840, 2160), "big text")
    huge = relative_box((0, 0, 3000, 2000), 3840, 2160)
    with pytest.raises(AnchorRuleError, match="after cropping"):
        check(measure(10, huge, 3840, 2160), "tiny text in a huge box")


def test_world_loads_as_arena_data_and_as_vistaarena_data(world):
    [dataset] = load_datasets(world)
    assert dataset.world == world.resolve() and dataset.corpus == (world / "corpus").resolve()
    [exported] = load_datasets(world / "vistaarena" / "datasets.json")
    assert exported.world == world.resolve() and exported.system_prompt and exported.format_instruction
    assert [(t.id, t.question, t.answers, t.images) for t in exported.tasks] == \
        [(t.id, t.question, t.answers, t.images) for t in dataset.tasks]
    first = exported.tasks[0]
    assert first.metadata["image_search"] and all((world / r["thumbnail"]).is_file()
                                                  for r in first.metadata["image_search"])


def test_builder_refuses_to_overwrite_a_directory_that_is_not_a_world(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(WorldBuildError, match="not a world"):
        build(precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(WorldBuildError, match="unknown size"):
        build(tmp_path / "x", size="huge")


def test_text_falls_back_to_pillows_bundled_font(monkeypatch):
    from arena.suites.vistahop.world import drawing

    monkeypatch.setattr(drawing, "FONT_CANDIDATES", ("/nonexistent/DejaVuSans-Bold.ttf",))
    drawing.font_source.cache_clear()
    drawing.font.cache_clear()
    try:
        assert drawing.font_source() == "pillow-default"
        left, top, right, bottom = drawing.text_box("Quenmoor Works", 18)
        assert right - left > 50 and 8 <= bottom - top <= 24
    finally:
        drawing.font_source.cache_clear()
        drawing.font.cache_clear()
