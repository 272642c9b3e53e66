"""The run's one writer: every append, fsync and blob write of a run done in order by one thread, off the event loop.

Contract:
- One thread, first in first out: a write submitted before another is finished before it starts.
- `append(path, line)` appends without fsync (calls.jsonl: many lines per episode); the path is remembered as
  unsynced. `durable(fn, ...)` first fsyncs every unsynced path, then runs `fn` (which fsyncs its own write).
  So when a durable write's future completes, the record is on disk and so is every line and blob submitted
  before it: a finished episode is fsynced with its calls before it is counted.
- Appended lines are held, not handed to the thread one by one: they go into its queue, as one write per file,
  just before the next write submitted (whichever thread submits it; the episode's commit at the latest), or as
  soon as `LINES_HELD` bytes are held. First in first out holds as if each had been queued when appended; a line
  of an episode still playing may reach the file later than it was made (a run killed meanwhile loses it with
  the unfinished episode, whose next try records its calls again).
- Group commit: `commit(path, fn, ...)` is a durable write whose `fn` appends to `path` without fsync
  (`fn(..., fsync=False)`). The thread takes every write waiting in its queue as one batch; the batch's commits
  are applied after its other appends and blob writes, between two fsync rounds (what was appended before them,
  then their own files), and their futures complete after the second: one fsync per file for many records, the
  same guarantee as `durable` (a record counts once it is on disk with everything submitted before it). Any
  other write in the batch (`submit`, `durable`, a flush) is a barrier: the commits before it are completed first,
  so first in first out holds for everything but a commit overtaken by independent appends and blob writes.
- Commit window: when the writer is busy (its last fsync round of commits ended less than `BUSY` ago), a batch
  that holds a commit waits up to `COMMIT_WINDOW` for more writes before its fsync rounds, so that one fsync per
  file covers many episodes; a barrier (any write but an append, a blob write or a commit) ends the wait at once.
  A lone commit on an idle writer is not delayed at all, a commit on a busy one by at most the window. In the
  driver an episode's concurrency slot is released before its commit is submitted, so the window costs the run no
  throughput: only the moment the episode counts as written. A worker process's writer (`RunAppender`) commits
  before it reports the episode, while the driver still holds its slot: it waits `AWAITED_COMMIT_WINDOW`, shorter.
  A commit its caller knows to be the last for now (`commit(..., last=True)`: no other episode playing or waiting
  to, as at the end of a run) ends the window at once, as a barrier does, so the run does not wait for writes that
  will not come.
- Torn tails stay safe: appends go through `arena.core.jsonl.Appender` (files held open by the writer thread; the
  run store's appends too, `RunStore.use_appender`), which cuts a torn tail when it opens a file and after a
  failed write; or, when worker processes append to the run too, through `arena.store.shared_appends.SharedAppends`
  (appends under the run's append lock, a torn tail cut whoever left it). A batch writes the held lines of its
  appends in a row together, one write per file, and holds that lock once for them and once for its commits
  (`held`: each file checked once per hold), never across an fsync.
- `settled` awaits a write to its end even if the awaiting task is cancelled meanwhile (a run stopped by
  --fail-fast or --max-cost cancels episodes; a finished one must still reach the disk), then re-raises the cancel.
  The writes that end together (a group commit's) wake the awaiting event loop once (`LoopHandoff`).
- A fire-and-forget write (`append`, `WriterBlobStore.put`) that fails is kept in `problems` (one message per
  blob, per file's lines written together), which the runner reports with the records it could not write.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, TypeVar

from arena.core.content_ids import content_id
from arena.core.jsonl import Appender

from .calls import TranscriptWriter
from .file_digests import TaskFileBlobs, digests, remembered
from .shared_appends import SharedAppends

T = TypeVar("T")

MAX_BATCH = 4096
"""Writes taken from the queue at once (bounds how long the first commit of a batch waits for the others)."""
COMMIT_WINDOW = 0.02
"""Seconds a batch holding a commit waits for more writes when the writer is busy (see the module docstring). With a
fast model one episode after another lasts a few ms, so 20 ms gathers several per fsync round (a 64-episode run at
concurrency 1: 21-29 fsyncs, not 57-81; docs/benchmarks.md, "Seventh pass")."""
AWAITED_COMMIT_WINDOW = 0.005
"""The window of a writer whose commits hold an episode's slot until they land (`RunWriter(window=...)`: a worker
process's, whose episode the driver counts as playing until the worker reports it, after its commit)."""
BUSY = 0.05
"""The writer counts as busy while its last fsync round of commits ended less than this many seconds ago."""
LINES_HELD = 1 << 20
"""Bytes of appended lines held before they are handed to the thread without waiting for another write."""
WRITE, APPEND, COMMIT, LAST_COMMIT = "write", "append", "commit", "last commit"
ENDS_WINDOW = frozenset((WRITE, LAST_COMMIT))
"""The kinds that end a commit window as soon as they are taken: a barrier, and a commit said to be the last."""


