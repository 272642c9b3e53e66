"""The smolagents adapter: parity with the `openai` agent on one scripted endpoint, images, resume, failures."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from arena.agents.smolagents_agent import smol_inputs, smolagents_agent
from arena.core.agent import EpisodeView
from arena.core.blobs import BlobStore
from arena.core.context_image import ContextImage
from arena.core.dataset import load_datasets
from arena.core.tool import TOOLS, ToolOptions
from arena.runs.config import RunConfig
from arena.runs.runner import RunResult, run
from tests.support.openai_server import OpenAIStub, Reply

CROP = ("image_zoom_in_tool", {"bbox_2d": [700, 80, 960, 220], "label": "sign"})
SCRIPTS = {
    "lighthouse named": [("text_search_tool", {"query": "Orvanta lighthouse builder"}), CROP,
                         [("image_search_tool", {}), ("text_search_tool", {"query": "ignored second call"})],
                         ("no_such_tool", {"x": 1}), ("image_zoom_in_tool", {"bbox_2d": [0, 0, 0, 0]}),
                         "Mirelle Dastrow"],
    "In which year": [("text_search_tool", {"query": "Orvanta lighthouse built"}), CROP,
                      ("text_search_tool", {"query": "Orvanta year"}), ("text_search_tool", {"query": "again"}),
                      ("text_search_tool", {"query": "and again"}), ("text_search_tool", {"query": "more"}),
                      ("text_search_tool", {"query": "still more"}), "1874"],
}


def first_user_text(request: dict[str, Any]) -> str:
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                return content
            return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def scripted_model(request: dict[str, Any]) -> Reply | str:
    """One policy for both agents: the action is chosen by task and by the number of earlier model turns.

    Answers are a `final_answer` call when that tool is offered (smolagents), else `<answer>` text.
    """
    script = next(actions for key, actions in SCRIPTS.items() if key in first_user_text(request))
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    tools = [t["function"]["name"] for t in request.get("tools") or []]
    if not tools:
        return f"<think>out of rounds</think><answer>{script[-1]}</answer>"
    action = script[min(turn, len(script) - 1)]
    if isinstance(action, str):
        if "final_answer" in tools:
            return Reply(content=None, tool_calls=[{"id": f"call_{turn}", "name": "final_answer",
                                                    "arguments": {"answer": action}}])
        return f"<answer>{action}</answer>"
    calls = action if isinstance(action, list) else [action]
    return Reply(content=f"Round {turn}: calling {calls[0][0]}.",
                 tool_calls=[{"id": f"call_{turn}_{i}", "name": name, "arguments": args}
                             for i, (name, args) in enumerate(calls)])


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from tests.support.tiny_dataset import write_tiny_dataset

    return write_tiny_dataset(tmp_path_factory.mktemp("smol") / "data")


def run_agent(data: Path, out: Path, agent: str, base_url: str, max_rounds: int = 6, repeats: int = 1,
              **options: Any) -> RunResult:
    extra = {"tool_mode": "native"} if agent == "openai" else {}
    return run(RunConfig(data=str(data), corpus=str(data.parent / "corpus"), agent=agent,
                         agent_options={"model": "stub", "base_url": base_url, **extra, **options},
                         settings=["search+crop"], max_rounds=[max_rounds], repeats=repeats, judge="normalized",
                         tool_options=ToolOptions(image_search="stored"), out=str(out), concurrency=4,
                         protocol="arena"))  # the arena's final-answer turn on VistaArena-format data


def calls(result: RunResult) -> dict[tuple[str, int], Any]:
    verdicts = {v.episode_id: v.correct for v in result.verdicts}
    return {(e.task.id, e.repeat): {
        "steps": [(s.round, s.action, s.tool, s.arguments, s.ignored_calls,
                   s.observation.text if s.observation else None, len(s.observation.images) if s.observation else 0)
                  for s in e.steps],
        "answer": e.answer, "finish": e.finish_reason, "correct": verdicts[e.id],
        "invalid": e.totals.invalid_calls, "ignored": e.totals.ignored_calls}
        for e in result.episodes}


def test_smolagents_and_openai_make_the_same_calls_and_get_the_same_verdicts(data: Path, tmp_path: Path):
    with OpenAIStub(scripted_model) as stub:
        reference = run_agent(data, tmp_path / "openai", "openai", stub.base_url, repeats=2)
        smol = run_agent(data, tmp_path / "smol", "smolagents", stub.base_url, repeats=2)
    expected = calls(reference)
    assert calls(smol) == expected
    q1, q2 = expected[("q1", 0)], expected[("q2", 0)]
    assert [s[2] for s in q1["steps"]] == ["text_search_tool", "image_zoom_in_tool", "image_search_tool",
                                          "no_such_tool", "image_zoom_in_tool", None]
    assert q1["ignored"] == 1 and q1["invalid"] == 2 and q1["finish"] == "answered" and q1["correct"]
    assert q2["finish"] == "budget" and q2["answer"] == "1874" and q2["correct"]
    assert {e.agent for e in smol.episodes} == {"smolagents:stub"}
    assert all(s.usage.prompt_tokens == 10 and s.input.messages > 0 for e in smol.episodes for s in e.steps)


def observation_images(request: dict[str, Any]) -> int:
    """Images the model is shown after the task message (tool observations)."""
    users = [m for m in request["messages"] if m["role"] == "user"]
    return sum(1 for m in users[1:] if isinstance(m["content"], list)
               for p in m["content"] if p.get("type") == "image_url")


@pytest.mark.parametrize("keep_images, shown", [(3, 2), (1, 1)])
def test_tool_images_reach_the_model_and_old_ones_are_pruned(data: Path, tmp_path: Path, keep_images: int,
                                                             shown: int):
    with OpenAIStub(scripted_model) as stub:
        run_agent(data, tmp_path, "smolagents", stub.base_url, keep_images=keep_images)
        q1 = [r for r in stub.requests if "lighthouse named" in first_user_text(r) and r.get("tools")]
    by_turn = {sum(1 for m in r["messages"] if m["role"] == "assistant"): r for r in q1}
    assert observation_images(by_turn[1]) == 0
    assert observation_images(by_turn[2]) == 1, "the crop is shown with its observation"
    assert observation_images(by_turn[3]) == shown, "crop and thumbnail, or only the newest"
    assert observation_images(by_turn[4]) == shown


def test_a_session_resumes_mid_episode_from_the_arena_steps(data: Path, tmp_path: Path):
    """A fork: the smolagents memory is rebuilt from recorded Steps and the run goes on from there."""
    with OpenAIStub(scripted_model) as stub:
        recorded = run_agent(data, tmp_path, "openai", stub.base_url)
        episode = next(e for e in recorded.episodes if e.task.id == "q1")
        dataset = load_datasets(str(data))[0]
        task = next(t for t in dataset.tasks if t.id == "q1")
        blobs = BlobStore(recorded.run_dir / "blobs")
        images = [ContextImage(episode.images[0], source="task", path=dataset.resolve(task.images[0], where="t"))]
        for step in episode.steps[:2]:
            images += [ContextImage(b, source=step.tool, path=blobs.path(b)) for b in step.observation.images]
        tools = [TOOLS[name](ToolOptions(image_search="stored")) for name in episode.tools]
        view = EpisodeView(task=task, images=images, n_task_images=1, tools=tools, steps=episode.steps[:2],
                           budget=episode.budget, round=3)
        agent = smolagents_agent(model="stub", base_url=stub.base_url)
        before = len(stub.requests)
        turn = asyncio.run(agent.act(view))
        request = stub.requests[before]
    assert (turn.action, turn.tool, turn.ignored_calls) == ("tool_call", "image_search_tool", 1)
    texts = " ".join(p.get("text", "") for m in request["messages"] if isinstance(m["content"], list)
                     for p in m["content"] if p.get("type") == "text")
    assert "Observation:\n" + episode.steps[0].observation.text in texts
    assert "Observation:\n" + episode.steps[1].observation.text in texts
    assert observation_images(request) == 1


def test_unparsable_output_is_an_invalid_round_and_the_episode_goes_on(data: Path, tmp_path: Path):
    def model(request: dict[str, Any]) -> Reply | str:
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if turn == 0:
            return "I think the answer is somewhere, but I will not call a tool."
        if not request.get("tools"):
            return "<answer>1874</answer>"
        return Reply(content=None, tool_calls=[{"id": "a", "name": "final_answer", "arguments": {"answer": "1874"}}])

    with OpenAIStub(model) as stub:
        result = run_agent(data, tmp_path, "smolagents", stub.base_url)
        second = [r for r in stub.requests if sum(1 for m in r["messages"] if m["role"] == "assistant") == 1]
    for episode in result.episodes:
        assert [s.action for s in episode.steps] == ["invalid", "answer"]
        assert "Error while parsing tool call" in episode.steps[0].error
        assert episode.answer == "1874" and episode.finish_reason == "answered"
    shown = [p["text"] for r in second for m in r["messages"] if m["role"] == "user" and isinstance(m["content"], list)
             for p in m["content"] if p.get("type") == "text"]
    assert any(text.startswith("Error:\nError while parsing tool call") for text in shown)


@pytest.mark.parametrize("status,finish", [(400, "rejected"), (503, "error")])
def test_an_endpoint_that_fails_ends_the_episode_with_an_error(data: Path, tmp_path: Path, status: int, finish: str):
    """A refusal (4xx) ends the episode `rejected` (not replayed without --retry-errors); a server error
    (5xx, after the client's retries) ends it `error` (replayed); both name the endpoint and quote it."""
    with OpenAIStub(lambda r: Reply(status=status, error="model not loaded")) as stub:
        result = run_agent(data, tmp_path, "smolagents", stub.base_url, max_retries=0)
    for episode in result.episodes:
        assert episode.finish_reason == finish
        assert "model not loaded" in episode.error and f"stub at {stub.base_url}: HTTP {status}" in episode.error


def test_code_agents_are_not_offered():
    with pytest.raises(ValueError, match="only 'tool_calling'"):
        smolagents_agent(model="m", base_url="http://127.0.0.1:9/v1", agent_type="code")


def test_arena_schemas_become_smolagents_inputs():
    schema = TOOLS["image_zoom_in_tool"]().schema()["function"]["parameters"]
    inputs = smol_inputs(schema)
    assert inputs["bbox_2d"]["type"] == "array" and "nullable" not in inputs["bbox_2d"]
    assert inputs["img_idx"] == {**inputs["img_idx"], "type": "integer", "nullable": True}
    assert "default" not in inputs["label"]


def test_the_context_policy_rewrites_smolagents_messages_like_the_openai_transcript():
    """Old returned images, then old observation texts, become the openai agent's placeholders in the
    messages smolagents writes from its memory; the task image and the latest observation stay."""
    from smolagents.memory import ActionStep, TaskStep, ToolCall
    from smolagents.monitoring import Timing

    from arena.agents.context_policy import Limits, image_placeholder, text_placeholder
    from arena.agents.smolagents_agent import _tool_classes

    agent = smolagents_agent(model="m", base_url="http://127.0.0.1:9/v1")
    model = _tool_classes()[2](owner=agent, **agent.model_kwargs())
    images = [Image.new("RGB", (280, 280), (i * 40, 0, 0)) for i in range(4)]  # 100 tokens each
    model.image_index = {id(im): (im, i) for i, im in enumerate(images)}
    model.n_task_images = 1
    steps = [ActionStep(step_number=r, timing=Timing(start_time=0.0), model_output="",
                        tool_calls=[ToolCall(name="image_zoom_in_tool", arguments={}, id=f"c{r}")],
                        observations="x" * 800, observations_images=[images[r]]) for r in (1, 2, 3)]
    model.observed_rounds = lambda: [1, 2, 3]
    messages = TaskStep(task="Who?", task_images=[images[0]]).to_messages()
    for step in steps:
        messages += step.to_messages()
    sent, summary = model._fitted(messages, Limits(max_images=3))
    assert summary.elided_images == [1] and summary.elided_texts == [] and summary.images == 3
    texts = [p.get("text") for m in sent for p in m.content]
    assert image_placeholder(1) in texts and summary.elision_reason == "at most 3 images"
    sent, summary = model._fitted(messages, Limits(max_context_tokens=600))
    assert summary.elided_images == [1, 2] and summary.elided_texts == [1, 2]  # never round 3, the latest
    texts = [p.get("text") for m in sent for p in m.content]
    assert f"Observation:\n{text_placeholder(1)}" in texts and "Observation:\n" + "x" * 800 in texts
    assert summary.token_estimate <= 600 and summary.elision_reason == "about 600 context tokens"
    assert [p["type"] for p in sent[0].content] == ["text", "image"]  # the task image stays
