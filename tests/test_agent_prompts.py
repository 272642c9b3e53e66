"""Agent instructions as named templates of the prompts file (`arena run --prompts FILE`, issue 28).

Against local OpenAI-compatible servers that keep every request body (the VistaArena-format data and the scripted
agent replies of tests/suites/vistahop/test_published_requests.py: a zoom, an image search, then an answer): a file
giving agent templates puts its texts in the agent's requests, also from worker processes; a bad agent template is
refused with file, line and name before the first episode; run.json records each template's kind and wording; with
no file the requests carry the arena's wording exactly as before.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from arena.core.prompt_book import TEMPLATES, prompts_note, protocol_label
from tests.suites.vistahop.test_published_requests import raw_requests, refusal, write_data
from tests.suites.vistahop.test_published_requests import run as published_run

AGENT_TEXTS = {
    "agent.system.intro": "INTRO of the test.",
    "agent.system.tools": "TOOLS of the test, literal {{braces}}:\n{tools}",
    "agent.system.outro": "OUTRO of the test.",
    "agent.system.no_tools": "NO TOOLS of the test.",
    "agent.user.format": "FORMAT of the test.",
    "agent.user.final_round": "FINAL of the test after {max_rounds} rounds.",
    "agent.user.tool_response": "[result]{text}[/result]",
}

# The arena's wording as the agent sent it before agent templates existed (arena/agents/prompts.py at that time).
ARENA_INTRO = ("You are a visual search agent. Answer the user's question about the image(s) by reasoning step by "
               "step and, when it helps, calling tools to inspect image regions or look up facts.")
ARENA_TOOLS = ("# Tools\n\nYou may call one function per turn. The functions are described as JSON signatures inside "
               "<tools></tools>:\n<tools>\n{tools}\n</tools>\n\nTo call a function, put a JSON object with its name "
               "and arguments inside <tool_call></tool_call>:\n<tool_call>\n{{\"name\": <function-name>, "
               "\"arguments\": <arguments-json-object>}}\n</tool_call>\nOnly the first tool call of a turn is "
               "executed. Its result comes back inside <tool_response></tool_response>.")
ARENA_OUTRO = ("Think inside <think></think> before you act. When you are confident, stop calling tools and give the "
               "final answer inside <answer></answer>.")
ARENA_NO_TOOLS = ("You are a visual reasoning assistant. Answer the user's question about the image(s). Think inside "
                  "<think></think>, then give the final answer inside <answer></answer>.")
ARENA_FINAL = ("You have used all 2 rounds, so no more tools can be called. Based on everything above, give your "
               "final answer now inside <answer></answer>.")


def yaml_of(texts: dict[str, str]) -> str:
    return "".join(f"{name}: {json.dumps(text)}\n" for name, text in texts.items())


def run(tmp_path, *extra: str, run_id: str, system_prompt: bool = False):
    """A run under `--protocol arena` with 2 rounds (two tool calls, then the final-round turn)."""
    root = tmp_path / "data"
    if not root.exists():
        write_data(root)
        if not system_prompt:  # the dataset gives no system prompt of its own: the agent's templates are sent
            (root / "datasets.json").write_text(json.dumps({"cities": {"annotation": "cities.jsonl",
                                                                       "reward_fn": ["llm_score"]}}))
    result, _, agent_calls, _ = published_run(tmp_path, "--protocol", "arena", *extra, run_id=run_id, rounds="2")
    return result, raw_requests(agent_calls)


def tools_block(system: str) -> str:
    return system.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["in-process", "workers"])
def test_a_prompts_file_gives_the_agent_texts_of_every_request(tmp_path, workers):
    prompts = tmp_path / "agent.yaml"
    prompts.write_text(yaml_of(AGENT_TEXTS))
    result, raws = run(tmp_path, "--prompts", str(prompts), *workers, run_id="mine")
    requests = [json.loads(raw) for raw in raws]
    assert len(requests) == 3  # zoom, image search, the final-round turn
    for request in requests[:2]:
        system, first = request["messages"][0], request["messages"][1]
        assert system["role"] == "system"
        head, block, tail = system["content"].partition("TOOLS of the test, literal {braces}:\n")
        assert head == "INTRO of the test.\n\n" and tail.endswith("\n\nOUTRO of the test.")
        assert '"image_zoom_in_tool"' in tail and "<tools>" not in tail
        assert first["content"][-1]["text"].endswith("\n\nFORMAT of the test.")
    final = requests[2]["messages"]
    assert final[0] == {"role": "system", "content": "NO TOOLS of the test."}  # the final-round turn has no tools
    assert final[1]["content"][-1]["text"].endswith("\n\nFORMAT of the test.")
    assert final[-1] == {"role": "user", "content": "FINAL of the test after 2 rounds."}
    results = [m for m in final[2:-1] if m["role"] == "user"]
    assert len(results) == 2
    for message in results:
        text = message["content"] if isinstance(message["content"], str) else message["content"][0]["text"]
        assert text.startswith("[result]") and text.endswith("[/result]")
    info = json.loads((tmp_path / "logs" / "mine" / "run.json").read_text())
    digest = hashlib.sha256(prompts.read_bytes()).hexdigest()
    recorded = info["prompts"]["templates"]
    assert {name: recorded[name] for name in AGENT_TEXTS} == {
        name: {"kind": "agent", "wording": "file", "file": str(prompts.resolve()), "sha256": digest}
        for name in AGENT_TEXTS}
    assert recorded["vistahop.judge.user"] == {"kind": "judge", "wording": "arena"}
    assert info["prompts"]["file"] == str(prompts.resolve()) and info["prompts"]["sha256"] == digest


def test_without_a_file_the_requests_carry_the_arena_wording_as_before(tmp_path):
    _, plain = run(tmp_path, run_id="plain")
    requests = [json.loads(raw) for raw in plain]
    system = requests[0]["messages"][0]["content"]
    assert system == "\n\n".join([ARENA_INTRO, ARENA_TOOLS.format(tools=tools_block(system)), ARENA_OUTRO])
    assert requests[0]["messages"][1]["content"][-1]["text"].endswith(
        "\n\nGive your final answer inside <answer></answer>.")
    assert requests[2]["messages"][-1] == {"role": "user", "content": ARENA_FINAL}
    assert requests[2]["messages"][0] == {"role": "system", "content": ARENA_NO_TOOLS}
    # a file giving every agent template the arena's own text changes no byte of any request
    prompts = tmp_path / "arena.yaml"
    prompts.write_text(yaml_of({name: t.arena_text for name, t in TEMPLATES.items() if t.kind == "agent"}))
    _, same = run(tmp_path, "--prompts", str(prompts), run_id="same")
    assert same == plain


def test_the_dataset_system_prompt_still_wins_over_the_file(tmp_path):
    prompts = tmp_path / "agent.yaml"
    prompts.write_text(yaml_of(AGENT_TEXTS))
    _, raws = run(tmp_path, "--prompts", str(prompts), run_id="own", system_prompt=True)
    system = json.loads(raws[0])["messages"][0]["content"]
    assert system.startswith("You answer questions about images.\n\nTOOLS of the test")
    assert "INTRO of the test" not in system and "OUTRO of the test" not in system


BAD_AGENT_PROMPTS = [
    ("agent.system.intro: hello\nagent.system.intr: hello\n", 2, "agent.system.intr", "unknown template name"),
    ("# final\nagent.user.final_round: |-\n  Answer now.\n", 2, "agent.user.final_round",
     "missing placeholder(s) {max_rounds}"),
    ("agent.user.tool_response: '{text} {tool}'\n", 1, "agent.user.tool_response", "unknown placeholder(s) {tool}"),
]


@pytest.mark.parametrize("text,line,name,problem", BAD_AGENT_PROMPTS)
def test_a_bad_agent_template_is_refused_with_file_line_and_name_before_the_first_episode(tmp_path, text, line,
                                                                                         name, problem):
    flat = refusal(tmp_path, text)
    assert f"bad.yaml:{line}: template '{name}'" in flat and problem in flat


def test_table_titles_name_the_kinds_whose_prompts_are_the_arena_wording():
    arena, mine = {"wording": "arena"}, {"wording": "file", "file": "p.yaml", "sha256": "0"}
    both = {"templates": {"a": {"kind": "agent", **arena}, "j": {"kind": "judge", **arena}}}
    assert protocol_label("original", both) == \
        "original · judge and agent prompts: arena wording (not the published text)"
    agent_only = {"templates": {"a": {"kind": "agent", **arena}, "j": {"kind": "judge", **mine}}}
    assert prompts_note(agent_only) == "agent prompts: arena wording (not the published text)"
    assert prompts_note({"templates": {"j": arena}}) == "judge prompts: arena wording (not the published text)"  # old
    assert prompts_note({"templates": {"a": {"kind": "agent", **mine}}}) is None
    assert protocol_label("arena", both) == "arena"
