"""The Ray backend on a real local Ray cluster gets the same results as the asyncio backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.runs.runner import run
from tests.support.openai_server import OpenAIStub
from tests.test_sweep_support import ConcurrencyProbe, assert_same_run, policy_config, write_sweep_dataset
from tests.test_workers import forked_requests

ray = pytest.importorskip("ray")


def test_ray_backend_matches_asyncio(tmp_path: Path) -> None:
    data = write_sweep_dataset(tmp_path / "data", needs=[2, 7])
    probe = ConcurrencyProbe(0.01)

    with OpenAIStub(probe) as server:
        fields = dict(max_rounds=[4, 8], settings=["search+crop", "no-tool"])
        local = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="local", **fields))
        probe.max = 0
        on_ray = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="ray", backend="ray",
                                   ray_workers=2, endpoint_limits={"*": {"max_parallel": 1}}, **fields))
    assert not ray.is_initialized()
    assert probe.max == 1
    assert len(local.episodes) == 2 * 2 * 2
    # the calls Ray workers made are recorded (sent back with the episode, written by the driver) as asyncio's are
    assert_same_run(on_ray, local)


def test_a_fork_on_ray_sends_again_the_recorded_request_as_asyncio_does(tiny_data: Path, tmp_path: Path) -> None:
    """The Ray worker that plays a forked episode gets the recorded request with the job (tests/test_workers.py)."""
    local, on_ray, original = forked_requests(tiny_data, tmp_path, backend="ray", ray_workers=1)
    assert len(local) == 3 and json.loads(local[0]) == {**original[3], "model": "qwen2"}
    assert on_ray == local
    assert not ray.is_initialized()


def test_ray_workers_on_a_cluster_sharing_the_run_directory_append_its_records_themselves(
        tmp_path: Path, monkeypatch) -> None:
    """Issue 29 across machines: Ray actors of a cluster (here one the driver joins by address, `local`) append the
    records of the episodes they finish to the run directory themselves when every node mounts it
    (`ray_shared_dir`), as local worker processes do: the driver appends none, and the run equals the asyncio one."""
    from arena.core.jsonl import Appender
    from arena.store.shared_appends import SharedAppends

    data = write_sweep_dataset(tmp_path / "data", needs=[2, 7])

    def refuse(self, *args, **kwargs):
        raise AssertionError("a record appended in the driver")

    with OpenAIStub(lambda request: "<answer>x</answer>") as server:
        local = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="local", max_rounds=[4]))
        try:
            with monkeypatch.context() as patched:
                for cls, name in ((Appender, "append"), (SharedAppends, "append"), (SharedAppends, "append_episode")):
                    patched.setattr(cls, name, refuse)
                shared = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="cluster", backend="ray",
                                           ray_address="local", ray_workers=1, ray_shared_dir=True, max_rounds=[4]))
        finally:
            ray.shutdown()  # joined by address: the run leaves the cluster running
    assert not shared.unwritten
    assert_same_run(shared, local)
