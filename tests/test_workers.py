"""`--workers N`: episodes played by local worker processes get the same results and the same recorded model calls
as the asyncio backend; the driver alone writes; endpoint limits, resume and stops hold across processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from typer.testing import CliRunner

from arena.store.calls import read_calls
from arena.cli.main import app
from arena.runs.config import AgentChoice, RunConfig
from arena.runs.fork import fork_config
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.store.run_index import EpisodeIndex
from arena.store.store import RunStore
from arena.runs.backends.worker_backend import WorkerBackend, WorkerError, worker_main
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.real_server import RealServer, Rules
from tests.support.tiny_dataset import write_tiny_dataset
from tests.test_real_servers import arena_run, cropper
from tests.test_sweep_support import (ConcurrencyProbe, assert_same_run, comparable, policy_config,
                                       write_sweep_dataset)
from tests.test_transcript import crop_agent

cli = CliRunner()


def forked_requests(tiny_data: Path, tmp_path: Path, **backend) -> tuple[list[bytes], list[bytes], list[dict]]:
    """Fork a recorded 6-round crop episode at round 3 with a new model that renders images smaller than the
    recording, once under asyncio and once with `backend` (RunConfig fields): the raw bodies of the new model's
    requests under each, and the source's requests."""
    with OpenAIStub(crop_agent(False)) as server:
        source = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], run_id="source", judge="normalized",
                               agent_options={"model": "qwen", "base_url": server.base_url}))
        [episode] = source.episodes
        bodies = {}
        for run_id, fields in (("forked-local", {}), ("forked-other", backend)):
            before = len(server.exchanges)
            config = fork_config(load_run(source.run_dir), episode.id, 3, AgentChoice(agent="openai", options={
                "model": "qwen2", "base_url": server.base_url, "image_max_pixels": 60000}), run_id=run_id)
            forked = run(config.updated(**fields))
            info = RunStore(forked.run_dir).info()
            assert info.forked_from["recorded_request"] is True
            assert {k: getattr(info.config.schedule, k) for k in fields} == fields
            bodies[run_id] = [body for body, status, _ in server.exchanges[before:]
                              if status == 200 and json.loads(body)["model"] == "qwen2"]
            [fork_episode] = forked.episodes
            recorded = [c["request"] for c in read_calls(forked.run_dir, fork_episode.key)]
            assert recorded == [json.loads(body) for body in bodies[run_id]]
        original = [json.loads(body) for body, status, _ in server.exchanges
                    if status == 200 and json.loads(body)["model"] == "qwen"]
    return bodies["forked-local"], bodies["forked-other"], original


def test_a_fork_with_workers_sends_again_the_recorded_request_as_asyncio_does(tiny_data: Path, tmp_path: Path) -> None:
    """The worker that plays a forked episode gets the recorded request with the job: its first request is, byte for
    byte, the one the asyncio backend sends (the source's round-4 request with the new model), and so are the
    requests that extend it."""
    local, spread, original = forked_requests(tiny_data, tmp_path, workers=2)
    assert len(local) == 3 and json.loads(local[0]) == {**original[3], "model": "qwen2"}
    assert spread == local


def test_workers_match_asyncio_record_every_call_and_resume(tmp_path: Path) -> None:
    data = write_sweep_dataset(tmp_path / "data", needs=[2, 7])
    probe = ConcurrencyProbe(0.01)
    fields = dict(max_rounds=[4, 8], settings=["search+crop", "no-tool"])
    with OpenAIStub(probe) as server:
        local = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="local", **fields))
        probe.max = 0
        config = policy_config(data, server.base_url, tmp_path / "logs", run_id="workers", workers=2,
                               endpoint_limits={"*": {"max_parallel": 1}}, **fields)
        spread = run(config)
        assert probe.max == 1  # the driver's gate held across both processes
        played = len(server.requests)

        store = RunStore(spread.run_dir)
        assert store.info().config.schedule.workers == 2
        assert store.info().fingerprint == RunStore(local.run_dir).info().fingerprint
        assert len(local.episodes) == 2 * 2 * 2
        assert_same_run(spread, local)  # every call the workers made is in calls.jsonl, as asyncio records it
        by_key = {e.key: e for e in local.episodes}

        # resume: the last two records are lost; the same run with workers plays only what is missing
        lines = store.episodes_path.read_bytes().splitlines(keepends=True)
        store.episodes_path.write_bytes(b"".join(lines[:-2]))
        lost = {json.loads(line)["key"] for line in lines[-2:]}
        resumed = run(config)
        assert resumed.ran == len(lost) and len(server.requests) > played
    assert sorted(e.key for e in resumed.episodes) == sorted(by_key)
    for episode in resumed.episodes:
        assert comparable(episode) == comparable(by_key[episode.key])
    assert RunStore(resumed.run_dir).info().resumed == 1


