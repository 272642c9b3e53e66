"""Native tool mode, `--protocol arena`: a reply with no tool call and no `<answer>` is not a final answer (issue
39, item 2). The server imitates SGLang's `--tool-call-parser qwen25` (tests/support/sglang_tools.py), which drops a
malformed `<tool_call>` and sends the text before it as the whole reply: the model is told that the reply is no answer
and the episode goes on; a reply in the asked form ends the episode at once; under `original` the sentence is the
answer, as the published scripts take a reply without a call."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, last_user_text
from tests.support.sglang_tools import qwen25_reply
from tests.support.tiny_dataset import write_tiny_dataset

SENTENCE = "I'll zoom in on the orange banner to read its text."
MALFORMED = SENTENCE + '\n<tool_call>\n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 80, 960, 220]}\n</tool_call>'
VALID = '<tool_call>\n{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 80, 960, 220]}}\n</tool_call>'
ANSWER = "<think>The sign says 1874.</think><answer>1874</answer>"


def run_cli(tmp_path, turns: list[str], protocol: str, server_requests: list) -> RunStore:
    data = write_tiny_dataset(tmp_path / "data", n_items=1)

    def respond(request):
        n = sum(m["role"] == "assistant" for m in request["messages"])
        return qwen25_reply(turns[min(n, len(turns) - 1)])
    with OpenAIStub(respond) as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", server.base_url,
            "--setting", "crop", "--max-rounds", "4", "--judge", "normalized", "--out", str(tmp_path / protocol),
            "--run-id", "r", "--tool-mode", "native", "--protocol", protocol])
        server_requests.extend(server.requests)
    assert result.exit_code == 0, result.output
    return RunStore(tmp_path / protocol / "r")


def test_the_imitated_server_drops_the_malformed_call():
    reply = qwen25_reply(MALFORMED)
    assert reply.content == SENTENCE and not reply.tool_calls and reply.finish_reason == "stop"
    assert qwen25_reply(VALID).tool_calls[0]["name"] == "image_zoom_in_tool"


def test_a_dropped_call_is_not_the_answer_under_arena(tmp_path):
    requests: list = []
    episode = run_cli(tmp_path, [MALFORMED, VALID, ANSWER], "arena", requests).episodes()[0]
    first = episode.steps[0]
    assert first.action == "invalid" and first.output == SENTENCE and "<answer></answer>" in first.error
    assert first.observation.error and "not a final answer" in first.observation.text
    assert "not a final answer" in last_user_text(requests[1])  # the model was told
    assert [s.action for s in episode.steps] == ["invalid", "tool_call", "answer"]
    assert episode.finish_reason == "answered" and episode.answer == "1874"
    assert episode.totals.invalid_calls == 1


@pytest.mark.parametrize("protocol", ["arena", "original"])
def test_a_reply_in_the_asked_form_ends_the_episode_at_once(tmp_path, protocol):
    requests: list = []
    episode = run_cli(tmp_path, [ANSWER], protocol, requests).episodes()[0]
    assert len(requests) == 1 and [s.action for s in episode.steps] == ["answer"] and episode.answer == "1874"


def test_under_original_the_sentence_is_the_answer(tmp_path):
    requests: list = []
    episode = run_cli(tmp_path, [MALFORMED, ANSWER], "original", requests).episodes()[0]
    assert len(requests) == 1 and episode.finish_reason == "answered" and episode.answer == SENTENCE
    assert json.dumps(requests[0]).count("image_zoom_in_tool") >= 1  # tools were offered natively
