"""`arena serve` (issue 36): a scripted policy served as an OpenAI-compatible model over real HTTP, for the agent
(xml and native tool calls), the llm judge and the web summariser, naming itself in every reply."""

from __future__ import annotations

import base64
import io
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from arena.cli.main import app
from arena.core.prompt_book import PromptBook
from arena.core.world import WORLD_BUILDERS
from arena.judges.evidence import EVIDENCE_USER
from arena.judges.llm import USER_PROMPT
from arena.runs.policy_server import PolicyServer
from arena.runs.policy_server.conversation import read_conversation
from arena.runs.policy_server.helper_roles import helper_roles, recognise
from arena.runs.policy_server.usage import prompt_tokens
from arena.suites.carv.judge import PROMPT as CARV_PROMPT
from arena.suites.carv.judge import parse_correctness
from arena.tools.summarise import PAGE_PROMPT


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return WORLD_BUILDERS["vistahop-mini"](tmp_path_factory.mktemp("serve") / "world", seed=0, size="tiny")


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def png_url(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize("tool_mode", ["xml", "native"])
def test_the_served_oracle_solves_the_world_and_the_judge_is_asked_over_http(world, tmp_path, monkeypatch,
                                                                             tool_mode):
    monkeypatch.chdir(tmp_path)
    with PolicyServer(world, "oracle", port=0) as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(world), "--agent", "openai", "--model", "Qwen/Qwen2.5-VL-7B-Instruct",
            "--base-url", server.base_url, "--agent-option", f"tool_mode={tool_mode}",
            "--setting", "no-tool", "--setting", "search+crop", "--max-rounds", "21", "--judge", "llm",
            "--judge-model", "Qwen/Qwen3-VL-32B-Instruct", "--judge-base-url", server.base_url, "--run-id", "r"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "logs" / "r"
    groups = {g["setting"]: g for g in json.loads((run / "summary.json").read_text())["groups"]}
    assert groups["search+crop"]["pass1"] > 0 and groups["no-tool"]["pass1"] == 0
    calls = [json.loads(line) for line in (run / "calls.jsonl").read_text().splitlines()]
    agent = [c for c in calls if c["role"] == "agent"]
    judge = [c for c in calls if c["role"] == "judge"]
    assert agent and judge  # the oracle's "unknown" without tools is not an exact match: the judge is asked
    assert {c["response"]["model"] for c in agent} == {"arena-serve/oracle"}
    assert {c["response"]["model"] for c in judge} == {"arena-serve/normalized-judge"}
    assert all("<judge>No</judge>" in c["response"]["choices"][0]["message"]["content"] for c in judge)
    usage = [c["response"]["usage"] for c in agent]
    assert all(u["prompt_tokens"] > 256 and 0 < u["completion_tokens"] < u["prompt_tokens"] for u in usage)
    native = [c for c in agent if c["response"]["choices"][0]["message"].get("tool_calls")]
    assert bool(native) == (tool_mode == "native")
    assert server.answered["agent turn"] == len(agent) and server.answered["refused"] == 0


def test_a_request_for_no_task_of_the_data_is_refused_saying_so(world):
    with PolicyServer(world, "direct", port=0) as server:
        status, body = post(server.base_url, {"model": "x", "messages": [{"role": "user", "content": "Hi?"}]})
        assert status == 400
        assert "no task of the served data (5 task(s))" in body["error"]["message"]
        assert "arena-serve (direct over" in body["error"]["message"]
        with urllib.request.urlopen(server.base_url + "/models", timeout=10) as response:
            models = [m["id"] for m in json.loads(response.read())["data"]]
    assert models[0] == "arena-serve/direct" and all(m.startswith("arena-serve/") for m in models)


def test_the_judge_answers_with_the_normalized_match_also_under_a_prompts_file(tmp_path):
    asked = USER_PROMPT.format(question="Which year?", reference="1874", answer=" 1874. ")
    wrong = USER_PROMPT.format(question="Which year?", reference="1874", answer="1875")
    roles = helper_roles(PromptBook())
    for text, verdict in ((asked, "<judge>Yes</judge>"), (wrong, "<judge>No</judge>")):
        role, values = recognise(roles, text)
        assert role.answer(values).startswith(verdict)
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text("vistahop.judge.user: |-\n  Q: {question}\n  Gold: {reference}\n  Said: {answer}\n"
                       "  Reply <judge>Yes/No</judge>.\n")
    book = PromptBook.load(prompts)
    own = book.text("vistahop.judge.user").format(question="Who?", reference="Mirelle Dastrow",
                                                   answer="mirelle dastrow")
    assert recognise(roles, own) is None
    role, values = recognise(helper_roles(book), own)
    assert role.answer(values).startswith("<judge>Yes</judge>")


def test_the_summariser_gets_an_extractive_summary_of_the_page():
    text = PAGE_PROMPT.format(query="Orvanta Lighthouse year", title="T", url="http://x",
                              text="Cats sleep. The Orvanta Lighthouse was built in 1874. Dogs bark.")
    role, values = recognise(helper_roles(PromptBook()), text)
    assert role.model == "arena-serve/extractive-summary"
    assert "The Orvanta Lighthouse was built in 1874." in role.answer(values)


def test_usage_counts_words_marks_messages_and_image_patches():
    request = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": png_url(560, 280)}},
                                                         {"type": "text", "text": "Hello, world"}]}]}
    assert prompt_tokens(request) == 4 + (20 * 10 + 2) + 3


