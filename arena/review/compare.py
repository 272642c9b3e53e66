"""`arena compare RUN_A RUN_B`: two runs on the same tasks, paired task by task.

Groups are matched by (setting, max rounds); when the runs have one group each they are paired whatever
their names. Within a pair of groups, a task counts when both runs have it. Per pair:

- Pass@1 of A and of B on the shared tasks (each task's mean score over its repeats), and their difference
  B - A in points with a 95 % paired bootstrap interval over tasks (`arena.judges.stats.paired_bootstrap_ci`, fixed
  seed);
- tasks won / lost / tied by B against A (by each task's mean score);
- McNemar's exact test on the episodes paired by (task, repeat) whose verdicts are right/wrong
  (`arena.judges.stats.mcnemar_exact`): b = only A correct, c = only B correct.

Each run's verdicts are those of its own judge unless a judge is asked for (then both use it).

Episodes that ended in an error (`arena.judges.metrics.ERRORED`: not played to the end) are left out of both sides:
the comparison is over what both runs played to the end, and each row says how many episodes of A and of B were
left out (`errored A/B`), so that no difference or test is printed over an errored side without saying so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from arena.judges.metrics import ERRORED
from arena.judges.stats import mcnemar_exact, paired_bootstrap_ci

from .rundata import RunData


@dataclass
class Comparison:
    """One paired comparison of a group of run A with a group of run B."""

    group_a: str
    group_b: str
    tasks: int
    pass1_a: float
    pass1_b: float
    difference: float
    ci: tuple[float, float] | None
    won: int
    lost: int
    tied: int
    only_a: int
    only_b: int
    p_value: float
    errored_a: int = 0
    errored_b: int = 0

    @property
    def label(self) -> str:
        return self.group_a if self.group_a == self.group_b else f"{self.group_a} vs {self.group_b}"

    def row(self) -> list[str]:
        """The cells of `COLUMNS` (what reads at 80 columns; the rest: `detail`)."""
        ci = "–" if self.ci is None else f"[{self.ci[0]:+.2f}, {self.ci[1]:+.2f}]"
        return [self.label, str(self.tasks), f"{self.pass1_a:.2f}", f"{self.pass1_b:.2f}",
                f"{self.difference:+.2f} {ci}", f"{self.p_value:.4g}", f"{self.errored_a}/{self.errored_b}"]

    def detail(self) -> str:
        """Tasks won, lost and tied, and the discordant episodes McNemar's test counts, as one line."""
        return (f"{self.label}: B won {self.won}, lost {self.lost}, tied {self.tied} of {self.tasks} tasks; "
                f"correct only in A: {self.only_a}, only in B: {self.only_b}")


    def detail_cells(self) -> list[str]:
        """The cells of `DETAIL_COLUMNS`."""
        return [f"{self.won}/{self.lost}/{self.tied}", f"{self.only_a}/{self.only_b}"]


COLUMNS = ["group (setting · N)", "tasks", "Pass@1 A", "Pass@1 B", "B − A [95% CI]", "McNemar p", "errored A/B"]
DETAIL_COLUMNS = ["B won/lost/tied", "only A / only B correct"]


def errored_note(pairs: list[Comparison]) -> str | None:
    """One line under the table when either side had errored episodes: they are left out of every figure."""
    a, b = sum(c.errored_a for c in pairs), sum(c.errored_b for c in pairs)
    if not a and not b:
        return None
    return (f"{a} episode(s) of A and {b} of B ended in an error (not played to the end): left out of both sides; "
            "every figure above is over the episodes both runs played to the end (`arena resume` plays them again)")


Outcome = tuple[float, bool]
"""An episode's counted score (0 unjudged or on a judge error) and whether it is correct."""


def _groups(run: RunData, errored: dict[tuple[str, int], set[tuple[str, int]]] | None = None
            ) -> dict[tuple[str, int], dict[str, dict[int, Outcome]]]:
    """(setting, N) -> task id -> repeat -> outcome, from the run's columns (`arena.store.scan`; no trajectory is
    parsed); several agents in one group are kept apart by their agent name in the setting label. Errored episodes
    are left out, their (task, repeat) put in `errored` by group."""
    out: dict[tuple[str, int], dict[str, dict[int, Outcome]]] = defaultdict(lambda: defaultdict(dict))
    c = run.scan.cols
    chosen = run.scan.chosen(run.judge)
    several = len(set(c["agent"])) > 1
    for r in range(len(run.scan)):
        setting = f"{c['agent'][r]} · {c['setting'][r]}" if several else c["setting"][r]
        if c["finish"][r] in ERRORED:
            if errored is not None:
                errored.setdefault((setting, c["max_rounds"][r]), set()).add((c["task_id"][r], c["repeat"][r]))
            continue
        v = chosen.get(r)
        outcome = (0.0, False) if v is None or v[2] is not None else (v[0], v[1])
        out[(setting, c["max_rounds"][r])][c["task_id"][r]][c["repeat"][r]] = outcome
    return out


def compare_groups(a: dict[str, dict[int, Outcome]], b: dict[str, dict[int, Outcome]], label_a: str,
                   label_b: str) -> Comparison | None:
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    mean_a = [sum(o[0] for o in a[t].values()) / len(a[t]) for t in shared]
    mean_b = [sum(o[0] for o in b[t].values()) / len(b[t]) for t in shared]
    diffs = [y - x for x, y in zip(mean_a, mean_b)]
    interval = paired_bootstrap_ci(diffs)
    only_a = only_b = 0
    for t in shared:
        for repeat in sorted(set(a[t]) & set(b[t])):
            ca, cb = a[t][repeat][1], b[t][repeat][1]
            only_a += int(ca and not cb)
            only_b += int(cb and not ca)
    return Comparison(
        group_a=label_a, group_b=label_b, tasks=len(shared),
        pass1_a=100 * sum(mean_a) / len(shared), pass1_b=100 * sum(mean_b) / len(shared),
        difference=100 * sum(diffs) / len(shared),
        ci=None if interval is None else (100 * interval[0], 100 * interval[1]),
        won=sum(d > 0 for d in diffs), lost=sum(d < 0 for d in diffs), tied=sum(d == 0 for d in diffs),
        only_a=only_a, only_b=only_b, p_value=mcnemar_exact(only_a, only_b))


def compare_runs(run_a: RunData, run_b: RunData) -> list[Comparison]:
    """Paired comparisons of every group the two runs share (see the module docstring)."""
    errored_a: dict[tuple[str, int], set[tuple[str, int]]] = {}
    errored_b: dict[tuple[str, int], set[tuple[str, int]]] = {}
    groups_a, groups_b = _groups(run_a, errored_a), _groups(run_b, errored_b)
    pairs = [(k, k) for k in sorted(set(groups_a) & set(groups_b))]
    if not pairs and len(groups_a) == 1 and len(groups_b) == 1:
        pairs = [(next(iter(groups_a)), next(iter(groups_b)))]
    out = []
    for ka, kb in pairs:
        result = compare_groups(groups_a[ka], groups_b[kb], f"{ka[0]} · N={ka[1]}", f"{kb[0]} · N={kb[1]}")
        if result is not None:
            result.errored_a, result.errored_b = len(errored_a.get(ka, ())), len(errored_b.get(kb, ()))
            out.append(result)
    if not out:
        raise ValueError(f"{run_a.run_id} and {run_b.run_id} share no (setting, N) group with common tasks")
    return out
