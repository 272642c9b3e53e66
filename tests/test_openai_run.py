"""A whole run against a scripted OpenAI-compatible server: exact steps, blobs, verdicts, metrics."""

import json

from arena.judges.metrics import summarize
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub
from tests.support.qwen_script import respond


def config_for(server, data, out, **extra):
    return RunConfig(
        data=str(data), agent="openai", out=str(out), concurrency=4,
        agent_options={"model": "qwen", "base_url": server.base_url, "api_key_env": "ARENA_TEST_KEY",
                       "retry_initial": 0.01, **extra.pop("agent_options", {})},
        judge="llm", judge_options={"model": "judge", "base_url": server.base_url, "retry_initial": 0.01,
                                    "evidence": True},  # off by default under original (the data's protocol)
        **extra,
    )


def test_xml_run_records_everything(tiny_data, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_KEY", "sk-secret-value-123")
    with OpenAIStub(respond) as server:
        result = run(config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10]))
        requests = list(server.requests)
    episodes = {e.task.id: e for e in result.episodes}
    q1, q2 = episodes["q1"], episodes["q2"]

    assert q1.finish_reason == "answered" and q1.answer == "Mirelle Dastrow"
    assert [s.tool for s in q1.steps] == ["image_zoom_in_tool", "image_search_tool", "text_search_tool", None]
    assert [s.action for s in q1.steps] == ["tool_call"] * 3 + ["answer"]
    assert q1.steps[0].reasoning == "The white sign names a lighthouse; zoom in to read it."
    assert q1.steps[0].arguments == {"bbox_2d": [740, 90, 950, 210], "label": "white sign"}
    assert q1.steps[0].observation.data["pixel_box"] == [1184, 90, 1520, 210]
    assert q1.steps[1].observation.text.startswith("Title 1: Orvanta Lighthouse - Wiki")
    assert "Mirelle Dastrow" in q1.steps[2].observation.text
    assert q1.totals.calls_per_tool == {"image_zoom_in_tool": 1, "image_search_tool": 1, "text_search_tool": 1}
    assert q1.totals.rounds == 4 and q1.totals.prompt_tokens == 100 + 110 + 120 + 130
    store = RunStore(result.run_dir)
    for step in q1.steps:
        for blob in (step.observation.images if step.observation else []):
            assert store.blobs.path(blob).is_file()
    assert store.blobs.path(q1.images[0]).is_file()

    crop_turn = next(r for r in requests if r["model"] == "qwen" and sum(m["role"] == "assistant" for m in r["messages"]) == 1
                     and "Who built" in json.dumps(r["messages"][1]))
    system = crop_turn["messages"][0]["content"]
    assert "<tools>" in system and all(n in system for n in ("image_zoom_in_tool", "text_search_tool"))
    response = crop_turn["messages"][3]
    assert response["role"] == "user" and response["content"][0]["text"].startswith("<tool_response>")
    assert response["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "tools" not in crop_turn

    verdicts = {v.key.split("|")[0]: v for v in result.verdicts}
    assert verdicts["q1"].correct and "no judge call" in verdicts["q1"].rationale
    assert verdicts["q2"].correct and verdicts["q2"].judge == "llm" and "contains 1874" in verdicts["q2"].rationale
    assert sum(r["model"] == "judge" for r in requests) == 3  # one correctness call, two evidence checks
    assert verdicts["q1"].supported == verdicts["q2"].supported == "yes"

    on_disk = json.loads((result.run_dir / "summary.json").read_text())
    recomputed = summarize(store.episodes(), store.verdicts(), "llm")
    assert on_disk["groups"] == recomputed["groups"]
    group = on_disk["groups"][0]
    assert group["pass1"] == 100.0 and group["avg_tool_calls"] == 2.5 and group["tool_utilisation"] == 25.0
    assert group["levels"] == {"L1": 100.0, "L2": 100.0}

    for name in ("run.json", "episodes.jsonl", "verdicts.jsonl", "summary.json"):
        assert "sk-secret-value-123" not in (result.run_dir / name).read_text()
    assert json.loads((result.run_dir / "run.json").read_text())["config"]["agents"]["options"]["api_key_env"] == "ARENA_TEST_KEY"


def test_native_tool_mode(tiny_data, tmp_path):
    def native(request):
        from tests.support.openai_server import Reply
        if request["model"] == "judge":
            return Reply(content="<judge>No</judge><reason>x</reason>")
        n = sum(m["role"] == "assistant" for m in request["messages"])
        if n == 0:
            return Reply(content=None, tool_calls=[
                {"id": "c1", "name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 500, 500]}},
                {"id": "c2", "name": "text_search_tool", "arguments": {"query": "x"}}])
        if n == 1:
            return Reply(content="", tool_calls=[{"id": "c3", "name": "text_search_tool", "arguments": "{bad"}])
        return Reply(content="<answer>1874</answer>")

    with OpenAIStub(native) as server:
        result = run(config_for(server, tiny_data, tmp_path / "logs", agent_options={"tool_mode": "native"},
                                task_ids=["q2"]))
        last = [r for r in server.requests if r["model"] == "qwen"][-1]
    [episode] = result.episodes
    assert [s.action for s in episode.steps] == ["tool_call", "invalid", "answer"]
    assert episode.steps[0].ignored_calls == 1 and episode.totals.invalid_calls == 1
    assert "not valid JSON" in episode.steps[1].error
    assert {t["function"]["name"] for t in last["tools"]} == {"text_search_tool", "image_search_tool",
                                                              "image_zoom_in_tool"}
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool"]
    assert last["messages"][4]["content"][1]["type"] == "image_url"
    assert episode.answer == "1874" and result.verdicts[0].correct
