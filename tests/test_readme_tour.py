"""The README's five-minute tour, run as written: every `arena` command of its code block, in order, on a tiny
world (`--size small` becomes `--size tiny`) and with two local OpenAI-compatible servers standing in for the model
at :8000 and the judge at :8001 (issue 16)."""

from __future__ import annotations

from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.doc_commands import README, command_blocks, commands
from tests.support.openai_server import OpenAIStub, Reply


def tour_commands() -> list[list[str]]:
    """The `arena ...` commands of the tour's bash block, continuation lines joined, comments dropped."""
    (block,) = [b for b in command_blocks(README) if "tour-oracle" in b.text]
    assert README.read_text().index("## A five-minute tour") < README.read_text().index(block.text)
    return [list(c.args) for c in commands(block) if c.kind == "arena"]


def agent(request: dict) -> Reply:
    # Qwen-style text reply with a final answer, as vLLM returns it (content only, usage counted)
    return Reply(content="<think>I cannot tell.</think><answer>Nobody</answer>", prompt_tokens=900,
                 completion_tokens=12)


def judge(request: dict) -> Reply:
    return Reply(content="<judge>No</judge><reason>the candidate names nobody</reason>", prompt_tokens=200,
                 completion_tokens=9)


def test_the_tour_runs_as_written(tmp_path, monkeypatch):
    commands = tour_commands()
    assert [c[0] for c in commands] == ["world", "world", "run", "run", "summary", "run", "view", "replay",
                                        "export", "compare"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_KEY", "sk-tour-secret")
    monkeypatch.setenv("ARENA_PROGRESS_EVERY", "30")
    runner = CliRunner()
    outputs = []
    with OpenAIStub(agent) as model, OpenAIStub(judge) as judge_server:
        for command in commands:
            args = ["tiny" if a == "small" and command[:2] == ["world", "build"] else a for a in command]
            args = [a.replace("http://127.0.0.1:8000/v1", model.base_url)
                    .replace("http://127.0.0.1:8001/v1", judge_server.base_url) for a in args]
            result = runner.invoke(app, args)
            assert result.exit_code == 0, f"arena {' '.join(command)}\n{result.output}"
            outputs.append(result.output)
    world_check, oracle, replay, compare = outputs[1], outputs[2], outputs[7], outputs[9]
    assert "oracle     search+crop  Pass@1 100.00%" in world_check
    assert "tour-oracle (judge: normalized)" in oracle
    assert "check: every recorded observation was reproduced" in replay
    assert "search+crop · N=10" in compare
    assert (tmp_path / "logs" / "tour-oracle" / "export.parquet").is_file()
    assert "sk-tour-secret" not in (tmp_path / "logs" / "tour-qwen" / "run.json").read_text()