def test_workers_stop_the_run_on_fail_fast_and_max_cost(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=24)

    def refuse(request: dict) -> Reply:  # every request refused, as a server rejecting the model name would
        return Reply(status=400, error="model 'm' does not exist", delay=0.05)

    base = {"data": str(data), "agent": "openai", "judge": "normalized", "out": str(tmp_path / "logs"),
            "concurrency": 2, "workers": 2, "max_rounds": [3]}
    with OpenAIStub(refuse) as server:
        options = {"model": "m", "base_url": server.base_url, "max_retries": 0}
        refused = run(RunConfig(**base, run_id="refused", fail_fast=2, agent_options=options))
    assert refused.stopped and "refused by the server" in refused.stopped
    assert refused.unrecorded > 0 and len(refused.episodes) < 24

    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        options = {"model": "m", "base_url": server.base_url, "max_retries": 0}
        costly = run(RunConfig(**base, run_id="costly", price=[100, 100], max_cost=0.004, agent_options=options))
    assert costly.stopped and "--max-cost" in costly.stopped
    assert 1 <= len(costly.episodes) < 24
    assert costly.unrecorded == 24 - len(costly.episodes)


def test_the_cli_option_is_recorded_and_resume_can_change_it(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=3)
    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        ran = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url",
                               server.base_url, "--judge", "normalized", "--out", str(tmp_path / "logs"),
                               "--run-id", "r", "--workers", "2", "--max-rounds", "2"])
        assert ran.exit_code == 0, ran.output
        run_dir = tmp_path / "logs" / "r"
        assert RunStore(run_dir).info().config.schedule.workers == 2
        resumed = cli.invoke(app, ["resume", str(run_dir), "--workers", "1"])
        assert resumed.exit_code == 0, resumed.output
    assert RunStore(run_dir).info().config.schedule.workers == 1
    key = RunStore(run_dir).episodes()[0].key
    shown = cli.invoke(app, ["transcript", str(run_dir), "--episode", key, "--json"])
    assert shown.exit_code == 0, shown.output
    agent = [json.loads(line) for line in shown.output.splitlines() if '"role": "agent"' in line or
             '"role":"agent"' in line]
    assert len(agent) == 1 and agent[0]["response"]["choices"][0]["message"]["content"] == "<answer>1874</answer>"


def test_limits_learned_in_workers_reach_run_json_and_workers_of_the_next_session(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    with RealServer(cropper, Rules(flavour="vllm", max_images=4, max_context=12000)) as server:
        first = arena_run(data, tmp_path / "logs", server.base_url, "--workers", "2")
        assert first.exit_code == 0, first.output
        store = RunStore(tmp_path / "logs" / "r")
        assert store.info().learned_limits["openai:qwen"]["max_images"] == 4  # learned in a worker
        refused = len(server.refused)
        assert refused >= 1
        lines = store.episodes_path.read_bytes().splitlines(keepends=True)
        store.episodes_path.write_bytes(b"".join(lines[:-1]))  # one episode to play again
        again = cli.invoke(app, ["resume", str(store.dir), "--workers", "1"])
        assert again.exit_code == 0, again.output
        assert len(server.refused) == refused  # the new worker started with the limit: no request refused
    assert len(RunStore(store.dir).episodes()) == len(lines)


@pytest.fixture
def made(monkeypatch) -> list[WorkerBackend]:
    """Every `WorkerBackend` the test's runs make, in order (their processes, pids and exit codes)."""
    backends: list[WorkerBackend] = []
    start = WorkerBackend.__init__

    def keep(self, *args, **kwargs) -> None:
        start(self, *args, **kwargs)
        backends.append(self)
    monkeypatch.setattr(WorkerBackend, "__init__", keep)
    return backends


def test_a_worker_killed_mid_run_fails_the_run_with_its_exit_code(tmp_path: Path, made: list[WorkerBackend]) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=8)
    killed: list[int] = []

    def respond(request: dict) -> Reply:  # the first request kills worker 0 (it holds episodes in flight)
        if not killed:
            killed.append(made[0].pids[0])
            os.kill(killed[0], signal.SIGKILL)
        return Reply(content="<answer>1874</answer>", delay=0.2)
    with OpenAIStub(respond) as server:
        config = RunConfig(data=str(data), agent="openai", judge="normalized", out=str(tmp_path / "logs"),
                           run_id="killed", concurrency=4, workers=2,
                           agent_options={"model": "m", "base_url": server.base_url, "max_retries": 0})
        with pytest.raises(WorkerError) as failed:
            run(config)
    assert f"worker process 0 (pid {killed[0]}) exited (exit code -9)" in str(failed.value)
    assert all(not p.is_alive() for p in made[0].procs)


