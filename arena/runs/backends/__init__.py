"""Where a run's episodes are played: one `Backend` protocol, three backends in their own modules.

- `asyncio_backend.LocalBackend`: this process's event loop (the default);
- `worker_backend.WorkerBackend`: local worker processes (`--workers N`);
- `ray_backend.RayBackend`: Ray workers (`--backend ray`).

A backend returns the episode finished where it was played (`arena.runs.finishing.Finished`, with its brief). Where
the player shares the run directory's filesystem (worker processes; Ray workers of a local instance), it appends and
fsyncs the episode's records itself (`arena.store.shared_appends.SharedAppends`, its own group commit) and returns
the episode `landed`: the driver writes nothing for it. Else (Ray workers on other machines) the records come back
as bytes (its calls.jsonl and judge-cache lines handed to the run writer, its blobs written into the run's blob
store) and the runner appends them. `make_backend` picks one from the run's configuration.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from arena.runs.config import RunConfig
from arena.runs.finishing import Finished, Finisher
from arena.runs.workbench import EpisodeJob, Workbench
from arena.store.store import RunStore
from arena.store.writer import RunWriter

from .asyncio_backend import LocalBackend
from .ray_backend import RayBackend
from .worker_backend import WorkerBackend, prepare_workers


class Gate(Protocol):
    """Per-endpoint limits (`arena.runs.limits.EndpointGate`, or its Ray and worker-process stand-ins): `slot`
    holds one of an endpoint's parallel requests (and its rate) while the block runs."""

    def slot(self, endpoint: str | None) -> AbstractAsyncContextManager[Any]: ...


class Backend(Protocol):
    """Plays one episode job at a time per call, concurrently across calls, and is closed once."""

    gate: Gate
    """The gate judge calls go through too (one limit per endpoint across agent and judge)."""

    async def play(self, job: EpisodeJob, resend: dict[str, Any] | None = None) -> Finished:
        """The played and finished episode (`landed` when the player appended its records itself, else the runner
        appends its bytes to the store); `resend`: a fork's recorded request, sent again
        (`arena.endpoints.transcript.scope`, opened where the episode plays)."""
        ...

    async def aclose(self) -> None:
        """Release workers, actors and processes (idempotent)."""
        ...

    def worker_cpu_seconds(self) -> float | None:
        """CPU seconds the backend's workers spent since they were ready, as last reported (None: no workers,
        every episode ran in the driver)."""
        ...


def make_backend(config: RunConfig, bench: Workbench, run_id: str, store: RunStore, writer: RunWriter,
                 finisher: Finisher, calls: Any = None) -> Backend:
    """The backend the configuration asks for: Ray (`backend: ray`), worker processes (`workers`, each finishing
    its episodes with a finisher of its own), else asyncio (episodes finished by the driver's `finisher`, judge calls
    recorded by `calls`)."""
    if config.schedule.backend == "ray":
        if config.schedule.workers:
            raise ValueError("--workers runs local worker processes under the asyncio backend; with --backend ray "
                             "give --ray-workers")
        return RayBackend(config, run_id, store, writer, bench.agents)
    if config.schedule.workers:
        return WorkerBackend(config, run_id, store, writer, bench.gate, bench.agents)
    return LocalBackend(bench, run_id, store, writer, finisher, calls)


__all__ = ["Backend", "Gate", "LocalBackend", "RayBackend", "WorkerBackend", "make_backend", "prepare_workers"]
