"""Runs written before the format was versioned (format 1) read and resume exactly as before: every rule for them is
in `arena.store.migrate`, and a new run writes `FORMAT_VERSION` into run.json and every episode line."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from typer.testing import CliRunner

import arena.store
from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.store import migrate
from arena.store.records import FORMAT_VERSION


def played(tiny_data: Path, tmp_path: Path, **options) -> Path:
    script = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "1874"}]}
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                         out=str(tmp_path / "logs"), run_id="old", **options)).run_dir


def as_format_1(run_dir: Path) -> None:
    """Rewrite a run as the arena wrote it before versioning: no `format` on episode lines, run.json `version` 1
    with no `judge` of its own (the judge only in its config) and no `config.protocol`."""
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert all(r["format"] == FORMAT_VERSION for r in records)
    (run_dir / "episodes.jsonl").write_bytes(b"".join(orjson.dumps({k: v for k, v in r.items() if k != "format"})
                                                      + b"\n" for r in records))
    (run_dir / "episodes.idx").unlink()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["version"] == FORMAT_VERSION
    info["version"] = 1
    info.pop("judge")
    info["config"].pop("protocol")
    (run_dir / "run.json").write_text(json.dumps(info, indent=2))


def test_a_format_1_run_reads_through_the_read_api(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, judge="normalized", protocol="arena")
    before = arena.store.open_run(run_dir).frame()
    as_format_1(run_dir)
    old = arena.store.open_run(run_dir)
    assert old.info.version == 1 and old.judge == "normalized"
    assert [e.format for e in old.episodes()] == [1, 1]
    assert migrate.protocol_of(old.info.model_dump()) == "arena"
    assert old.frame().equals(before)


def test_a_format_1_run_resumes_without_playing_and_keeps_its_fingerprint(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, protocol="arena")  # what a run before --protocol followed
    as_format_1(run_dir)
    fingerprint = json.loads((run_dir / "run.json").read_text())["fingerprint"]
    size = (run_dir / "episodes.jsonl").stat().st_size
    out = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert out.exit_code == 0, out.output
    assert (run_dir / "episodes.jsonl").stat().st_size == size  # nothing played again
    info = json.loads((run_dir / "run.json").read_text())
    assert info["fingerprint"] == fingerprint and info["config"]["protocol"] == "arena"
    assert info["version"] == FORMAT_VERSION  # reopened by this version; its old lines stay format 1
    assert [e.format for e in arena.store.open_run(run_dir).episodes()] == [1, 1]


def test_the_rules_for_older_runs() -> None:
    assert migrate.protocol_of({"config": {}}) == "arena"
    assert migrate.protocol_of({"config": {"protocol": "original"}}) == "original"
    assert migrate.judge_of({"config": {"judge": "llm"}}) == "llm"
    assert migrate.judge_of({"judge": "mcq", "config": {"judge": "llm"}}) == "mcq"
    assert migrate.judge_of({}) == "auto"
    assert migrate.resume_fields({}) == {"protocol": "arena"}
    assert migrate.resume_fields({"protocol": None}) == {}
    assert migrate.fingerprint_fields({"data": "d", "protocol": "arena"}) == {"data": "d"}
    assert migrate.fingerprint_fields({"data": "d", "protocol": "original"}) == {"data": "d", "protocol": "original"}
    assert migrate.episode_format({}) == 1 and migrate.episode_format({"format": 2}) == 2
