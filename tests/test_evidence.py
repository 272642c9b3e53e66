"""Evidence verdicts: correct answers split into supported / unsupported by what the episode retrieved —
deterministically against the gold chain on generated worlds, by the LLM judge elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.world import WORLD_BUILDERS
from arena.judges.metrics import summarize
from arena.runs.config import RunConfig
from arena.review.report import build_report
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.review.viewer import viewer_data
from tests.support.openai_server import OpenAIStub, Reply


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return WORLD_BUILDERS["vistahop-mini"](tmp_path_factory.mktemp("vh-evidence") / "world", seed=5, size="tiny")


def test_generated_world_evidence_is_checked_against_the_gold_chain(world, tmp_path):
    tasks = [json.loads(line) for line in (world / "tasks.jsonl").read_text().splitlines()]
    oracle = run(RunConfig(data=str(world), agent="oracle", settings=["search+crop"], max_rounds=[30],
                           judge="normalized", out=str(tmp_path), run_id="oracle", concurrency=2))
    assert oracle.verdicts and all(v.correct and v.supported == "yes" for v in oracle.verdicts)
    # A "cheater" knows every answer: straight away, or after one unrelated search.
    script = {t["id"]: ([{"tool": "text_search_tool", "arguments": {"query": "weather tomorrow"}}] if i % 2 else [])
              + [{"answer": t["answers"][0]}] for i, t in enumerate(tasks)}
    cheat = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script},
                          settings=["search+crop"], max_rounds=[5], judge="normalized", out=str(tmp_path),
                          run_id="cheat"))
    by_task = {e.task.id: e for e in cheat.episodes}
    for v in cheat.verdicts:
        episode = next(e for e in cheat.episodes if e.id == v.episode_id)
        assert v.correct and v.supported == "no"
        index = [t["id"] for t in tasks].index(episode.task.id)
        assert ("tools returned nothing" in v.support_reason) == (index % 2 == 0)
        if index % 2:
            assert v.support_reason.startswith("never retrieved: ")
    assert set(by_task) == {t["id"] for t in tasks}
    group = summarize(cheat.episodes, cheat.verdicts, "normalized")["groups"][0]
    assert group["correct"] == len(tasks) and group["correct_unsupported"] == len(tasks)
    assert group["correct_supported"] == 0
    no_tool = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script},
                            settings=["no-tool"], max_rounds=[5], judge="normalized", out=str(tmp_path),
                            run_id="notool"))
    assert all(v.supported is None for v in no_tool.verdicts)
    data, _ = viewer_data([load_run(tmp_path / "cheat", "normalized")])
    assert {e[7] for e in data["eps"] if e} == {"no"}  # the index column the viewer's evidence filter reads
    report = build_report([load_run(tmp_path / "cheat", "normalized")])
    evidence = next(t for t in report.tables if t.title == "Correct answers and their evidence")
    assert evidence.rows == [["scripted", "search+crop", "5", str(len(tasks)), "0", str(len(tasks)), "0"]]


def test_llm_judge_asks_about_the_retrieved_evidence(tiny_data, tmp_path):
    script = {"q1": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse builder"}},
                     {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": [740, 90, 950, 210]}},
                     {"answer": "the engineer Mirelle Dastrow"}],
              "q2": [{"answer": "built in 1874"}]}
    evidence_requests = []

    def respond(request):
        system = request["messages"][0]["content"]
        if "<supported>" in system:
            evidence_requests.append(request)
            text = request["messages"][1]["content"][0]["text"]
            yes = "Mirelle Dastrow" in text and "[text_search_tool]" in text
            return Reply(content=f"<supported>{'Yes' if yes else 'No'}</supported><reason>checked</reason>")
        return Reply(content="<judge>Yes</judge><reason>same</reason>")

    with OpenAIStub(respond) as server:
        result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                               settings=["search+crop"], max_rounds=[4], judge="llm",
                               judge_options={"model": "j", "base_url": server.base_url}, protocol="arena",
                               out=str(tmp_path / "logs"), run_id="llm-evidence"))
    verdicts = {next(e.task.id for e in result.episodes if e.id == v.episode_id): v for v in result.verdicts}
    assert verdicts["q1"].correct and verdicts["q1"].supported == "yes" and verdicts["q1"].support_reason == "checked"
    assert verdicts["q2"].correct and verdicts["q2"].supported == "no"
    assert verdicts["q2"].support_reason == "the tools returned nothing"
    assert len(evidence_requests) == 1
    parts = evidence_requests[0]["messages"][1]["content"]
    assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/jpeg") for p in parts)
    group = summarize(result.episodes, result.verdicts, "llm")["groups"][0]
    assert (group["correct_supported"], group["correct_unsupported"]) == (1, 1)
