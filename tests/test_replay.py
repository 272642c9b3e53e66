"""`arena replay`: terminal step-through, and `--check` re-executing recorded tool calls against the world."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.review.replay import check_episode
from arena.review.rundata import load_run
from arena.runs.runner import run

SCRIPT = [{"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 50, 1000, 250], "label": "sign"}},
          {"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse built"}},
          {"tool": "image_search_tool", "arguments": {}},
          {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 0, 0]}},
          {"answer": "1874"}]


def recorded_run(tiny_data: Path, tmp_path: Path):
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SCRIPT}, task_ids=["q1"],
                         out=str(tmp_path / "logs"), run_id="recorded"))


def test_check_reproduces_a_deterministic_world(tiny_data: Path, tmp_path: Path) -> None:
    result = recorded_run(tiny_data, tmp_path)
    data = load_run(result.run_dir)
    [episode] = data.episodes
    assert episode.totals.invalid_calls == 1
    assert asyncio.run(check_episode(data, episode)) == []


def test_check_reports_observations_that_changed(tiny_data: Path, tmp_path: Path) -> None:
    result = recorded_run(tiny_data, tmp_path)
    docs = tiny_data.parent / "corpus" / "docs.jsonl"
    rows = [json.loads(line) for line in docs.read_text().splitlines()]
    rows[0]["text"] = rows[0]["text"].replace("1874", "1875")
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_run(result.run_dir)
    differences = asyncio.run(check_episode(data, data.episodes[0]))
    assert [(d.round, d.tool, d.field) for d in differences] == [(2, "text_search_tool", "text")]
    assert "1874" in differences[0].recorded and "1875" in differences[0].replayed

    out = CliRunner().invoke(app, ["replay", str(result.run_dir), "--episode", data.episodes[0].id[:10], "--check"])
    assert out.exit_code == 1
    assert "observations that differ" in out.output and "text_search_tool" in out.output


def test_check_notices_a_changed_image(tiny_data: Path, tmp_path: Path) -> None:
    from PIL import Image

    result = recorded_run(tiny_data, tmp_path)
    scene = tiny_data.parent / "images" / "scene.png"
    image = Image.open(scene).convert("RGB")
    image.paste((0, 0, 0), (1200, 100, 1500, 200))
    image.save(scene)
    data = load_run(result.run_dir)
    fields = {(d.round, d.field) for d in asyncio.run(check_episode(data, data.episodes[0]))}
    assert (1, "images") in fields


def test_replay_lists_and_shows_episodes(tiny_data: Path, tmp_path: Path) -> None:
    result = recorded_run(tiny_data, tmp_path)
    listing = CliRunner().invoke(app, ["replay", str(result.run_dir)])
    assert listing.exit_code == 0 and "q1|search+crop|10|0|scripted" in listing.output
    shown = CliRunner().invoke(app, ["replay", str(result.run_dir), "--episode", "q1|search+crop|10|0|scripted",
                                     "--check"])
    assert shown.exit_code == 0, shown.output
    assert "round 1 · tool_call · image_zoom_in_tool" in shown.output
    assert "every recorded observation was reproduced" in shown.output
    missing = CliRunner().invoke(app, ["replay", str(result.run_dir), "--episode", "nope"])
    assert missing.exit_code == 2 and "no episode" in missing.output
