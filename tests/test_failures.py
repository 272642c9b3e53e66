"""Failure taxonomy of episodes, from their records and their tasks' gold metadata."""

from __future__ import annotations

from pathlib import Path

from arena.core.budget import Budget
from arena.core.task import Task, TaskRef
from arena.core.trajectory import Episode, Observation, Step, Totals
from arena.core.verdict import Verdict
from arena.runs.config import RunConfig
from arena.judges.metrics import AUTO
from arena.review.failures import LABELS, classify, coverage, failure_counts, failure_groups, taxonomy, verdict_records
from arena.runs.runner import run
from arena.store.scan import scan_run
from arena.store.store import RunStore

ALL_TOOLS = ["text_search_tool", "image_search_tool", "image_zoom_in_tool"]


def task(**metadata) -> Task:
    return Task(id="t", question="Which company?", answers=["Velmora Works"], images=["a.png"], metadata=metadata)


def crop(box: list[int], round_: int = 1) -> Step:
    return Step(round=round_, action="tool_call", tool="image_zoom_in_tool", arguments={"bbox_2d": [0, 0, 1, 1]},
                observation=Observation(text="Zoomed", images=["sha256:ab.png"],
                                        data={"img_idx": 0, "pixel_box": box, "source_size": [1000, 1000]}))


def search(text: str, titles: list[str], round_: int = 1) -> Step:
    return Step(round=round_, action="tool_call", tool="text_search_tool", arguments={"query": "q"},
                observation=Observation(text=text, data={"hits": [{"title": t, "url": "u"} for t in titles]}))


def episode(steps: list[Step], answer: str | None, finish: str = "answered", tools=ALL_TOOLS, invalid: int = 0,
            eid: str = "e1") -> Episode:
    per_tool: dict[str, int] = {}
    for s in steps:
        if s.action == "tool_call" and s.tool:
            per_tool[s.tool] = per_tool.get(s.tool, 0) + 1
    return Episode(id=eid, run_id="r", key=f"t|s|10|0|{eid}", task=TaskRef.of(task()), agent="a", setting="s",
                   tools=list(tools), budget=Budget(), steps=steps, answer=answer, finish_reason=finish,
                   totals=Totals(tool_calls=sum(per_tool.values()), calls_per_tool=per_tool, invalid_calls=invalid))


def verdict(correct: bool, judge: str = "normalized", eid: str = "e1") -> Verdict:
    return Verdict(episode_id=eid, key="k", judge=judge, score=float(correct), correct=correct)


def test_coverage_is_the_share_of_the_anchor_inside_the_crop() -> None:
    assert coverage([0, 0, 100, 100], [50, 50, 150, 150]) == 0.25
    assert coverage([0, 0, 200, 200], [50, 50, 150, 150]) == 1.0
    assert coverage([300, 300, 400, 400], [50, 50, 150, 150]) == 0.0


def test_gold_anchor_never_cropped_uses_task_anchor_boxes() -> None:
    gold = task(anchors=[{"id": "a1", "box": [100, 100, 200, 200]}])
    missed = episode([crop([500, 500, 900, 900]), search("nothing", [], 2)], "Other Co")
    hit = episode([crop([80, 90, 260, 210]), search("nothing", [], 2)], "Other Co")
    assert "gold_anchor_never_cropped" in classify(missed, verdict(False), task=gold)
    assert "gold_anchor_never_cropped" not in classify(hit, verdict(False), task=gold)
    assert "gold_anchor_never_cropped" not in classify(missed, verdict(False), task=task())


def test_evidence_found_and_wrong_entity() -> None:
    steps = [search("Velmora Works was founded in 1869 by Mirelle Dastrow.", ["Dastrow Works", "Velmora Works"])]
    wrong = episode(steps, "Dastrow Works")
    labels = classify(wrong, verdict(False))
    assert "evidence_found_wrong_answer" in labels and "wrong_entity" in labels
    assert "never_cropped" in labels and "never_searched" not in labels
    right = episode(steps, "Velmora Works")
    assert classify(right, verdict(True)) == ["never_cropped"]
    chain = task(gold_chain=[{"seed": "Orvanta", "hops": [{"target": "Mirelle Dastrow"}, {"target": "Velmora Works"}]}])
    stopped_early = episode([search("unrelated", [])], "Mirelle Dastrow")
    assert "wrong_entity" in classify(stopped_early, verdict(False), task=chain)
    assert "wrong_entity" not in classify(stopped_early, verdict(False), task=task())


def test_process_labels_and_judge_disagreement() -> None:
    cut = episode([], None, finish="budget", invalid=2)
    labels = classify(cut, verdict(False), [verdict(False), verdict(True, judge="llm")])
    assert {"budget_exhausted", "no_answer", "invalid_tool_calls", "never_cropped", "never_searched",
            "judge_disagreement"} <= set(labels)
    no_tools = episode([], "x", tools=[])
    assert classify(no_tools, verdict(True)) == []


def test_counts_per_run_and_group(tiny_data: Path, tmp_path: Path) -> None:
    script = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"tool": "text_search_tool",
                                                              "arguments": {"query": "Orvanta built"}},
                                                             {"answer": "Mirelle Dastrow"}]}
    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                           out=str(tmp_path / "logs")))
    chosen = {v.episode_id: v for v in result.verdicts}
    labels = taxonomy(result.episodes, chosen, result.verdicts)
    counts = failure_counts(result.episodes, labels)
    assert list(counts["total"]) == list(LABELS)
    assert counts["total"]["never_cropped"] == 2
    assert counts["total"]["never_searched"] == 1
    assert counts["total"]["evidence_found_wrong_answer"] == 1
    assert counts["groups"]["scripted | search+crop | N=10"]["never_cropped"] == 2
    # the report's streaming pass (orjson records, one at a time) gives the same counts per group
    scan = scan_run(RunStore(result.run_dir))
    streamed = failure_groups(scan, AUTO, {}, verdict_records(scan))
    assert {f"{a} | {s} | N={n}": {k: c.get(k, 0) for k in LABELS}
            for (a, s, n), (_, _, c) in streamed.items()} == counts["groups"]
    assert sum(n for n, _, _ in streamed.values()) == len(result.episodes)
    assert sum(right for _, right, _ in streamed.values()) == sum(v.correct and v.error is None
                                                                  for v in chosen.values())