def test_workers_write_the_blobs_into_the_runs_store_themselves_and_send_none_to_the_driver(
        tmp_path: Path, monkeypatch) -> None:
    """Blobs never travel (issue 29): a worker writes the task image and its crops into the run's blob store
    itself, so the driver receives no blob bytes; every blob the episodes and their recorded calls name is in the
    run's store (worker 0's first episode is handed over late, as before, so that jobs overlap)."""
    import arena.runs.backends.worker_backend as workers

    received: list[str] = []
    late: list[int] = []
    real = workers.receive

    async def counting(store, writer, agents, episode_json, new, *rest):
        received.extend(new)
        if rest[-1] == "worker process 0" and not late:  # worker 0's first episode is stored late, so worker 1's
            late.append(1)                                  # ends first: the next job must not reach worker 0
            await asyncio.sleep(0.5)                        # before its confirmation
        return await real(store, writer, agents, episode_json, new, *rest)
    monkeypatch.setattr(workers, "receive", counting)
    data = write_tiny_dataset(tmp_path / "data", n_items=6)
    task_image = (data.parent / "images" / "scene.png").read_bytes()
    with OpenAIStub(crop_agent(False)) as server:
        result = run(RunConfig(data=str(data), agent="openai", out=str(tmp_path / "logs"), max_rounds=[4],
                               judge="normalized", concurrency=2, workers=2,
                               agent_options={"model": "qwen", "base_url": server.base_url}))
    assert len(result.episodes) == 6
    store = RunStore(result.run_dir)
    assert received == []  # (before: the task image once per worker, each crop once per worker)
    assert any(p.read_bytes() == task_image for p in (store.dir / "blobs").rglob("*") if p.is_file())
    named = {b for e in result.episodes for b in e.images} | \
        {b for e in result.episodes for s in e.steps if s.observation for b in s.observation.images}
    assert len(named) == 4 and all(store.blobs.path(b).is_file() for b in named)  # the task image, three crops
    for episode in result.episodes:  # every image of every recorded request rebuilt from its blob
        assert len(read_calls(result.run_dir, episode.key)) == episode.totals.rounds == 4


def test_workers_end_with_exit_code_0_after_a_run_and_1_after_a_failure_they_reported(
        tmp_path: Path, made: list[WorkerBackend]) -> None:
    """A worker ends by `os._exit` once its messages are flushed: after a run every worker has exited with 0 and
    every episode arrived; a worker that cannot start reports why, then exits with 1."""
    data = write_tiny_dataset(tmp_path / "data", n_items=4)
    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        result = run(RunConfig(data=str(data), agent="openai", judge="normalized", out=str(tmp_path / "logs"),
                               concurrency=4, workers=2, agent_options={"model": "m", "base_url": server.base_url}))
    assert len(result.episodes) == 4 and [p.exitcode for p in made[0].procs] == [0, 0]

    context = multiprocessing.get_context("spawn")
    jobs, results = context.Queue(), context.Queue()
    proc = context.Process(target=worker_main, args=("{not json", "r", jobs, results, 3, {}))
    proc.start()
    kind, worker, message = results.get(timeout=60)
    proc.join(timeout=30)
    assert (kind, worker, proc.exitcode) == ("failed", 3, 1) and "ValidationError" in message


