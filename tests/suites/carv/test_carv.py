"""CARV: states and stems, the caption parser, the carv-mini world, the public-format loader, judges, metrics."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from arena.core.dataset import DatasetError, load_datasets
from arena.core.images import encode_png
from arena.suites.carv.loader import (
    NO_RESULT, PROPERTIES, VALUES, State, apply, compose, parse_stem, transformation,
)
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.core.budget import Budget
from arena.core.verdict import Verdict
from arena.suites.carv.world import CELLS, build, render_state
from arena.suites.carv.judge import carv_llm, carv_metrics, carv_parse, parse_caption, parser_agrees
from tests.support.openai_server import OpenAIStub, last_user_text

ALL_STATES = [State(*values) for values in itertools.product(*(VALUES[p] for p in PROPERTIES))]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("carv") / "world", seed=3, size="small")


def episode(task, answer: str | None, run: str = "r") -> Episode:
    ref = TaskRef.of(task) if not isinstance(task, TaskRef) else task
    return Episode(id=f"{ref.id}-{answer}", run_id=run, key=ref.id, task=ref, agent="a", setting="no-tool",
                   budget=Budget(), answer=answer, finish_reason="answered")


def test_stems_round_trip_and_accept_public_spellings():
    for state in ALL_STATES:
        assert parse_stem(state.stem) == state
    assert parse_stem("two_toilet_paper_left_blue_chair") == State("two", "toilet-paper", "left", "blue", "chair")
    assert parse_stem("one_bottle_on_wood_table.png") == State("one", "bottle", "on", "wood", "table")
    with pytest.raises(ValueError, match="position"):
        parse_stem("one_bottle_above_wood_table")
    with pytest.raises(ValueError):
        parse_stem("three_bottle_on_wood_table")


def test_set_operations_follow_the_paper_example():
    wood_one = State("one", "mug", "on", "wood", "table")
    t1 = transformation(wood_one, State("one", "mug", "on", "red", "table"))
    t2 = transformation(wood_one, State("two", "mug", "on", "wood", "table"))
    union = compose("union", t1, t2)
    assert union == {("object_color", "wood", "red"), ("subject_number", "one", "two")}
    assert apply(union, wood_one) == State("two", "mug", "on", "red", "table")
    assert compose("intersection", t1, t2) == frozenset()
    assert compose("difference", t1, t2) == t1
    with pytest.raises(ValueError, match="cannot apply"):
        apply(t1, State("one", "mug", "on", "blue", "table"))


def test_parser_reads_every_reference_caption_exactly():
    wrong = [s for s in ALL_STATES if parse_caption(s.caption).values != s.as_dict()]
    assert wrong == []
    assert parse_caption(NO_RESULT).no_result


def test_parser_rejects_every_single_property_contradiction():
    accepted = []
    for state in ALL_STATES:
        for prop in PROPERTIES:
            for value in VALUES[prop]:
                if value != state.get(prop):
                    other = state.with_values({prop: value})
                    if parser_agrees(other.caption, state.caption):
                        accepted.append((state.caption, other.caption))
    assert accepted == []
    assert not parser_agrees(NO_RESULT, ALL_STATES[0].caption)
    assert not parser_agrees(ALL_STATES[0].caption, NO_RESULT)


@pytest.mark.parametrize("caption, same", [
    ('{"caption": "Two coffee mugs sitting underneath a blue chair."}', True),
    ("A couple of mugs beneath a chair painted blue", True),
    ("two mugs under a blue table", False),
    ("two mugs on a blue chair", False),
    ("one mug under a blue chair", False),
    ("two mugs under a red chair", False),
    ("two bowls under a blue chair", False),
    ("two mugs under a chair", False),
    ("two mugs and a bottle under a blue chair", False),
])
def test_parser_accepts_rewording_but_not_contradiction(caption, same):
    assert parser_agrees(caption, State("two", "mug", "under", "blue", "chair").caption) is same


def test_world_is_balanced_deterministic_and_consistent(world, tmp_path):
    tasks = load_datasets(world)[0].tasks
    per_cell = Counter((t.category, t.level, t.hops) for t in tasks)
    assert per_cell == {(op, setting, k): 4 for op, setting, k in CELLS}
    for task in tasks:
        meta = task.metadata
        states = [parse_stem(s) for s in meta["context_stems"]]
        assert all((world / rel).is_file() for rel in task.images)
        assert parse_stem(Path(task.images[0]).stem) == states[0]
        t1 = transformation(states[0], states[1])
        assert len(t1) == task.hops
        if task.category == "single":
            target = t1
        else:
            t2 = transformation(states[2], states[3])
            assert len(t2) == task.hops
            target = compose(task.category, t1, t2)
            if task.level == "SS":
                assert states[0] == states[2] == states[4]
            else:
                assert len({states[0], states[2], states[4]}) == 3
        expected = apply(target, states[-1]).caption if target else NO_RESULT
        assert task.answers == [expected]
    empties = Counter(t.category for t in tasks if t.answers == [NO_RESULT])
    assert empties == {"intersection": 2, "difference": 2}
    again = build(tmp_path / "again", seed=3, size="small")
    assert json.loads((again / "world.json").read_text())["content_hash"] == \
        json.loads((world / "world.json").read_text())["content_hash"]


def test_scenes_differ_by_every_property():
    base = State("one", "bottle", "on", "wood", "table")
    pixels = {base: render_state(base).tobytes()}
    for prop in PROPERTIES:
        other = base.with_values({prop: next(v for v in VALUES[prop] if v != base.get(prop))})
        pixels[other] = render_state(other).tobytes()
    assert len(set(pixels.values())) == len(pixels)


def test_loader_reads_the_public_world_file_like_the_world(world):
    public = {t.id: t for t in load_datasets(world / "carv_items.jsonl")[0].tasks}
    for task in load_datasets(world)[0].tasks:
        twin = public[task.id]
        assert (twin.answers, twin.category, twin.level, twin.hops) == \
            (task.answers, task.category, task.level, task.hops)
        assert twin.images == task.images


def _write_images(root: Path, stems: list[str]) -> None:
    for stem in stems:
        (root / f"{stem}.png").write_bytes(encode_png(render_state(parse_stem(stem)).resize((48, 36))))


def test_loader_reads_the_public_format_and_infers_metadata(tmp_path):
    q = "one_mug_on_wood_table"
    items = [
        {"context_image": [q, "one_mug_on_red_table", q, "two_mug_on_wood_table", q],
         "label": "two_mug_on_red_table"},
        {"context_image": ["one_book_left_blue_chair", "two_book_left_red_chair", "one_bottle_under_red_table",
                           "two_bottle_under_red_table", "one_phone_right_blue_table"],
         "label": "one_phone_right_red_table"},
        {"context_image": [q, "one_mug_on_red_table", q, "one_mug_on_red_table", q], "label": "",
         "operation": "Difference"},
        {"context_image": ["one_mug_on_wood_table", "one_mug_under_red_table", "two_knife_on_wood_chair"],
         "label": "two_knife_under_red_chair"},
    ]
    _write_images(tmp_path, sorted({s for it in items for s in it["context_image"]}))
    path = tmp_path / "carv_test.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    tasks = load_datasets(path)[0].tasks
    assert [(t.category, t.level, t.hops) for t in tasks] == [
        ("union", "SS", 1), ("difference", "DS", 2), ("difference", "SS", 1), ("single", "single", 2)]
    assert tasks[0].answers == ["Two mugs on a red table."]
    assert tasks[2].answers == [NO_RESULT]
    assert tasks[1].images[4] == "one_phone_right_blue_table.png"
    assert all(t.kind == "caption" and t.suite == "carv" for t in tasks)

    (tmp_path / "union_ss.json").write_text(json.dumps([items[0] | {"label": "two_mug_on_red_table"}]))
    assert load_datasets(tmp_path / "union_ss.json")[0].tasks[0].category == "union"


def test_loader_errors_name_file_line_and_field(tmp_path):
    _write_images(tmp_path, ["one_mug_on_wood_table", "one_mug_on_red_table"])
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"context_image": ["one_mug_on_wood_table", "one_mug_on_red_table",
                                                  "two_mug_on_red_table"], "label": "x"}) + "\n")
    with pytest.raises(DatasetError, match=r"bad.jsonl:1: field context_image\[2\]: no image file"):
        load_datasets(path)
    path.write_text("\n" + json.dumps({"context_image": ["one_mug_on_wood_table", "one_mug_on_red_table",
                                                         "one_mug_floating_red_table"], "label": ""}) + "\n")
    with pytest.raises(DatasetError, match=r"bad.jsonl:2: field context_image\[2\]: .*position"):
        load_datasets(path)


def _score(judge, ep):
    return asyncio.run(judge.score(ep))


def test_parse_judge_scores_captions_and_json_answers(world):
    task = next(t for t in load_datasets(world)[0].tasks if t.answers != [NO_RESULT])
    state = parse_stem(task.metadata["label_stem"])
    judge = carv_parse()
    assert _score(judge, episode(task, json.dumps({"caption": state.caption}))).correct
    other = state.with_values({"object": "chair" if state.object == "table" else "table"})
    verdict = _score(judge, episode(task, other.caption))
    assert not verdict.correct and "object" in verdict.rationale
    assert _score(judge, episode(task, None)).score == 0.0


def test_llm_judge_uses_the_paper_prompt_and_reads_json(world):
    task = next(t for t in load_datasets(world)[0].tasks if t.answers != [NO_RESULT])
    replies = iter(['{ "correctness": true, "reason": "same scene" }', '{"correctness": false, "reason": "colour"}',
                    "I cannot tell.", '{"correctness": true, "reason": "identical"}'])

    async def judge_all(base_url: str):
        judge = carv_llm(model="judge", base_url=base_url, max_retries=0)
        answers = ["reworded caption", "another caption", "third caption", task.answers[0]]
        verdicts = [await judge.score(episode(task, a)) for a in answers]
        await judge.aclose()
        return verdicts

    with OpenAIStub(lambda request: next(replies)) as server:
        good, bad, broken, same = asyncio.run(judge_all(server.base_url))
        prompt = last_user_text(server.requests[0])
    assert (good.correct, bad.correct, broken.error is not None, same.correct) == (True, False, True, True)
    assert good.rationale == "same scene"
    assert task.answers[0] in prompt and "reworded caption" in prompt and '"correctness"' in prompt
    assert len(server.requests) == 4  # the paper's evaluator is asked also for the reference's own caption


def test_metrics_rebuild_table2_and_parser_agreement(world):
    tasks = load_datasets(world)[0].tasks
    rows = []
    for task in tasks:
        ep = episode(task, task.answers[0])
        correct = task.category != "union"
        rows.append((ep, Verdict(episode_id=ep.id, key=ep.key, judge="carv-llm", score=float(correct),
                                 correct=correct)))
    rows.append((episode(tasks[0], "x", run="other"), Verdict(episode_id="e", key="k", judge="carv-llm",
                                                               score=0, correct=False, error="bad reply")))
    metrics = carv_metrics(rows)
    assert metrics["table2"] == {"Single": 100.0, "Union SS": 0.0, "Union DS": 0.0, "Intersection SS": 100.0,
                                 "Intersection DS": 100.0, "Difference SS": 100.0, "Difference DS": 100.0}
    assert metrics["by_atomic"]["union |T|=3"] == 0.0 and metrics["by_atomic"]["intersection |T|=4"] == 100.0
    assert (metrics["valid"], metrics["invalid"]) == (44, 1)
    assert metrics["parser_agreement"] == pytest.approx(100.0 * 28 / 44, abs=1e-3)
