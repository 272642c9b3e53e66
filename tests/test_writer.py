"""The run writer: one thread, in order; a durable write fsyncs the lines appended before it; a cancelled awaiter
does not stop a write; blobs are readable before they reach the disk; failures are reported, not lost; a run
fsyncs its records (episodes, verdicts, calls, judge cache) and writes its blobs on the writer thread only."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import shutil
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable

import orjson
import pytest

from arena.core import blobs
from arena.core.blobs import BlobStore
from arena.core.content_ids import content_id
from arena.core.jsonl import append_line
from arena.judges.llm import JudgeCache
from arena.store import file_digests, shared_appends
from arena.store.file_digests import TaskFileBlobs
from arena.store import writer as writer_module
from arena.runs.config import RunConfig
from arena.runs.finishing import RunAppender
from arena.runs.backends.ray_backend import MemoryBlobStore
from arena.tools import crop as crop_module
from arena.store.run_index import entry_of
from arena.store.shared_appends import SharedAppends
from arena.store.store import RunStore
from tests.test_shared_appends import line_of
from arena.runs.runner import run
from arena.store.writer import RunWriter, WriterBlobStore, settled
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import scene, write_tiny_dataset


@pytest.fixture
def writer():
    w = RunWriter()
    yield w
    w.close()


def spy_fsyncs(monkeypatch, each: Callable[[], None] | None = None) -> list[str]:
    """The names of the files fsynced from now on, in order (`os.fsync` spied); `each` is called at every fsync."""
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        if each is not None:
            each()
        real(fd)
    monkeypatch.setattr(os, "fsync", spy)
    return synced


def test_a_durable_write_fsyncs_the_lines_appended_before_it(tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    synced = spy_fsyncs(monkeypatch)
    calls, episodes = tmp_path / "calls.jsonl", tmp_path / "episodes.jsonl"
    calls.write_bytes(b'{"torn')  # a line cut short by a kill: cut before the first append
    writer.append(calls, b'{"round": 1}\n')
    writer.append(calls, b'{"round": 2}\n')
    assert writer.durable(append_line, episodes, b'{"key": "a"}\n').result() == 0
    assert synced == ["calls.jsonl", "episodes.jsonl"]
    assert calls.read_bytes() == b'{"round": 1}\n{"round": 2}\n'
    writer.durable(append_line, episodes, b'{"key": "b"}\n').result()
    assert synced == ["calls.jsonl", "episodes.jsonl", "episodes.jsonl"]  # nothing new to sync in calls.jsonl
    assert writer.problems == []


def test_held_lines_reach_each_file_in_the_order_appended(tmp_path: Path, writer: RunWriter) -> None:
    """Lines held for several files, interleaved and given as equal paths that are distinct objects, are written one
    append per file, each file's lines in the order they were appended."""
    calls, cache = tmp_path / "calls.jsonl", tmp_path / "judge_cache.jsonl"
    writer.append(calls, b"1\n")
    writer.append(Path(str(calls)), b"2\n")
    writer.append(cache, b"a\n")
    writer.append_lines(calls, [b"3\n", b"4\n"])
    writer.append(Path(str(cache)), b"b\n")
    writer.append(calls, b"5\n")
    writer.flush()
    assert calls.read_bytes() == b"1\n2\n3\n4\n5\n" and cache.read_bytes() == b"a\nb\n"
    assert writer.problems == []


