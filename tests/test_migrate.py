"""Runs written by older formats (1: before versioning; 2: a flat config) read and resume exactly as before, with
the same run id: every rule for them is in `arena.store.migrate`, applied by the records on read, and a new run
writes `FORMAT_VERSION` into run.json and every episode line."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

import arena.store
from arena.cli.main import app
from arena.core.budget import Budget
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.store import migrate
from arena.store.records import FORMAT_VERSION, RunInfo
from arena.store.run_config import GridSection


def played(tiny_data: Path, tmp_path: Path, **options) -> Path:
    script = {"q1": [{"answer": "Mirelle Dastrow"}], "q2": [{"answer": "1874"}]}
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script},
                         out=str(tmp_path / "logs"), run_id="old", **options)).run_dir


FLAT_2 = {"data": "d.jsonl", "root": None, "fmt": None, "corpus": None, "agent": "scripted",
          "agent_options": {"script": {"q1": [{"answer": "x"}]}}, "settings": ["no-tool"], "max_rounds": [4, 6],
          "repeats": 2, "seed": 0, "concurrency": 8, "judge": "mcq", "judge_options": {}, "tool_options": {},
          "budget": {}, "show_budget": False, "limit": None, "task_ids": None, "levels": None, "categories": None,
          "suites": None, "run_id": None, "out": "logs", "agents": [], "prefix_sharing": None, "backend": "asyncio",
          "ray_address": None, "ray_workers": None, "ray_shared_dir": False, "workers": None,
          "endpoint_limits": {}, "fork": None, "retry_errors": False, "fail_fast": 3, "price": None,
          "max_cost": None, "protocol": "arena", "transcript": True, "prompts": None}
"""A format-2 run.json config (flat), as 75e9ae2 wrote it."""
FLAT_2_FINGERPRINT = "1388ba5268a3"
"""Its fingerprint as 75e9ae2 computed it (`RunConfig.grid_fingerprint` of that version, by its deny-list)."""


def as_format_2(run_dir: Path) -> None:
    """Rewrite run.json's config as 75e9ae2 wrote it: flat, every field at the top level."""
    info = json.loads((run_dir / "run.json").read_text())
    config = info["config"]
    flat = {name: (config[section] if field is None else config[section][field])
            for name, (section, field) in migrate.FLAT_FIELDS.items()}
    info.update(version=2, config=flat)
    (run_dir / "run.json").write_text(json.dumps(info, indent=2))


def as_format_1(run_dir: Path) -> None:
    """Rewrite a run as the arena wrote it before versioning: no `format` on episode lines, run.json `version` 1
    with no `judge` of its own (the judge only in its config) and no `config.protocol`."""
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert all(r["format"] == FORMAT_VERSION for r in records)
    (run_dir / "episodes.jsonl").write_bytes(b"".join(orjson.dumps({k: v for k, v in r.items() if k != "format"})
                                                      + b"\n" for r in records))
    (run_dir / "episodes.idx").unlink()
    as_format_2(run_dir)
    info = json.loads((run_dir / "run.json").read_text())
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
    assert old.info.protocol == "arena" and old.info.config.grid.protocol == "arena"
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
    assert info["fingerprint"] == fingerprint and info["config"]["grid"]["protocol"] == "arena"
    assert info["version"] == FORMAT_VERSION  # reopened by this version; its old lines stay format 1
    assert [e.format for e in arena.store.open_run(run_dir).episodes()] == [1, 1]


def test_a_format_2_run_keeps_its_run_id_and_resumes_in_sections(tiny_data: Path, tmp_path: Path) -> None:
    run_dir = played(tiny_data, tmp_path, judge="normalized", protocol="original", max_rounds=[3, 5])
    before = arena.store.open_run(run_dir).frame()
    fingerprint = json.loads((run_dir / "run.json").read_text())["fingerprint"]
    as_format_2(run_dir)
    old = arena.store.open_run(run_dir)
    assert old.info.config.grid.max_rounds == [3, 5] and old.info.protocol == "original"
    assert old.info.config.grid_fingerprint() == fingerprint and old.frame().equals(before)
    size, written = (run_dir / "episodes.jsonl").stat().st_size, (run_dir / "run.json").read_text()
    out = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert out.exit_code == 0 and "nothing to play, nothing to judge" in out.output, out.output
    assert (run_dir / "episodes.jsonl").stat().st_size == size and (run_dir / "run.json").read_text() == written
    (run_dir / "summary.json").unlink()  # no summary to confirm: resumed in full, run.json rewritten in sections
    out = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert out.exit_code == 0 and "nothing to play" not in out.output, out.output
    info = json.loads((run_dir / "run.json").read_text())
    assert info["fingerprint"] == fingerprint and info["config"]["grid"]["max_rounds"] == [3, 5]
    assert (run_dir / "episodes.jsonl").stat().st_size == size


def test_the_fingerprint_of_a_flat_config_is_the_one_75e9ae2_computed() -> None:
    config = RunConfig.model_validate(FLAT_2)
    assert config.grid.max_rounds == [4, 6] and config.judge.name == "mcq" and config.agents.agent == "scripted"
    assert config.grid_fingerprint() == FLAT_2_FINGERPRINT
    # only the sections that define the grid count: a scheduling, judging or output change keeps the run id
    changed = config.updated(concurrency=2, workers=3, judge="llm", out="else", transcript=False, fail_fast=0)
    assert changed.grid_fingerprint() == FLAT_2_FINGERPRINT
    assert config.updated(repeats=3).grid_fingerprint() != FLAT_2_FINGERPRINT


def test_the_rules_for_older_runs() -> None:
    read = RunInfo.model_validate
    assert read({"config": FLAT_2}).config.grid.protocol == "arena"
    assert read({"config": {k: v for k, v in FLAT_2.items() if k != "protocol"}}).protocol == "arena"
    assert read({"config": {**FLAT_2, "protocol": "original"}}).protocol == "original"
    assert read({"config": {**FLAT_2, "judge": "llm"}}).judge == "llm"
    assert read({"judge": "mcq", "config": {**FLAT_2, "judge": "llm"}}).judge == "mcq"
    assert read({}).judge == "auto" and read({}).config is None
    old_prompts = {"file": None, "templates": {"vistahop.judge.user": {"wording": "arena"}}}
    assert read({"prompts": old_prompts}).prompts["templates"]["vistahop.judge.user"]["kind"] == "judge"
    assert read({"learned_params": None}).learned_params == {}
    assert migrate.episode_format({}) == 1 and migrate.episode_format({"format": 2}) == 2


def test_a_config_updated_keeps_the_fields_set_and_reads_flat_names_into_sections() -> None:
    config = RunConfig(data="d.jsonl", budget=Budget(max_tokens=5), grid=GridSection(repeats=2), max_rounds=[3])
    assert config.grid.repeats == 2 and config.grid.max_rounds == [3] and config.limits.max_tokens == 5
    updated = config.updated(judge="mcq", workers=2)
    assert updated.judge.name == "mcq" and updated.schedule.workers == 2 and updated.grid.max_rounds == [3]
    assert updated.limits.model_fields_set == {"max_tokens"}  # a protocol may still set the rest


def test_flat_names_read_through_their_sections() -> None:
    config = RunConfig.model_validate(FLAT_2)
    assert (config.max_rounds, config.workers, config.protocol, config.judge_options) == ([4, 6], None, "arena", {})
    assert config.tool_options is config.tools and config.budget is config.limits
    assert config.judge.name == "mcq" and config.data.path == "d.jsonl"  # section names are the sections
    with pytest.raises(AttributeError):
        config.no_such_field
