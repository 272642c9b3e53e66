"""The asyncio backend: episodes played in this process's event loop (the default, without --workers or Ray)."""

from __future__ import annotations

from arena.core.trajectory import Episode
from arena.runs.workbench import EpisodeJob, Workbench
from arena.store.store import RunStore
from arena.store.writer import RunWriter


class LocalBackend:
    """Plays episodes in this process's event loop (the asyncio backend); their blobs go through the run writer."""

    def __init__(self, bench: Workbench, run_id: str, store: RunStore, writer: RunWriter):
        self.bench, self.run_id, self.store = bench, run_id, store
        self.gate = bench.gate
        self.blobs = writer.blobs(store.blobs.root)

    async def play(self, job: EpisodeJob) -> Episode:
        return await self.bench.play(job, self.run_id, self.blobs)

    def worker_cpu_seconds(self) -> float | None:
        """No workers: the driver's own CPU is the whole cost."""
        return None

    async def aclose(self) -> None:
        """Nothing to release: the workbench is closed by the caller."""
