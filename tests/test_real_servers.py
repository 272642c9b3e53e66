"""The arena against servers that behave like vLLM, SGLang, OpenAI, Gemini and Ollama when a request
breaks their rules (tests/support/real_server.py names the source of every wording)."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from arena.core.budget import Budget
from arena.cli.main import app
from arena.endpoints.client import Endpoint, EndpointConfig, RejectedError, TransientEndpointError
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.judges.llm import llm
from arena.store.store import RunStore
from tests.support.openai_server import Reply, completion_body
from tests.support.real_server import RealServer, Rules
from tests.support.tiny_dataset import write_tiny_dataset

cli = CliRunner()
SMALL = 256 * 28 * 28  # images of ~256 tokens keep the tests fast


def cropper(request):
    """Crops a large region every round (each crop is ~1,000 image tokens), answers at round 10."""
    n = sum(m["role"] == "assistant" for m in request["messages"])
    if n >= 9:
        return Reply(content="<answer>1874</answer>")
    box = [0, 0, 1000 - 10 * n, 1000]
    if request.get("tools"):
        return Reply(content="", tool_calls=[{"id": f"call_{n}", "name": "image_zoom_in_tool",
                                              "arguments": {"bbox_2d": box}}])
    return Reply(content=f'<think>look closer</think><tool_call>{{"name": "image_zoom_in_tool", '
                         f'"arguments": {{"bbox_2d": {box}}}}}</tool_call>')


def arena_run(data, out, url, *extra):
    args = ["run", "--data", str(data), "--agent", "openai", "--model", "qwen", "--base-url", url,
            "--setting", "crop", "--max-rounds", "10", "--judge", "normalized", "--out", str(out),
            "--run-id", "r", "--concurrency", "2", "--agent-option", "retry_initial=0.01",
            "--image-max-pixels", str(SMALL), "--protocol", "arena", *extra]  # the arena's limit learning; under
    # original the published max_tokens 4096 alone exceeds the 3000-token servers here, as it would for the script
    return cli.invoke(app, args)


@pytest.mark.parametrize("tool_mode", ["xml", "native"])
@pytest.mark.parametrize("rules,learned_key", [
    (Rules(flavour="vllm", max_images=4, max_context=12000), "max_images"),
    (Rules(flavour="sglang", max_context=3000), "max_context_tokens"),
])
def test_image_and_context_limits_are_learned_and_crop_episodes_finish(tmp_path, tool_mode, rules, learned_key):
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(cropper, rules) as server:
        first = arena_run(data, tmp_path / "logs", server.base_url, "--tool-mode", tool_mode)
        assert first.exit_code == 0, first.output
        sent = len(server.requests)
        refused = list(server.refused)
        again = arena_run(data, tmp_path / "logs", server.base_url, "--tool-mode", tool_mode)
        assert again.exit_code == 0, again.output
        assert len(server.requests) == sent  # a re-run sends no request
    store = RunStore(tmp_path / "logs" / "r")
    episodes = store.episodes()
    assert {e.finish_reason for e in episodes} <= {"answered", "budget"}
    assert all(e.totals.rounds == 10 for e in episodes)
    learned = store.info().learned_limits["openai:qwen"]
    assert learned_key in learned
    if learned_key == "max_images":
        assert learned["max_images"] == 4
        # at most one refusal per episode in flight (concurrency 2), none once learned
        assert 1 <= len(refused) <= 2 and "At most 4 image(s)" in refused[0][1]["error"]["message"]
    else:
        assert "longer than the model's context length (3000 tokens)" in refused[0][1]["message"]
        assert len(refused) <= 3
    elided = [s for e in episodes for s in e.steps if s.input.elided_images]
    assert elided and all(s.input.elision_reason for s in elided)
    assert all(s.input.images <= (rules.max_images or 99) for e in episodes for s in e.steps)
    viewer = cli.invoke(app, ["view", str(tmp_path / "logs" / "r")])
    assert viewer.exit_code == 0, viewer.output
    assert "left out of the model" in (tmp_path / "logs" / "r" / "viewer.html").read_text()
    # what the server received after learning fits its limits, and names the elided image
    last = server.requests[-1]
    text = json.dumps(last["messages"])
    assert "left out of the context" in text and "crop it again" in text


@pytest.mark.parametrize("agents,concurrency,fail_fast", [("openai", 4, 3), ("openai,smolagents", 1, 3),
                                                         ("openai", 1, 2)])
def test_wrong_model_stops_a_40_task_run_after_a_handful_of_requests(tmp_path, agents, concurrency, fail_fast):
    """Fail fast counts the refusals of an endpoint whichever agent sent them: with two agents taking turns
    at concurrency 1, counted per agent the run would send 5 requests before stopping, not 3. `--fail-fast N`
    sets how many."""
    data = write_tiny_dataset(tmp_path / "data", n_items=40)
    with RealServer(cropper, Rules(flavour="vllm", models={"Qwen/Qwen3-VL-8B-Instruct"})) as server:
        result = cli.invoke(app, ["run", "--data", str(data), "--agent", agents, "--model", "qwen3-vl",
                                  "--base-url", server.base_url, "--setting", "crop", "--judge", "normalized",
                                  "--out", str(tmp_path / "logs"), "--run-id", "w", "--concurrency", str(concurrency),
                                  "--fail-fast", str(fail_fast)])
        requests = len(server.requests)
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert f"the first {fail_fast} requests to qwen3-vl at {server.base_url} were all refused" in output
    assert "The model `qwen3-vl` does not exist." in output
    assert "rejected:" in output  # the finish column names the reason
    episodes = RunStore(tmp_path / "logs" / "w").episodes()
    assert all(e.finish_reason == "rejected" and not e.steps for e in episodes)
    if concurrency == 1:
        assert requests == fail_fast and {e.agent for e in episodes} == {f"{a}:qwen3-vl" for a in agents.split(",")}
    else:
        assert requests <= 3 + concurrency  # those already in flight


def test_every_episode_rejected_exits_non_zero_and_rerun_does_not_retry_unless_asked(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    rules = Rules(flavour="openai", models={"gpt-5-mini"}, quota_exhausted=True)
    with RealServer(cropper, rules) as server:
        args = ["run", "--data", str(data), "--agent", "openai", "--model", "gpt-5-mini", "--base-url",
                server.base_url, "--setting", "crop", "--judge", "normalized", "--out", str(tmp_path / "logs"),
                "--run-id", "q", "--max-rounds", "2", "--image-max-pixels", str(SMALL)]
        first = cli.invoke(app, args)
        assert first.exit_code == 1 and len(server.requests) == 2  # insufficient_quota is not retried
        assert "You exceeded your current quota" in " ".join(first.output.split()) or "every episode" in first.output
        again = cli.invoke(app, args)
        assert len(server.requests) == 2 and again.exit_code == 1
        rules.quota_exhausted = False
        retried = cli.invoke(app, [*args, "--retry-errors"])
        assert retried.exit_code == 0, retried.output
    episodes = RunStore(tmp_path / "logs" / "q").episodes()
    assert {e.finish_reason for e in episodes} <= {"answered", "budget"}  # played, no longer rejected


def test_server_rejecting_temperature_and_max_tokens_works_with_the_defaults(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    rules = Rules(flavour="openai", models={"o4-mini"}, reject_params={"temperature", "max_tokens"})
    with RealServer(cropper, rules) as server:
        ok = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "o4-mini", "--base-url",
                              server.base_url, "--setting", "crop", "--judge", "normalized", "--out",
                              str(tmp_path / "logs"), "--max-tokens", "2000", "--run-id", "ok", "--max-rounds", "2",
                              "--image-max-pixels", str(SMALL)])
        assert ok.exit_code == 0, ok.output
        sent = server.requests[0]
        assert "temperature" not in sent and sent["max_completion_tokens"] == 2000 and "max_tokens" not in sent
    with RealServer(cropper, Rules(flavour="openai", models={"my-proxy-model"}, reject_params={"max_tokens"})) as s2:
        forced = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "my-proxy-model",
                                  "--base-url", s2.base_url, "--setting", "crop", "--judge", "normalized",
                                  "--out", str(tmp_path / "logs"), "--run-id", "forced", "--max-tokens", "100",
                                  "--token-param", "max_completion_tokens", "--temperature", "0.3",
                                  "--max-rounds", "2", "--image-max-pixels", str(SMALL)])
        assert forced.exit_code == 0, forced.output
        assert s2.requests[0]["max_completion_tokens"] == 100 and s2.requests[0]["temperature"] == 0.3


def test_cost_shows_in_the_table_and_summary(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(cropper, Rules(flavour="vllm")) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url, "--price", "1,2", "--max-rounds", "3")
        assert result.exit_code == 0, result.output
        assert "cost $" in result.output and "cost: agents $" in result.output
        summary = json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())
        again = arena_run(data, tmp_path / "logs", server.base_url, "--price", "1,2", "--max-rounds", "3")
    # a re-run that plays nothing shows the same costs, per group too
    assert again.exit_code == 0 and "cost $" in again.output
    assert json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())["groups"] == summary["groups"]
    episodes = RunStore(tmp_path / "logs" / "r").episodes()
    # a budget sweep 3,10: the 3-round cells continue the 10-round trajectories (prefix sharing), so a
    # group's cost is its transcripts' tokens, the run's counts each model call once
    for group in summary["groups"]:
        mine = [e for e in episodes if e.budget.max_rounds == group["max_rounds"]]
        assert group["cost"] == pytest.approx(
            sum(e.totals.prompt_tokens + 2 * e.totals.completion_tokens for e in mine) / 1e6, abs=1e-6)
    calls = [s for e in episodes for s in e.steps[len(e.steps) - e.meta.get("model_calls", len(e.steps)):]]
    assert summary["cost"] == pytest.approx(
        sum(s.usage.prompt_tokens + 2 * s.usage.completion_tokens for s in calls) / 1e6, abs=1e-6)
    assert 0 < summary["cost"] < sum(g["cost"] for g in summary["groups"])


def test_max_cost_stops_the_run_cleanly(tmp_path):
    data = write_tiny_dataset(tmp_path / "data", n_items=12)
    with RealServer(cropper, Rules(flavour="vllm")) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url, "--price", "100,100", "--max-cost", "0.5",
                           "--max-rounds", "3")
    assert result.exit_code == 1
    assert "--max-cost" in " ".join(result.output.split())
    assert 1 <= len(RunStore(tmp_path / "logs" / "r").episodes()) < 12


def test_retry_after_headers_are_honoured_and_errors_name_the_endpoint():
    async def go(rules, config_extra):
        with RealServer(lambda r: "<answer>x</answer>", rules) as server:
            endpoint = Endpoint(EndpointConfig(base_url=server.base_url, model="qwen", retry_initial=0.01,
                                               **config_extra))
            try:
                response = await endpoint.chat([{"role": "user", "content": "hi"}])
            finally:
                await endpoint.aclose()
            return response, server.times

    response, times = asyncio.run(go(Rules(rate_limit_first=1, retry_after_ms="400"), {}))
    assert response.content == "<answer>x</answer>" and times[1] - times[0] >= 0.38
    response, times = asyncio.run(go(Rules(rate_limit_first=1, retry_after="1"), {}))
    assert times[1] - times[0] >= 0.95
    with pytest.raises(TransientEndpointError) as transient:
        asyncio.run(go(Rules(rate_limit_first=5), {"max_retries": 1}))
    assert "HTTP 429" in str(transient.value) and "127.0.0.1" in str(transient.value)
    assert "after 2 attempts" in str(transient.value)
    with pytest.raises(RejectedError) as gemini:
        asyncio.run(go(Rules(flavour="gemini", models={"gemini-2.5-flash"}), {}))
    assert "models/qwen is not found" in str(gemini.value) and gemini.value.status == 404


def test_gemini_thought_signatures_round_trip_in_native_mode(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")

    def gemini(request):
        n = sum(m["role"] == "assistant" for m in request["messages"])
        if n >= 2:
            return Reply(content="<answer>1874</answer>")
        body = completion_body(Reply(content=None, tool_calls=[
            {"id": f"call_{n}", "name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 500, 500]}}]),
            request["model"])
        body["choices"][0]["message"]["tool_calls"][0]["extra_content"] = {
            "google": {"thought_signature": f"sig-{n}"}}
        return Reply(body=body)

    rules = Rules(flavour="gemini", models={"gemini-3-pro-preview"}, require_thought_signatures=True)
    with RealServer(gemini, rules) as server:
        result = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "gemini-3-pro-preview",
                                  "--base-url", server.base_url, "--setting", "crop", "--judge", "normalized",
                                  "--tool-mode", "native", "--out", str(tmp_path / "logs"), "--run-id", "g",
                                  "--no-parallel-tool-calls", "--image-detail", "high",
                                  "--image-max-pixels", str(SMALL)])
        assert result.exit_code == 0, result.output
        assert not server.refused
        last = server.requests[-1]
    assert last["parallel_tool_calls"] is False
    calls = [c for m in last["messages"] for c in m.get("tool_calls") or []]
    assert [c["extra_content"]["google"]["thought_signature"] for c in calls] == ["sig-0", "sig-1"]
    image = next(p for m in last["messages"] if isinstance(m["content"], list) for p in m["content"]
                 if p.get("type") == "image_url")
    assert image["image_url"]["detail"] == "high"
    step = RunStore(tmp_path / "logs" / "g").episodes()[0].steps[0]
    assert step.provider_fields == {"tool_calls": [{"extra_content": {"google": {"thought_signature": "sig-0"}}}]}


@pytest.mark.parametrize("tool_mode", ["xml", "native"])
def test_a_reply_cut_at_the_token_limit_is_an_invalid_round_not_an_answer(tmp_path, tool_mode):
    data = write_tiny_dataset(tmp_path / "data")

    def thinker(request):
        n = sum(m["role"] == "assistant" for m in request["messages"])
        if n == 0 and request.get("tools"):  # a native call cut inside its arguments
            body = completion_body(Reply(content=None, tool_calls=[
                {"id": "call_0", "name": "image_zoom_in_tool", "arguments": '{"bbox_2d": [0, 0, 5'}]), "qwen")
            body["choices"][0]["finish_reason"] = "length"
            return Reply(body=body)
        if n == 0:  # Qwen3 thinking without a reasoning parser, cut by max_tokens: no </think>
            return Reply(content="<think>The sign is small; I should zoom in on the orange banner and then",
                         finish_reason="length")
        if n == 1:  # SGLang dropped a malformed call: untagged prose with finish_reason stop
            return Reply(content="I'll zoom in on the orange banner to read it.")
        return Reply(content="<answer>1874</answer>")

    with RealServer(thinker, Rules(flavour="sglang", send_usage=False)) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url, "--strict-answers", "--max-rounds", "5", "--protocol", "arena",
                           "--tool-mode", tool_mode)
        assert result.exit_code == 0, result.output
    episode = RunStore(tmp_path / "logs" / "r").episodes()[0]
    cut, untagged = episode.steps[0], episode.steps[1]
    assert cut.action == "invalid" and cut.finish_reason == "length"
    assert cut.observation.text == "Error: your reply was cut at the token limit; answer more briefly"
    assert untagged.action == "answer" and untagged.answer_tagged and untagged.answer == "1874"
    assert "[arena: Your reply has neither a tool call nor an answer" in untagged.output
    assert episode.finish_reason == "answered" and episode.answer == "1874"
    assert cut.usage.prompt_tokens is None and episode.totals.prompt_tokens is None  # unknown, not 0


def test_keys_in_the_base_url_never_reach_the_run_files(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(cropper, Rules(flavour="vllm", models={"nope"})) as server:
        url = server.base_url.replace("http://", "http://user:SECRETKEY1@") + "?key=SECRETKEY2&api-version=1"
        result = arena_run(data, tmp_path / "logs", url)
    assert result.exit_code == 1
    assert "SECRETKEY" not in result.output
    for path in (tmp_path / "logs" / "r").rglob("*.json*"):
        assert "SECRETKEY" not in path.read_text(), path
    assert "api-version=1" in (tmp_path / "logs" / "r" / "run.json").read_text()


def test_silent_truncation_by_the_server_is_warned_about(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(cropper, Rules(flavour="ollama", max_context=1200)) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url, "--max-rounds", "4")
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "may be truncating prompts silently" in output
    summary = json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())
    assert any("truncating" in w for w in summary["warnings"])


def test_thinking_judge_and_a_judge_cut_at_its_token_limit(tmp_path):
    def judge(request):
        content = request["messages"][-1]["content"]  # the user turn (after the judge's system message)
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        if "Model answer: long" in text:
            return Reply(content="<think>Let me think about this at length", finish_reason="length")
        return Reply(content="<think>The rules say reply with <judge>Yes</judge> or <judge>No</judge>. The "
                             "candidate names the builder.</think><judge>Yes</judge><reason>same person</reason>")

    def episode(answer):
        return Episode(id=answer, run_id="r", key=answer, task=TaskRef(id="t", suite="test", question="Who?",
                                                                         answers=["M. Dastrow"]),
                       agent="a", setting="s", budget=Budget(), answer=answer, finish_reason="answered")

    async def go():
        with RealServer(judge, Rules(flavour="vllm", models={"judge-r1"})) as server:
            j = llm(model="judge-r1", base_url=server.base_url, temperature=None)
            try:
                return await j.score(episode("Mirelle Dastrow")), await j.score(episode("long")), server.requests
            finally:
                await j.aclose()

    good, cut, requests = asyncio.run(go())
    small = Rules(flavour="vllm", models={"judge-r1"}, max_context=4096)  # a small judge: 8192 does not fit

    async def small_judge():
        with RealServer(judge, small) as server:
            j = llm(model="judge-r1", base_url=server.base_url)
            try:
                return await j.score(episode("Mirelle Dastrow")), server.requests, server.refused
            finally:
                await j.aclose()

    fitted, sent, refused = asyncio.run(small_judge())
    assert fitted.correct and fitted.error is None
    assert "is too large: 8192" in refused[0][1]["error"]["message"] and 0 < sent[1]["max_tokens"] < 4096
    assert good.correct and good.error is None and good.usage.prompt_tokens > 0
    assert cut.error and "cut at its token limit" in cut.error and "max_tokens=8192" in cut.error
    assert "temperature" not in requests[0] and requests[0]["max_tokens"] == 8192


def smol_cropper(request):
    """`cropper` for smolagents: its transcript shows each past tool call as an assistant message "Calling
    tools: ...", and it answers through its `final_answer` tool."""
    n = sum(p["text"].count("Calling tools:") for m in request["messages"] if m["role"] == "assistant"
            and isinstance(m["content"], list) for p in m["content"] if p.get("type") == "text")
    if n >= 9:
        return Reply(content="", tool_calls=[{"id": "call_end", "name": "final_answer", "arguments": {"answer": "1874"}}])
    return Reply(content="", tool_calls=[{"id": f"call_{n}", "name": "image_zoom_in_tool",
                                          "arguments": {"bbox_2d": [0, 0, 1000 - 10 * n, 1000]}}])


