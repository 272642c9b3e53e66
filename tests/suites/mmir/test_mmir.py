"""MMIR: the scoring rules, the public-format loader, and the generated mmir-mini world."""

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from arena.core.dataset import DatasetError, load_datasets
from arena.suites.mmir.loader import CATEGORIES, parse_task_id
from arena.suites.mmir.world import build
from arena.suites.mmir.judge import check_answer, predicted_ids
from arena.tools.browser_dom import mark_color


@pytest.mark.parametrize("answer, truth, score", [
    ('"[7]"', [7], 1.0),
    ('"[7]"', [8], 0.0),
    ('"[7],[9]"', [7], 0.5),            # the one truth among two predictions
    ('"[7],[9]"', [9, 7], 1.0),
    ('"[7],[3]"', [9, 7], 0.5),         # half credit per correct id
    ('"[7]"', [9, 7], 0.5),
    ('"[7],[7]"', [7], 1.0),            # de-duplicated
    ('[1], [2], [3]', [1], 0.0),        # more than two ids
    ('no ids at all', [1], 0.0),
])
def test_check_answer_is_mmirs(answer, truth, score):
    assert check_answer(answer, truth) == score


def test_predicted_ids_keep_first_appearance_order():
    assert predicted_ids('"[12]", "[3]", "[12]"') == [12, 3]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("mmir") / "world", seed=3, size="small", count=6)


def test_world_cycles_categories_and_grounds_truth_in_the_rendering(world: Path):
    tasks = load_datasets(world)[0].tasks
    mcq = [t for t in tasks if parse_task_id(t.id)[1] == "mcq"]
    assert len(mcq) == 6 and len(tasks) == 12
    assert [t.category for t in mcq] == [CATEGORIES[i % 5] for i in range(6)]
    assert [t.metadata["kind"] for t in mcq] == ["shopping", "classifieds", "wiki", "slides", "poster", "chart"]
    assert [parse_task_id(t.id)[0] for t in mcq] == ["web", "web", "web", "office", "poster", "office"]
    for task in mcq:
        truth = [int(a) for a in task.answers]
        assert truth == task.metadata["gt_ans"] and 1 <= len(truth) <= 2
        elements = {e["id"]: e for e in task.metadata["elements"]}
        assert sorted(elements) == list(range(1, len(elements) + 1))
        assert [int(line[1:line.index("]")]) for line in task.options] == sorted(elements)
        assert all(line in task.question for line in task.options)
        shot = Image.open(world / task.images[0])
        som = Image.open(world / task.metadata["som_image"])
        assert som.size == shot.size
        for element in elements.values():
            x, y, w, h = element["bbox"]
            assert 0 <= x and 0 <= y and x + w <= shot.width and y + h <= shot.height
            assert som.getpixel((x + w - 1, y + h // 2)) == mark_color(element["id"])
        assert all(elements[i]["content"] in task.metadata["rationale"] or f"[{i}]" in task.metadata["rationale"]
                   for i in truth)
    # the contextual-mismatch artifact's truth is its picture, the spatial/temporal one a pair of dates
    assert mcq[2].metadata["elements"][int(mcq[2].answers[0]) - 1]["type"] == "image"
    assert len(mcq[4].answers) == 2


def test_world_is_deterministic(world: Path, tmp_path: Path):
    again = build(tmp_path / "again", seed=3, size="small", count=6)
    assert json.loads((again / "world.json").read_text())["content_hash"] == \
        json.loads((world / "world.json").read_text())["content_hash"]


def test_public_format_loader(world: Path, tmp_path: Path):
    datasets = load_datasets(world / "questions_mcq.json")
    assert [d.name for d in datasets] == ["mmir-mcq"]
    loaded = datasets[0].tasks
    generated = [t for t in load_datasets(world)[0].tasks if t.id.endswith(":mcq")]
    assert [t.answers for t in loaded] == [t.answers for t in generated]
    assert [t.options for t in loaded] == [t.options for t in generated]
    assert [t.id for t in loaded] == ["web-0:mcq", "web-1:mcq", "web-2:mcq", "office-3:mcq", "poster-4:mcq",
                                      "office-5:mcq"]
    assert loaded[0].images == generated[0].images and loaded[0].kind == "element_ids"

    public = tmp_path / "public"
    (public / "images").mkdir(parents=True)
    items = json.loads((world / "questions_open.json").read_text())[:2]
    for item in items:
        shutil.copy(world / item["image"], public / "images" / Path(item["image"]).name)
        item["image"] = Path(item["image"]).name          # relative to images/
    (public / "questions_open.json").write_text(json.dumps(items))
    [dataset] = load_datasets(public)
    assert dataset.name == "mmir-open" and dataset.tasks[0].images == [f"images/{items[0]['image']}"]
    assert "<ans>" in dataset.tasks[0].question and "[1]" not in dataset.tasks[0].question

    items[1]["gt_ans"] = [1, 2, 3]
    (public / "questions_open.json").write_text(json.dumps(items))
    with pytest.raises(DatasetError, match=r"questions_open.json: item 1: field gt_ans"):
        load_datasets(public)
