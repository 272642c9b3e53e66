"""Worker processes (`--workers`) are forked from a fork server that has imported the arena once, and still see
what the driver sees when they start: its environment, `sys.path` (an entry-point plug-in installed after the
fork server started is loaded in them) and working directory. Keys are read from the environment: a fork server
started before a variable was set must not hide it from the workers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arena.runs.backends.worker_backend import WorkerBackend, prepare_workers, worker_context
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.tiny_dataset import write_tiny_dataset
from tests.test_plugins import install_plugin


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[WorkerBackend]:
    backends: list[WorkerBackend] = []
    real = WorkerBackend.__init__

    def keep(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.parents = [parent_of(pid) for pid in self.pids]  # while the workers live
        backends.append(self)
    monkeypatch.setattr(WorkerBackend, "__init__", keep)
    return backends


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads parent pids from Linux /proc")
def test_workers_are_forked_from_the_fork_server_and_play_a_plugin_installed_after_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: list[WorkerBackend]) -> None:
    prepare_workers()  # the fork server runs before the plug-in exists
    assert worker_context().get_start_method() == "forkserver"
    site = install_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ARENA_WORKER_START_PROBE", "seen")
    monkeypatch.chdir(tmp_path)
    data = write_tiny_dataset(tmp_path / "data", n_items=3)
    result = run(RunConfig(data=str(data), agent="echo-agent", settings=["echo"], judge="echo-judge",
                           protocol="arena", out="logs", workers=2, run_id="echo"))
    assert len(result.episodes) == 3 and all(e.answer == "hello" for e in result.episodes)
    verdicts = [json.loads(line) for line in (tmp_path / "logs" / "echo" / "verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == 3 and all(v["correct"] for v in verdicts)
    [backend] = made
    servers = set(backend.parents)
    assert len(servers) == 1 and os.getpid() not in servers  # forked by one server, not by the driver
    assert parent_of(next(iter(servers))) == os.getpid()  # the driver's fork server (it still runs)


ENV_PROBE = '''
import os
from arena.core.agent import Agent, AgentTurn, register_agent


class EnvAgent(Agent):
    id = "env-agent"

    async def act(self, view):
        seen = f"{os.environ.get('ARENA_WORKER_START_PROBE')}|{os.path.basename(os.getcwd())}"
        return AgentTurn(output=seen, action="answer", answer=seen)


@register_agent("env-agent")
def env_agent():
    return EnvAgent()
'''


def test_a_worker_sees_the_drivers_environment_and_directory_as_they_are_when_it_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare_workers()
    site = tmp_path / "site"
    (site / "arena_env_probe").mkdir(parents=True)
    (site / "arena_env_probe" / "__init__.py").write_text(ENV_PROBE)
    info = site / "arena_env_probe-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arena-env-probe\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[arena]\nenv_probe = arena_env_probe\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ARENA_WORKER_START_PROBE", "seen")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    data = write_tiny_dataset(tmp_path / "data", n_items=2)
    result = run(RunConfig(data=str(data), agent="env-agent", settings=["no-tool"], judge="normalized",
                           protocol="arena", out=str(tmp_path / "logs"), workers=2, run_id="env"))
    assert [e.answer for e in result.episodes] == ["seen|here", "seen|here"]
