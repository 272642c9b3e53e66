"""SIGKILL with `--workers` (issue 29): of the driver alone, or of one worker, at a moment when episodes are in flight.
Re-running the same command loses nothing finished, duplicates nothing, plays again what was in flight, and every
blob the episodes name (written by the workers themselves into the run's store) is there. A driver killed alone
leaves no worker or fork server behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, bench_responder
from tests.support.tiny_dataset import write_tiny_dataset

ARENA = str(Path(sys.executable).with_name("arena"))
GRID = 16


def arena_run(base_url: str, data: Path, out: Path) -> list[str]:
    return [ARENA, "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", base_url,
            "--judge", "normalized", "--concurrency", "4", "--repeats", "2", "--workers", "2", "--out", str(out),
            "--run-id", "killed"]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True)
            if line.endswith(b"\n") and line.strip()] if path.exists() else []


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_complete(out: Path, before: list[dict], done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    store = RunStore(out / "killed")
    after = records(store.episodes_path)
    finished = [e for e in after if e["finish_reason"] != "error"]
    keys = [e["key"] for e in finished]
    assert len(keys) == len(set(keys)) == GRID  # nothing lost, nothing duplicated
    kept = {e["key"]: e["id"] for e in before if e["finish_reason"] != "error"}
    assert {k: v for k, v in ((e["key"], e["id"]) for e in finished) if k in kept} == kept  # not played again
    named = {b for e in finished for b in e["images"]} | \
        {b for e in finished for s in e["steps"] if s.get("observation") for b in s["observation"]["images"]}
    assert named and all(store.blobs.path(b).is_file() for b in named)
    verdicts = records(store.verdicts_path)
    assert {e["id"] for e in finished} <= {v["episode_id"] for v in verdicts}
    assert json.loads(store.summary_path.read_text())["groups"][0]["episodes"] == GRID


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from Linux /proc")
def test_sigkill_of_the_driver_alone_leaves_no_worker_and_the_rerun_loses_and_duplicates_nothing(
        tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=GRID // 2)
    out = tmp_path / "logs"
    episodes = out / "killed" / "episodes.jsonl"
    with OpenAIStub(bench_responder(0.15), keep=False) as server:
        proc = subprocess.Popen(arena_run(server.base_url, data, out), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline and len(records(episodes)) < 3:
            time.sleep(0.05)
        below = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the driver only: its fork server and workers must end by themselves
        proc.wait()
        before = records(episodes)
        assert 3 <= len(before) < GRID, "the run must be killed mid-way"
        assert len(below) >= 3  # the fork server and two workers (at least)
        deadline = time.time() + 20
        while time.time() < deadline and any(running(p) for p in below):
            time.sleep(0.1)
        assert not [p for p in below if running(p)], "processes of the killed driver are still running"
        done = subprocess.run(arena_run(server.base_url, data, out), capture_output=True, text=True, timeout=300)
    assert_complete(out, before, done)


def test_sigkill_of_one_worker_fails_the_run_and_the_rerun_plays_its_episodes_again(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=GRID // 2)
    out = tmp_path / "logs"
    episodes = out / "killed" / "episodes.jsonl"
    with OpenAIStub(bench_responder(0.15), keep=False) as server:
        proc = subprocess.Popen(arena_run(server.base_url, data, out), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline and len(records(episodes)) < 3:
            time.sleep(0.05)
        workers = [p for p in descendants(proc.pid)
                   if "arena-worker" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
                   or _is_worker(p)]
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
        before = records(episodes)
        assert proc.returncode != 0 and "exit code -9" in stdout + stderr
        assert len(before) < GRID
        done = subprocess.run(arena_run(server.base_url, data, out), capture_output=True, text=True, timeout=300)
    assert_complete(out, before, done)


def _is_worker(pid: int) -> bool:
    """A worker process: a grandchild of the driver through its fork server (the fork server's own children)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    parent = int(stat.rsplit(")", 1)[1].split()[1])
    try:
        return b"forkserver" in Path(f"/proc/{parent}/cmdline").read_bytes()
    except OSError:
        return False