def test_the_conversation_numbers_returned_images_in_both_tool_modes():
    image = {"type": "image_url", "image_url": {"url": png_url(28, 28)}}
    call = '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 9, 9]}}</tool_call>'
    xml = {"messages": [
        {"role": "system", "content": '<tools>\n{"type": "function", "function": {"name": "image_zoom_in_tool"}}\n'
                                      '</tools>'},
        {"role": "user", "content": [image, {"type": "text", "text": "Q?"}]},
        {"role": "assistant", "content": call},
        {"role": "user", "content": [{"type": "text", "text": "<tool_response>\nzoomed\n</tool_response>"}, image]},
        {"role": "user", "content": "No rounds left; answer now."}]}
    read = read_conversation(xml)
    assert read.tools == ["image_zoom_in_tool"] and not read.native and read.final_turn
    assert [(s.tool, s.observation.text, s.observation.image_indices) for s in read.steps] == \
        [("image_zoom_in_tool", "zoomed", [1])]
    native = {"tools": [{"type": "function", "function": {"name": "image_zoom_in_tool"}}], "messages": [
        {"role": "user", "content": [image, image, {"type": "text", "text": "Q?"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "image_zoom_in_tool", "arguments": '{"bbox_2d": [0, 0, 9, 9]}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "zoomed"},
        {"role": "user", "content": [{"type": "text", "text": "Images returned by image_zoom_in_tool:"}, image]}]}
    read = read_conversation(native)
    assert read.native and not read.final_turn and read.task_images == 2
    assert [(s.arguments, s.observation.text, s.observation.image_indices) for s in read.steps] == \
        [({"bbox_2d": [0, 0, 9, 9]}, "zoomed", [2])]


def test_latency_delays_each_reply(world):
    with PolicyServer(world, "direct", port=0, latency=0.3) as server:
        started = time.monotonic()
        post(server.base_url, {"model": "x", "messages": [{"role": "user", "content": "Hi?"}]})
        assert time.monotonic() - started >= 0.3


def test_arena_serve_prints_its_address_stops_on_a_signal_and_refuses_a_taken_port(world):
    command = [sys.executable, "-c", "from arena.cli.main import main; main()", "serve", "--data", str(world),
               "--policy", "oracle", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = process.stdout.readline()
        assert first.startswith("arena serve: policy oracle over") and "at http://127.0.0.1:" in first
        url = first.rsplit(" at ", 1)[1].strip()
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "arena-serve/oracle"
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        taken = CliRunner().invoke(app, ["serve", "--data", str(world), "--port", str(port)])
        assert taken.exit_code == 2
        assert f"127.0.0.1:{port} is already in use" in " ".join(taken.output.split())
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=20)
    assert process.returncode == 0, out
    assert "arena serve: stopped; requests answered by kind:" in out


def test_an_unknown_policy_is_refused_with_the_known_ones(world):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(app, ["serve", "--data", str(world), "--policy", "orcale", "--port", str(port)])
    assert result.exit_code == 2
    assert "unknown policy 'orcale'" in result.output and "oracle" in result.output


def test_a_policy_that_fails_is_a_500_naming_the_error(world, monkeypatch):
    with PolicyServer(world, "direct", port=0) as server:
        async def broken(view):
            raise KeyError("gold_path")
        monkeypatch.setattr(server.policy, "act", broken)
        question = server.tasks.by_question[0][0]
        status, body = post(server.base_url, {"model": "x", "messages": [{"role": "user", "content": question}]})
    assert status == 500 and "the policy failed on this request: KeyError: 'gold_path'" in body["error"]["message"]


@pytest.mark.parametrize(("response", "correct"), [("A couple of mugs beneath a chair painted blue", True),
                                                   ("two mugs on a blue chair", False)])
def test_the_carv_judge_gets_the_caption_parsers_verdict_as_json(response, correct):
    text = CARV_PROMPT.format(reference="Two coffee mugs under a blue chair.", response=response)
    role, values = recognise(helper_roles(PromptBook()), text)
    assert parse_correctness(role.answer(values))[0] is correct


@pytest.mark.parametrize(("evidence", "supported"), [("[text_search_tool] It was built in 1874.", "Yes"),
                                                     ("[text_search_tool] It was built in 18745.", "No")])
def test_the_evidence_check_says_whether_the_answer_was_retrieved(evidence, supported):
    text = EVIDENCE_USER.format(question="Which year?", answer="1874", evidence=evidence)
    role, values = recognise(helper_roles(PromptBook()), text)
    assert role.answer(values).startswith(f"<supported>{supported}</supported>")
