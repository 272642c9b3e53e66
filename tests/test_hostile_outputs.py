"""Hostile model outputs are data: 20 of them in one run at concurrency 8 (xml and native tool modes)
cost their own episode an invalid turn (or a noted repair) and nothing else; every other episode
finishes normally and the run store stays readable."""

import json

import pytest

from arena.core.protocol import parse_response
from arena.core.untrusted import MAX_JSON_DEPTH, json_text_problem
from arena.runs.config import RunConfig
from arena.store.reduce import record_line
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import write_tiny_dataset

SEARCH = "text_search_tool"
CROP = "image_zoom_in_tool"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# case -> (tool name, raw JSON arguments text or None for a content-only reply, content,
#          what the episode record must say (alternatives split by |))
HOSTILE: list[tuple[str, str | None, str, str]] = [
    (SEARCH, '{"query": ' + nested(500) + "}", "", "nested deeper than 64"),
    (SEARCH, '{"query": ' + nested(10_000) + "}", "", "nested deeper than 64"),
    (SEARCH, '{"query": "a\\ud800b"}', "", "lone surrogates"),
    (SEARCH, '{"query": "' + "x" * 100_000 + '"}', "", "over the limit of 65,536"),
    (SEARCH, '{"query": ', "", "not valid JSON"),
    (SEARCH, "[1, 2, 3]", "", "must be a JSON object"),
    (CROP, '{"bbox_2d": [0, 0, 1e308, 1e308]}', "", "too large"),
    (CROP, '{"bbox_2d": [0, 0, NaN, 10]}', "", "non-finite"),
    (CROP, '{"bbox_2d": [0, 0, 1e400, 10]}', "", "non-finite"),
    (SEARCH, '{"query": ' + "1" * 5000 + "}", "", "a number that cannot be read"),
    ("text_search\\udfff_tool", '{"query": "x"}', "", "lone surrogates"),
    (SEARCH, '{"qu\\udc80ery": "x"}', "", "lone surrogates"),
    (SEARCH, '{"query": {"a": ' * 70 + "1" + "}" * 71, "", "nested deeper than 64"),
    (SEARCH, "\"" + '{\\"query\\": ' + "[" * 100 + "]" * 100 + '}"', "",
     "nested deeper than 64|must be a JSON object"),
    (None, None, "<answer>\ud800 1874</answer>", "lone surrogates"),
    (None, None, "<think>\udbff</think>" + "<tool_call>" * 3000, "not valid JSON"),
    (None, None, "y" * 3_000_000, "characters cut by the arena"),
    (None, None, "\x00" * 1000 + "<answer>\x00</answer>", "\x00"),
    ("many", '{"query": "Orvanta"}', "", "ignored 999"),
    (SEARCH, '{"query": "' + "\\ud83d" * 2000 + '"}', "", "lone surrogates"),
]
NORMAL = 8


def write_cases(root):
    annotations = write_tiny_dataset(root, n_items=2)
    base = json.loads(annotations.read_text().splitlines()[1])
    items = []
    for k in range(len(HOSTILE) + NORMAL):
        item = dict(base, id=f"c{k:02d}")
        item["prompt"] = [{"role": "user", "content": f"<image>[case {k}] In which year was the lighthouse built?"}]
        items.append(item)
    annotations.write_text("".join(json.dumps(i) + "\n" for i in items))
    return annotations


def hostile_reply(case: int, mode: str) -> Reply:
    tool, arguments, content, _ = HOSTILE[case]
    if arguments is None:
        return Reply(content=content)
    calls = 1000 if tool == "many" else 1
    tool = SEARCH if tool == "many" else tool
    if mode == "native":
        # the server sends the arguments string as a real server would: the model's text, unparsed
        return Reply(content="", tool_calls=[{"name": json.loads(f'"{tool}"'), "arguments": arguments}] * calls)
    return Reply(content=f'<tool_call>{{"name": "{tool}", "arguments": {arguments}}}</tool_call>' * calls)


