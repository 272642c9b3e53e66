"""Killing a run with SIGKILL and re-running the same command loses and duplicates nothing."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import write_tiny_dataset

ARENA = str(Path(sys.executable).with_name("arena"))  # the console script, as a user runs it


def slow_answer(request):
    return Reply(content="<answer>1874</answer>", delay=0.15)


def arena_run(server, data: Path, out: Path) -> list[str]:
    return [ARENA, "run", "--data", str(data), "--agent", "openai", "--model", "m",
            "--base-url", server.base_url, "--judge", "normalized", "--concurrency", "2", "--repeats", "2",
            "--out", str(out), "--run-id", "killed"]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_sigkill_then_rerun_loses_nothing(tmp_path):
    data = write_tiny_dataset(tmp_path / "data", n_items=8)
    out = tmp_path / "logs"
    episodes_file = out / "killed" / "episodes.jsonl"
    with OpenAIStub(slow_answer) as server:
        proc = subprocess.Popen(arena_run(server, data, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline and len(lines(episodes_file)) < 3:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = lines(episodes_file)
        assert 3 <= len(before) < 16, "the run must be killed mid-way"
        served_before = len(server.requests)

        done = subprocess.run(arena_run(server, data, out), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        after = lines(episodes_file)
        served_after = len(server.requests)

    keys = [e["key"] for e in after]
    assert len(keys) == len(set(keys)) == 16
    assert [e["id"] for e in after[: len(before)]] == [e["id"] for e in before]
    assert served_after - served_before == 16 - len(before)
    verdicts = lines(out / "killed" / "verdicts.jsonl")
    assert {v["episode_id"] for v in verdicts} == {e["id"] for e in after}
    summary = json.loads((out / "killed" / "summary.json").read_text())
    assert summary["groups"][0]["episodes"] == 16 and summary["groups"][0]["repeats"] == 2
    assert "Pass@1" in done.stdout
