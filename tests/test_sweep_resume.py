"""Killing a sweep (SIGKILL, mid-way) and resuming it gives the same summary as an uninterrupted sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub
from tests.test_sweep_support import policy, policy_config, timeless, write_sweep_dataset

ARENA = str(Path(sys.executable).with_name("arena"))  # the console script, as a user runs it

REPO = Path(__file__).resolve().parent.parent


def arena(*args: str) -> list[str]:
    return [ARENA, *args]


def test_killed_sweep_resumes_to_the_same_summary(tmp_path: Path) -> None:
    needs = [2, 9, 13]
    data = write_sweep_dataset(tmp_path / "data", needs=needs)
    logs = tmp_path / "logs"
    total = len(needs) * 5

    def slow_policy(request):
        time.sleep(0.03)
        return policy(request)

    with OpenAIStub(slow_policy) as server:
        command = arena("sweep", "--data", str(data), "--agent", "openai", "--model", "policy",
                        "--base-url", server.base_url, "--temperature", "0", "--max-rounds", "6,8,10,12,14",
                        "--judge", "normalized", "--concurrency", "2", "--run-id", "killed", "--out", str(logs),
                        "--protocol", "arena")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        episodes = logs / "killed" / "episodes.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if episodes.is_file() and episodes.read_text().count("\n") >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stderr:
            proc.stderr.close()
        at_kill = len(RunStore(logs / "killed").episodes())
        assert 3 <= at_kill < total

        resumed = subprocess.run(arena("resume", str(logs / "killed")), cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        reference = run(policy_config(data, server.base_url, logs, run_id="reference", concurrency=2))

    store = RunStore(logs / "killed")
    summary = json.loads(store.summary_path.read_text())
    assert timeless(summary) == timeless(reference.summary)
    assert len(store.episodes()) == total
    assert json.loads(store.run_json.read_text())["resumed"] == 1
