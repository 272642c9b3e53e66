"""The Ray backend: episodes fanned out to Ray actors.

Each worker (`EpisodeWorker`, an async actor playing several episodes at once) builds
its own `Workbench` from the run's config JSON, so datasets and worlds must be
readable at the same paths on every node (a local cluster, or a shared filesystem).
A worker finishes each episode it plays (`arena.runs.finishing`: cost, record line, judging with the run's
judges, verdict lines) and returns it as bytes with its brief, its model and judge calls as calls.jsonl lines and
its judge-cache lines (`play_finished`), keeping the images it produces in memory to return with it; the driver
writes blobs and lines through the run writer, then appends the episode and verdict lines unparsed (`receive`,
then the runner). The blobs a prefix reuses travel to the worker with the job, and so does a
fork's recorded request (the `resend` the runner gives `play`), which
the worker sends again as the asyncio backend would. The local worker processes of
`--workers` (`arena.runs.backends.worker_backend`) use the same functions. Per-endpoint limits are enforced
across all workers by one gate actor. On a local Ray instance (no `ray_address`: the actors run on this machine and
share its filesystem) the actors read and write the run's blob store themselves and append their episodes' records
to the run (`arena.runs.finishing.RunAppender`), as local worker processes do: no blob and no record travels, the
driver reads the brief alone; on a cluster they travel as described above, unless the run directory is on a
filesystem every node mounts at the same path (`ray_shared_dir`, `--ray-shared-dir`): then the actors write there as
on a local instance (every append under the run's append lock, `arena.store.shared_appends`: `flock`, which on NFS
depends on the mount).

`ray_address=None` starts a local Ray instance (`ray.init()`) for the run and stops it
afterwards; an address (`auto`, `ray://host:10001`, `host:6379`) joins an existing
cluster and leaves it running.
"""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from arena.core.blobs import BlobStore, file_ext
from arena.core.content_ids import content_id
from arena.endpoints import transcript
from arena.runs.allocator import keep_freed_memory
from arena.runs.config import EndpointLimit, RunConfig
from arena.runs.finishing import JUDGE_CACHE, Finished, Finisher, RunAppender, take_learned
from arena.runs.limits import EndpointGate
from arena.runs.workbench import EpisodeJob, Workbench
from arena.store.calls import TranscriptWriter
from arena.store.file_digests import TaskFileBlobs, remember, remembered, signature
from arena.store.store import RunStore
from arena.store.writer import RunWriter, settled

from .ray_address import join_cluster

REPO_ROOT = Path(__file__).resolve().parents[2]


class MemoryBlobStore(BlobStore):
    """A blob store in memory: `seed` holds blobs given to the worker, `new` those it made that the driver may not
    have. `stored`: ids the driver has confirmed it stored (`arena.runs.backends.worker_backend`): such a blob is not put in `new` again,
    and a task file remembered under such an id (`arena.store.file_digests`) is neither read nor hashed."""

    def __init__(self, seed: dict[str, bytes] | None = None, stored: set[str] | frozenset[str] = frozenset()):
        super().__init__(Path("<memory>"))
        self.data: dict[str, bytes] = dict(seed or {})
        self.new: dict[str, bytes] = {}
        self.stored = stored
        self.files: dict[str, Path] = {}  # task files known by id only, read if asked for

    def content_file(self, blob_id: str) -> Path | None:
        return None  # (a task file known by id is the dataset's, which may change: not a content-addressed copy)

    def put(self, data: bytes, ext: str = "png", blob_id: str | None = None) -> str:
        blob_id = blob_id or content_id(data, ext)
        if blob_id not in self.data:
            self.data[blob_id] = data
            if blob_id not in self.stored:
                self.new[blob_id] = data
        return blob_id

    def put_file(self, path: str | Path) -> str:
        """A file's bytes kept in memory like any other blob (never written under the placeholder root)."""
        where, before, known = remembered(path)
        if known is not None and known in self.stored:
            self.files[known] = Path(where)
            return known
        data, ext = Path(where).read_bytes(), file_ext(where)
        if known is not None and signature(where) == before:  # read while the file held: not hashed again
            return self.put(data, ext, blob_id=known)
        blob_id = self.put(data, ext)
        remember(where, before, blob_id)
        return blob_id

    def get(self, blob_id: str) -> bytes:
        if blob_id in self.files:
            return self.files[blob_id].read_bytes()
        try:
            return self.data[blob_id]
        except KeyError:
            raise FileNotFoundError(f"blob {blob_id} was not sent to this worker") from None


def apply_learned(agents: list[Any], learned: dict[str, dict[str, Any]]) -> None:
    """Give each agent the limits learned for its id (from run.json, or from a worker)."""
    for agent in agents:
        if learned.get(agent.id):
            agent.apply_limits(learned[agent.id])


