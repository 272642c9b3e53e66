"""`arena report` over one or several runs: tables, the plot, escaping in the HTML page."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.review.plot import sweep_lines
from arena.review.report import build_report
from arena.review.rundata import load_run
from arena.runs.runner import run

EVIL = "<script>alert(1)</script>"


def tasks_file(root: Path) -> Path:
    """Arena Task JSON lines with a hostile category, two levels and no images."""
    rows = [{"id": "a", "question": "Capital of France?", "answers": ["Paris"], "hops": 2, "category": EVIL},
            {"id": "b", "question": "Largest planet?", "answers": ["Jupiter"], "hops": 7, "category": "Science"}]
    path = root / "tasks.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def make(root: Path, run_id: str, answer: str):
    return run(RunConfig(data=str(tasks_file(root)), fmt="tasks", agent="scripted",
                         agent_options={"script": [{"answer": answer}]}, settings=["no-tool", "search"],
                         max_rounds=[2, 4], repeats=2, out=str(root / "logs"), run_id=run_id))


def test_report_of_two_runs(tmp_path: Path) -> None:
    first = make(tmp_path, "paris", "Paris")
    second = make(tmp_path, "jupiter", "Jupiter")
    out = CliRunner().invoke(app, ["report", str(first.run_dir), str(second.run_dir), "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    report = build_report([load_run(first.run_dir), load_run(second.run_dir)])
    titles = [t.title for t in report.tables]
    assert "Results per agent, setting and budget" in titles
    assert sum(t.startswith("Max rounds sweep") for t in titles) == 4
    groups = report.tables[0]
    assert groups.columns[0] == "run" and len(groups.rows) == 2 * 2 * 2
    assert {row[5] for row in groups.rows} == {"50.00 ± 0.00"}
    categories = next(t for t in report.tables if t.title == "Pass@1 (%) per category")
    assert [r[0] for r in categories.rows] == sorted([EVIL, "Science"])
    lines = sweep_lines([(r.run_id, r.summary) for r in report.runs])
    assert sorted(lines) == sorted(f"{run}: scripted · {s}" for run in ("paris", "jupiter")
                                   for s in ("no-tool", "search"))

    page = (tmp_path / "r" / "report.html").read_text()
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert (tmp_path / "r" / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "Model calls" in out.output and "Failure taxonomy" in out.output


def test_report_shows_judge_agreement_when_a_run_has_two_judges(tmp_path: Path) -> None:
    import asyncio

    from arena.runs.rejudge import rejudge

    result = make(tmp_path, "paris", "Paris")
    asyncio.run(rejudge(result.run_dir, "normalized", label="second"))
    report = build_report([load_run(result.run_dir)])
    agreement = next(t for t in report.tables if t.title == "Judge agreement")
    assert agreement.rows == [["paris", "normalized", "second", "16", "100.00", "1.000"]]


def test_streamed_tables_equal_those_computed_from_episode_objects(tmp_path: Path) -> None:
    """The failure, agreement and model-call tables come from one streaming pass and the columns; the same
    figures computed from every Episode and Verdict object (the functions the report used before) agree."""
    import asyncio

    from arena.review.failures import LABELS, failure_counts
    from arena.runs.prefix import model_call_counts
    from arena.judges.agreement import agreements
    from arena.runs.rejudge import rejudge
    from arena.review.report import SHORT_LABELS, agreement_table, calls_table, failure_table

    result = make(tmp_path, "paris", "Paris")
    asyncio.run(rejudge(result.run_dir, "normalized-strict"))
    data = load_run(result.run_dir)
    episodes, verdicts = data.store.episodes(), data.store.verdicts()
    counts = failure_counts(episodes, data.failures)
    failures = failure_table([data])
    assert failures.columns[3:] == [SHORT_LABELS[k] for k in LABELS]
    assert [[r[0], *r[3:]] for r in failures.rows] == [
        [name.replace(" | ", " · "), *(str(c[k]) for k in LABELS)] for name, c in counts["groups"].items()]
    assert sum(int(r[1]) for r in failures.rows) == len(episodes) == 16
    assert sum(int(r[2]) for r in failures.rows) == sum(v.correct and v.error is None for v in data.chosen.values())
    assert [r[1:3] for r in agreement_table([data]).rows] == [[a.judge_a, a.judge_b]
                                                             for a in agreements(episodes, verdicts)]
    assert agreement_table([data]).rows[0][3] == "16"
    c = model_call_counts(episodes)
    assert calls_table([data]).rows == [["paris", str(c["made"]), str(c["separate_runs"]), str(c["saved"])]]
