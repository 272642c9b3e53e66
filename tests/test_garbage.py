"""Garbage from the model and a failing endpoint: the run finishes and each episode says what happened."""

import json

from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.qwen_script import call

GARBAGE = [
    "<tool_call>{not json at all</tool_call>",
    call("web_browser", url="http://example.com"),
    call("image_zoom_in_tool", bbox_2d=[900, 900, 100, 100]),
    '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [NaN, 0, 10, 10]}}</tool_call>',
    call("image_zoom_in_tool", bbox_2d=[0, 0, 100, 100], img_idx=42),
    call("text_search_tool"),
    "x" * 10_000_000,
]


def garbage_agent(request):
    n = sum(m["role"] == "assistant" for m in request["messages"])
    return Reply(content=GARBAGE[min(n, len(GARBAGE) - 1)])


def config(server, data, out, **kw):
    kw.setdefault("protocol", "arena")  # these tests exercise the arena's turn handling on VistaArena-format data
    return RunConfig(data=str(data), agent="openai", out=str(out), judge="normalized",
                     agent_options={"model": "m", "base_url": server.base_url, "retry_initial": 0.01,
                                    "max_retries": 2, **kw.pop("agent_options", {})}, **kw)


def test_garbage_becomes_error_observations(tiny_data, tmp_path):
    with OpenAIStub(garbage_agent) as server:
        result = run(config(server, tiny_data, tmp_path, task_ids=["q1"], max_rounds=[10]))
        last = server.requests[-1]
    [episode] = result.episodes
    errors = [s.error for s in episode.steps]
    assert "not valid JSON" in errors[0]
    assert "unknown tool 'web_browser'" in errors[1]
    assert "empty or inverted" in errors[2]
    assert "non-finite" in errors[3]
    assert "img_idx 42 is out of range" in errors[4]
    assert "query: Field required" in errors[5]
    assert episode.totals.invalid_calls == 6 and episode.totals.tool_calls == 0
    assert episode.finish_reason == "answered" and len(episode.answer) <= 10_000
    assert len(episode.steps[6].output) < 70_000
    assert "Error: unknown tool" in json.dumps(last["messages"])
    assert result.verdicts[0].score == 0.0


def test_server_errors_and_timeouts_end_episodes_with_error_then_resume_retries(tiny_data, tmp_path):
    state = {"mode": "500"}

    def flaky(request):
        if state["mode"] == "500":
            return Reply(status=500)
        if state["mode"] == "slow":
            return Reply(content="<answer>1874</answer>", delay=1.5)
        return Reply(content="<answer>1874</answer>")

    with OpenAIStub(flaky) as server:
        first = run(config(server, tiny_data, tmp_path, run_id="r"))
        assert {e.finish_reason for e in first.episodes} == {"error"}
        assert all("HTTP 500" in e.error and "scripted failure" in e.error and "after 3 attempts" in e.error
                   and server.base_url in e.error for e in first.episodes)
        assert len(server.requests) == 2 * 3

        state["mode"] = "slow"
        second = run(config(server, tiny_data, tmp_path, run_id="r", agent_options={"timeout": 0.3}), force=True)
        assert {e.finish_reason for e in second.episodes} == {"error"}
        assert all("Timeout" in e.error for e in second.episodes)

        state["mode"] = "ok"
        third = run(config(server, tiny_data, tmp_path, run_id="r"), force=True)
    assert third.ran == 2
    assert {e.task.id: e.answer for e in third.episodes} == {"q1": "1874", "q2": "1874"}
    assert third.summary["groups"][0]["errors"] == 0
    assert third.summary["groups"][0]["pass1"] == 50.0


def test_budget_exhaustion_final_turn_and_original_behaviour(tiny_data, tmp_path):
    def searcher(request):
        if "give your final answer now" in json.dumps(request["messages"][-1]):
            return Reply(content="<answer>1874</answer>")
        return Reply(content=call("text_search_tool", query="Orvanta"))

    with OpenAIStub(searcher) as server:
        arena_default = run(config(server, tiny_data, tmp_path, task_ids=["q2"], max_rounds=[3]))
        original = run(config(server, tiny_data, tmp_path / "orig", task_ids=["q2"], max_rounds=[3],
                              budget={"final_answer_turn": False}))
    [ep] = arena_default.episodes
    assert ep.finish_reason == "budget" and ep.answer == "1874" and ep.totals.rounds == 3
    assert ep.steps[-1].final_turn and ep.totals.tool_calls == 3
    assert arena_default.verdicts[0].correct
    [orig] = original.episodes
    assert orig.finish_reason == "budget" and orig.answer is None and len(orig.steps) == 3


def test_stop_on_invalid_reproduces_the_original(tiny_data, tmp_path):
    with OpenAIStub(garbage_agent) as server:
        result = run(config(server, tiny_data, tmp_path, task_ids=["q1"], budget={"on_invalid": "stop"}))
    [episode] = result.episodes
    assert episode.finish_reason == "invalid" and len(episode.steps) == 1


def test_broken_task_image_is_an_episode_error(tiny_data, tmp_path):
    (tiny_data.parent / "images" / "scene.png").write_bytes(b"not a png")
    with OpenAIStub(lambda r: "<answer>x</answer>") as server:
        result = run(config(server, tiny_data, tmp_path))
    assert {e.finish_reason for e in result.episodes} == {"error"}
    assert all("scene.png" in e.error and "cannot decode" in e.error for e in result.episodes)
    assert server.requests == []


def test_a_judge_that_cannot_be_built_fails_before_any_episode(tiny_data, tmp_path):
    import json as _json

    import pytest

    config = tiny_data.parent / "datasets.json"
    config.write_text(_json.dumps({"open": {"root": ".", "annotation": "annotations.jsonl", "reward_fn": ["llm_score"]}}))
    with OpenAIStub(lambda r: "<answer>x</answer>") as server:
        with pytest.raises(ValueError, match="judge 'llm'.*model"):
            run(RunConfig(data=str(config), agent="openai", out=str(tmp_path), judge="auto",
                          agent_options={"model": "m", "base_url": server.base_url}))
        assert server.requests == []