def smol_run(data, out, url, *extra):
    return cli.invoke(app, ["run", "--data", str(data), "--agent", "smolagents", "--model", "qwen", "--base-url", url,
                            "--setting", "crop", "--max-rounds", "10", "--judge", "normalized", "--out", str(out),
                            "--run-id", "s", "--concurrency", "2", "--image-max-pixels", str(SMALL), *extra])


def test_smolagents_learns_the_image_limit_and_elides_like_the_openai_agent(tmp_path):
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(smol_cropper, Rules(flavour="vllm", max_images=4, max_context=12000)) as server:
        first = smol_run(data, tmp_path / "logs", server.base_url)
        assert first.exit_code == 0, first.output
        sent, refused = len(server.requests), list(server.refused)
        again = smol_run(data, tmp_path / "logs", server.base_url)
        assert again.exit_code == 0 and len(server.requests) == sent  # a re-run sends no request
        last = json.dumps(server.requests[-1]["messages"])
    store = RunStore(tmp_path / "logs" / "s")
    episodes = store.episodes()
    assert {e.finish_reason for e in episodes} == {"answered"} and {e.answer for e in episodes} == {"1874"}
    assert store.info().learned_limits["smolagents:qwen"] == {"max_images": 4}
    assert 1 <= len(refused) <= 2 and "At most 4 image(s)" in refused[0][1]["error"]["message"]
    steps = [s for e in episodes for s in e.steps]
    elided = [s for s in steps if s.input.elided_images]
    assert elided and all(s.input.elision_reason == "at most 4 images" for s in elided)
    assert all(s.input.images <= 4 for s in steps)
    # the oldest returned image is the one replaced, by the same placeholder as the openai agent's
    assert elided[-1].input.elided_images[0] == 1
    assert "[img_idx 1 left out of the context" in last and "crop it again (img_idx 1)" in last


