"""Re-judging a finished run: verdicts of several judges side by side, agreement and Cohen's kappa."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.judges.agreement import agreement
from arena.judges.stats import cohen_kappa
from arena.runs.rejudge import rejudge
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, Reply

T, F = True, False


def test_cohen_kappa_known_values() -> None:
    assert cohen_kappa([T, T, F, F, T, F, T, T, F, F], [T, F, F, F, T, F, T, T, T, F]) == pytest.approx(0.6)
    assert cohen_kappa([T, F, T, F], [T, F, T, F]) == 1.0
    assert cohen_kappa([T, F], [F, T]) == -1.0
    assert cohen_kappa([T, T], [T, T]) is None
    assert cohen_kappa([], []) is None


def scripted_run(tiny_data: Path, tmp_path: Path):
    script = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "built in the year 1874"}]}
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                         judge="normalized", out=str(tmp_path / "logs"), run_id="judged"))


def test_second_judge_is_kept_beside_the_first_and_agreement_printed(tiny_data: Path, tmp_path: Path) -> None:
    result = scripted_run(tiny_data, tmp_path)
    with OpenAIStub(lambda request: Reply(content="<judge>Yes</judge><reason>same year</reason>")) as server:
        out = CliRunner().invoke(app, ["judge", str(result.run_dir), "--judge", "llm", "--judge-model", "j",
                                       "--judge-base-url", server.base_url, "--as", "llm-j"])
        assert out.exit_code == 0, out.output
        assert len(server.requests) == 1
    assert "scored 2 episode(s)" in out.output
    assert "normalized" in out.output and "llm-j" in out.output
    assert "50.0" in out.output and "0.000" in out.output

    store = RunStore(result.run_dir)
    by_judge = {(v.key.split("|")[0], v.judge): v.correct for v in store.verdicts()}
    assert by_judge == {("q1", "normalized"): True, ("q2", "normalized"): False,
                        ("q1", "llm-j"): True, ("q2", "llm-j"): True}
    shared = agreement(store.episodes(), store.verdicts(), "normalized", "llm-j")
    assert (shared.episodes, shared.agree, shared.percent, shared.kappa) == (2, 1, 50.0, 0.0)


def test_rejudge_skips_scored_episodes_unless_redo(tiny_data: Path, tmp_path: Path) -> None:
    result = scripted_run(tiny_data, tmp_path)
    again = asyncio.run(rejudge(result.run_dir, "normalized"))
    assert (again.scored, again.skipped) == (0, 2)
    redone = asyncio.run(rejudge(result.run_dir, "normalized", redo=True))
    assert redone.scored == 2
    assert redone.summary["groups"][0]["pass1"] == 50.0
    assert len(RunStore(result.run_dir).verdicts()) == 4


def test_label_with_auto_is_refused(tiny_data: Path, tmp_path: Path) -> None:
    result = scripted_run(tiny_data, tmp_path)
    out = CliRunner().invoke(app, ["judge", str(result.run_dir), "--judge", "auto", "--as", "x"])
    assert out.exit_code == 2 and "--as" in out.output