async def play_finished(bench: Workbench, finisher: Finisher, job_json: str, run_id: str, blobs: dict[str, bytes],
                        resend: dict[str, Any] | None = None, stored: set[str] | frozenset[str] = frozenset(),
                        run_blobs: BlobStore | None = None) -> tuple[Finished, dict[str, bytes]]:
    """Worker side: play a job with its prefix's blobs in memory, recording its model calls, and finish it with the
    worker's `finisher` (judged, its judge calls recorded too); `resend`: the recorded request a fork sends again
    (what the runner gives the backend's `play`), as the asyncio backend does; `stored`: blob ids the
    driver confirmed it has (not sent again). With `run_blobs` (the run's own blob store, on a filesystem the worker
    shares with the driver) the episode reads and writes its blobs there itself (each written atomically under its
    content hash, before the episode is returned) and none is returned.

    Returns the `Finished` episode (its `calls`: its calls.jsonl lines; `cache`: judge-cache lines) and the blobs
    it made that are not in `stored`; the lines refer to blobs among those made or stored."""
    store = run_blobs if run_blobs is not None else MemoryBlobStore(blobs, stored)
    job = EpisodeJob.model_validate_json(job_json)
    lines: list[bytes] = []
    calls = (TranscriptWriter(Path("."), store, append=lambda _path, line: lines.append(line))
             if bench.config.output.transcript else None)
    with transcript.scope(calls, job.key, "agent", resend):
        episode = await bench.play(job, run_id, store)
    finished = await finisher.finish(episode, store, calls)
    finished.calls = lines
    return finished, store.new if isinstance(store, MemoryBlobStore) else {}


async def prefix_blobs(store: RunStore, job: EpisodeJob) -> dict[str, bytes]:
    """Driver side: the blobs a job's reused prefix needs, to send with it."""
    return {b: await asyncio.to_thread(store.blobs.get, b) for b in job.prefix_blobs()}


async def receive(store: RunStore, writer: RunWriter, agents: list[Any], finished: Finished, new: dict[str, bytes],
                  source: str) -> Finished:
    """Driver side: write a worker's blobs, call lines and judge-cache lines through the run writer (before the
    episode, which the runner appends after them), take what the worker learned into the driver's `agents` and
    endpoints (the runner records it in run.json), and return the finished episode, nothing of it parsed. A blob
    already in the store is neither hashed nor written again (an earlier episode's task image); the others are
    stored under the hash of their bytes, checked against the worker's id."""
    writes = {blob_id: writer.submit(store.blobs.put, data, blob_id.rsplit(".", 1)[-1])
              for blob_id, data in new.items() if not store.blobs.path(blob_id).exists()}
    for blob_id, write in writes.items():
        stored = await settled(write)
        if stored != blob_id:
            raise RuntimeError(f"blob {blob_id} from {source} does not match its content ({stored})")
    if finished.calls:
        writer.append_lines(store.calls_path, finished.calls)
    if finished.cache:
        writer.append_lines(store.dir / JUDGE_CACHE, finished.cache)
    finished.calls, finished.cache = [], []
    take_learned(agents, finished.learned)
    return finished


def shipped_config(config: RunConfig) -> str:
    """The run's config as JSON for workers, its data paths made absolute."""
    paths = {"data": config.data.path, "root": config.data.root, "corpus": config.data.corpus,
             "prompts": config.judge.prompts}
    return config.updated(**{k: str(Path(v).resolve()) for k, v in paths.items() if v}).model_dump_json()


class GateActor:
    """One EndpointGate shared by every worker and the driver."""

    def __init__(self, limits: dict[str, dict[str, Any]]):
        self.gate = EndpointGate({k: EndpointLimit(**v) for k, v in limits.items()})

    async def acquire(self, endpoint: str | None) -> None:
        await self.gate.acquire(endpoint)

    async def release(self, endpoint: str | None) -> None:
        self.gate.release(endpoint)


class RemoteGate:
    """The Gate interface over a GateActor handle (a no-op for endpoints without limits)."""

    def __init__(self, actor: Any, limits: dict[str, EndpointLimit]):
        self.actor = actor
        self.local = EndpointGate(limits)

    @asynccontextmanager
    async def slot(self, endpoint: str | None) -> AsyncIterator[None]:
        if self.local.limit_for(endpoint) is None:
            yield
            return
        await self.actor.acquire.remote(endpoint)
        try:
            yield
        finally:
            await self.actor.release.remote(endpoint)


