import json
import shutil
from pathlib import Path

import pytest

from arena.core.world import WORLD_BUILDERS
from arena.suites.vistahop.world.schema import ATTRIBUTE_BY_NAME, RELATION_BY_NAME, render_sentence
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.runs.world_check import check_world

ROUNDS = 30


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return WORLD_BUILDERS["vistahop-mini"](tmp_path_factory.mktemp("vh-policies") / "world", seed=5, size="tiny")


def play(world: Path, out: Path, agent: str, setting: str = "search+crop", **extra):
    result = run(RunConfig(data=str(world), agent=agent, settings=[setting], max_rounds=[ROUNDS], judge="normalized",
                           out=str(out), concurrency=2, **extra))
    correct = {v.episode_id for v in result.verdicts if v.correct}
    return result, correct


def test_oracle_solves_every_task_from_observations(world, tmp_path):
    result, correct = play(world, tmp_path, "oracle")
    tasks = {json.loads(line)["id"]: json.loads(line) for line in (world / "tasks.jsonl").read_text().splitlines()}
    assert len(result.episodes) == len(tasks) and len(correct) == len(tasks)
    for episode in result.episodes:
        gold = tasks[episode.task.id]["metadata"]["gold_path"]
        assert [s.tool for s in episode.steps[:-1]] == [g["tool"] for g in gold["steps"]]
        assert episode.totals.rounds == gold["rounds"] == tasks[episode.task.id]["metadata"]["max_rounds"]
        assert episode.finish_reason == "answered"


def test_oracle_reads_the_corpus_not_the_stored_answer(world, tmp_path):
    tampered = tmp_path / "tampered"
    shutil.copytree(world, tampered)
    tasks = [json.loads(line) for line in (tampered / "tasks.jsonl").read_text().splitlines()]
    task = next(t for t in tasks if t["metadata"]["type"] == "single")
    last = task["metadata"]["gold_chain"][0]["hops"][-1]
    if last["kind"] == "entity":
        sentence, changed = RELATION_BY_NAME[last["relation"]].sentence, "Quorble Hall"
    else:
        sentence = ATTRIBUTE_BY_NAME[last["relation"]].sentence
        changed = str(int(last["target"]) + 111) if last["kind"] != "colour" else "vermilion"
    docs = [json.loads(line) for line in (tampered / "corpus/docs.jsonl").read_text().splitlines()]
    [doc] = [d for d in docs if d["id"] == last["source_id"]]
    before = render_sentence(sentence, last["source"], last["target"])
    assert doc["text"].count(before) == 1
    doc["text"] = doc["text"].replace(before, render_sentence(sentence, last["source"], changed))
    (tampered / "corpus/docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    result, correct = play(tampered, tmp_path / "runs", "oracle", task_ids=[task["id"]])
    [episode] = result.episodes
    assert episode.answer == changed and changed not in task["answers"] and not correct


def test_oracle_says_unknown_when_the_setting_lacks_a_gold_tool(world, tmp_path):
    result, correct = play(world, tmp_path, "oracle", setting="search", limit=1)
    [episode] = result.episodes
    assert episode.answer == "unknown" and not correct
    assert "image_zoom_in_tool" in (episode.steps[-1].reasoning or "")


def test_baselines_never_look_at_the_image_and_stay_near_zero(world, tmp_path):
    direct, direct_ok = play(world, tmp_path, "direct", setting="no-tool")
    assert all(e.totals.tool_calls == 0 and e.answer for e in direct.episodes)
    assert not direct_ok
    text, text_ok = play(world, tmp_path, "text-only")
    for episode in text.episodes:
        assert set(episode.totals.calls_per_tool) == {"text_search_tool"}
        assert episode.steps[0].arguments == {"query": episode.task.question[:300]}
    assert len(text_ok) <= 1


def test_world_check_passes_on_a_tiny_world(world, tmp_path):
    report = check_world(world, tmp_path / "check", concurrency=2)
    assert report.ok, report.problems
    figures = {f.agent: f for f in report.agents}
    assert figures["oracle"].pass_at_1 == 1.0 and figures["direct"].pass_at_1 <= 0.05
    assert report.stats["tasks"] == figures["oracle"].episodes and report.stats["anchors_checked"] >= 2 * 4
    assert set(report.stats["levels"]) == {"L1", "L2", "L3"} and report.stats["fused"] and report.stats["single"]


def test_world_check_reports_a_leaked_answer_and_a_broken_anchor(world, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(world, broken)
    lines = (broken / "tasks.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["question"] += f" (Hint: {first['answers'][0]}.)"
    lines[0] = json.dumps(first)
    (broken / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    scenes = (broken / "images/scenes.jsonl").read_text().splitlines()
    scene = json.loads(scenes[0])
    scene["anchors"][0]["legibility"]["text_px"] = 40.0
    scenes[0] = json.dumps(scene)
    (broken / "images/scenes.jsonl").write_text("\n".join(scenes) + "\n")
    report = check_world(broken, tmp_path / "check", concurrency=2)
    assert not report.ok
    text = "\n".join(report.problems)
    assert f"task {first['id']}: answer" in text
    assert "breaks the legibility rule" in text
    assert "differs from tasks.jsonl" in text