def test_the_workers_wind_down_while_the_summary_is_made(tmp_path: Path, made: list[WorkerBackend],
                                                          monkeypatch) -> None:
    """Once every episode has landed, the worker processes are told to stop before the driver reads the run back
    for its summary (their shutdown overlaps it instead of following it); the summary still counts their CPU, every
    episode is in it, and every worker exits with 0."""
    events: list[str] = []
    stop, write_summary = WorkerBackend.aclose, RunStore.write_summary

    async def stopping(self) -> None:
        events.append("workers told to stop")
        await stop(self)
        events.append("workers stopped")

    def writing(self, summary) -> None:
        events.append("summary written")
        write_summary(self, summary)
    monkeypatch.setattr(WorkerBackend, "aclose", stopping)
    monkeypatch.setattr(RunStore, "write_summary", writing)
    data = write_tiny_dataset(tmp_path / "data", n_items=4)
    with OpenAIStub(lambda request: "<answer>1874</answer>") as server:
        result = run(RunConfig(data=str(data), agent="openai", judge="normalized", out=str(tmp_path / "logs"),
                               concurrency=4, workers=2, agent_options={"model": "m", "base_url": server.base_url}))
    assert events[0] == "workers told to stop" and events.count("summary written") == 1
    assert set(events) == {"workers told to stop", "workers stopped", "summary written"}
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["harness"]["episodes"] == 4 and summary["harness"]["worker_cpu_seconds"] > 0
    assert [p.exitcode for p in made[0].procs] == [0, 0]


def run_script(script: Path, text: str) -> subprocess.CompletedProcess:
    """Run `text` as the file `script` in a new interpreter at the repository's root (a spawned child of it can
    import the script's functions, which a `-c` program's children cannot)."""
    script.write_text(text)
    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})


# A worker in which a library made a multiprocessing lock, as tqdm does for bm25s' progress bars in every worker
# that searches text; run as a file so that the spawned child can import `child`.
LOCK_IN_A_WORKER = """
import multiprocessing
from arena.runs.backends.worker_backend import worker_main

KEPT = []

def child(*args):
    KEPT.append(multiprocessing.RLock())  # kept for the process's life, as tqdm keeps its lock
    worker_main(*args)

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    jobs, results = context.Queue(), context.Queue()
    proc = context.Process(target=child, args=("{not json", "r", jobs, results, 0, {}))
    proc.start()
    print(results.get(timeout=60)[0])
    proc.join(timeout=30)
    print(proc.exitcode)
"""


def test_a_worker_ending_by_os_exit_still_unlinks_the_semaphores_made_in_it(tmp_path: Path) -> None:
    """Ending by `os._exit` skips the interpreter's teardown but not its exit handlers: a semaphore a library made
    in the worker is unlinked by the worker, so the driver's resource tracker has nothing to warn about."""
    done = run_script(tmp_path / "lock_in_a_worker.py", LOCK_IN_A_WORKER)
    assert done.stdout.split() == ["failed", "1"], done.stderr
    assert "leaked semaphore" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr


# A worker whose driver is gone, with a message still in its queue that nobody will read.
UNREAD_MESSAGE = """
import multiprocessing
from arena.runs.backends.worker_backend import end_process

def child(results):
    results.put(b"x" * (4 << 20))  # more than the pipe holds: its feeder thread blocks for good
    end_process(results, False, 0)

if __name__ == "__main__":
    results = multiprocessing.get_context("spawn").Queue()
    proc = multiprocessing.get_context("spawn").Process(target=child, args=(results,))
    proc.start()
    proc.join(timeout=30)
    print(proc.exitcode)
    if proc.exitcode is None:
        proc.kill()
"""


def test_a_worker_whose_driver_is_gone_ends_though_its_last_message_cannot_be_delivered(tmp_path: Path) -> None:
    """The exit handlers join a queue's feeder thread; with nobody left to read the pipe that would never return:
    the worker cancels that join first, and ends with its code."""
    done = run_script(tmp_path / "unread_message.py", UNREAD_MESSAGE)
    assert done.stdout.split() == ["0"], done.stdout + done.stderr


def test_workers_finish_their_episodes_and_the_driver_parses_and_judges_none(
        tiny_data: Path, tmp_path: Path, monkeypatch) -> None:
    """The driver leaves the per-episode path (issue 29): a worker prices, serialises and judges the episodes it plays
    (the llm judge's calls recorded as calls.jsonl lines, its cache lines sent back as bytes), and the driver appends
    the bytes it is sent: in the driver no episode record is parsed and no judge scores while the run plays, yet
    the records are those of the asyncio backend."""
    from arena.core.trajectory import Episode
    from arena.judges.llm import LLMJudge
    from tests.support.qwen_script import respond
    from tests.test_openai_run import config_for

    with OpenAIStub(respond) as server:
        local = run(config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10], run_id="local"))
        parsed: list[bytes] = []
        parse = Episode.model_validate_json

        def counted(data, *args, **kwargs):
            parsed.append(data)
            return parse(data, *args, **kwargs)

        async def refuse(self, episode, blobs=None):
            raise AssertionError("judged in the driver")

        with monkeypatch.context() as patched:
            patched.setattr(Episode, "model_validate_json", counted)
            patched.setattr(LLMJudge, "score", refuse)
            spread = run(config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10], run_id="workers",
                                    workers=2))
            assert parsed == []
    assert not spread.unwritten and spread.stopped is None
    assert_same_run(spread, local)
    judged = {(v.key, v.correct, v.rationale) for v in spread.verdicts}
    assert judged == {(v.key, v.correct, v.rationale) for v in local.verdicts} and len(judged) == 2
    judge_calls = [c for e in spread.episodes for c in read_calls(spread.run_dir, e.key) if c["role"] == "judge"]
    assert len(judge_calls) == 3  # one correctness call, two evidence checks (assert_same_run: as asyncio recorded)
    cache = (spread.run_dir / "judge_cache.jsonl").read_text().splitlines()
    assert cache == (local.run_dir / "judge_cache.jsonl").read_text().splitlines() and len(cache) == 1
    costs = {e.key: e.meta.get("cost") for e in spread.episodes}
    assert costs == {e.key: e.meta.get("cost") for e in local.episodes}



