"""The README's five-minute tour, run as written: every command of its code block, in order, on a tiny world
(`--size small` becomes `--size tiny`), its two `arena serve` lines serving the model at :8000 and the judge at :8001
(in-process, on free ports: `tests/support/doc_commands.py`) (issues 16, 36). The assertions read the run store
(exit codes, files, summary.json, calls.jsonl), not the tables' layout."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.doc_commands import README, ServedModels, command_blocks, commands


def tour_lines() -> list[tuple[str, tuple[str, ...]]]:
    """The (kind, arguments) of the tour's bash block: `arena` commands and `arena serve` lines, continuation lines
    joined, comments dropped."""
    (block,) = [b for b in command_blocks(README) if "tour-oracle" in b.text]
    assert README.read_text().index("## A five-minute tour") < README.read_text().index(block.text)
    return [(c.kind, c.args) for c in commands(block) if c.kind in ("arena", "serve")]


def tour_commands() -> list[list[str]]:
    """The `arena ...` commands of the tour (the `arena serve` lines left out)."""
    return [list(args) for kind, args in tour_lines() if kind == "arena"]


def test_the_tour_runs_as_written_against_arena_serve(tmp_path, monkeypatch):
    tour = tour_lines()
    assert [args[0] if kind == "arena" else kind for kind, args in tour] == [
        "world", "world", "run", "serve", "serve", "run", "summary", "run", "view", "replay", "export", "compare"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_KEY", "sk-tour-secret")
    monkeypatch.setenv("ARENA_PROGRESS_EVERY", "30")
    runner = CliRunner()
    with ServedModels() as models:
        for kind, command in tour:
            if kind == "serve":
                models.start(command, "README")
                continue
            args = ["tiny" if a == "small" and command[:2] == ("world", "build") else a for a in command]
            result = runner.invoke(app, models.rewrite(args))
            assert result.exit_code == 0, f"arena {' '.join(command)}\n{result.output}"
        agent, judge = models.started
        served = (agent.answered, judge.answered)
    logs = tmp_path / "logs"
    oracle = json.loads((logs / "tour-oracle" / "summary.json").read_text())["groups"]
    qwen = json.loads((logs / "tour-qwen" / "summary.json").read_text())["groups"]
    assert max(g["pass1"] for g in qwen) > 0, "the served oracle solves tasks through the model path"
    pick = {(g["setting"], g["max_rounds"]): g["pass1"] for g in oracle}
    assert {g["pass1"] for g in qwen if g["setting"] == "search+crop"} == {pick["search+crop", 10]}, \
        "over HTTP the oracle scores what it scores in-process"
    calls = [json.loads(line) for line in (logs / "tour-qwen" / "calls.jsonl").read_text().splitlines()]
    assert {c["response"]["model"] for c in calls if c["role"] == "agent"} == {"arena-serve/oracle"}
    assert {c["response"]["model"] for c in calls if c["role"] == "judge"} == {"arena-serve/normalized-judge"}
    assert served[0]["agent turn"] == sum(c["role"] == "agent" for c in calls) and not served[0]["refused"]
    assert served[1]["vistahop judge"] == sum(c["role"] == "judge" for c in calls) > 0
    assert (logs / "tour-oracle" / "export.parquet").is_file()
    assert "sk-tour-secret" not in (logs / "tour-qwen" / "run.json").read_text()
