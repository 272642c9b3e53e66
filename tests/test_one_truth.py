"""Issue 16, item 1: every command shows the run's own judge and the Pass@1 that summary.json holds.

Runs made with `normalized`, `llm` (a local OpenAI-compatible judge), a suite judge (`ureason-verify`, through
Chromium rendering) and `auto`; each of run, summary, report, view, export and compare must print the same Pass@1
as the run's summary.json, and name the judge. The data are chosen so that the judges disagree: the `llm` judge
accepts "It was built in 1874." which the normalised match rejects, and `auto` would pick `ureason-vlm` (no model,
so no verdict) for UReason tasks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.core.dataset import load_datasets
from arena.cli.main import app
from arena.suites.ureason.world import Criterion, build, gold_svg, wrong_svg
from tests.support.openai_server import OpenAIStub
from tests.support.qwen_script import judge_reply
from tests.support.tiny_dataset import write_tiny_dataset

runner = CliRunner()

SCRIPT = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "It was built in 1874."}],
          "q3": [{"answer": "1874"}], "q4": [{"answer": "1875"}]}


def invoke(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def pass1_of(run_dir: Path) -> float:
    summary = json.loads((run_dir / "summary.json").read_text())
    (group,) = summary["groups"]
    return group["pass1"]


def check_every_command(run_dir: Path, judge: str, tmp_path: Path) -> float:
    expected = pass1_of(run_dir)
    shown = f"{expected:.2f}"
    summary = invoke("summary", run_dir)
    assert f"judge: {judge} (the run's judge)" in summary
    assert re.search(rf"\b{re.escape(shown)} \[", summary), summary
    report = invoke("report", run_dir, "--out", tmp_path / f"report-{judge}")
    assert f"judge {judge} (the run's judge)" in report
    assert re.search(rf"\b{re.escape(shown)}\b", report), report
    assert f"judge {judge} (the run&#x27;s judge)" in (tmp_path / f"report-{judge}" / "report.html").read_text()
    view = invoke("view", run_dir, "--out", tmp_path / f"view-{judge}.html")
    assert f"judge {judge} (the run's judge), Pass@1" in view and f": {shown}" in view
    exported = invoke("export", run_dir, "--format", "csv", "--out", tmp_path / f"{judge}.csv")
    assert f"judge {judge} (the run's judge)" in exported
    frame = pd.read_csv(tmp_path / f"{judge}.csv")
    assert round(100 * frame["score"].mean(), 2) == round(expected, 2)
    compare = invoke("compare", run_dir, run_dir)
    assert f"{shown}" in compare and "+0.00" in compare
    return expected


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    data = write_tiny_dataset(tmp_path / "data", n_items=4)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    return data, script


def test_normalized_llm_and_auto_runs_show_their_own_numbers(tiny, tmp_path: Path):
    data, script = tiny
    out = tmp_path / "logs"
    common = ["run", "--data", data, "--agent", "scripted", "--script", script, "--setting", "no-tool",
              "--out", out]
    with OpenAIStub(judge_reply) as server:
        llm = invoke(*common, "--judge", "llm", "--judge-model", "judge", "--judge-base-url", server.base_url,
                     "--run-id", "llm")
    invoke(*common, "--judge", "normalized", "--run-id", "normalized")
    invoke(*common, "--judge", "auto", "--run-id", "auto")
    assert "75.00 [" in llm
    assert check_every_command(out / "llm", "llm", tmp_path) == 75.0
    assert check_every_command(out / "normalized", "normalized", tmp_path) == 50.0
    assert check_every_command(out / "auto", "auto", tmp_path) == 50.0
    # another judge only when asked, and labelled as such
    asked = invoke("summary", out / "llm", "--judge", "normalized")
    assert "judge: normalized (asked; the run's judge: llm)" in asked and " 0.00 [" in asked
    assert "4 episode(s) without a verdict of judge 'normalized' of 4 scored 0" in asked
    invoke("judge", out / "llm", "--judge", "normalized")
    asked = invoke("summary", out / "llm", "--judge", "normalized")
    assert "50.00 [" in asked and "warning" not in asked
    assert check_every_command(out / "llm", "llm", tmp_path) == 75.0
    assert json.loads((out / "llm" / "run.json").read_text())["judge"] == "llm"


def test_a_suite_judge_run_shows_its_own_numbers(tmp_path: Path):
    world = build(tmp_path / "ureason", seed=4, size="small")
    tasks = [t for t in load_datasets(world)[0].tasks if t.level == "direct"][:3]
    script = {}
    for i, task in enumerate(tasks):
        criterion = Criterion.parse(task.answers[0])
        svg = gold_svg(criterion) if i < 2 else wrong_svg(criterion)
        script[task.id] = [{"tool": "render", "arguments": {"svg": svg}}, {"answer": "done"}]
    (tmp_path / "script.json").write_text(json.dumps(script))
    out = tmp_path / "logs"
    args = ["run", "--data", world, "--agent", "scripted", "--script", tmp_path / "script.json", "--setting",
            "render", "--judge", "ureason-verify", "--out", out, "--run-id", "verify"]
    for task in tasks:
        args += ["--task", task.id]
    printed = invoke(*args)
    assert "66.67 [" in printed
    assert check_every_command(out / "verify", "ureason-verify", tmp_path) == pytest.approx(66.6667)