def test_smolagents_max_context_tokens_leaves_out_the_oldest_images_first(tmp_path):
    data = write_tiny_dataset(tmp_path / "data", n_items=1)
    with RealServer(smol_cropper, Rules(flavour="vllm")) as server:
        result = smol_run(data, tmp_path / "logs", server.base_url, "--max-context-tokens", "1300")
        assert result.exit_code == 0, result.output
        last = json.dumps(server.requests[-1]["messages"])
    episode = RunStore(tmp_path / "logs" / "s").episodes()[0]
    assert episode.finish_reason == "answered"
    first, late = episode.steps[1].input, episode.steps[-1].input
    assert first.elided_images == [] and late.elision_reason == "about 1300 context tokens"
    # the oldest returned images go first; the latest observation's image always stays
    assert late.elided_images == list(range(1, len(late.elided_images) + 1)) and late.images >= 2
    assert "[img_idx 1 left out of the context" in last


@pytest.mark.parametrize("rules,learned_key,said", [
    (Rules(flavour="vllm06", max_images=4), "max_images", "At most 4 image(s) may be provided in one request."),
    (Rules(flavour="ollama", max_images=1), "max_images", "this model only supports one image while more than one"),
    (Rules(flavour="azure", max_images=3), "max_images", "Exceeded maximum number of images (3) allowed"),
    (Rules(flavour="anthropic", max_images=3), "max_images", "too many images and documents: 4 + 0 > 3"),
    (Rules(flavour="tgi", max_context=3000), "max_context_tokens", "`max_new_tokens` must be <= 3000. Given: "),
    (Rules(flavour="vllm-v1", max_context=3000), "max_context_tokens",
     "is longer than the maximum model length of 3000. Make sure that `max_model_len`"),
    (Rules(flavour="llamacpp", max_context=3000), "max_context_tokens",
     "exceeds the available context size (3000 tokens), try increasing it"),
    (Rules(flavour="llamacpp-old", max_context=3000), "max_context_tokens",
     "the request exceeds the available context size, try increasing it"),
    (Rules(flavour="lmstudio", max_context=3000), "max_context_tokens",
     "the model is loaded with context length of only 3000 tokens, which is not enough"),
])
def test_the_limit_wordings_of_other_servers_are_learned(tmp_path, rules, learned_key, said):
    """Each server's own refusal body (tests/support/real_server.py names the sources) teaches the limit."""
    data = write_tiny_dataset(tmp_path / "data", n_items=1)
    with RealServer(cropper, rules) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url)
        assert result.exit_code == 0, result.output
        refused = [json.dumps(body) for _, body in server.refused]
    assert refused and all(said in text for text in refused) and len(refused) <= 4
    store = RunStore(tmp_path / "logs" / "r")
    episode = store.episodes()[0]
    assert episode.finish_reason in ("answered", "budget") and episode.totals.rounds == 10
    learned = store.info().learned_limits["openai:qwen"]
    assert learned_key in learned
    if learned_key == "max_images":
        assert learned["max_images"] == rules.max_images
        assert all(s.input.images <= rules.max_images for s in episode.steps)
    assert any(s.input.elided_images for s in episode.steps)


