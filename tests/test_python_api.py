"""The public read API (`arena.store.open_run`): the example of docs/python-api.md runs as written against a real
run, its frame agrees with the run's summary, and opening a run loads no Ray, no playing code and no plug-in."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena.runs.config import RunConfig
from arena.store.records import FORMAT_VERSION
from arena.runs.runner import run

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python-api.md"


def example_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1, f"{PAGE}: expected one python example, found {len(blocks)}"
    return blocks[0]


@pytest.fixture
def judged_run(tiny_data: Path, tmp_path: Path) -> Path:
    script = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "no idea"}]}
    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                           judge="normalized", out=str(tmp_path / "logs"), run_id="api", max_rounds=[2, 3]))
    return result.run_dir


def test_the_documented_example_runs_against_a_real_run(judged_run: Path, capsys) -> None:
    scope: dict = {"RUN_DIR": str(judged_run)}
    exec(compile(example_code(), str(PAGE), "exec"), scope)
    run_, frame = scope["run"], scope["frame"]
    summary = json.loads((judged_run / "summary.json").read_text())
    assert len(frame) == sum(g["episodes"] for g in summary["groups"]) == len(scope["episodes"])
    for group in summary["groups"]:
        rows = frame[(frame.agent == group["agent"]) & (frame.setting == group["setting"])
                     & (frame.max_rounds == group["max_rounds"])]
        assert rows["score"].mean() * 100 == pytest.approx(group["pass1"], abs=0.06)
    digest = scope["first"].images[0].split(":", 1)[1]
    assert scope["image"] == (judged_run / "blobs" / "sha256" / digest[:2] / digest[2:]).read_bytes()
    assert all(e.format == run_.info.version == FORMAT_VERSION for e in scope["episodes"])
    assert "Mirelle Dastrow" in capsys.readouterr().out


def test_opening_a_run_loads_no_ray_no_playing_code_and_no_plugin(judged_run: Path) -> None:
    code = (f"import sys, arena.store\nrun = arena.store.open_run({str(judged_run)!r})\n"
            "list(run.episodes()); list(run.verdicts()); run.frame()\n"
            "bad = sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'arena.runs', 'arena.review',"
            " 'arena.cli', 'arena.agents', 'arena.tools', 'arena.suites', 'arena.judges', 'arena.endpoints')))\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_a_directory_without_run_json_is_refused_by_name(tmp_path: Path) -> None:
    import arena.store

    with pytest.raises(ValueError, match="not a run directory"):
        arena.store.open_run(tmp_path)