def responder(mode: str):
    def respond(request):
        first_user = json.dumps(request["messages"][1])
        case = int(first_user.split("[case ")[1].split("]")[0])
        turns = sum(m["role"] == "assistant" for m in request["messages"])
        if case < len(HOSTILE) and turns == 0:
            return hostile_reply(case, mode)
        return Reply(content="<think>It was built in 1874.</think><answer>1874</answer>",
                     delay=0.2 if turns == 0 else 0.0)
    return respond


def record_text(episode) -> str:
    parts = []
    for step in episode.steps:
        parts += [step.error or "", *step.notes, step.observation.text if step.observation else "", step.output,
                  f"ignored {step.ignored_calls}"]
    return "\n".join(parts + [episode.error or ""])


@pytest.mark.parametrize("mode", ["xml", "native"])
def test_twenty_hostile_outputs_in_one_run(tmp_path, mode):
    data = write_cases(tmp_path / "data")
    with OpenAIStub(responder(mode)) as server:
        result = run(RunConfig(data=str(data), agent="openai", out=str(tmp_path / "out"), judge="normalized", protocol="arena",
                               concurrency=8, max_rounds=[3],
                               agent_options={"model": "m", "base_url": server.base_url, "tool_mode": mode,
                                              "max_retries": 0}))
    by_case = {int(e.task.id[1:]): e for e in result.episodes}
    assert len(by_case) == len(HOSTILE) + NORMAL and not result.unwritten and result.stopped is None
    assert result.unrecorded == 0
    correct = {v.episode_id for v in result.verdicts if v.correct}
    for k in range(len(HOSTILE), len(HOSTILE) + NORMAL):
        episode = by_case[k]
        assert episode.finish_reason == "answered" and episode.id in correct, record_text(episode)
    for k, (_, _, _, expected) in enumerate(HOSTILE):
        episode = by_case[k]
        assert episode.finish_reason != "error", f"case {k}: {episode.error}"
        assert any(e in record_text(episode) for e in expected.split("|")), \
            f"case {k} ({mode}): {record_text(episode)[:2000]}"
    reread = RunStore(result.run_dir).episodes()
    assert len(reread) == len(result.episodes)
    assert all("\ud800" not in e.model_dump_json() for e in reread)


def test_the_depth_check_is_linear_and_ignores_brackets_inside_strings():
    assert json_text_problem('{"a": "' + "[" * 10_000 + '"}', "x") is None
    assert json_text_problem(nested(MAX_JSON_DEPTH), "x") is None
    assert "nested deeper" in json_text_problem(nested(MAX_JSON_DEPTH + 1), "x")
    action = parse_response("<tool_call>" + '{"name": "t", "arguments": ' + nested(200_000) + "}</tool_call>")
    assert action.kind == "invalid" and "write a smaller call" in action.error


def test_a_record_that_cannot_be_serialised_is_reduced_not_lost():
    from arena.core.budget import Budget
    from arena.core.task import TaskRef
    from arena.core.trajectory import Episode, Observation, Step

    deep: object = []
    for _ in range(300):
        deep = [deep]
    step = Step(round=1, action="tool_call", tool="t", arguments={"a": "ok"},
                observation=Observation(text="bad \udc00 text", data={"deep": deep, "inf": float("inf")}))
    task = TaskRef(id="t", suite="s", question="q", answers=["a"])
    episode = Episode(id="e", run_id="r", key="k", task=task, agent="a", setting="s",
                      budget=Budget(), steps=[step], finish_reason="answered", answer="\ud800")
    line = record_line(episode)
    back = Episode.model_validate_json(line)
    assert "could not be serialised" in back.meta["reduced"]
    assert back.answer == "\ufffd" and back.steps[0].observation.text == "bad \ufffd text"
    assert "cut by the arena" in json.dumps(back.steps[0].observation.data)
