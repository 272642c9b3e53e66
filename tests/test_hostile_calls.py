"""Every JSON type in every field of a tool call is data, never a crash (issue 39, item 1).

The table: 7 JSON types (string, number, boolean, null, array, object, nested) x 3 fields of a call (`name`,
`arguments`, one argument: the text search's `query`) x 2 tool modes (xml: the call in the text; native: the
server's `tool_calls`, its `function.name` and `function.arguments` holding the value itself) x 2 protocols. Each
mode x protocol is one CLI run of the 21 calls (one per task), each episode's first turn the hostile call, its second
an answer. Every episode must end answered or (under `original`, where the published script's sample fails) invalid,
never in an error; the hostile turn is a tool call or an invalid turn whose error names the field; the run exits 0.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.core.protocol import parse_response
from arena.store.store import RunStore
from arena.suites.vistahop.protocol import original_turn
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import write_tiny_dataset

SEARCH = "text_search_tool"
VALUES = {"string": "Orvanta Lighthouse", "number": 7.5, "boolean": True, "null": None,
          "array": ["image_zoom_in_tool"], "object": {"query": 1}, "nested": {"a": [{"b": [1, {"c": None}]}, []]}}
FIELDS = ("name", "arguments", "argument")
CASES = [(field, kind) for field in FIELDS for kind in VALUES]
ANSWER = "<answer>1874</answer>"


def call_of(field: str, kind: str) -> tuple[object, object]:
    """(name, arguments) of the hostile call: the value in `field`, the rest a valid text search."""
    value = VALUES[kind]
    if field == "name":
        return value, {"query": "Orvanta"}
    if field == "arguments":
        return SEARCH, value
    return SEARCH, {"query": value}


def hostile_reply(case: int, mode: str) -> Reply:
    name, arguments = call_of(*CASES[case])
    if mode == "xml":
        return Reply(content=f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>")
    native_arguments = json.dumps(arguments) if CASES[case][0] == "argument" else arguments
    message = {"role": "assistant", "content": "",
               "tool_calls": [{"id": "call_0", "type": "function",
                               "function": {"name": name, "arguments": native_arguments}}]}
    return Reply(body={"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def responder(mode: str):
    def respond(request: dict) -> Reply:
        question = json.dumps(request["messages"][1 if request["messages"][0]["role"] == "system" else 0])
        case = int(question.split("[case ")[1].split("]")[0])
        if not any(m["role"] == "assistant" for m in request["messages"]):
            return hostile_reply(case, mode)
        return Reply(content=ANSWER)
    return respond


def write_cases(root) -> object:
    annotations = write_tiny_dataset(root, n_items=2)
    base = json.loads(annotations.read_text().splitlines()[1])
    items = [dict(base, id=f"c{k:02d}", prompt=[{"role": "user", "content": f"<image>[case {k}] In which year was "
                                                 "the lighthouse built?"}]) for k in range(len(CASES))]
    annotations.write_text("".join(json.dumps(i) + "\n" for i in items))
    return annotations


def what_it_names(field: str) -> tuple[str, ...]:
    """What the error of a refused call must mention for each field."""
    return {"name": ('"name"', "unknown tool"), "arguments": ("arguments",), "argument": ("query",)}[field]


@pytest.mark.parametrize("protocol", ["arena", "original"])
@pytest.mark.parametrize("mode", ["xml", "native"])
def test_every_json_type_in_every_field_is_an_invalid_turn_or_a_call_never_an_error(tmp_path, mode, protocol):
    data = write_cases(tmp_path / "data")
    with OpenAIStub(responder(mode)) as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", server.base_url,
            "--setting", "search", "--max-rounds", "3", "--judge", "normalized", "--out", str(tmp_path / "logs"),
            "--run-id", "r", "--concurrency", "8", "--tool-mode", mode, "--protocol", protocol,
            "--agent-option", "max_retries=0"])
    assert result.exit_code == 0, result.output
    episodes = {int(e.task.id[1:]): e for e in RunStore(tmp_path / "logs" / "r").episodes()}
    assert sorted(episodes) == list(range(len(CASES)))
    for k, (field, kind) in enumerate(CASES):
        episode = episodes[k]
        first = episode.steps[0]
        where = f"{mode}/{protocol}: {field}={kind}: {first.action} {first.error!r}"
        assert episode.finish_reason in ("answered", "invalid"), f"{where}: {episode.finish_reason} {episode.error}"
        assert first.action in ("tool_call", "invalid"), where
        if (field, kind) == ("argument", "string"):
            assert first.action == "tool_call" and first.error is None and not first.observation.error, where
            continue
        if field == "name" and kind == "string":
            assert "unknown tool" in first.error, where
            continue
        assert first.error and first.observation.error, where
        assert any(w in first.error for w in what_it_names(field)), where
        if episode.finish_reason == "invalid":  # the published sample fails: only where the script crashes
            assert protocol == "original" and first.error.startswith("crash:"), where
        else:
            assert episode.answer == "1874", where


@pytest.mark.parametrize("field,kind", CASES)
def test_each_parser_reads_every_call_without_raising(field, kind):
    """The xml parse of both protocols, directly: a tool call or an invalid action naming the field."""
    name, arguments = call_of(field, kind)
    text = f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
    arena, original = parse_response(text), original_turn(text)
    if field == "name" and kind != "string":
        assert arena.kind == "invalid" and '"name" must be a string naming a tool' in arena.error
        assert kind in arena.error or (kind == "nested" and "object" in arena.error)
        # the published script compares the name with its tools' names: an unknown tool, its arguments unread
        assert original.kind == "tool_call" and original.tool == json.dumps(name)
    if field == "arguments" and kind not in ("object", "nested"):
        # null is no arguments for the arena (the tool then says what is missing); the published search reads them
        assert (arena.kind == "invalid" and "arguments" in arena.error) or (kind == "null" and arena.arguments == {})
        assert original.kind == "invalid" and original.error.startswith("crash:")
    if field == "argument":
        assert arena.kind == original.kind == "tool_call" and arena.arguments == original.arguments == arguments


@pytest.mark.parametrize("kind", [k for k in VALUES if k not in ("string", "null")])  # null: no tool, unknown
def test_any_agents_turn_with_a_name_that_is_not_a_string_is_an_invalid_step(kind):
    """The episode loop's own check, for agents that pass a model's call on unchecked (plug-ins, smolagents)."""
    from arena.core.agent import AgentTurn
    from arena.core.episode import typed_turn
    turn = typed_turn(AgentTurn(output="x", action="tool_call", tool=VALUES[kind], call_id=VALUES[kind],
                                arguments={"query": "q"}))
    assert turn.action == "invalid" and '"name" must be a string' in turn.error
    assert turn.call_id == json.dumps(VALUES[kind]) and turn.tool is None