def test_records_waiting_together_are_committed_with_one_fsync_per_file_and_count_only_once_synced(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """Group commit: 50 episodes (each after its calls line) queued while the writer is busy are written in their
    order with one fsync of calls.jsonl before them and one of episodes.jsonl after them; no episode's future
    completes before its line is fsynced; a write queued after them (a barrier) sees every one of them."""
    done_at_sync: list[int] = []
    futures: list = []
    synced = spy_fsyncs(monkeypatch, lambda: done_at_sync.append(sum(f.done() for f in futures)))
    calls, episodes, gate = tmp_path / "calls.jsonl", tmp_path / "episodes.jsonl", threading.Event()
    taken = threading.Event()  # the writer is in the busy write: all that follows waits in its queue together
    busy = writer.submit(lambda: (taken.set(), gate.wait()))
    assert taken.wait(10)
    for n in range(50):
        writer.append(calls, b'{"round": %d}\n' % n)
        futures.append(writer.commit(episodes, append_line, episodes, b'{"key": "%d"}\n' % n))
    seen = writer.submit(lambda: episodes.read_bytes().count(b"\n"))
    assert not any(f.done() for f in futures)
    gate.set()
    busy.result()
    assert seen.result() == 50
    assert [f.result() for f in futures] == [len(b"".join(b'{"key": "%d"}\n' % i for i in range(n)))
                                             for n in range(50)]  # each line's offset, in submission order
    assert synced == ["calls.jsonl", "episodes.jsonl"] and done_at_sync == [0, 0], (synced, done_at_sync)
    assert episodes.read_bytes() == b"".join(b'{"key": "%d"}\n' % n for n in range(50))
    assert writer.problems == []


def test_a_sync_goes_through_the_descriptors_the_lines_were_appended_through(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """The files the writer's own appender holds open are fsynced through those descriptors (one system call per
    file); a file appended to some other way is opened to be synced."""
    calls, episodes, elsewhere = tmp_path / "calls.jsonl", tmp_path / "episodes.jsonl", tmp_path / "other.jsonl"
    writer.append(calls, b"1\n")
    writer.commit(episodes, writer.files.line_writer(), episodes, b"2\n").result()
    opened: list[str] = []
    synced: list[str] = []
    real_open, real_fsync = os.open, os.fsync

    def open_spy(path, *args, **kwargs):
        opened.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    def fsync_spy(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real_fsync(fd)
    monkeypatch.setattr(os, "open", open_spy)
    monkeypatch.setattr(os, "fsync", fsync_spy)
    writer.append(calls, b"3\n")
    writer.commit(episodes, writer.files.line_writer(), episodes, b"4\n").result()
    assert opened == [] and synced == ["calls.jsonl", "episodes.jsonl"], (opened, synced)
    writer.submit(lambda: append_line(elsewhere, b"5\n", fsync=False)).result()
    writer._unsynced.add(elsewhere)  # (as a write of a store's own would leave it)
    writer.flush()
    assert opened == ["other.jsonl"] and synced[-1] == "other.jsonl", (opened, synced)
    assert calls.read_bytes() == b"1\n3\n" and episodes.read_bytes() == b"2\n4\n"


def test_a_busy_writer_gathers_commits_within_its_window_and_an_idle_one_delays_none(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """Commit window: commits arriving one by one on a busy writer (fsync rounds just done) share one fsync round;
    each future completes only after the fsync of its line, and no later than the window after it was submitted;
    on an idle writer a lone commit is not delayed; a barrier ends the window at once."""
    monkeypatch.setattr(writer_module, "COMMIT_WINDOW", 0.3)
    monkeypatch.setattr(writer_module, "BUSY", 1.0)
    futures: list = []
    done_at_sync: list[int] = []
    synced = spy_fsyncs(monkeypatch, lambda: done_at_sync.append(sum(f.done() for f in futures)))
    episodes = tmp_path / "episodes.jsonl"
    time.sleep(0.05)
    started = time.monotonic()
    writer.commit(episodes, append_line, episodes, b'{"key": "idle"}\n').result()  # idle: no window
    assert time.monotonic() - started < 0.25 and synced == ["episodes.jsonl"]
    started = time.monotonic()
    for n in range(5):  # busy now: these wait for each other within the window
        futures.append(writer.commit(episodes, append_line, episodes, b'{"key": "%d"}\n' % n))
        time.sleep(0.01)
    futures[-1].result()
    waited = time.monotonic() - started
    assert synced == ["episodes.jsonl", "episodes.jsonl"] and done_at_sync == [0, 0]
    assert 0.25 <= waited < 0.3 + 0.25  # the first commit waited the window, no more
    synced.clear()
    started = time.monotonic()
    futures = [writer.commit(episodes, append_line, episodes, b'{"key": "late"}\n')]
    writer.flush()  # a barrier: the window ends at once
    assert futures[0].done() and time.monotonic() - started < 0.25 and synced == ["episodes.jsonl"]
    gate = threading.Event()
    blocked = writer.submit(gate.wait)  # the writer busy: a commit, a barrier and a commit queue meanwhile
    futures = [writer.commit(episodes, append_line, episodes, b'{"key": "before"}\n'), writer.submit(lambda: None),
               writer.commit(episodes, append_line, episodes, b'{"key": "after"}\n')]
    started = time.monotonic()
    gate.set()
    blocked.result()
    futures[-1].result()
    assert time.monotonic() - started < 0.25  # a barrier taken with them: no window
    assert episodes.read_bytes().count(b"\n") == 9


def test_judge_outputs_cached_through_the_run_writer_wait_for_no_fsync_and_are_synced_before_the_next_commit(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """A run's judges cache their outputs through the run writer (`append_async`): a put on a busy writer waits for
    no fsync round (the judging's slot is not held for one), and the lines are written in order and fsynced before
    the next commit (the episode's or verdict's they were made for); a new cache reads them all."""
    monkeypatch.setattr(writer_module, "COMMIT_WINDOW", 0.3)
    monkeypatch.setattr(writer_module, "BUSY", 1.0)
    synced = spy_fsyncs(monkeypatch)
    path, verdicts = tmp_path / "judge_cache.jsonl", tmp_path / "verdicts.jsonl"
    cache = JudgeCache(path)
    cache.append = writer.append_async
    writer.commit(verdicts, append_line, verdicts, b'{"n": 0}\n').result()  # an fsync round: busy now

    async def scenario() -> float:
        started = time.monotonic()
        await asyncio.gather(*(cache.put(f"k{n}", "no") for n in range(5)))
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 0.1  # (through a group commit, each put waited for the 0.3 s window)
    synced.clear()
    writer.commit(verdicts, append_line, verdicts, b'{"n": 1}\n').result()
    assert synced == ["judge_cache.jsonl", "verdicts.jsonl"], synced
    assert list(JudgeCache(path)._memory) == ["k0", "k1", "k2", "k3", "k4"]


def test_a_writer_given_a_window_waits_that_one_and_a_worker_processs_waits_the_shorter_one(
        tmp_path: Path, monkeypatch) -> None:
    """`RunWriter(window=...)` holds a busy batch open for its own window, whatever the module's default; a worker
    process's appender (whose commits the driver's slot waits for) is given `AWAITED_COMMIT_WINDOW`, shorter than
    the driver's."""
    default = writer_module.COMMIT_WINDOW
    monkeypatch.setattr(writer_module, "BUSY", 1.0)
    monkeypatch.setattr(writer_module, "COMMIT_WINDOW", 0.0)  # the module's default would wait for nothing
    own = RunWriter("own-window", window=0.3)
    try:
        episodes = tmp_path / "episodes.jsonl"
        own.commit(episodes, append_line, episodes, b'{"key": "first"}\n').result()  # an fsync round: busy now
        started = time.monotonic()
        own.commit(episodes, append_line, episodes, b'{"key": "second"}\n').result()
        assert time.monotonic() - started >= 0.25
    finally:
        own.close()
    appender = RunAppender(tmp_path)
    try:
        assert appender.writer.window == writer_module.AWAITED_COMMIT_WINDOW < default
    finally:
        asyncio.run(appender.aclose())


def test_a_last_commit_ends_the_window_and_a_run_marks_only_its_last_episodes_commit_so(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """A commit its caller says is the last for now does not hold a busy writer's window open for others; a run
    says so of an episode committed while nothing else plays or waits to (here the last of three at concurrency 1)."""
    monkeypatch.setattr(writer_module, "COMMIT_WINDOW", 0.3)
    monkeypatch.setattr(writer_module, "BUSY", 1.0)
    episodes = tmp_path / "episodes.jsonl"
    writer.commit(episodes, append_line, episodes, b'{"key": "first"}\n').result()  # an fsync round: busy now
    started = time.monotonic()
    writer.commit(episodes, append_line, episodes, b'{"key": "gathering"}\n').result()
    assert time.monotonic() - started >= 0.25  # held open for the window
    started = time.monotonic()
    writer.commit(episodes, append_line, episodes, b'{"key": "last"}\n', last=True).result()
    assert time.monotonic() - started < 0.2 and episodes.read_bytes().count(b"\n") == 3
    monkeypatch.undo()
    lasts: list[bool] = []
    real = RunWriter.commit

    def spy(self, path, fn, *args, last: bool = False):
        lasts.append(last)
        return real(self, path, fn, *args, last=last)
    monkeypatch.setattr(RunWriter, "commit", spy)
    data = write_tiny_dataset(tmp_path / "three", n_items=3)
    result = run(RunConfig(data=str(data), agent="oracle", out=str(tmp_path / "logs"), max_rounds=[4], concurrency=1))
    assert len(result.episodes) == 3 and lasts == [False, False, True]


def test_a_cancelled_awaiter_still_gets_its_record_written(tmp_path: Path, writer: RunWriter) -> None:
    path, gate = tmp_path / "episodes.jsonl", threading.Event()

    def slow_append() -> int:
        gate.wait()
        return append_line(path, b'{"key": "finished"}\n')

    async def go() -> None:
        task = asyncio.ensure_future(settled(writer.durable(slow_append)))
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert not task.done()  # still waiting for the write, which cannot end before the gate opens
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(go())
    assert path.read_bytes() == b'{"key": "finished"}\n'


def test_blobs_are_readable_before_they_are_written_and_failures_are_reported(tmp_path: Path,
                                                                            writer: RunWriter) -> None:
    gate = threading.Event()
    writer.submit(gate.wait)  # holds the writer: the blob below waits in the queue
    blobs = WriterBlobStore(tmp_path / "blobs", writer)
    blob_id = blobs.put(b"\x89PNG not really", "png")
    assert blob_id == BlobStore(tmp_path / "other").put(b"\x89PNG not really", "png")
    assert not blobs.path(blob_id).exists() and blobs.get(blob_id) == b"\x89PNG not really"
    writer.append(tmp_path / "missing-dir" / "calls.jsonl", b"{}\n")
    gate.set()
    writer.flush()
    assert BlobStore(tmp_path / "blobs").get(blob_id) == b"\x89PNG not really"
    assert len(writer.problems) == 1 and "calls.jsonl line: FileNotFoundError" in writer.problems[0]
    assert "missing-dir" in writer.problems[0]


def test_a_run_does_every_fsync_and_blob_write_on_the_writer_thread(tiny_data: Path, tmp_path: Path,
                                                                     monkeypatch) -> None:
    synced: list[tuple[str, str]] = []
    placed: list[tuple[str, str]] = []
    real, replace = os.fsync, os.replace

    def spy(fd: int) -> None:
        synced.append((Path(os.readlink(f"/proc/self/fd/{fd}")).name, threading.current_thread().name))
        real(fd)

    def spy_replace(source, target) -> None:
        placed.append((str(target), threading.current_thread().name))
        replace(source, target)
    monkeypatch.setattr(os, "fsync", spy)
    monkeypatch.setattr(os, "replace", spy_replace)

    def respond(request: dict) -> Reply:
        if request["model"] == "judge":
            return Reply(content="<judge>Yes</judge><reason>the year matches</reason>")
        return Reply(content="<think>done</think><answer>1874</answer>")
    with OpenAIStub(respond) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), max_rounds=[2],
                               agent_options={"model": "qwen", "base_url": server.base_url},
                               judge="llm", judge_options={"model": "judge", "base_url": server.base_url}))
    assert result.episodes and all(v.correct for v in result.verdicts)
    files = [(name, thread) for name, thread in synced if name.endswith(".jsonl")]
    assert {name for name, _ in files} == {"calls.jsonl", "episodes.jsonl", "verdicts.jsonl", "judge_cache.jsonl"}
    assert {thread for _, thread in files} == {"arena-run-writer"}  # never the event loop's
    blobs = [thread for target, thread in placed if "/blobs/" in target]
    assert blobs and set(blobs) == {"arena-run-writer"}  # the task image and the recorded calls' images and schemas
    names = [name for name, _ in files]
    assert names.index("calls.jsonl") < names.index("episodes.jsonl")  # an episode's calls are on disk first


def test_a_task_file_is_copied_once_per_run_hashed_once_and_stored_as_its_bytes(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    monkeypatch.setattr(file_digests, "time_ns", lambda: time.time_ns() + 10_000_000_000)  # the file has settled
    hashed: list[str] = []
    real, copy = hashlib.file_digest, shutil.copyfile

    def spy(fh, digest):
        hashed.append(fh.name)
        return real(fh, digest)
    monkeypatch.setattr(hashlib, "file_digest", spy)
    monkeypatch.setattr(shutil, "copyfile", lambda src, dst: hashed.append(f"copy {src}") or copy(src, dst))
    photo = tmp_path / "Photo.PNG"
    scene(64, 48).save(photo, format="PNG")
    first = WriterBlobStore(tmp_path / "run1" / "blobs", writer).put_file(photo)
    assert first == BlobStore(tmp_path / "bytes").put(photo.read_bytes(), "png")  # the id of its bytes
    for _ in range(3):  # every episode of the task: neither copied nor hashed again
        assert WriterBlobStore(tmp_path / "run1" / "blobs", writer).put_file(photo) == first
    assert len(hashed) == 2 and hashed[0] == f"copy {photo}"
    assert Path(hashed[1]).parent == tmp_path / "run1" / "blobs"  # what is hashed is the copy made
    again = WriterBlobStore(tmp_path / "run2" / "blobs", writer).put_file(photo)  # another run: one copy, and no
    assert again == first and hashed[2:] == [f"copy {photo}"]  # hashing while the file holds (arena.store.file_digests)
    assert BlobStore(tmp_path / "run2" / "blobs").get(first) == photo.read_bytes()
    scene(64, 49).save(photo, format="PNG")  # rewritten: a new size and mtime, stored again under its new hash
    changed = BlobStore(tmp_path / "run1" / "blobs").put_file(photo)
    assert changed != first and BlobStore(tmp_path / "run1" / "blobs").get(changed) == photo.read_bytes()
    assert BlobStore(tmp_path / "run1" / "blobs").get(first) != photo.read_bytes()  # the first stays as it was


def test_the_episodes_of_a_task_image_starting_together_store_it_once(tmp_path: Path, monkeypatch) -> None:
    """Eight episodes showing one image start at once (concurrency 8): one of them stores the file, the others wait
    for that store instead of each taking an executor thread and a turn of the writer's queue, which held the
    image's first decode back behind them."""
    stored: list[str] = []
    real = WriterBlobStore.put_file

    def spy(self, path):
        stored.append(os.fspath(path))
        return real(self, path)
    monkeypatch.setattr(WriterBlobStore, "put_file", spy)
    data = write_tiny_dataset(tmp_path / "data", n_items=8)
    result = run(RunConfig(data=str(data), agent="oracle", out=str(tmp_path / "logs"), max_rounds=[4],
                           concurrency=8))
    assert len(result.episodes) == 8 and all(e.finish_reason == "answered" for e in result.episodes)
    assert stored == [str(data.parent / "images" / "scene.png")]


def test_a_blob_or_task_file_already_stored_does_not_wait_behind_the_writers_queue(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """An episode storing its task file (remembered and in the store) or a crop already stored by another episode
    gets its id while the writer is still busy (fsyncs of other episodes at 256-way): nothing is queued for it."""
    monkeypatch.setattr(file_digests, "time_ns", lambda: time.time_ns() + 10_000_000_000)  # the file has settled
    photo = tmp_path / "photo.png"
    scene(64, 48).save(photo, format="PNG")
    store = WriterBlobStore(tmp_path / "run" / "blobs", writer, wait=True)
    task, crop = store.put_file(photo), store.put(b"crop bytes", "png")
    gate = threading.Event()
    busy = writer.submit(gate.wait, 30)  # the writer is busy until the gate opens
    try:
        again = None

        def episode() -> None:
            nonlocal again
            again = (store.put_file(photo), store.put(b"crop bytes", "png"))
        thread = threading.Thread(target=episode)
        thread.start()
        thread.join(timeout=5)
        assert again == (task, crop) and not busy.done()
        fresh = threading.Thread(target=store.put, args=(b"a new crop", "png"))  # a new blob waits for the writer
        fresh.start()
        fresh.join(timeout=0.5)
        assert fresh.is_alive()
    finally:
        gate.set()
    fresh.join(timeout=5)
    assert busy.result() is True and store.get(store.put(b"a new crop", "png")) == b"a new crop"


def test_the_same_bytes_are_hashed_once_for_their_blob_id_and_changed_bytes_always_again(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """A crop served again from the zoom cache is the same PNG bytes object in every episode: its blob id is
    computed once, by the run's store, a plain one and a worker's in-memory one alike. A bytearray may change
    between two puts, so it is hashed at every put."""
    hashed: list[int] = []
    real = hashlib.sha256

    def counting(data: bytes = b"", **kwargs):
        hashed.append(len(data))
        return real(data, **kwargs)
    monkeypatch.setattr(blobs.hashlib, "sha256", counting)
    store, direct, worker = WriterBlobStore(tmp_path / "run", writer), BlobStore(tmp_path / "plain"), MemoryBlobStore()
    png = os.urandom(1 << 16)
    first = store.put(png)
    assert [store.put(png), direct.put(png), direct.put(png, "png"), worker.put(png)] == [first] * 4
    assert len(hashed) == 1
    assert store.put(bytes(bytearray(png))) == first and len(hashed) == 2  # equal bytes, another object: hashed
    mutable = bytearray(png)
    assert direct.put(mutable, "bin") == first.replace(".png", ".bin")
    mutable[0] ^= 0xFF
    assert direct.put(mutable, "bin") != first.replace(".png", ".bin") and len(hashed) == 4


def test_writes_ending_together_wake_the_event_loop_once() -> None:
    """A group commit's futures complete together: their awaiters are woken by one call into the loop, not one each,
    and each gets its own result."""
    async def main() -> tuple[list[int], int]:
        loop = asyncio.get_running_loop()
        wakeups = 0
        real = loop.call_soon_threadsafe

        def counted(*args, **kwargs):
            nonlocal wakeups
            wakeups += 1
            return real(*args, **kwargs)
        loop.call_soon_threadsafe = counted
        futures = [Future() for _ in range(100)]
        tasks = [asyncio.ensure_future(settled(f)) for f in futures]
        await asyncio.sleep(0)
        for n, future in enumerate(futures):  # as the writer thread does at the end of a group commit
            future.set_running_or_notify_cancel()
            future.set_result(n)
        return await asyncio.gather(*tasks), wakeups
    results, wakeups = asyncio.run(main())
    assert results == list(range(100)) and wakeups == 1


@pytest.mark.parametrize("kind", ["writer", "writer, waiting", "worker"])
def test_a_blob_seen_stored_is_put_again_without_a_path_or_a_stat(tmp_path: Path, writer: RunWriter, monkeypatch,
                                                                   kind: str) -> None:
    """The same image in every round and episode of a run: once the store has written it (or found it on disk), a
    put of it returns its id at once, with no path built and no stat; so in a worker process, whose store writes
    the run's blobs itself (`TaskFileBlobs`), and which then `holds` it."""
    def made() -> BlobStore:
        if kind == "worker":
            return TaskFileBlobs(tmp_path / "blobs")
        return WriterBlobStore(tmp_path / "blobs", writer, wait=kind == "writer, waiting")
    store = made()
    first = store.put(b"an image", "png")
    writer.flush()
    other = made()  # another store of the run's blobs: finds it on disk
    assert not other.holds(first)
    assert other.put(b"an image", "png") == first and store.get(first) == b"an image"
    for seen in (store, other):
        monkeypatch.setattr(seen, "path", lambda blob_id: pytest.fail("a path built for a blob seen stored"))
        assert seen.put(b"an image", "png", blob_id=first) == first == seen.put(b"an image", "png")
        assert seen.holds(first)


def test_a_worker_store_answers_a_stored_task_file_and_crop_on_the_event_loop(tmp_path: Path, monkeypatch) -> None:
    """A worker's store (`TaskFileBlobs`) answers what it has stored without a thread: a task file unchanged since
    its `put_file` (`held_file`: a stat), a crop it has written (`known_image`); a file rewritten since, or one it
    has not stored, is again a thread's work (None)."""
    monkeypatch.setattr(file_digests, "time_ns", lambda: time.time_ns() + 10_000_000_000)  # the file has settled
    photo = tmp_path / "photo.png"
    scene(64, 48).save(photo, format="PNG")
    store = TaskFileBlobs(tmp_path / "run" / "blobs")
    assert store.held_file(photo) is None
    task = store.put_file(photo)
    assert store.held_file(photo) == task and store.get(task) == photo.read_bytes()
    assert TaskFileBlobs(tmp_path / "run" / "blobs").held_file(photo) is None  # (not stored through that one)
    zoomed = crop_module.zoom_encoded(scene(640, 480).convert("RGB"), (100, 100, 300, 200), (640, 480))
    assert store.known_image(zoomed) is None  # not written yet: a thread writes it
    crop = store.put_image(zoomed)
    assert store.known_image(zoomed) == crop and store.path(crop).read_bytes() == blobs.png_of(zoomed)
    scene(64, 49).save(photo, format="PNG")  # rewritten: its new bytes must be stored under their own id
    assert store.held_file(photo) is None
    assert store.put_file(photo) != task and store.held_file(photo) == content_id(photo.read_bytes(), "png")


def test_a_batch_of_episodes_takes_the_runs_append_lock_twice_not_per_line(tmp_path: Path, monkeypatch) -> None:
    """A busy writer's batch (held calls lines, then group commits): the held lines are written under one hold of
    the run's append lock, the commits under another (none across an fsync), not one hold per line."""
    holds: list[str] = []
    real_flock = fcntl.flock
    monkeypatch.setattr(shared_appends.fcntl, "flock", lambda fd, op: (
        holds.append("ex" if op == fcntl.LOCK_EX else "un"), real_flock(fd, op))[1])
    events: list[str] = []
    spy_fsyncs(monkeypatch, lambda: events.append("fsync" if holds[-1] == "un" else "fsync under the lock"))
    files = SharedAppends(tmp_path)
    store = RunStore(tmp_path)
    store.use_appender(files)
    writer = RunWriter(files=files)
    try:
        gate = threading.Event()
        writer.submit(gate.wait, 10)  # the writer busy: what follows waits in its queue, and is taken as one batch
        futures = []
        for i in range(5):
            writer.append(tmp_path / "calls.jsonl", b'{"round": %d}\n' % i)
            line = line_of("w", i)
            futures.append(writer.commit((store.episodes_path, store.verdicts_path), store.append_finished, line,
                                         entry_of(line, 0), [b'{"episode_id": "w-%d"}\n' % i]))
        holds.clear()
        gate.set()
        assert [f.result(10).problem for f in futures] == [None] * 5
    finally:
        writer.close()
    assert holds == ["ex", "un", "ex", "un"]
    assert "fsync under the lock" not in events
    assert [orjson.loads(x)["id"] for x in store.episodes_path.read_bytes().splitlines()] == \
        [f"w-{i}" for i in range(5)]
    assert (tmp_path / "calls.jsonl").read_bytes().count(b"\n") == 5


def test_a_run_append_lock_that_cannot_be_taken_fails_the_batch_not_the_writer(tmp_path: Path, monkeypatch) -> None:
    """flock failing (the run directory's lock file gone bad): the batch's commits fail with the error, its held
    lines are reported in `problems`, and the writer goes on (the next batch, the lock back, is written)."""
    real_flock = fcntl.flock
    broken = [True]

    def flock(fd: int, op: int) -> None:
        if broken[0] and op == fcntl.LOCK_EX:
            raise OSError(37, "No locks available")
        real_flock(fd, op)
    monkeypatch.setattr(shared_appends.fcntl, "flock", flock)
    files = SharedAppends(tmp_path)
    store = RunStore(tmp_path)
    store.use_appender(files)
    writer = RunWriter(files=files)
    try:
        writer.append(tmp_path / "calls.jsonl", b'{"round": 1}\n')
        line = line_of("x", 0)
        failed = writer.commit(store.episodes_path, store.append_finished, line, entry_of(line, 0), [])
        with pytest.raises(OSError, match="No locks available"):
            failed.result(10)
        assert writer.problems == ["1 held line, the run's append lock: OSError: [Errno 37] No locks available"]
        broken[0] = False
        line = line_of("x", 1)
        assert writer.commit(store.episodes_path, store.append_finished, line, entry_of(line, 0), []).result(10)
    finally:
        writer.close()
    assert [orjson.loads(x)["id"] for x in store.episodes_path.read_bytes().splitlines()] == ["x-1"]


def test_a_new_crop_is_stored_with_no_thread_and_no_wait_its_png_and_id_made_with_the_zoom(
        tmp_path: Path, writer: RunWriter, monkeypatch) -> None:
    """The zoom's thread encodes the crop's PNG and hashes it (`zoom_encoded`), so the episode stores the new crop on
    its own thread (`known_image`) while the writer is busy: readers get the bytes meanwhile, the file follows in
    order. An image whose PNG or id is not known yet still needs a thread (`put_image`)."""
    source = scene(640, 480).convert("RGB")
    zoomed = crop_module.zoom_encoded(source, (100, 100, 300, 200), source.size)
    store = WriterBlobStore(tmp_path / "run" / "blobs", writer, wait=True)
    gate = threading.Event()
    busy = writer.submit(gate.wait, 30)
    try:
        blob_id = store.known_image(zoomed)
        assert blob_id == blobs.content_id(blobs.png_of(zoomed), "png") and not busy.done()
        assert store.get(blob_id) == blobs.png_of(zoomed) and not store.path(blob_id).exists()
        assert store.known_image(scene(64, 48).convert("RGB")) is None  # not encoded yet: a thread's work
    finally:
        gate.set()
    writer.flush()
    assert store.path(blob_id).read_bytes() == blobs.png_of(zoomed) and store.holds(blob_id)
    assert BlobStore(tmp_path / "other").known_image(zoomed) is None  # a store that writes at once cannot queue
