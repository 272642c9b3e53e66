"""The grid of a run (tasks x settings x budgets x repeats x agents), grouped for prefix sharing.

Every episode is keyed by (task, setting, max_rounds, repeat, agent). Cells that
differ only in their budget form a `Family`; with prefix sharing the family's largest
budget is played and the others are derived from it (`arena.runs.prefix`), otherwise each
cell is played on its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from arena.core.task import Task
from arena.core.trajectory import episode_key

from .workbench import EpisodeJob, Workbench


def episode_seed(seed: int, key: str) -> int:
    return int(hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()[:8], 16)


@dataclass
class Cell:
    dataset: int
    task: Task
    setting: str
    max_rounds: int
    repeat: int
    agent: int
    key: str
    seed: int

    def job(self, **extra) -> EpisodeJob:
        return EpisodeJob(key=self.key, dataset=self.dataset, task_id=self.task.id, setting=self.setting,
                          max_rounds=self.max_rounds, repeat=self.repeat, agent=self.agent, seed=self.seed, **extra)


@dataclass
class Family:
    """Cells of one (task, setting, repeat, agent), largest budget first."""

    cells: list[Cell] = field(default_factory=list)
    shared: bool = False


def plan(bench: Workbench) -> list[Family]:
    config = bench.config
    budgets = sorted(set(config.grid.max_rounds), reverse=True)
    shared = config.shares_prefixes()
    families: list[Family] = []
    for dataset, task in bench.pairs:
        index = bench.dataset_index(dataset)
        for setting in config.grid.settings:
            for repeat in range(config.grid.repeats):
                for agent_index, agent in enumerate(bench.agents):
                    cells = []
                    for max_rounds in budgets:
                        key = episode_key(task.id, setting, max_rounds, repeat, agent.id)
                        cells.append(Cell(index, task, setting, max_rounds, repeat, agent_index, key,
                                          episode_seed(config.grid.seed, key)))
                    if shared:
                        families.append(Family(cells, shared=True))
                    else:
                        families.extend(Family([cell]) for cell in cells)
    return families


def grid_size(families: list[Family]) -> int:
    return sum(len(f.cells) for f in families)
