"""The Ray backend on a real local Ray cluster gets the same results as the asyncio backend."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
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
                for cls, name in ((Appender, "append"), (SharedAppends, "append"), (SharedAppends, "append_episode"),
                                  (SharedAppends, "append_finished")):
                    patched.setattr(cls, name, refuse)
                shared = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="cluster", backend="ray",
                                           ray_address="local", ray_workers=1, ray_shared_dir=True, max_rounds=[4]))
        finally:
            ray.shutdown()  # joined by address: the run leaves the cluster running
    assert not shared.unwritten
    assert_same_run(shared, local)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def silent_listener(host: str) -> socket.socket:
    """A TCP port that accepts connections and never says anything (no Ray cluster behind it)."""
    listener = socket.socket()
    listener.bind((host, 0))
    listener.listen(64)
    return listener


def test_an_unreachable_ray_address_stops_at_once_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from arena.cli.main import app
    from tests.support.tiny_dataset import write_tiny_dataset
    data = write_tiny_dataset(tmp_path / "data", n_items=1)
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", server.base_url,
            "--judge", "normalized", "--out", str(tmp_path / "logs"), "--run-id", "r", "--backend", "ray",
            "--ray-address", address])
    elapsed = time.monotonic() - started
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code != 0 and elapsed < 30, (elapsed, result.output)
    assert len(errors) == 1 and address in errors[0] and f"ray status --address {address}" in " ".join(
        result.output.split()), result.output
    assert "RAY_NODE_IP_ADDRESS" in " ".join(result.output.split())
    assert not (tmp_path / "logs" / "r").exists() and not ray.is_initialized()


def test_a_head_on_loopback_that_ray_dials_at_this_machines_ip_is_named() -> None:
    from arena.runs.backends.ray_address import dialled_address, ray_address_problem
    with silent_listener("127.0.0.1") as listener:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        dialled = dialled_address(address)
        if dialled in (None, address):
            pytest.skip("Ray dials loopback itself on this machine (no other interface)")
        problem = ray_address_problem(address)
    assert problem and f"Ray dials the GCS at {dialled}" in problem and "ray status --address" in problem


JOIN_SCRIPT = """
import sys, time, ray
from arena.runs.backends.ray_address import join_cluster
started = time.monotonic()
try:
    join_cluster(ray, sys.argv[1], {"include_dashboard": False, "log_to_driver": False}, deadline=float(sys.argv[2]))
except RuntimeError as exc:
    print(f"error: {exc}", flush=True)
    print(f"after {time.monotonic() - started:.1f} s", flush=True)
    sys.exit(2)
"""


def join(address: str, deadline: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, "-c", JOIN_SCRIPT, address, str(deadline)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_port_that_is_no_ray_cluster_stops_at_the_deadline_and_sigterm_ends_the_join_at_once() -> None:
    """Ray's own join would retry for minutes (its "Failed to connect to GCS" every 5 s): the arena's stops at its
    deadline with one line, and SIGTERM during it ends the process at once (Ray sets no SIGTERM handler of its own
    outside the main thread)."""
    with silent_listener("0.0.0.0") as listener:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        stopped = join(address, 2.0)
        output, _ = stopped.communicate(timeout=60)
        assert stopped.returncode == 2 and f"error: --ray-address {address}: no Ray cluster answered within 2 s" \
            in output, output
        killed = join(address, 120.0)
        time.sleep(4.0)  # Ray imported, the join under way
        sent = time.monotonic()
        killed.send_signal(signal.SIGTERM)
        killed.communicate(timeout=30)
        assert time.monotonic() - sent < 5 and killed.returncode == -signal.SIGTERM
