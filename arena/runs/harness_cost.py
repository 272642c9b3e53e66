"""What the arena itself costs while a run plays: driver and worker CPU, and the harness's share of episode time.

A `HarnessMeter` is started when the playing phase starts and told of every episode the session plays (its
`arena.runs.briefs.EpisodeBrief`, made where the episode was played); `figures`
turns what it saw into summary.json's `harness` group (`arena.store.records.HarnessCost`, whose docstring defines
each figure). Episode-side figures are sums over the played episodes' own steps (those whose model calls the
episode made itself: a prefix-shared or forked episode reuses its prefix's), so `episode_figures` recomputes them
from the records in the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from arena.core.trajectory import Episode

from .briefs import EpisodeBrief

DRIVER_SATURATED = 0.8
"""Driver CPU over wall time from which the driver counts as the bottleneck (a core is nearly saturated)."""
HINT_MIN_SECONDS = 5.0
"""Playing time under which no hint is given: worker processes take about a second to start (docs/benchmarks.md),
more than such a run could gain."""


@dataclass
class EpisodeTimes:
    """Sums over played episodes: count, own rounds, wall, model and tool seconds."""

    episodes: int = 0
    rounds: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0

    def add(self, brief: EpisodeBrief) -> None:
        """Count one played episode, from its brief (`arena.runs.briefs`: own rounds and their times)."""
        self.episodes += 1
        self.rounds += brief.rounds
        self.seconds += brief.seconds
        self.model_seconds += brief.model_seconds
        self.tool_seconds += brief.tool_seconds


def episode_figures(episodes: Iterable[Episode]) -> EpisodeTimes:
    """The episode-side sums of a set of played episodes (what the meter adds up as they finish)."""
    times = EpisodeTimes()
    for episode in episodes:
        times.add(EpisodeBrief.of(episode))
    return times


@dataclass
class HarnessMeter:
    """Started with the playing phase (`start`), told of each played episode (`observe`)."""

    backend: str
    workers: int = 0
    times: EpisodeTimes = field(default_factory=EpisodeTimes)
    started_wall: float = 0.0
    started_cpu: float = 0.0
    ended_wall: float | None = None
    ended_cpu: float | None = None

    def start(self) -> None:
        self.started_wall, self.started_cpu = time.perf_counter(), time.process_time()

    def stop(self) -> None:
        self.ended_wall, self.ended_cpu = time.perf_counter(), time.process_time()

    def observe(self, brief: EpisodeBrief) -> None:
        """A played episode, by its brief."""
        self.times.add(brief)

    def figures(self, worker_cpu: float | None) -> dict[str, Any]:
        """summary.json's `harness` group (`HarnessCost`), `worker_cpu`: the workers' CPU seconds (None: none)."""
        wall = (self.ended_wall if self.ended_wall is not None else time.perf_counter()) - self.started_wall
        cpu = (self.ended_cpu if self.ended_cpu is not None else time.process_time()) - self.started_cpu
        t = self.times
        harness = max(0.0, t.seconds - t.model_seconds)
        load = cpu / wall if wall > 0 else 0.0
        out: dict[str, Any] = {
            "backend": self.backend, "workers": self.workers, "episodes": t.episodes, "rounds": t.rounds,
            "wall_seconds": round(wall, 6), "driver_cpu_seconds": round(cpu, 6),
            "worker_cpu_seconds": None if worker_cpu is None else round(worker_cpu, 6),
            "driver_cpu_per_round_ms": round(1000 * cpu / t.rounds, 4) if t.rounds else None,
            "driver_cpu_per_episode_ms": round(1000 * cpu / t.episodes, 4) if t.episodes else None,
            "worker_cpu_per_round_ms": (round(1000 * worker_cpu / t.rounds, 4)
                                        if worker_cpu is not None and t.rounds else None),
            "driver_load": round(load, 4), "episode_seconds": round(t.seconds, 6),
            "model_seconds": round(t.model_seconds, 6), "tool_seconds": round(t.tool_seconds, 6),
            "harness_seconds": round(harness, 6),
            "harness_share": round(min(1.0, harness / t.seconds), 6) if t.seconds > 0 else None,
        }
        out["hint"] = bottleneck_hint(load, self.backend, self.workers, wall)
        return out


def bottleneck_hint(load: float, backend: str, workers: int, wall: float) -> str | None:
    """"the driver is the bottleneck: try --workers N" when the driver kept a core nearly saturated for a playing
    time (`wall`, seconds) of at least `HINT_MIN_SECONDS`."""
    if load < DRIVER_SATURATED or backend == "ray" or wall < HINT_MIN_SECONDS:
        return None
    more = max(2, 2 * workers)
    return (f"the driver is the bottleneck (its CPU was busy {load:.0%} of the playing time): try --workers {more}"
            + (" on a machine with more cores" if workers else ""))
