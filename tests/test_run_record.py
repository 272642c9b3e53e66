"""`execute` records what it resolves (the protocol by the data, the prompts file's absolute path) in the run
record, run.json's `config`, and leaves the config it is given as it was."""

from __future__ import annotations

import os
from pathlib import Path

from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.store.store import RunStore


def test_the_run_record_holds_the_resolved_values_and_the_input_is_untouched(tiny_data: Path, tmp_path: Path,
                                                                            monkeypatch) -> None:
    (tmp_path / "prompts.yaml").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    config = RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": {"q1": [{"answer": "x"}]}},
                       out=str(tmp_path / "logs"), run_id="r", judge="normalized", task_ids=["q1"],
                       prompts="prompts.yaml")
    given = config.model_dump()
    result = run(config)
    assert config.model_dump() == given and config.grid.protocol is None and config.judge.prompts == "prompts.yaml"
    info = RunStore(result.run_dir).info()
    recorded = info.config
    assert recorded.grid.protocol == "original"  # resolved by the data: the tiny dataset is in a published format
    assert recorded.judge.prompts == os.fspath(tmp_path / "prompts.yaml")
    assert info.fingerprint == recorded.grid_fingerprint()  # hashed as resolved, as a resume reads it back
