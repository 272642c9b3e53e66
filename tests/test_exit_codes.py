"""`arena run` exits 1 and says why when the run stopped early, every episode errored, or a record
could not be written; 0 when the grid is complete (wrong answers are not failures)."""

from pathlib import Path

from typer.testing import CliRunner

from arena.cli.common import run_problems
from arena.cli.main import app
from arena.runs.runner import RunResult
from tests.support.openai_server import OpenAIStub, Reply

runner = CliRunner()


def invoke(data, out, server, *extra):
    return runner.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url",
                               server.base_url, "--agent-option", "max_retries=0", "--judge", "normalized",
                               "--out", str(out), "--run-id", "r", *extra])


def test_a_complete_run_with_wrong_answers_exits_zero(tiny_data, tmp_path):
    with OpenAIStub(lambda request: "<answer>wrong</answer>") as server:
        result = invoke(tiny_data, tmp_path, server)
    assert result.exit_code == 0, result.output
    assert "run incomplete" not in result.output


def test_every_episode_errored_exits_one(tiny_data, tmp_path):
    # 500 with OpenAI's error body shape ({"error": {"message", "type"}}), as the stub sends it
    with OpenAIStub(lambda request: Reply(status=500)) as server:
        result = invoke(tiny_data, tmp_path, server)
    assert result.exit_code == 1, result.output
    assert "run incomplete: every episode (2) failed" in result.output
    assert "HTTP 500" in result.output


def test_records_that_cannot_be_written_exit_one(tiny_data, tmp_path):
    (tmp_path / "r" / "episodes.jsonl").mkdir(parents=True)  # an append to it fails with IsADirectoryError
    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        result = invoke(tiny_data, tmp_path, server)
    assert result.exit_code == 1, result.output
    assert "2 record(s) could not be written" in result.output and "IsADirectoryError" in result.output
    assert "the run stopped early: 2 of 2 episode(s) have no record" in result.output


def test_a_run_stopped_early_is_a_problem():
    stopped = RunResult(run_dir=Path("x"), run_id="x", summary={}, grid=4, unrecorded=3,
                        stopped="endpoint http://127.0.0.1:9/v1 refused 5 requests in a row")
    assert run_problems(stopped) == ["the run stopped early: endpoint http://127.0.0.1:9/v1 refused 5 requests in "
                                     "a row; 3 of 4 episode(s) have no record"]
    assert run_problems(RunResult(run_dir=Path("x"), run_id="x", summary={}, grid=4)) == []
