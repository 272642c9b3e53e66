"""MM-CondChain: answer parsing, the public-format loader, and the generated condchain-mini world."""

import json
from pathlib import Path

import pytest
from PIL import Image

from arena.suites.condchain import vpir
from arena.core.dataset import DatasetError, load_datasets
from arena.suites.condchain.loader import parse_boxed
from arena.suites.condchain.world import build, build_agentic
from arena.suites.condchain.judge import path_f1


@pytest.mark.parametrize("text, label", [
    (r"I think \boxed{A1} ... no, \boxed{ F 2 }", "F2"),
    (r"\boxed{none}", "None"),
    (r"\boxed{NULL}", "None"),
    (r"\boxed{nan}", "None"),
    (r"\boxed{}", "None"),
    ("The answer is B3, not C1.", "C1"),
    ("Nothing applies: None", "None"),
    ("no label here", "None"),
    ("", "None"),
    (None, "None"),
])
def test_parse_boxed_is_the_original(text, label):
    assert parse_boxed(text) == label


def test_path_f1_is_the_harmonic_mean():
    assert path_f1(1.0, 1 / 3) == pytest.approx(0.5)
    assert path_f1(0.0, 0.0) == 0.0


def write_item(root: Path, **overrides) -> dict:
    item = {"id": "g1", "domain": "gui", "image": "images/gui/g1",
            "true_path": {"full_instruction": "If A, answer F.", "pseudocode": "if a:", "correct_answer": "F1"},
            "false_path": {"diverge_node": "qa_1", "full_instruction": "If B, answer A.", "pseudocode": "if b:",
                           "correct_answer": "A2"}}
    item.update(overrides)
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "gui.jsonl").write_text(json.dumps(item) + "\n")
    return item


def test_loader_orders_gui_frames_by_the_number_in_their_name(tmp_path: Path):
    folder = tmp_path / "images" / "gui" / "g1"
    folder.mkdir(parents=True)
    for n in (10, 2, 1, 11, 3):
        Image.new("RGB", (8, 8), (n, 0, 0)).save(folder / f"g1_{n}.png")
    (folder / "notes.txt").write_text("not a frame")
    write_item(tmp_path)
    [dataset] = load_datasets(tmp_path)
    true_task, false_task = dataset.tasks
    assert (true_task.id, false_task.id) == ("g1:true", "g1:false")
    assert [Path(p).name for p in true_task.images] == ["g1_1.png", "g1_2.png", "g1_3.png", "g1_10.png", "g1_11.png"]
    assert true_task.metadata["frames"] == true_task.images and dataset.root == tmp_path.resolve()
    assert (true_task.answers, false_task.answers) == (["F1"], ["A2"])
    assert (true_task.metadata["path"], false_task.metadata["path"]) == ("true", "false")
    assert false_task.metadata["diverge_node"] == "qa_1" and true_task.category == "gui"
    assert "The 5 images are the frames of a GUI trajectory" in true_task.question
    assert "If A, answer F." in true_task.question and "\\boxed{letter-number}" in true_task.question
    assert load_datasets(tmp_path / "data" / "gui.jsonl")[0].tasks[0].images == true_task.images

    write_item(tmp_path, false_path={"full_instruction": "x"})
    with pytest.raises(DatasetError, match=r"gui.jsonl:1: false_path: field correct_answer"):
        load_datasets(tmp_path)
    write_item(tmp_path, image="../outside")
    with pytest.raises(DatasetError, match="escapes the dataset root"):
        load_datasets(tmp_path)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("condchain") / "world", seed=7, size="small", count=2)


def conditions(pseudocode: str) -> list[str]:
    return [line.strip()[3:-1] for line in pseudocode.splitlines() if line.strip().startswith("if ")]


def test_world_chains_execute_to_their_answers(world: Path):
    records = [json.loads(line) for d in ("natural", "chart", "gui")
               for line in (world / "data" / f"{d}.jsonl").read_text().splitlines()]
    assert [r["domain"] for r in records] == ["natural"] * 2 + ["chart"] * 2 + ["gui"] * 2
    for record in records:
        facts, true, false = record["facts"], record["true_path"], record["false_path"]
        true_conditions, false_conditions = conditions(true["pseudocode"]), conditions(false["pseudocode"])
        assert 2 <= len(true_conditions) <= 4
        assert all(vpir.holds(c, facts) for c in true_conditions)
        diverge = int(false["diverge_node"].split("_")[1]) - 1
        changed = [i for i, (a, b) in enumerate(zip(true_conditions, false_conditions)) if a != b]
        assert changed == [diverge]
        assert not vpir.holds(false_conditions[diverge], facts)
        assert false["correct_answer"][0] == "ABCD"[diverge]
        assert true["correct_answer"] == "None" or true["correct_answer"].startswith("F")
        label = true["correct_answer"]
        if label != "None":
            assert f"{label}. " in true["full_instruction"]
        diff = [a != b for a, b in zip(true["full_instruction"].splitlines(), false["full_instruction"].splitlines())]
        assert sum(diff) == 1


def test_world_tasks_and_gui_frames(world: Path, tmp_path: Path):
    [dataset] = load_datasets(world)
    tasks = {t.id: t for t in dataset.tasks}
    assert len(tasks) == 12 and set(tasks) >= {"natural_000:true", "gui_001:false"}
    gui = tasks["gui_000:true"]
    assert len(gui.images) == 10 and gui.images[-1].endswith("gui_000_10.png")
    assert Image.open(world / gui.images[0]).size == (360, 640)
    assert tasks["chart_000:false"].images == ["images/chart/chart_000.png"]
    public = load_datasets(world / "data" / "gui.jsonl")[0].tasks
    assert [t.images for t in public] == [tasks[t.id].images for t in public]

    agentic = build_agentic(tmp_path / "agentic", seed=7, size="small", count=1)
    browse = {t.id: t for t in load_datasets(agentic)[0].tasks}
    assert browse["gui_000:true"].images == [] and len(browse["gui_000:true"].metadata["frames"]) == 10
    assert "browser tool" in browse["gui_000:true"].question
    assert browse["natural_000:true"].images == ["images/natural/natural_000.png"]
