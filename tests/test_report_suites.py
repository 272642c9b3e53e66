"""`arena report` shows each suite in its paper's layout (CARV Table 2, UReason per setting with Δ, MM-CondChain
per domain), from runs of scripted agents whose right and wrong answers are known in advance."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from arena.core.dataset import load_datasets
from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.review.report import build_report
from arena.review.rundata import load_run
from arena.runs.runner import run


def table(report, start: str):
    return next(t for t in report.tables if t.title.startswith(start))


def test_carv_table2_grid(tmp_path: Path) -> None:
    from arena.suites.carv.world import build

    world = build(tmp_path / "carv", seed=1, size="small")
    tasks = load_datasets(world)[0].tasks
    wrong = json.dumps({"caption": "Two bottles on a red table."})  # a readable caption, never a union's truth
    script = {t.id: [{"answer": wrong if t.category == "union" else json.dumps({"caption": t.answers[0]})}]
              for t in tasks}
    result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script}, settings=["no-tool"],
                           judge="carv-parse", out=str(tmp_path / "logs"), concurrency=4))
    out = CliRunner().invoke(app, ["report", str(result.run_dir), "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    grid = table(build_report([load_run(result.run_dir)]), "CARV Table 2 layout")
    assert grid.columns[:8] == ["model", "Single", "Union SS", "Union DS", "Intersection SS", "Intersection DS",
                                "Difference SS", "Difference DS"]
    assert grid.rows[0][:8] == ["scripted · no-tool · N=10", "100.00", "0.00", "0.00", "100.00", "100.00", "100.00",
                                "100.00"]
    assert "CARV Table 2 layout" in (tmp_path / "r" / "report.html").read_text()


def test_ureason_settings_with_gains(tmp_path: Path) -> None:
    from arena.suites.ureason.world import Criterion, build, gold_svg, wrong_svg

    good = {"direct": {"code"}, "guided": {"code", "text", "spatial"},
            "decontext": {"code", "text", "spatial", "attribute", "arithmetic"}}
    world = build(tmp_path / "ureason", seed=4, size="small")
    script = {}
    for task in load_datasets(world)[0].tasks:
        criterion = Criterion.parse(task.answers[0])
        svg = gold_svg(criterion) if task.category in good[task.level] else wrong_svg(criterion)
        call = json.dumps({"name": "render", "arguments": {"svg": svg}})
        script[task.id] = [{"text": f"refined prompt: {task.answers[0]}\n<tool_call>{call}</tool_call>"},
                           {"answer": "done"}]
    result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script}, settings=["render"],
                           judge="ureason-verify", out=str(tmp_path / "logs"), concurrency=4))
    grid = table(build_report([load_run(result.run_dir)]), "UReason Table 2 layout")
    column = {name: i for i, name in enumerate(grid.columns)}
    rows = {row[1]: row for row in grid.rows}
    assert list(rows) == ["1 (direct)", "2 (guided)", "3 (decontext)"]
    assert [rows[s][column["code Acc"]] for s in rows] == ["100.00"] * 3
    assert [rows[s][column["text Acc"]] for s in rows] == ["0.00", "100.00", "100.00"]
    assert [rows[s][column["text Δ"]] for s in rows] == ["-", "+100.00", "+0.00"]
    assert [rows[s][column["arithmetic Δ"]] for s in rows] == ["-", "+0.00", "+100.00"]
    assert [rows[s][column["Avg. Acc"]] for s in rows] == ["20.00", "60.00", "100.00"]
    assert [rows[s][column["Avg. Δ"]] for s in rows] == ["-", "+40.00", "+40.00"]


def test_condchain_per_domain(tmp_path: Path) -> None:
    from arena.suites.condchain.world import build_agentic

    world = build_agentic(tmp_path / "world", seed=11, size="small", count=1)
    script = {}
    for task in load_datasets(world)[0].tasks:
        right = task.id.endswith(":true") or task.category == "natural"
        script[task.id] = [{"answer": f"\\boxed{{{task.answers[0]}}}" if right else "\\boxed{Z9}"}]
    result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script}, settings=["browser"],
                           judge=None, out=str(tmp_path / "logs"), concurrency=3))
    grid = table(build_report([load_run(result.run_dir)]), "MM-CondChain per domain")
    assert grid.columns == ["model", "chart True", "chart False", "chart F1", "gui True", "gui False", "gui F1",
                            "natural True", "natural False", "natural F1", "mean F1 over domains", "all True",
                            "all False", "all F1"]
    assert grid.rows[0][1:] == ["100.00", "0.00", "0.00", "100.00", "0.00", "0.00", "100.00", "100.00", "100.00",
                                "33.33", "100.00", "33.33", "50.00"]