def test_workers_append_their_own_records_and_the_driver_writes_none(
        tiny_data: Path, tmp_path: Path, monkeypatch) -> None:
    """Issue 29: each worker appends the records of the episodes it finished (episode line, index entry, verdicts,
    calls.jsonl and judge-cache lines) under the run's append lock, and sends the driver a brief once they are on
    disk: in the driver no record is appended while the run plays, yet the run directory holds what the asyncio
    backend writes, and every reader reads it as before (the index, the frame, the summary)."""
    from arena.core.jsonl import Appender
    from arena.store.shared_appends import SharedAppends
    from tests.support.qwen_script import respond
    from tests.test_openai_run import config_for

    def refuse(self, *args, **kwargs):
        raise AssertionError("a record appended in the driver")

    with OpenAIStub(respond) as server:
        local = run(config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10], run_id="local"))
        with monkeypatch.context() as patched:
            for cls, name in ((Appender, "append"), (SharedAppends, "append"), (SharedAppends, "append_episode")):
                patched.setattr(cls, name, refuse)
            spread = run(config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10], run_id="workers",
                                    workers=2))
    assert not spread.unwritten and spread.stopped is None
    assert_same_run(spread, local)
    store = RunStore(spread.run_dir)
    assert store.index(persist=False).entries == EpisodeIndex.rebuild(store.episodes_path, persist=False).entries
    assert {(v.key, v.correct) for v in spread.verdicts} == {(v.key, v.correct) for v in local.verdicts}
    assert len(read_calls(spread.run_dir, spread.episodes[0].key)) == len(read_calls(local.run_dir,
                                                                                   local.episodes[0].key))
    figures = ("episodes", "correct", "finish_reasons", "avg_rounds", "avg_tool_calls", "avg_prompt_tokens")
    assert [{k: g[k] for k in figures} for g in json.loads(store.summary_path.read_text())["groups"]] == \
        [{k: g[k] for k in figures} for g in json.loads(RunStore(local.run_dir).summary_path.read_text())["groups"]]


def test_a_worker_stores_a_task_image_it_has_stored_before_without_copying_it_again(tmp_path: Path) -> None:
    """A worker writes the task images into the run's blob store itself; a task file whose digest is remembered
    (`arena.store.file_digests`: unchanged since it was hashed) is not copied and hashed again by each episode that
    shows it, as the driver's own store already did: the blob's file is the one the first episode wrote."""
    import time

    from tests.support.openai_server import bench_responder

    data = write_tiny_dataset(tmp_path / "data", n_items=2)
    time.sleep(2.1)  # the files settle: a digest is remembered only for a file older than two seconds (RACY_NS)
    base = {"data": str(data), "agent": "openai", "judge": "normalized", "out": str(tmp_path / "logs"),
            "run_id": "r", "workers": 1, "agent_options": {"model": "m"}}
    with OpenAIStub(bench_responder(0.0)) as server:
        base["agent_options"]["base_url"] = server.base_url
        first = run(RunConfig(**base))
        blob = RunStore(first.run_dir).blobs.path(first.episodes[0].images[0])
        written = blob.stat().st_mtime_ns  # a copy is a new file, written later (its inode may be the old one's)
        again = run(RunConfig(**base, repeats=3), force=True)  # the same tasks' images, shown by 4 new episodes
    assert len(again.episodes) == 6 and not again.unwritten
    assert {e.images[0] for e in again.episodes} == {e.images[0] for e in first.episodes}
    assert blob.stat().st_mtime_ns == written
