"""The llm judge encodes each task image once per judge, not once per call: repeats, budgets and settings of one
task send the same JPEG (a 4K decode, resize and encode is ~0.25 s; 375 judge calls over 5 images took 109 s)."""

from __future__ import annotations

import base64
from pathlib import Path

from typer.testing import CliRunner

import arena.judges.llm as llm
from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, Reply


def test_each_task_image_is_encoded_once_and_sent_as_the_published_jpeg(tiny_data: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    script = {"q1": [{"answer": "somebody"}], "q2": [{"answer": "some year"}]}
    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": script}, repeats=3,
                           max_rounds=[2, 3], judge="normalized", out=str(tmp_path / "logs"), run_id="r"))
    encoded = []
    real = llm.judge_image_jpeg
    monkeypatch.setattr(llm, "judge_image_jpeg", lambda data: encoded.append(data) or real(data))
    with OpenAIStub(lambda request: Reply(content="<judge>No</judge><reason>differs</reason>")) as server:
        out = CliRunner().invoke(app, ["judge", str(result.run_dir), "--judge", "llm", "--judge-model", "j",
                                       "--judge-base-url", server.base_url])
        assert out.exit_code == 0, out.output
    store = RunStore(result.run_dir)
    episodes = list(store.episodes())
    images = {e.images[0] for e in episodes}
    assert len(episodes) == 12 and len(server.requests) >= len(images)
    assert len(encoded) == len(images)
    sent = {part["image_url"]["url"] for request in server.requests for message in request["messages"]
            if isinstance(message["content"], list) for part in message["content"] if part["type"] == "image_url"}
    blobs = store.blobs
    assert sent == {"data:image/jpeg;base64," + base64.b64encode(real(blobs.get(ref))).decode() for ref in images}