class EpisodeWorker:
    """A Ray actor that plays jobs of one run."""

    def __init__(self, config_json: str, run_id: str, gate: Any | None, learned: dict[str, dict[str, Any]],
                 blobs_root: str | None = None, run_dir: str = "."):
        """`blobs_root`: the run's blob store, on a filesystem the actor shares with the driver (else None: blobs
        travel with jobs and results); `run_dir`: the driver's run directory (its judge cache is read where the
        actor sees it)."""
        keep_freed_memory()
        self.run_blobs = TaskFileBlobs(blobs_root) if blobs_root is not None else None
        config = RunConfig.model_validate_json(config_json)
        self.run_id = run_id
        self.bench = Workbench(config, gate=RemoteGate(gate, config.schedule.endpoint_limits) if gate is not None else None)
        apply_learned(self.bench.agents, learned)
        self.finisher = Finisher.for_bench(config, self.bench, self.bench.gate, run_dir)
        # sharing the run directory, the actor appends its episodes' records itself
        self.appender = RunAppender(run_dir) if blobs_root is not None else None
        self.ready_cpu = time.process_time()

    async def ready(self) -> int:
        return os.getpid()

    async def play(self, job_json: str, blobs: dict[str, bytes], resend: dict[str, Any] | None = None
                   ) -> tuple[Finished, dict[str, bytes], float]:
        """What `play_finished` returns, and the actor's CPU seconds since it was built."""
        finished, new = await play_finished(self.bench, self.finisher, job_json, self.run_id, blobs, resend,
                                            run_blobs=self.run_blobs)
        if self.appender is not None:
            finished = await self.appender.record(finished)
        return finished, new, time.process_time() - self.ready_cpu

    async def close(self) -> None:
        if self.appender is not None:
            await self.appender.aclose()
        await self.finisher.aclose()
        await self.bench.aclose()


def ray_runtime_env() -> dict[str, Any]:
    """Workers import the arena from the driver's source tree."""
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


class RayBackend:
    def __init__(self, config: RunConfig, run_id: str, store: RunStore, writer: RunWriter, agents: list[Any]):
        try:
            import ray
        except ImportError:
            raise ValueError("--backend ray needs Ray: pip install 'ray>=2.9'") from None
        self.ray = ray
        self.store, self.writer, self.agents = store, writer, agents
        self.owns_cluster = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                       "runtime_env": ray_runtime_env()}
            if config.schedule.ray_address in ("auto", "local"):
                ray.init(address=config.schedule.ray_address, **options)
            elif config.schedule.ray_address:  # reachable (checked before the run opened), given JOIN_DEADLINE to answer
                join_cluster(ray, config.schedule.ray_address, options)
            else:
                ray.init(num_cpus=config.schedule.ray_workers or os.cpu_count() or 1, **options)
                self.owns_cluster = True
        self.workers: list[Any] = []
        self.gate_actor = None
        try:
            workers = config.schedule.ray_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            limits = {k: v.model_dump() for k, v in config.schedule.endpoint_limits.items()}
            self.gate_actor = ray.remote(GateActor).options(num_cpus=0).remote(limits) if limits else None
            self.gate = (RemoteGate(self.gate_actor, config.schedule.endpoint_limits) if self.gate_actor is not None
                         else EndpointGate({}))
            worker_cls = ray.remote(EpisodeWorker).options(num_cpus=0, max_concurrency=max(1, config.schedule.concurrency))
            learned = {a.id: a.learned_limits() for a in agents}
            # a local instance shares the run directory, and so does a cluster that mounts it on every node
            shared = not config.schedule.ray_address or config.schedule.ray_shared_dir
            self.blobs_root = str(store.blobs.root) if shared else None
            self.workers = [worker_cls.remote(shipped_config(config), run_id, self.gate_actor, learned,
                                              self.blobs_root, str(store.dir)) for _ in range(workers)]
            self.pids = ray.get([w.ready.remote() for w in self.workers])
        except BaseException as exc:
            self._stop()
            if isinstance(exc, ray.exceptions.RayError):
                raise RuntimeError(f"Ray workers could not start: {exc}") from None
            raise
        self._load = [0] * len(self.workers)
        self._cpu = [0.0] * len(self.workers)

    def _pick(self) -> int:
        return min(range(len(self.workers)), key=lambda i: (self._load[i], i))

    async def play(self, job: EpisodeJob, resend: dict[str, Any] | None = None) -> Finished:
        blobs = await prefix_blobs(self.store, job) if self.blobs_root is None else {}
        index = self._pick()
        self._load[index] += 1
        try:
            played = await self.workers[index].play.remote(job.model_dump_json(), blobs, resend)
        finally:
            self._load[index] -= 1
        self._cpu[index] = max(self._cpu[index], played[-1])
        return await receive(self.store, self.writer, self.agents, *played[:-1], "a Ray worker")

    def worker_cpu_seconds(self) -> float | None:
        return sum(self._cpu)

    def _stop(self) -> None:
        for actor in [*self.workers, *([self.gate_actor] if self.gate_actor is not None else [])]:
            try:
                self.ray.kill(actor)
            except Exception:
                continue
        if self.owns_cluster:
            self.ray.shutdown()

    async def aclose(self) -> None:
        try:
            await asyncio.gather(*(w.close.remote() for w in self.workers), return_exceptions=True)
        finally:
            self._stop()
