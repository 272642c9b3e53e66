"""`arena world check` on every generated world kind but VistaHop (tested in tests/suites/vistahop): a fresh
build passes (oracle 100 %, baselines within their chance-derived bounds, no structural problem), and a
world whose recorded answer no longer follows from its facts fails with a line naming it."""

import json
import shutil

import pytest

from arena.core.world import WORLD_BUILDERS
from arena.runs.world_check import check_world

BUILDS = {  # the smallest build of each kind that still covers every domain / operation / family
    "condchain-mini": {"count": 1},
    "condchain-mini-agentic": {"count": 1},
    "mmir-mini": {"count": 3},
    "carv-mini": {"size": "small"},
    "ureason-mini": {"size": "small"},
}


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    root = tmp_path_factory.mktemp("worlds")
    return {name: WORLD_BUILDERS[name](root / name, seed=3, **kwargs) for name, kwargs in BUILDS.items()}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_a_fresh_world_passes_its_check(worlds, tmp_path, name):
    report = check_world(worlds[name], tmp_path / "logs")
    assert report.ok, report.problems
    oracle, baseline = report.agents
    assert oracle.pass_at_1 == 1.0 and oracle.episodes == oracle.correct > 0
    assert baseline.pass_at_1 <= report.thresholds[baseline.agent]["max"]
    assert report.stats["tasks"] > 0


def test_a_wrong_recorded_answer_fails_the_check(worlds, tmp_path):
    world = shutil.copytree(worlds["condchain-mini"], tmp_path / "world")
    data = world / "data" / "natural.jsonl"
    item = json.loads(data.read_text().splitlines()[0])
    right = item["true_path"]["correct_answer"]
    wrong = "None" if right != "None" else "A1"
    item["true_path"]["correct_answer"] = wrong
    data.write_text(json.dumps(item) + "\n")
    tasks = [json.loads(line) for line in (world / "tasks.jsonl").read_text().splitlines()]
    for task in tasks:
        if task["id"] == f"{item['id']}:true":
            task["answers"] = [wrong]
    (world / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    report = check_world(world, tmp_path / "logs")
    assert not report.ok
    assert any(f"recorded answer {wrong!r}, the chain gives {right!r}" in p for p in report.problems)
    assert any(p.startswith(f"task {item['id']}:true: oracle answered") for p in report.problems)

