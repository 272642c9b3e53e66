"""`arena fork` and the episode loop's prefix hook: continue recorded rounds with another agent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.core.blobs import BlobStore
from arena.cli.main import app
from arena.core.dataset import load_datasets
from arena.core.episode import EpisodeSpec, run_episode
from arena.core.tool import TOOLS
from arena.core.trajectory import Step
from arena.agents.scripted import ScriptedAgent
from arena.runs.config import AgentChoice, RunConfig
from arena.runs.fork import fork_config
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.store.store import RunStore

SOURCE = [{"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 50, 1000, 250], "label": "sign"}},
          {"text": "<tool_call>not json</tool_call>"},
          {"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse built"}},
          {"tool": "text_search_tool", "arguments": {"query": "Mirelle Dastrow"}},
          {"answer": "Mirelle Dastrow"}]


def source_run(tiny_data: Path, tmp_path: Path):
    # protocol arena: the malformed call of round 2 is an observed invalid turn (the original would end there)
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SOURCE}, task_ids=["q2"],
                         out=str(tmp_path / "logs"), run_id="source", protocol="arena"))


def same_round(a: Step, b: Step) -> bool:
    return (a.round, a.action, a.tool, a.arguments, a.output, a.observation) == \
        (b.round, b.action, b.tool, b.arguments, b.output, b.observation)


def test_fork_continues_recorded_rounds_with_another_agent(tiny_data: Path, tmp_path: Path) -> None:
    source = source_run(tiny_data, tmp_path)
    [original] = source.episodes
    out = CliRunner().invoke(app, ["fork", str(source.run_dir), "--episode", original.id, "--at-round", "3",
                                   "--agent", "scripted", "--script", str(write_script(tmp_path)),
                                   "--agent-option", "id=answerer"])
    assert out.exit_code == 0, out.output
    fork_dir = source.run_dir.parent / f"source-fork-{original.id[:8]}-r3-answerer"
    store = RunStore(fork_dir)
    link = store.info().forked_from
    assert (link["run_id"], link["episode_id"], link["at_round"]) == ("source", original.id, 3)
    [forked] = store.episodes()
    assert forked.agent == "answerer" and forked.meta["forked_from"]["episode_id"] == original.id
    assert all(same_round(a, b) for a, b in zip(forked.steps[:3], original.steps[:3]))
    assert [s.action for s in forked.steps] == ["tool_call", "invalid", "tool_call", "answer"]
    assert forked.answer == "1874" and forked.meta["model_calls"] == 1
    assert forked.totals.model_dump(include={"tool_calls", "invalid_calls", "rounds"}) == \
        {"tool_calls": 2, "invalid_calls": 1, "rounds": 4}
    crop_blob = forked.steps[0].observation.images[0]
    assert store.blobs.path(crop_blob).is_file()
    [verdict] = store.verdicts()
    assert verdict.correct


def write_script(tmp_path: Path) -> Path:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps([{"answer": "1874"}] * 6))
    return path


def test_fork_with_replayed_tools_reproduces_the_observations(tiny_data: Path, tmp_path: Path) -> None:
    source = source_run(tiny_data, tmp_path)
    data = load_run(source.run_dir)
    choice = AgentChoice(agent="scripted", options={"script": [{"answer": "1874"}] * 6, "id": "again"})
    config = fork_config(data, data.episodes[0].id[:6], 4, choice, prefix_mode="replay", repeats=2)
    forked = run(config)
    assert len(forked.episodes) == 2
    for episode in forked.episodes:
        assert all(same_round(a, b) for a, b in zip(episode.steps[:4], data.episodes[0].steps[:4]))
        assert episode.totals.tool_calls == 3 and episode.totals.invalid_calls == 1


def test_fork_beyond_the_recorded_rounds_is_refused(tiny_data: Path, tmp_path: Path) -> None:
    source = source_run(tiny_data, tmp_path)
    data = load_run(source.run_dir)
    choice = AgentChoice(agent="scripted", options={"script": [{"answer": "x"}]})
    with pytest.raises(ValueError, match="at most that, got 5"):
        run(fork_config(data, data.episodes[0].id, 5, choice))


def test_prefix_holding_an_answer_ends_the_episode_with_an_error(tiny_data: Path, tmp_path: Path) -> None:
    [dataset] = load_datasets(tiny_data)
    task = dataset.tasks[0]
    prefix = [Step(round=1, action="answer", answer="x", output="<answer>x</answer>")]
    spec = EpisodeSpec(run_id="r", task=task, dataset=dataset, agent=ScriptedAgent([]),
                       tools=[TOOLS["text_search_tool"]()], setting="text", prefix=prefix)
    episode = asyncio.run(run_episode(spec, BlobStore(tmp_path / "blobs")))
    assert episode.finish_reason == "error" and "prefix step 1 is an answer" in (episode.error or "")
