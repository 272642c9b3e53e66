"""Issue 16, items 3-5 and 7: arguments checked before anything runs, plain progress in logs, per-episode limits
from the CLI (recorded in the budget and the fingerprint, enforced by the episode loop), task filters, --config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.common import PlainProgress
from arena.cli.main import app
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.qwen_script import respond

runner = CliRunner()
SCRIPT = '{"*": [{"answer": "1874"}]}'


def run_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--data", str(data), "--agent", "scripted", "--script", str(out.parent / "s.json"),
            "--setting", "no-tool", "--out", str(out), "--run-id", "r", *extra]


@pytest.mark.parametrize("extra, message", [
    (["--image-search", "idx"], "'idx' is not one of 'auto', 'stored', 'index', 'web'"),
    (["--bbox-coords", "pix"], "'pix' is not one of 'relative', 'pixel'"),
    (["--tool-mode", "json"], "'json' is not one of 'xml', 'native'"),
    (["--backend", "dask"], "'dask' is not one of 'asyncio', 'ray'"),
    (["--web", "online"], "'online' is not one of 'offline', 'live', 'record', 'replay', 'refresh'"),
    (["--max-rounds", "0"], "'--max-rounds': '0' must be at least 1"),
    (["--max-rounds", "ten"], "'--max-rounds': 'ten' is not a whole number"),
    (["--repeats", "0"], "--repeats"),
    (["--tool-limit", "teleport=2"], "unknown tool 'teleport'"),
    (["--tool-limit", "text_search_tool=-1"], "TOOL=K with K a whole number"),
    (["--tool-option", "bogus=1"], "unknown tool option(s) bogus"),
    (["--setting", "search+crop", "--tool-option", "bbox_coords=pix"],
     "tool image_zoom_in_tool: invalid tool option(s): bbox_coords"),
    (["--setting", "no-tool", "--tool-option", "top_k=5"], "the tools of this run (none) take tool_timeout"),
    (["--agent-option", "bogus=1"], "agent 'scripted' does not take bogus; it takes: script, id"),
    (["--judge", "oracle"], "--judge: unknown judge 'oracle'; valid: auto,"),
    (["--level", "L9"], "--level L9: no task has it"),
])
def test_bad_arguments_are_refused_before_anything_is_written(tiny_data, tmp_path, extra, message):
    (tmp_path / "s.json").write_text(SCRIPT)
    result = runner.invoke(app, run_args(tiny_data, tmp_path / "logs", *extra))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.replace("│", " ").split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "logs" / "r").exists()


def test_usage_errors_are_one_line_without_a_traceback(tiny_data, tmp_path):
    no_model = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "openai", "--out", str(tmp_path)])
    assert no_model.exit_code == 2 and "--agent openai needs --model, --base-url" in no_model.output
    not_a_world = runner.invoke(app, ["world", "check", str(tmp_path)])
    assert not_a_world.exit_code == 2 and "not a world directory" in not_a_world.output
    huge = runner.invoke(app, ["world", "build", "vistahop-mini", "--size", "huge", "--out", str(tmp_path / "w")])
    assert huge.exit_code == 2 and "unknown size 'huge'; sizes: tiny, small, full" in huge.output
    assert not (tmp_path / "w").exists()
    for result in (no_model, not_a_world, huge):
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_conventional_help_and_version():
    short = runner.invoke(app, ["run", "-h"])
    assert short.exit_code == 0 and "<bool>" not in short.output
    for panel in ("Data and task selection", "Agent", "Grid", "Tools", "Limits per episode", "Judge",
                  "Scheduling", "Output"):
        assert panel in short.output
    top = runner.invoke(app, ["-h"])
    assert top.exit_code == 0 and "Look at runs" in top.output and "<bool>" not in top.output
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("arena ")


def test_every_run_option_has_help():
    import typer.main

    command = typer.main.get_command(app)
    checked = 0
    for name, sub in command.commands.items():
        subs = sub.commands.values() if hasattr(sub, "commands") else [sub]
        for cmd in subs:
            for param in cmd.params:
                if param.param_type_name == "option" and param.name != "help":
                    assert param.help, f"arena {name} {cmd.name}: option {param.name} has no help"
                    checked += 1
    assert checked > 80


def test_plain_progress_lines_for_logs():
    lines: list[str] = []
    clock = iter([0.0, 1.0, 11.0, 12.0, 13.0])
    progress = PlainProgress(every=10, write=lines.append, clock=lambda: next(clock))
    progress.start(4, 6)
    for errored in (False, True, False, False):
        progress.episode(errored, correct=not errored)
    assert lines[0] == "progress: 4 episode(s) to run or judge of 6 in the grid (2 already done)"
    assert lines[1:] == ["progress: 2/4 episodes, errors: 1 (error), 1 correct, 0.18 episodes/s, elapsed 11s, ETA 0m11s",
                         "progress: 4/4 episodes, errors: 1 (error), 3 correct, 0.31 episodes/s, elapsed 13s, "
                         "ETA 0m00s"]


def test_a_redirected_run_prints_progress_lines(tiny_data, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_PROGRESS_EVERY", "0")
    (tmp_path / "s.json").write_text(SCRIPT)
    result = runner.invoke(app, run_args(tiny_data, tmp_path / "logs"))
    assert result.exit_code == 0, result.output
    assert "progress: 2/2 episodes, errors: 0, 1 correct" in result.output
    judged = runner.invoke(app, ["judge", str(tmp_path / "logs" / "r"), "--judge", "normalized", "--as", "again"])
    assert judged.exit_code == 0 and "progress: 2/2 episodes, errors: 0, 1 correct" in judged.output


def openai_args(server, data: Path, out: Path, run_id: str, *extra: str) -> list[str]:
    return ["run", "--data", str(data), "--agent", "openai", "--model", "qwen", "--base-url", server.base_url,
            "--agent-option", "retry_initial=0.01", "--judge", "normalized", "--no-final-answer-turn",
            "--out", str(out), "--run-id", run_id, "--task", "q1", *extra]


def test_limits_from_the_cli_are_recorded_and_enforced(tiny_data, tmp_path):
    out = tmp_path / "logs"
    with OpenAIStub(respond) as server:
        free = runner.invoke(app, openai_args(server, tiny_data, out, "free"))
        tokens = runner.invoke(app, openai_args(server, tiny_data, out, "tokens", "--max-tokens-per-episode", "250"))
        tools = runner.invoke(app, openai_args(server, tiny_data, out, "tools", "--tool-limit",
                                               "image_search_tool=0", "--tool-limit", "text_search_tool=1"))
    for result in (free, tokens, tools):
        assert result.exit_code == 0, result.output

    def episode(run_id: str) -> dict:
        (line,) = (out / run_id / "episodes.jsonl").read_text().splitlines()
        return json.loads(line)

    def info(run_id: str) -> dict:
        return json.loads((out / run_id / "run.json").read_text())

    assert episode("free")["finish_reason"] == "answered" and len(episode("free")["steps"]) == 4
    # 120 tokens after round 1, 250 after round 2: the limit ends the episode before round 3
    limited = episode("tokens")
    assert limited["finish_reason"] == "budget" and len(limited["steps"]) == 2
    assert limited["error"] == "token limit of 250 reached (250 used)"
    assert info("tokens")["config"]["limits"]["max_tokens"] == 250
    capped = episode("tools")
    assert "image_search_tool may be called at most 0 times in this episode" in capped["steps"][1]["error"]
    assert capped["totals"]["calls_per_tool"] == {"image_zoom_in_tool": 1, "text_search_tool": 1}
    assert info("tools")["config"]["limits"]["tool_limits"] == {"image_search_tool": 0, "text_search_tool": 1}
    fingerprints = {info(r)["fingerprint"] for r in ("free", "tokens", "tools")}
    assert len(fingerprints) == 3


def test_wall_time_limit_from_the_cli(tiny_data, tmp_path):
    def slow(request):
        reply = respond(request)
        return Reply(content=reply.content, delay=0.4)

    with OpenAIStub(slow) as server:
        result = runner.invoke(app, openai_args(server, tiny_data, tmp_path / "logs", "slow",
                                                "--max-seconds-per-episode", "0.5"))
    assert result.exit_code == 0, result.output
    (line,) = (tmp_path / "logs" / "slow" / "episodes.jsonl").read_text().splitlines()
    episode = json.loads(line)
    assert episode["finish_reason"] == "budget" and episode["error"] == "wall-time limit of 0.5 s reached"
    assert len(episode["steps"]) < 4


def test_task_filters_and_a_config_file(tiny_data, tmp_path):
    (tmp_path / "s.json").write_text(SCRIPT)
    config = tmp_path / "run.yaml"
    config.write_text(f"agent: scripted\nscript: {tmp_path / 's.json'}\nsetting: no-tool\nmax-rounds: [2, 3]\n"
                      f"level: L2\nout: {tmp_path / 'logs'}\nrun_id: from-yaml\njudge: normalized\n")
    result = runner.invoke(app, ["run", "--config", str(config), "--data", str(tiny_data), "--max-rounds", "4"])
    assert result.exit_code == 0, result.output
    episodes = [json.loads(line) for line in (tmp_path / "logs" / "from-yaml" / "episodes.jsonl").read_text()
                .splitlines()]
    # hops 6 -> L2 keeps q2 only; the command line's --max-rounds 4 overrides the file's [2, 3]
    assert [(e["task"]["id"], e["budget"]["max_rounds"]) for e in episodes] == [("q2", 4)]
    info = json.loads((tmp_path / "logs" / "from-yaml" / "run.json").read_text())
    assert info["config"]["data"]["levels"] == ["L2"] and info["judge"] == "normalized"
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_round: 3\n")
    refused = runner.invoke(app, ["run", "--config", str(bad), "--data", str(tiny_data)])
    assert refused.exit_code == 2 and "unknown option 'max_round'" in refused.output
