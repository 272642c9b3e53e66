"""Whole runs on the live-web tools: record a cassette, replay it with the network disabled, CLI modes."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.core.tool import ToolOptions
from arena.runs.config import RunConfig
from arena.runs.runner import RunResult, run
from tests.support.openai_server import OpenAIStub, last_user_text
from tests.support.tiny_dataset import write_tiny_dataset
from tests.test_web_search import FakeWeb
from arena.tools import web_providers, web_search

SCRIPT = {
    "q1": [{"tool": "text_search_tool", "arguments": {"query": "Who built Orvanta Lighthouse?"}},
           {"tool": "image_search_tool", "arguments": {"query": "Orvanta lighthouse"}},
           {"answer": "Mirelle Dastrow"}],
    "q2": [{"tool": "text_search_tool", "arguments": {"query": "who built orvanta lighthouse?  "}},
           {"tool": "text_search_tool", "arguments": {"query": "Orvanta Lighthouse year built"}},
           {"answer": "1874"}],
}


def summarise(request: dict[str, Any]) -> str:
    text = last_user_text(request)
    if "Summaries of the top search results" in text:
        return "Overall: Orvanta Lighthouse was built in 1874 by Mirelle Dastrow."
    title = text.split("Page title: ", 1)[1].split("\n", 1)[0]
    return f"Summary of {title}: " + ("built in 1874." if "1874" in text else "an engineer.")


def config(tmp: Path, data: Path, script: dict, out: str, **tool_options: Any) -> RunConfig:
    script_path = tmp / f"script-{out}.json"
    script_path.write_text(json.dumps(script))
    return RunConfig(data=str(data), agent="scripted", agent_options={"script": str(script_path)},
                     settings=["text_search_tool+image_search_tool"], max_rounds=[4], judge="normalized",
                     tool_options=ToolOptions(**tool_options), out=str(tmp / out), concurrency=2)


def trajectory(result: RunResult) -> dict[str, Any]:
    verdicts = {v.episode_id: v.correct for v in result.verdicts}
    return {e.task.id: {"answer": e.answer, "finish": e.finish_reason, "correct": verdicts[e.id],
                        "steps": [(s.round, s.action, s.tool, s.arguments,
                                   s.observation.model_dump() if s.observation else None) for s in e.steps]}
            for e in result.episodes}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Any]:
    """A run recorded against the local web and summariser, which are then shut down."""
    tmp = tmp_path_factory.mktemp("web")
    data = write_tiny_dataset(tmp / "data")
    cassette = tmp / "shipped.sqlite"
    web = FakeWeb()
    with OpenAIStub(lambda r: summarise(r)) as summariser:
        result = run(config(tmp, data, SCRIPT, "record", web="record", cassette=str(cassette), image_search="web",
                            web_provider="searxng", web_endpoint=web.base, allow_private_hosts=True,
                            web_min_interval=0.0, summarizer_model="summ", summarizer_base_url=summariser.base_url))
        summary_calls = len(summariser.requests)
    web.stop()
    return {"tmp": tmp, "data": data, "cassette": cassette, "result": result, "summary_calls": summary_calls,
            "web_paths": list(web.paths)}


@pytest.fixture
def network_disabled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the network was touched during replay")

    monkeypatch.setattr(web_search.PageFetcher, "_context", refuse)
    monkeypatch.setattr(web_providers.SearxngProvider, "_get", refuse)
    monkeypatch.setattr(web_providers.DDGSProvider, "_call", refuse)
    monkeypatch.setattr(web_search.Summarizer, "_ask", refuse)
    monkeypatch.setattr(web_search.httpx, "AsyncClient", refuse)


def test_recording_uses_the_web_once_per_request(recorded):
    episodes = {e.task.id: e for e in recorded["result"].episodes}
    q1_search = episodes["q1"].steps[0].observation.text
    assert "[1] Orvanta Lighthouse\nURL: " in q1_search
    assert "Summary of Orvanta Lighthouse: built in 1874." in q1_search
    assert q1_search.endswith("Summary of the results:\nOverall: Orvanta Lighthouse was built in 1874 by "
                              "Mirelle Dastrow.")
    assert episodes["q2"].steps[0].observation.text == q1_search, "the same normalised query, the same evidence"
    assert len(episodes["q1"].steps[1].observation.images) == 2
    assert recorded["web_paths"].count("/pages/orvanta") == 1
    assert recorded["summary_calls"] == 2 * 2 + 2, "two fetched pages and one overall summary per distinct query"
    assert all(e.finish_reason == "answered" for e in episodes.values())


def test_replay_gives_identical_trajectories_without_the_network(recorded, network_disabled):
    tmp = recorded["tmp"]
    replayed = run(config(tmp, recorded["data"], SCRIPT, "replay", web="replay", cassette=str(recorded["cassette"]),
                          image_search="web", web_provider="searxng", web_endpoint="http://127.0.0.1:9",
                          summarizer_model="summ", summarizer_base_url="http://127.0.0.1:9/v1"))
    original = trajectory(recorded["result"])
    assert trajectory(replayed) == original
    assert {task: t["correct"] for task, t in original.items()} == {"q1": True, "q2": True}


def test_a_replay_miss_is_an_error_observation_naming_the_request(recorded, network_disabled):
    tmp = recorded["tmp"]
    script = {"*": [{"tool": "text_search_tool", "arguments": {"query": "Velmora kite festival"}},
                    {"answer": "unknown"}]}
    result = run(config(tmp, recorded["data"], script, "miss", web="replay", cassette=str(recorded["cassette"]),
                        web_provider="searxng", web_endpoint="http://127.0.0.1:9"))
    for episode in result.episodes:
        observation = episode.steps[0].observation
        assert observation.error
        assert 'cassette miss: text_search via searxng.text/1' in observation.text
        assert '"velmora kite festival"' in observation.text and "shipped.sqlite" in observation.text
        assert episode.finish_reason == "answered" and episode.answer == "unknown"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_live_ddgs_without_a_network_fails_fast_and_the_run_goes_on(tmp_path: Path):
    """The real ddgs client, pointed at a proxy port nobody listens on: no request leaves the machine."""
    data = write_tiny_dataset(tmp_path / "data")
    script = {"*": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}}, {"answer": "1874"}]}
    result = run(config(tmp_path, data, script, "live", web="live", web_proxy=f"http://127.0.0.1:{closed_port()}",
                        web_timeout=5))
    for episode in result.episodes:
        step = episode.steps[0]
        assert step.observation.error
        assert step.observation.text.startswith("Error: the web search is unreachable (ddgs:")
        assert "kept failing" not in step.observation.text, "an unreachable network is not retried"
        assert episode.finish_reason == "answered"


def test_cli_replays_a_shipped_cassette_and_rejects_bad_web_options(recorded, network_disabled, tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    common = ["run", "--data", str(recorded["data"]), "--agent", "scripted", "--script", str(script),
              "--setting", "text_search_tool+image_search_tool", "--max-rounds", "4", "--judge", "normalized",
              "--out", str(tmp_path / "logs")]
    runner = CliRunner()
    result = runner.invoke(app, [*common, "--web", "replay", "--cassette", str(recorded["cassette"]),
                                 "--image-search", "web", "--tool-option", "web_provider=searxng",
                                 "--tool-option", "summarizer_model=summ",
                                 "--tool-option", "summarizer_base_url=http://127.0.0.1:9/v1"])
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "logs").iterdir())
    verdicts = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert sorted(v["correct"] for v in verdicts) == [True, True]

    missing = runner.invoke(app, [*common, "--web", "replay"])
    assert missing.exit_code == 2 and "no such cassette" in missing.output and "cassettes.sqlite" in missing.output
    offline = runner.invoke(app, [*common, "--image-search", "web"])
    assert offline.exit_code == 2 and "image_search=web needs the live web" in offline.output