def test_a_judge_endpoint_that_refuses_stops_the_run(tmp_path):
    data = write_tiny_dataset(tmp_path / "data", n_items=40)
    with RealServer(lambda r: "<answer>Paris</answer>", Rules(flavour="vllm", models={"qwen"})) as server:
        result = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "qwen", "--base-url",
                                  server.base_url, "--setting", "crop", "--judge", "llm", "--judge-model", "judge-x",
                                  "--judge-base-url", server.base_url, "--out", str(tmp_path / "logs"),
                                  "--run-id", "j", "--concurrency", "2", "--image-max-pixels", str(SMALL)])
        judged = [r for r in server.requests if r["model"] == "judge-x"]
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert f"judge requests to judge judge-x at {server.base_url} were all refused" in output
    assert "The model `judge-x` does not exist." in output
    assert 3 <= len(judged) <= 5  # not one per episode
    verdicts = RunStore(tmp_path / "logs" / "j").verdicts()
    assert 3 <= len(verdicts) <= len(judged) and all("HTTP 404" in v.error for v in verdicts)


def test_run_stops_count_per_endpoint_and_ignore_an_endpoint_that_has_answered():
    from arena.runs.briefs import EpisodeBrief
    from arena.runs.stops import RunStops, endpoint_label

    def refused(agent: str, steps: int = 0) -> EpisodeBrief:
        episode = Episode(id=agent, run_id="r", key=agent, task=TaskRef(id="t", suite="test", question="?",
                                                                         answers=["a"]),
                          agent=agent, setting="s", budget=Budget(), finish_reason="rejected",
                          error="m at http://h/v1: HTTP 404 (NotFoundError): The model `m` does not exist.")
        return EpisodeBrief.of(episode)

    label = endpoint_label({"endpoint": {"model": "m", "base_url": "http://u:KEY@h/v1/"}})
    assert label == "m at http://***@h/v1"
    stops = RunStops(threshold=3, endpoints={"a": label, "b": label, "c": "n at http://h/v1"})
    assert stops.observe(refused("a")) is None and stops.observe(refused("c")) is None
    assert stops.observe(refused("b")) is None
    message = stops.observe(refused("a"))
    assert message and "the first 3 requests to m at http://***@h/v1 were all refused" in message
    assert "The model `m` does not exist." in message and "KEY" not in message
