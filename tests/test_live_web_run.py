"""Whole VistaArena-format runs on the paid-provider setting, all on loopback: Serper text search (pages
read in Chromium, a summariser model), crops reverse-searched live on the Lens stand-in through a local
S3 server; recorded, then replayed with the network disabled; and a pool of two keys running dry."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from arena.core.tool import ToolOptions
from arena.runs.config import RunConfig
from arena.runs.runner import RunResult, run
from tests.support.fake_serper import FakeGoogleApis
from tests.support.local_s3 import local_s3, object_keys
from tests.support.openai_server import OpenAIStub, last_user_text
from tests.support.tiny_dataset import write_tiny_dataset
from arena.tools import image_host, lens, web_search
from arena.tools.web_providers import serper

KEY = "serper-run-key-0123456789"
BUCKET = "arena-crops"
SIGN = [750, 100, 940, 200]      # the white ORVANTA sign of the tiny dataset's scene, relative 0-1000
DOOR = [70, 610, 240, 890]       # the red rectangle
SETTING = "text_search_tool+image_zoom_in_tool+image_search_tool"
SCRIPT = {
    "q1": [{"tool": "text_search_tool", "arguments": {"query": "Who built Orvanta Lighthouse?"}},
           {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": SIGN, "label": "sign"}},
           {"tool": "image_search_tool", "arguments": {"img_idx": 1}},
           {"answer": "Mirelle Dastrow"}],
    "q2": [{"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": SIGN, "label": "sign"}},
           {"tool": "image_search_tool", "arguments": {"img_idx": 1}},
           {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": DOOR, "label": "door"}},
           {"tool": "image_search_tool", "arguments": {"img_idx": 4}},
           {"answer": "1874"}],
}


def summarise(request: dict[str, Any]) -> str:
    text = last_user_text(request)
    if "Summaries of the top search results" in text:
        return "Overall: Orvanta Lighthouse was built in 1874 by Mirelle Dastrow."
    return "Summary of " + text.split("Page title: ", 1)[1].split("\n", 1)[0] + "."


def config(tmp: Path, data: Path, script: dict, out: str, **tool_options: Any) -> RunConfig:
    path = tmp / f"script-{out}.json"
    path.write_text(json.dumps(script))
    return RunConfig(data=str(data), agent="scripted", agent_options={"script": str(path)}, settings=[SETTING],
                     max_rounds=[6], judge="normalized", tool_options=ToolOptions(**tool_options),
                     out=str(tmp / out), concurrency=2)


def trajectory(result: RunResult) -> dict[str, Any]:
    return {e.task.id: {"answer": e.answer, "finish": e.finish_reason,
                        "steps": [(s.round, s.tool, s.arguments, s.observation.model_dump() if s.observation else None)
                                  for s in e.steps]} for e in result.episodes}


def live_options(fake: FakeGoogleApis, **extra: Any) -> dict[str, Any]:
    options = dict(image_search="live", web_provider="serper", web_endpoint=fake.base, lens_endpoint=fake.base,
                   image_host=f"s3://{BUCKET}/crops", allow_private_hosts=True, web_min_interval=0.0)
    options.update(extra)
    return options


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("live")
    data = write_tiny_dataset(tmp / "data")
    cassette = tmp / "shipped.sqlite"
    fake = FakeGoogleApis({KEY: None})
    with pytest.MonkeyPatch.context() as env, local_s3(BUCKET), OpenAIStub(summarise) as summariser:
        env.setenv("SERPER_API_KEY", KEY)
        result = run(config(tmp, data, SCRIPT, "record", web="record", cassette=str(cassette),
                            summarizer_model="qwen3-32b", summarizer_base_url=summariser.base_url,
                            **live_options(fake)))
        stored = object_keys(BUCKET)
    fake.stop()
    return {"tmp": tmp, "data": data, "cassette": cassette, "result": result, "fake": fake, "stored": stored}


def test_a_crop_is_reverse_searched_live_through_the_s3_host(recorded):
    episodes = {e.task.id: e for e in recorded["result"].episodes}
    fake: FakeGoogleApis = recorded["fake"]
    q1, q2 = episodes["q1"], episodes["q2"]
    assert [s.tool for s in q1.steps[:3]] == ["text_search_tool", "image_zoom_in_tool", "image_search_tool"]
    search = q1.steps[2].observation
    assert search.text.startswith("[1] Orvanta Lighthouse sign\nURL: ") and len(search.images) == 2
    assert search.data["mode"] == "live" and search.data["provider"] == "serper"
    digest = q1.steps[1].observation.images[0].split(":")[1].split(".")[0]
    assert search.data["image_sha256"] == digest, "the crop of round 2 is what round 3 searched"
    assert q2.steps[1].observation.text == search.text, "the same crop, the same results"
    assert q2.steps[3].observation.text.startswith("[1] Velmora boathouse door")
    # two distinct crops: each uploaded once and searched once, though q1 and q2 both searched the sign
    assert len(recorded["stored"]) == 2 and f"crops/{digest}.png" in recorded["stored"]
    assert fake.calls["/lens"] == 2 and len(fake.lens_images) == 2
    assert all("X-Amz-Signature=" in url for url in fake.lens_images), "the provider fetched presigned URLs"
    assert fake.calls["/search"] == 1
    assert [e.finish_reason for e in (q1, q2)] == ["answered", "answered"]


def test_keys_signatures_and_urls_reach_no_run_file(recorded):
    run_dir = Path(recorded["result"].run_dir)
    blobs = [recorded["cassette"], *[p for p in run_dir.rglob("*") if p.is_file() and "blobs" not in p.parts]]
    data = b"".join(p.read_bytes() for p in blobs)
    for secret in (KEY, "X-Amz-Signature", "X-Amz-Credential", "arena-test-secret-key"):
        assert secret.encode() not in data, secret


@pytest.fixture
def network_disabled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the network was touched during replay")

    monkeypatch.setattr(web_search.PageFetcher, "_context", refuse)
    monkeypatch.setattr(web_search.Summarizer, "_ask", refuse)
    monkeypatch.setattr(web_search.httpx, "AsyncClient", refuse)
    monkeypatch.setattr(serper.httpx, "Client", refuse)
    monkeypatch.setattr(lens.httpx, "Client", refuse)
    monkeypatch.setattr(image_host.S3Host, "_publish", refuse)
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_replay_with_the_network_disabled_gives_identical_observations(recorded, network_disabled):
    tmp = recorded["tmp"]
    replayed = run(config(tmp, recorded["data"], SCRIPT, "replay", web="replay", cassette=str(recorded["cassette"]),
                          summarizer_model="qwen3-32b", summarizer_base_url="http://127.0.0.1:9/v1",
                          **live_options(recorded["fake"], web_endpoint="http://127.0.0.1:9",
                                         lens_endpoint="http://127.0.0.1:9")))
    assert trajectory(replayed) == trajectory(recorded["result"])


def test_two_spent_keys_rotate_then_stop_the_web_with_one_message(tmp_path: Path, monkeypatch, caplog):
    keys = ["serper-pool-key-one-1111", "serper-pool-key-two-2222"]
    fake = FakeGoogleApis({keys[0]: 1, keys[1]: 1})
    monkeypatch.setenv("SERPER_API_KEY", ",".join(keys))
    data = write_tiny_dataset(tmp_path / "data", n_items=4)
    script = {f"q{i}": [{"tool": "text_search_tool", "arguments": {"query": f"Orvanta question {i}"}},
                        {"answer": "1874"}] for i in range(1, 5)}
    caplog.set_level(logging.WARNING)
    cfg = config(tmp_path, data, script, "pool", web="live", web_provider="serper", web_endpoint=fake.base,
                 fetch_pages=False, web_min_interval=0.0).updated(concurrency=1)
    try:
        result = run(cfg)
        fake.credits["serper-pool-key-new-3333"] = None
        monkeypatch.setenv("SERPER_API_KEY", "serper-pool-key-new-3333")
        resumed = run(cfg)
    finally:
        fake.stop()
    assert sorted((e.task.id, e.finish_reason) for e in resumed.episodes) == [
        ("q1", "answered"), ("q2", "answered"), ("q3", "answered"), ("q4", "answered")]
    assert resumed.ran == 2 and fake.keys_used[-2:] == ["serper-pool-key-new-3333"] * 2, \
        "resume re-ran the two stopped episodes with the new key"
    finish = {e.task.id: (e.finish_reason, e.error) for e in result.episodes}
    assert [finish[t][0] for t in ("q1", "q2", "q3", "q4")] == ["answered", "answered", "error", "error"]
    message = ("serper: all 2 API key(s) in $SERPER_API_KEY are spent (key 1: HTTP 400: Not enough credits; "
               "key 2: HTTP 400: Not enough credits); the run's serper calls stop here. Add credit or new keys, "
               "then `arena resume` the run.")
    assert finish["q3"][1] == finish["q4"][1] == message
    q3 = next(e for e in result.episodes if e.task.id == "q3")
    assert q3.steps[-1].observation.text == f"Error: {message}"
    assert fake.refusals["credits"] == 2 and fake.keys_used[:2] == keys, "q4 made no request"
    pool_logs = [r for r in caplog.records if r.name == "arena.tools.keypool"]
    assert [r.levelname for r in pool_logs] == ["WARNING", "ERROR"], "one rotation, one stop"
    assert all(k not in caplog.text for k in keys)
    run_files = b"".join(p.read_bytes() for p in Path(result.run_dir).rglob("*") if p.is_file())
    assert all(k.encode() not in run_files for k in keys)


def test_cli_replays_the_live_run_offline(recorded, network_disabled, tmp_path: Path):
    from typer.testing import CliRunner

    from arena.cli.main import app

    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    result = CliRunner().invoke(app, [
        "run", "--data", str(recorded["data"]), "--agent", "scripted", "--script", str(script), "--setting", SETTING,
        "--max-rounds", "6", "--judge", "normalized", "--out", str(tmp_path / "logs"), "--web", "replay",
        "--cassette", str(recorded["cassette"]), "--image-search", "live", "--tool-option", "web_provider=serper",
        "--tool-option", "summarizer_model=qwen3-32b", "--tool-option", "summarizer_base_url=http://127.0.0.1:9/v1"])
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "logs").iterdir())
    episodes = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert sorted(e["finish_reason"] for e in episodes) == ["answered", "answered"]
    assert not [s for e in episodes for s in e["steps"] if s.get("error")], "every observation came from the cassette"