class RunWriter:
    """A thread with a queue doing the run's file writes (see the module docstring)."""

    def __init__(self, name: str = "arena-run-writer", files: Appender | SharedAppends | None = None,
                 window: float | None = None):
        """`files`: how this thread appends (default: an `Appender`, the run's only appender; `SharedAppends`
        when other processes append to the run too). `window`: the commit window in seconds (default
        `COMMIT_WINDOW`, read when a batch is taken)."""
        self.window = window
        self._queue: queue.SimpleQueue[tuple[Future | None, Callable[..., Any], tuple, str, Any] | None] = \
            queue.SimpleQueue()
        self._held: list[tuple[Path, bytes]] = []  # appended lines not yet queued (see the module docstring)
        self._held_bytes = 0
        self._handing = threading.Lock()  # held while the held lines and the write after them are queued
        self._closed = False
        self._unsynced: set[Path] = set()
        self.files = files if files is not None else Appender()
        """The files this thread appends to, held open (`arena.core.jsonl.Appender`, or `SharedAppends`): used by the
        writer's own appends and by the run store's (`RunStore.use_appender`); only ever touched on the writer's
        thread."""
        self.problems: list[str] = []
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _take(self, last_round: float) -> list[tuple[Future, Callable[..., Any], tuple, str, Any] | None]:
        """The next batch: the writes waiting, and while busy with commits those arriving within the window."""
        batch = [self._queue.get()]
        while batch[-1] is not None and len(batch) < MAX_BATCH:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        now = time.monotonic()
        kinds = {item[3] if item is not None else None for item in batch}
        if now - last_round >= BUSY or COMMIT not in kinds or kinds & ENDS_WINDOW or None in kinds:
            return batch  # idle, nothing to gather, or a barrier, a last commit (or the stop) waiting already
        deadline = now + (COMMIT_WINDOW if self.window is None else self.window)
        while batch[-1] is not None and batch[-1][3] not in ENDS_WINDOW and len(batch) < MAX_BATCH:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                batch.append(self._queue.get(timeout=left))
            except queue.Empty:
                break
        return batch

    def _serve(self) -> None:
        last_round = float("-inf")  # when the last fsync round of commits ended
        while True:
            batch = self._take(last_round)
            commits: list[tuple[Future, Callable[..., Any], tuple, tuple[Path, ...]]] = []
            lines: list[tuple[Path, bytes]] = []  # the held lines of the batch's appends in a row, written together
            for item in batch:
                if item is None:
                    self._append_held(lines)
                    self._commit(commits)
                    self.files.close()
                    return
                future, fn, args, kind, path = item
                if kind == COMMIT or kind == LAST_COMMIT:
                    commits.append((future, fn, args, path))
                    continue
                if fn == self._append_held:  # (the commits overtake held lines: they go on gathering past them)
                    lines.extend(args[0])
                    continue
                self._append_held(lines)
                lines = []
                if kind != APPEND and commits:  # a barrier: the commits before it first
                    self._commit(commits)
                    commits, last_round = [], time.monotonic()
                self._run(future, fn, args)
            self._append_held(lines)
            if commits:
                self._commit(commits)
                last_round = time.monotonic()

    def _run(self, future: Future | None, fn: Callable[..., Any], args: tuple) -> None:
        if future is None:  # fire and forget: `fn` reports its own failures in `problems`
            fn(*args)
            return
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    def _commit(self, commits: list[tuple[Future, Callable[..., Any], tuple, tuple[Path, ...]]]) -> None:
        """Apply a batch's commits between two fsync rounds; complete their futures after the second."""
        if not commits:
            return
        try:
            self._sync()
        except BaseException as exc:  # nothing before them is known durable: none of them is written
            for future, *_ in commits:
                if future.set_running_or_notify_cancel():
                    future.set_exception(exc)
            return
        done: list[tuple[Future, Any]] = []
        try:
            with self.files.held():  # (the run's append lock taken once for the batch, not across its fsyncs)
                for future, fn, args, paths in commits:
                    if not future.set_running_or_notify_cancel():
                        continue
                    try:
                        done.append((future, fn(*args, fsync=False)))
                        self._unsynced.update(paths)
                    except BaseException as exc:
                        future.set_exception(exc)
        except BaseException as exc:  # the run's append lock could not be taken or given back: none counts
            for future, _ in done:
                future.set_exception(exc)
            for future, *_ in commits:  # (the others: not reached, or failed already)
                if not future.done() and future.set_running_or_notify_cancel():
                    future.set_exception(exc)
            return
        try:
            self._sync()
        except BaseException as exc:
            for future, _ in done:
                future.set_exception(exc)
            return
        for future, result in done:
            future.set_result(result)

    def submit(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        """Run `fn(*args)` on the writer thread after everything submitted before."""
        return self._put(WRITE, None, fn, args)

    def _put(self, kind: str, path: Any, fn: Callable[..., Any], args: tuple) -> Future:
        future: Future = Future()
        self._queue_after_held((future, fn, args, kind, path))
        return future

    def _queue_after_held(self, item: tuple[Future | None, Callable[..., Any], tuple, str, Any] | None) -> None:
        """Queue the held lines (one write), then `item` (None: nothing more), in that order whatever other thread
        queues meanwhile."""
        with self._handing:
            if self._closed:  # (the thread ends only when closed)
                raise RuntimeError("the run writer is closed")
            self._queue_held()
            if item is not None:
                self._queue.put(item)

    def _queue_held(self) -> None:
        """Queue the held lines as one write (called holding `_handing`)."""
        if self._held:
            self._queue.put((None, self._append_held, (self._held,), APPEND, None))
            self._held, self._held_bytes = [], 0

    def _fire(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(*args)` (independent of the records, like an append) with no future: a failure is kept in
        `problems` as `what: error`."""
        self._queue_after_held((None, self._reported, (what, fn, args), APPEND, None))

    def _reported(self, what: str, fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self.problems.append(f"{what}: {type(exc).__name__}: {exc}")

    def commit(self, path: Path | tuple[Path, ...], fn: Callable[..., T], *args: Any,
               last: bool = False) -> "Future[T]":
        """A durable write by group commit (see the module docstring): `fn(*args, fsync=False)` appends to `path`
        (or to each of several paths, e.g. an episode and its verdicts); the future completes once that is fsynced,
        with every line and blob submitted before it. `last`: no other commit is expected soon, so the commit window
        is not held open for one."""
        paths = path if isinstance(path, tuple) else (path,)
        return self._put(LAST_COMMIT if last else COMMIT, paths, fn, args)

    def append(self, path: Path, line: bytes) -> None:
        """Append one line (or several, joined) without fsync: held until the next write is submitted, then written
        before it; fsynced before the next durable write."""
        with self._handing:
            if self._closed:
                raise RuntimeError("the run writer is closed")
            self._held.append((path, line))
            self._held_bytes += len(line)
            full = self._held_bytes >= LINES_HELD
        if full:
            self._queue_after_held(None)

    def append_lines(self, path: Path, lines: list[bytes]) -> None:
        """Append several lines in order without fsync (an episode's calls.jsonl lines made in another process)."""
        self.append(path, b"".join(lines))

    def _append_held(self, held: list[tuple[Path, bytes]]) -> None:
        """Write held lines, those of each file in one append, in the order they were appended (grouped here, on the
        writer's thread, not by the appending threads), under one hold of the run's append lock."""
        if not held:
            return
        by_path: dict[Path, list[bytes]] = {}
        last, chunks = None, []
        for path, data in held:
            if path is not last:  # (a run of lines to one path object: its list looked up once)
                last, chunks = path, by_path.setdefault(path, [])
            chunks.append(data)
        try:
            with self.files.held():
                for path, chunks in by_path.items():
                    try:
                        self.files.append(path, b"".join(chunks))
                        self._unsynced.add(path)
                    except Exception as exc:
                        what = f"{path.name} line" if len(chunks) == 1 else f"{len(chunks)} {path.name} lines"
                        self.problems.append(f"{what}: {type(exc).__name__}: {exc}")
        except Exception as exc:  # the run's append lock could not be taken or given back
            self.problems.append(f"{len(held)} held line{'' if len(held) == 1 else 's'}, the run's append lock: "
                                 f"{type(exc).__name__}: {exc}")

    def durable(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        """Fsync every unsynced appended file, then run `fn(*args)` (which makes its own write durable)."""
        return self.submit(self._durable, fn, args)

    def _durable(self, fn: Callable[..., T], args: tuple) -> T:
        self._sync()
        return fn(*args)

    def _sync(self) -> None:
        """Fsync every file appended to without fsync since the last sync: through the descriptor it was appended
        through where it is held open (that file is the one to sync, and one system call does it), else opened."""
        paths, self._unsynced = sorted(self._unsynced), set()
        for path in paths:
            fd = self.files.held_fd(path)
            if fd is not None:
                os.fsync(fd)
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def flush(self) -> None:
        """Wait until everything submitted is written, and fsync what was appended without fsync."""
        self.submit(self._sync).result()

    async def append_async(self, path: Path, line: bytes) -> None:
        """`append` for a caller that awaits its writes (a judge cache, `arena.judges.llm.JudgeCache`): nothing to
        wait for; the line is written in order and fsynced before the next durable write (the commit of the episode
        or verdict it was made for), as an episode's calls.jsonl lines are."""
        self.append(path, line)

    def blobs(self, blobs_root: Path) -> WriterBlobStore:
        """The blob store episodes played in this process write through (from threads, never the event loop)."""
        return WriterBlobStore(blobs_root, self, wait=True)

    def recorder(self, run_dir: Path, blobs_root: Path) -> TranscriptWriter:
        """A transcript writer whose calls.jsonl lines and blobs go through this writer."""
        return TranscriptWriter(run_dir, WriterBlobStore(blobs_root, self), append=self.append)

    async def drained(self) -> None:
        """`flush` awaited from the event loop."""
        await settled(self.submit(self._sync))

    def close(self) -> None:
        """Flush, then stop the thread (idempotent)."""
        if self._thread.is_alive():
            try:
                self.flush()
            finally:
                with self._handing:
                    self._closed = True
                    self._queue_held()
                    self._queue.put(None)
                self._thread.join()


async def settled(future: "Future[T]") -> T:
    """The future's result; a cancel of the awaiting task waits for the write to end, then is re-raised. The
    writes that end together (a group commit's) wake the event loop once (`LoopHandoff`), not once each."""
    loop = asyncio.get_running_loop()
    cancelled = False
    while True:
        waiter = loop.create_future()
        future.add_done_callback(lambda done, waiter=waiter: LoopHandoff.of(loop).push(_copy, done, waiter))
        try:
            result = await waiter  # a cancel cancels this waiter, not the write: another waits for it
            break
        except asyncio.CancelledError:
            if future.done():  # the write has ended (or was itself cancelled): nothing left to wait for
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError()
    return result


def _copy(done: Future, waiter: asyncio.Future) -> None:
    """A write's outcome handed to the event loop's waiter (one cancelled meanwhile takes nothing)."""
    if waiter.done():
        return
    try:
        result = done.result()  # (one look at the future's state where the write went well)
    except BaseException as exc:
        if done.cancelled():
            waiter.cancel()
        else:
            waiter.set_exception(exc)
        return
    waiter.set_result(result)


class LoopHandoff:
    """Callbacks handed from other threads to one event loop in batches: the first pushed while none waits wakes
    the loop (`call_soon_threadsafe`), those pushed before it runs go along, in the order pushed."""

    _by_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopHandoff]" = weakref.WeakKeyDictionary()
    _made = threading.Lock()

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop, self._lock, self._waiting = loop, threading.Lock(), []

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> "LoopHandoff":
        handoff = cls._by_loop.get(loop)
        if handoff is None:
            with cls._made:
                handoff = cls._by_loop.setdefault(loop, cls(loop))
        return handoff

    def push(self, fn: Callable[..., Any], *args: Any) -> None:
        with self._lock:
            first = not self._waiting
            self._waiting.append((fn, args))
        if first:
            try:
                self.loop.call_soon_threadsafe(self._run)
            except RuntimeError:  # the loop is closed: nobody waits any more
                with self._lock:
                    self._waiting.clear()

    def _run(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for fn, args in waiting:
            try:
                fn(*args)
            except Exception as exc:  # one failing callback does not keep the others from their waiters
                self.loop.call_exception_handler({"message": "LoopHandoff callback failed", "exception": exc})


class WriterBlobStore(TaskFileBlobs):
    """A run's blob store whose writes go through the run writer: `put` returns the id at once (the write is
    queued, atomic as ever; nothing is queued for a blob already on disk), reads see blobs still waiting to be
    written. With `wait`, `put` returns once the blob is on disk (for callers off the event loop that may read it
    by path, as episodes do from asyncio's threads).
    `put_file` returns at once for a file already stored under its remembered digest (`arena.store.file_digests`: the
    episodes of a task after the first), else waits for the writer: the file is copied by the kernel, and hashed
    only if its digest is not remembered from an earlier run over it. `held_file` answers such a file on the event
    loop (a stat) once a `put_file` of this store has looked up the digests in use."""

    def __init__(self, root: str | Path, writer: RunWriter, wait: bool = False):
        super().__init__(root)
        self.writer, self.wait = writer, wait
        self._pending: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes, ext: str = "png", blob_id: str | None = None) -> str:
        blob_id = blob_id or content_id(data, ext)
        if blob_id in self._stored:  # the same image in another round or episode: no path built, no stat
            return blob_id
        if self.path(blob_id).exists():  # stored already (the same crop, another episode): nothing to queue
            self._stored.add(blob_id)
            return blob_id
        if self.wait:  # independent of the records: no barrier between the commits of a batch
            return self.writer._put(APPEND, None, self.write, (blob_id, data)).result()  # (`write` notes it stored)
        return self.queued(blob_id, data)

    def queued(self, blob_id: str, data: bytes) -> str:
        """Queue the write of `data` under `blob_id` without waiting, even in a store that waits (`wait`): for a caller
        that keeps the bytes' image itself, as an episode keeps a tool's image (`known_image`); `get` reads it
        meanwhile, and a write that fails is kept in the writer's `problems`."""
        with self._lock:
            if blob_id in self._pending:
                return blob_id
            self._pending[blob_id] = data
        self.writer._fire(f"blob {blob_id}", self._write, blob_id, data)  # independent of the records
        return blob_id

    def put_file(self, path: str | Path) -> str:
        self._digests = digests()  # (the environment names them: looked up here, off the event loop)
        where, _, known = remembered(path)  # already stored under its remembered digest: nothing to queue
        if known is not None and (known in self._stored or self.path(known).exists()):
            self._stored.add(known)
            return known
        return self.writer._put(APPEND, None, super().put_file, (where,)).result()  # (on the writer's thread)

    def _write(self, blob_id: str, data: bytes) -> None:
        try:
            self.write(blob_id, data)  # hashed once, by `put`; noted as stored (`TaskFileBlobs.write`)
        finally:
            with self._lock:
                self._pending.pop(blob_id, None)

    def get(self, blob_id: str) -> bytes:
        with self._lock:
            data = self._pending.get(blob_id)
        return data if data is not None else super().get(blob_id)
