"""Agreement between two judges on a run's episodes: percent of equal correct/incorrect decisions and Cohen's kappa
(`arena.judges.stats.cohen_kappa`), measured on the episodes both scored without a judge error."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .stats import cohen_kappa


@dataclass
class Agreement:
    judge_a: str
    judge_b: str
    episodes: int
    agree: int
    percent: float | None
    kappa: float | None


def latest_by_judge(verdicts: list[Verdict]) -> dict[str, dict[str, Verdict]]:
    """judge -> episode id -> its last verdict (verdicts with a judge error are left out)."""
    out: dict[str, dict[str, Verdict]] = {}
    for verdict in verdicts:
        if verdict.error is None:
            out.setdefault(verdict.judge, {})[verdict.episode_id] = verdict
        else:
            out.setdefault(verdict.judge, {}).pop(verdict.episode_id, None)
    return out


def agreement(episodes: list[Episode], verdicts: list[Verdict], judge_a: str, judge_b: str) -> Agreement:
    by_judge = latest_by_judge(verdicts)
    va, vb = by_judge.get(judge_a, {}), by_judge.get(judge_b, {})
    ids = [e.id for e in episodes if e.id in va and e.id in vb]
    a = [va[i].correct for i in ids]
    b = [vb[i].correct for i in ids]
    agree = sum(x == y for x, y in zip(a, b))
    return Agreement(judge_a, judge_b, len(ids), agree, round(100.0 * agree / len(ids), 2) if ids else None,
                     None if (k := cohen_kappa(a, b)) is None else round(k, 4))


def agreements(episodes: list[Episode], verdicts: list[Verdict]) -> list[Agreement]:
    """Agreement of every pair of judges with verdicts on the run's current episodes."""
    current = {e.id for e in episodes}
    judges = sorted({v.judge for v in verdicts if v.episode_id in current})
    return [agreement(episodes, verdicts, a, b) for a, b in itertools.combinations(judges, 2)]
