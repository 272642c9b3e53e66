"""Worker processes on one machine (`--workers N`): episodes played, finished and recorded in N processes, the
driver reading a brief of each.

Each worker is a process with its own event loop and its own `Workbench`, built from the run's config JSON (as a Ray
worker is). Workers are forked from a fork server that has imported the arena once (`worker_context`:
multiprocessing's `forkserver`, preloading `arena.runs.backends.worker_preload`, started once per driver process and
as early as the run starts, `prepare_workers`), so a worker is ready in a fraction of a second instead of importing
everything in a fresh interpreter; where there is no fork server (Windows), they are spawned. A worker takes the
driver's environment as it is when the worker starts (`DriverState`), as a spawned one would (multiprocessing itself
gives it the driver's `sys.path` and working directory). The driver sends it jobs; the worker plays several at once
and finishes each episode itself (`arena.runs.finishing.Finisher`, with judges of its own built from the run's
config: cost, the episode's line and index entry, judging, the verdict lines; `play_finished` in
`arena.runs.backends.ray_backend`), then appends them to the run itself with its calls.jsonl lines (agent and
judge calls) and judge-cache lines (`arena.runs.finishing.RunAppender`: its own run writer, group commit and
fsyncs, every append under the run's append lock, `arena.store.shared_appends`), and only once they are on disk sends
the driver the episode's brief (`landed`; with `stored`, where its line lies). The driver appends nothing for it
and reads only the brief (stops, harness meter, progress). Blobs (task images, crops) never travel: a worker
reads and writes them in the run's blob store itself (content-addressed, each written atomically under the hash of
its bytes, so two processes writing one blob is safe), before it reports the episode. Resume (re-judging a resumed
run's unjudged episodes included), progress and stops stay in the driver. A job whose awaiting task is cancelled (a
run stopped by --fail-fast or --max-cost) is cancelled in its worker. Per-endpoint limits, the judge's endpoint
included, are kept by the driver's gate: a worker asks the driver for a slot of a limited endpoint and gives it back
after the request.

Messages, all plain tuples over `multiprocessing` queues (the queues' own threads pickle and unpickle them):
driver -> worker `("play", [(id, job_json, blobs, resend), ...])` (the jobs queued in one pass of the driver's event
loop; resend: a fork's recorded request, or None; blobs: empty when the worker writes the run's blob store itself;
a job cancelled before it left is dropped from the list), `("cancel", id)`, `("granted", rid)`, `("stored", blob_ids)`
(blobs of a finished episode, now in the run's store: the worker does not send them again), `None` (stop);
worker -> driver `("ready", w, pid)`, `("failed", w, message)`, `("done", [(id, finished, blobs), ...], cpu)`
(the episodes whose records reached the disk in one pass of the worker's event loop, as one message; finished:
the `arena.runs.finishing.Finished` episode, landed, with its brief, where its line lies and what it learned when
that changed; blobs: empty, the worker writes the run's blob store itself; cpu: the worker's CPU seconds since it
was ready),
`("error", id, message)`, `("acquire", w, rid, endpoint)`, `("release", endpoint)`.
A worker that dies fails the jobs it held, with its exit code; a worker whose driver died stops by itself.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import multiprocessing
import os
import queue
import sys
import threading
import time
import traceback
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from multiprocessing import forkserver
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from arena.runs.allocator import keep_freed_memory, startup_frozen
from arena.runs.config import RunConfig
from arena.runs.finishing import Finished, Finisher, RunAppender
from arena.runs.limits import EndpointGate
from arena.runs.workbench import EpisodeJob, Workbench
from arena.store.file_digests import TaskFileBlobs
from arena.store.store import RunStore
from arena.store.writer import RunWriter

from .ray_backend import apply_learned, play_finished, receive, shipped_config

START_TIMEOUT = 120.0  # seconds a worker may take to import the arena and build its workbench
POLL = 0.5  # seconds between checks that the workers are alive


PRELOAD = "arena.runs.backends.worker_preload"
_context: BaseContext | None = None


class WorkerError(RuntimeError):
    """A worker process failed to start, died, or could not play a job."""


class DriverWatch:
    """Worker side: whether the driver still runs. The worker's parent is the driver (spawned) or the fork server;
    the fork server outlives a killed driver as long as any worker it forked lives (each holds the fd the server
    watches), so the driver's own pid is watched too: gone, or a zombie not yet reaped, means dead."""

    def __init__(self, driver: int | None):
        self.parent = os.getppid()
        self.driver = driver if driver is not None else self.parent

    def alive(self) -> bool:
        if os.getppid() != self.parent:
            return False
        try:
            os.kill(self.driver, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:  # a killed driver stays a zombie until its own parent reaps it
            return Path(f"/proc/{self.driver}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return True  # no /proc: the pid exists, as far as can be known


def worker_context() -> BaseContext:
    """The multiprocessing context workers start in: `forkserver` preloading the arena (set up once per process),
    else `spawn`. Never `fork`: the driver has threads and an event loop."""
    global _context
    if _context is None:
        if "forkserver" in multiprocessing.get_all_start_methods():
            _context = multiprocessing.get_context("forkserver")
            _context.set_forkserver_preload([PRELOAD])
        else:
            _context = multiprocessing.get_context("spawn")
    return _context


def prepare_workers() -> None:
    """Start the fork server now (it imports the arena while the driver loads the run's data); a no-op when it runs
    already, or without one."""
    context = worker_context()
    if context.get_start_method() == "forkserver":
        forkserver.ensure_running()


@dataclass
class DriverState:
    """What a spawned worker would have inherited from the driver and one forked from the fork server must be
    given: the driver's environment when the worker starts (keys read from it, variables set since the server
    started). `sys.path` and the working directory travel with multiprocessing's own preparation data."""

    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    pid: int = field(default_factory=os.getpid)
    """The driver's process id: a worker forked by the fork server is not the driver's child."""

    def apply(self) -> None:
        os.environ.clear()
        os.environ.update(self.env)


class PassBatch:
    """Messages gathered during one pass of the event loop and sent as one after it: the first `add` of a pass
    schedules `send(items)` (`call_soon`); `flush` sends what waits now. Used both ways: a worker's finished
    episodes, the driver's jobs for one worker."""

    def __init__(self, send: Callable[[list[tuple]], None]):
        self.send, self.items = send, []

    def add(self, item: tuple) -> None:
        if not self.items:
            asyncio.get_running_loop().call_soon(self.flush)
        self.items.append(item)

    def flush(self) -> None:
        if self.items:
            items, self.items = self.items, []
            self.send(items)


class DriverGate:
    """Worker side: the Gate interface over the driver's gate (a no-op for endpoints without limits)."""

    def __init__(self, limits: EndpointGate, results: Any, worker: int):
        self.local, self.results, self.worker = limits, results, worker
        self.waiting: dict[int, asyncio.Future] = {}
        self.endpoint_of: dict[int, str | None] = {}  # requests not yet granted
        self._ids = itertools.count()

    @asynccontextmanager
    async def slot(self, endpoint: str | None) -> AsyncIterator[None]:
        if self.local.limit_for(endpoint) is None:
            yield
            return
        rid = next(self._ids)
        granted = self.waiting[rid] = asyncio.get_running_loop().create_future()
        self.endpoint_of[rid] = endpoint
        self.results.put(("acquire", self.worker, rid, endpoint))
        try:
            await granted
        finally:
            self.waiting.pop(rid, None)
        try:
            yield
        finally:
            self.results.put(("release", endpoint))

    def grant(self, rid: int) -> None:
        endpoint = self.endpoint_of.pop(rid, None)
        waiter = self.waiting.get(rid)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        else:  # its request was cancelled meanwhile: the slot goes back at once
            self.results.put(("release", endpoint))


def worker_main(config_json: str, run_id: str, jobs: Any, results: Any, worker: int,
                learned: dict[str, dict[str, Any]], state: DriverState | None = None,
                blobs_root: str | None = None, run_dir: str | None = None) -> None:
    """Entry point of a worker process; `learned`: the limits the run has learned so far, by agent id; `state`: the
    driver's environment, taken first; `blobs_root`: the run's blob store, which the worker then reads and writes
    itself (else blobs travel with the messages); `run_dir`: the run directory (its judge cache is read by the
    worker's judges; default: the blob store's parent).

    The process ends with `os._exit` once its workbench is closed, its messages are flushed to the driver and the
    exit handlers have run (`atexit`: logging's flush, multiprocessing's finalizers, which unlink the semaphores a
    library made here, such as tqdm's lock): the interpreter's teardown (freeing every module, ~0.13 s) is
    skipped, which every run's end waited for (exit code 0, or 1 after a failure it reported)."""
    keep_freed_memory()
    watch, code = DriverWatch(state.pid if state is not None else None), 0
    try:
        if state is not None:
            state.apply()
        asyncio.run(_serve(config_json, run_id, jobs, results, worker, learned, blobs_root, watch, run_dir))
    except BaseException:
        code = 1
        results.put(("failed", worker, traceback.format_exc(limit=8)))
    finally:
        end_process(results, watch.alive(), code)


def end_process(results: Any, driver_alive: bool, code: int) -> None:
    """End a worker: its messages flushed into the pipe (only while the driver lives to read them: a dead driver's
    pipe may stay full for ever, and the worker holds its read end too), the exit handlers run (`atexit`), then
    `os._exit(code)` without the interpreter's teardown."""
    results.close()
    if driver_alive:
        results.join_thread()  # every message is in the pipe before the process ends
    else:
        results.cancel_join_thread()  # else the exit handlers would join the feeder thread, blocked on the pipe
    atexit._run_exitfuncs()  # what a normal exit runs before the teardown (else: "leaked semaphore" warnings)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _serve(config_json: str, run_id: str, jobs: Any, results: Any, worker: int,
                 learned: dict[str, dict[str, Any]], blobs_root: str | None = None,
                 watch: DriverWatch | None = None, run_dir: str | None = None) -> None:
    loop = asyncio.get_running_loop()
    config = RunConfig.model_validate_json(config_json)
    gate = DriverGate(EndpointGate(config.schedule.endpoint_limits), results, worker)
    bench = Workbench(config, gate=gate)
    apply_learned(bench.agents, learned)
    run_dir = run_dir or (str(Path(blobs_root).parent) if blobs_root else None)
    finisher = Finisher.for_bench(config, bench, gate, run_dir or ".")
    appender = RunAppender(run_dir) if blobs_root is not None and run_dir is not None else None
    inbox: asyncio.Queue = asyncio.Queue()

    driver = watch or DriverWatch(None)

    def forward() -> None:  # a thread: the driver's messages into the event loop, the stop (None) included
        while True:
            try:
                message = jobs.get(timeout=POLL)
            except queue.Empty:
                if driver.alive():
                    continue
                message = None  # the driver died (even by SIGKILL): stop rather than linger
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None:
                return
    threading.Thread(target=forward, name="arena-worker-jobs", daemon=True).start()
    results.put(("ready", worker, os.getpid()))
    ready_cpu = time.process_time()
    running: dict[int, asyncio.Task] = {}
    stored: set[str] = set()  # blob ids the driver has stored
    run_blobs = TaskFileBlobs(blobs_root) if blobs_root is not None else None

    # episodes finished in one pass of the event loop, sent as one message after it
    outbox = PassBatch(lambda done: results.put(("done", done, time.process_time() - ready_cpu)))

    async def play(job_id: int, job_json: str, blobs: dict[str, bytes], resend: dict[str, Any] | None) -> None:
        try:
            finished, new = await play_finished(bench, finisher, job_json, run_id, blobs, resend, stored, run_blobs)
            if appender is not None:  # its records appended here: the driver reads its brief alone
                finished = await appender.record(finished)
            outbox.add((job_id, finished, new))
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            results.put(("error", job_id, f"{type(exc).__name__}: {exc}"))
        finally:
            running.pop(job_id, None)

    try:
        with startup_frozen():  # the workbench and modules stay out of full collections while the worker plays
            while (message := await inbox.get()) is not None:
                if message[0] == "play":
                    for job in message[1]:
                        running[job[0]] = asyncio.ensure_future(play(*job))
                elif message[0] == "cancel" and message[1] in running:
                    running[message[1]].cancel()
                elif message[0] == "granted":
                    gate.grant(message[1])
                elif message[0] == "stored":
                    stored.update(message[1])
    finally:
        for task in running.values():
            task.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)
        outbox.flush()
        if appender is not None:
            await appender.aclose()
        await finisher.aclose()
        await bench.aclose()


