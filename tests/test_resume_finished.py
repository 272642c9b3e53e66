"""`arena resume` of a finished run only confirms it ("nothing to play, nothing to judge") from summary.json's
`finished` stamp (`arena.runs.finished`), and runs in full whenever the stamp no longer holds: a record appended
since, verdicts lost; `left_over` counts what a resume would still do."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.runs.finished import left_over
from arena.runs.runner import run
from arena.runs.sweep import plan
from arena.runs.workbench import Workbench
from arena.store.scan import scan_run
from arena.store.store import RunStore

SCRIPT = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "1874"}]}


def played(tiny_data: Path, tmp_path: Path, **options) -> Path:
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SCRIPT},
                         out=str(tmp_path / "logs"), run_id="r", judge="normalized", **options)).run_dir


def resume(run_dir: Path) -> str:
    out = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert out.exit_code == 0, out.output
    return out.output


def test_a_finished_run_is_confirmed_without_reopening_it(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, max_rounds=[3, 5])
    stamp = json.loads((run_dir / "summary.json").read_text())["finished"]
    assert stamp["episodes_bytes"] == (run_dir / "episodes.jsonl").stat().st_size and stamp["judge"] == "normalized"
    before = {name: (run_dir / name).read_bytes() for name in ("run.json", "summary.json", "episodes.jsonl")}
    output = resume(run_dir)
    assert "nothing to play, nothing to judge: the run's 4 episodes are recorded and judged" in output
    assert {name: (run_dir / name).read_bytes() for name in before} == before  # nothing written, not even run.json
    assert "Pass@1" in output  # the summary on disk is shown as a resume shows it


def test_a_record_appended_since_the_summary_resumes_in_full(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path)
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    errored = {**orjson.loads(lines[0]), "id": "errored", "finish_reason": "error", "error": "HTTP 500"}
    with (run_dir / "episodes.jsonl").open("ab") as f:
        f.write(orjson.dumps(errored) + b"\n")  # a retry that failed after the summary: resume plays it again
    (run_dir / "episodes.idx").unlink()
    output = resume(run_dir)
    assert "nothing to play" not in output and "1 episode(s) to run or judge" in output


def test_lost_verdicts_are_judged_again_and_the_run_stamped_anew(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, limit=1)
    assert "finished" in json.loads((run_dir / "summary.json").read_text())
    (run_dir / "verdicts.jsonl").write_bytes(b"")  # verdicts lost: the summary now says an episode is unjudged
    output = resume(run_dir)
    assert "nothing to play" not in output and "1 episode(s) to run or judge" in output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["finished"]["verdicts_bytes"] == (run_dir / "verdicts.jsonl").stat().st_size > 0


def test_left_over_counts_unrecorded_errored_and_unjudged_cells(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, max_rounds=[3, 5])
    store = RunStore(run_dir)
    families = plan(Workbench(store.info().config))
    assert left_over(scan_run(store), families, "normalized") == 0
    assert left_over(scan_run(store), families, "mcq") == 4  # no verdict of that judge
    bigger = plan(Workbench(store.info().config.updated(max_rounds=[3, 5, 7])))
    assert left_over(scan_run(store), bigger, "normalized") == 2  # two cells never recorded
