"""The asyncio backend: episodes played in this process's event loop (the default, without --workers or Ray)."""

from __future__ import annotations

from typing import Any

from arena.endpoints import transcript
from arena.runs.finishing import Finished, Finisher
from arena.runs.workbench import EpisodeJob, Workbench
from arena.store.store import RunStore
from arena.store.writer import RunWriter


class LocalBackend:
    """Plays episodes in this process's event loop (the asyncio backend); their blobs go through the run writer. An
    episode is finished here by the driver's `finisher`, its judge calls recorded by `calls` (the run writer's)."""

    def __init__(self, bench: Workbench, run_id: str, store: RunStore, writer: RunWriter, finisher: Finisher,
                 calls: Any = None):
        self.bench, self.run_id, self.store, self.finisher, self.calls = bench, run_id, store, finisher, calls
        self.gate = bench.gate
        self.blobs = writer.blobs(store.blobs.root)

    async def play(self, job: EpisodeJob, resend: dict[str, Any] | None = None) -> Finished:
        with transcript.scope(self.calls, job.key, "agent", resend):
            episode = await self.bench.play(job, self.run_id, self.blobs)
        return await self.finisher.finish(episode, self.blobs, self.calls)

    def worker_cpu_seconds(self) -> float | None:
        """No workers: the driver's own CPU is the whole cost."""
        return None

    async def aclose(self) -> None:
        """Nothing to release: the workbench is closed by the caller."""