class WorkerBackend:
    """Driver side: N worker processes, jobs to the least loaded one."""

    def __init__(self, config: RunConfig, run_id: str, store: RunStore, writer: RunWriter, gate: EndpointGate,
                 agents: list[Any]):
        """`gate` and `agents`: the driver's; the limits agents learn in workers are taken into `agents`."""
        self.store, self.writer, self.gate, self.agents = store, writer, gate, agents
        learned = {a.id: a.learned_limits() for a in agents}
        context = worker_context()
        state = DriverState()
        self.results = context.Queue()
        self.jobs = [context.Queue() for _ in range(config.schedule.workers or 1)]
        shipped = shipped_config(config)
        self.procs = [context.Process(target=worker_main, args=(shipped, run_id, jobs, self.results, w, learned, state,
                                            str(store.blobs.root), str(store.dir)),
                                      daemon=True, name=f"arena-worker-{w}") for w, jobs in enumerate(self.jobs)]
        self._load = [0] * len(self.procs)
        self._cpu = [0.0] * len(self.procs)  # each worker's CPU since it was ready, as last reported
        self._pending: dict[int, tuple[int, asyncio.Future]] = {}
        self._outbox = [PassBatch(lambda jobs, q=q: q.put(("play", jobs))) for q in self.jobs]  # jobs not sent yet
        self._ids = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: threading.Thread | None = None
        self._closing = False
        self._exited: dict[int, int | None] = {}  # worker -> exit code, as the reader thread found it
        try:
            for proc in self.procs:
                proc.start()
            self.pids = self._wait_ready()
        except BaseException:
            self._stop()
            raise

    def _wait_ready(self) -> list[int]:
        pids: dict[int, int] = {}
        waited = 0.0
        while len(pids) < len(self.procs):
            try:
                message = self.results.get(timeout=POLL)
            except queue.Empty:
                waited += POLL
                dead = [(w, p.exitcode) for w, p in enumerate(self.procs) if w not in pids and not p.is_alive()]
                if dead:
                    raise WorkerError(f"worker process {dead[0][0]} exited (exit code {dead[0][1]}) before it was "
                                      "ready; a script that starts a run with workers must do so under "
                                      "`if __name__ == '__main__':` (each worker process imports the main "
                                      "module)") from None
                if waited >= START_TIMEOUT:
                    raise WorkerError(f"worker processes did not start within {START_TIMEOUT:.0f} s") from None
                continue
            if message[0] == "failed":
                raise WorkerError(f"worker process {message[1]} could not start:\n{message[2]}")
            pids[message[1]] = message[2]
        return [pids[w] for w in range(len(self.procs))]

    def _start_reader(self) -> None:
        if self._reader is None:
            self._loop = asyncio.get_running_loop()
            self._reader = threading.Thread(target=self._read, name="arena-worker-results", daemon=True)
            self._reader.start()

    def _read(self) -> None:
        """Reader thread: hand the messages waiting to the event loop, as one batch (one wake-up of the loop for
        many finished episodes); notice dead workers when idle and at least every POLL seconds (the driver asks
        no process whether it lives per episode: each such poll is a system call on the loop's thread)."""
        assert self._loop is not None
        checked = time.monotonic()
        while not self._closing:
            batch = []
            try:
                batch.append(self.results.get(timeout=POLL))
                while len(batch) < 1024:
                    batch.append(self.results.get_nowait())
            except queue.Empty:
                pass
            except (EOFError, OSError):
                return
            if not batch or time.monotonic() - checked >= POLL:
                checked = time.monotonic()
                dead = [(w, p.exitcode) for w, p in enumerate(self.procs) if not p.is_alive()]
                if dead:
                    self._exited.update(dead)
                    self._loop.call_soon_threadsafe(self._fail_dead, dead)
            if None in batch:
                batch = batch[:batch.index(None)]
                if batch:
                    self._loop.call_soon_threadsafe(self._deliver_all, batch)
                return
            if batch:
                self._loop.call_soon_threadsafe(self._deliver_all, batch)

    def _deliver_all(self, batch: list[tuple]) -> None:
        for message in batch:
            self._deliver(message)

    def _deliver(self, message: tuple) -> None:
        kind = message[0]
        if kind == "done":
            for played in message[1]:
                worker, future = self._pending.pop(played[0], (None, None))
                if worker is not None:
                    self._cpu[worker] = max(self._cpu[worker], message[2])
                if future is not None and not future.done():
                    future.set_result(played)
        elif kind == "error":
            worker, future = self._pending.pop(message[1], (None, None))
            if future is not None and not future.done():
                future.set_result(message)
        elif kind == "acquire":
            asyncio.ensure_future(self._grant(*message[1:]))
        elif kind == "release":
            self.gate.release(message[1])
        elif kind == "failed":
            self._fail_dead([(message[1], f"failed:\n{message[2]}")])

    async def _grant(self, worker: int, rid: int, endpoint: str | None) -> None:
        await self.gate.acquire(endpoint)
        self.jobs[worker].put(("granted", rid))

    def _fail_dead(self, dead: list[tuple[int, Any]]) -> None:
        for job_id, (worker, future) in list(self._pending.items()):
            for w, code in dead:
                if worker == w and not future.done():
                    future.set_exception(WorkerError(f"worker process {w} (pid {self.procs[w].pid}) exited "
                                                     f"(exit code {code}) while playing an episode"))
                    self._pending.pop(job_id, None)

    async def play(self, job: EpisodeJob, resend: dict[str, Any] | None = None) -> Finished:
        self._start_reader()
        blobs: dict[str, bytes] = {}  # the worker reads a prefix's blobs from the run's store itself
        worker = min(range(len(self.procs)), key=lambda i: (self._load[i], i))
        if worker in self._exited:
            raise WorkerError(f"worker process {worker} (pid {self.procs[worker].pid}) has exited "
                              f"(exit code {self.procs[worker].exitcode})")
        job_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[job_id] = (worker, future)
        self._load[worker] += 1
        try:  # the worker counts as loaded until its blobs are confirmed, so a job sent to it comes after the ack
            try:
                self._outbox[worker].add((job_id, job.model_dump_json(), blobs, resend))
                message = await future
            except asyncio.CancelledError:
                self._pending.pop(job_id, None)
                self._cancel_job(worker, job_id)
                raise
            if message[0] == "error":
                raise WorkerError(f"worker process {worker} could not play episode {job.key}: {message[2]}")
            finished = await receive(self.store, self.writer, self.agents, *message[1:], f"worker process {worker}")
            if message[2] and worker not in self._exited:
                self.jobs[worker].put(("stored", list(message[2])))
            return finished
        finally:
            self._load[worker] -= 1

    def _cancel_job(self, worker: int, job_id: int) -> None:
        """Cancel a job: dropped if it has not left yet, else cancelled in its worker."""
        waiting = self._outbox[worker]
        if any(job[0] == job_id for job in waiting.items):
            waiting.items = [job for job in waiting.items if job[0] != job_id]
        else:
            self.jobs[worker].put(("cancel", job_id))

    def worker_cpu_seconds(self) -> float | None:
        return sum(self._cpu)

    def _stop(self) -> None:
        self._closing = True
        for jobs, proc in zip(self.jobs, self.procs):
            if proc.is_alive():
                jobs.put(None)
        for proc in self.procs:
            if proc.pid is not None:
                proc.join(timeout=10)
                if proc.is_alive():
                    proc.terminate()
                    proc.join(timeout=5)
        if self._reader is not None:
            self.results.put(None)
            self._reader.join(timeout=5)
        for q in [*self.jobs, self.results]:
            q.close()
            q.cancel_join_thread()

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stop)
