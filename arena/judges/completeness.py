"""How much of a run's grid was played: the line every screen of a run says first when the run is not complete.

The grid's size is recorded by the runner when it plans (`PLANNED` in run.json, and in summary.json): tasks x
settings x budgets x repeats x agents. Against it the summary's groups count the episodes recorded (the latest
record of each episode key) and, of those, the errored ones (`arena.judges.metrics.ERRORED`: not played to the
end). A run recorded before the count was kept has no planned count: only its errored episodes can be said.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .metrics import ERRORED

PLANNED = "planned_episodes"
"""The key of the grid's episode count in summary.json and run.json (`RunInfo.planned_episodes`, written by the
runner each time it plans)."""


@dataclass(frozen=True)
class Completeness:
    """Planned (None: not recorded), recorded and errored episodes of a run, and the recorded episodes by finish
    reason (`finishes`: summed over the summary's groups; empty for a summary written before they were kept)."""

    planned: int | None
    recorded: int
    errored: int
    finishes: dict[str, int] = field(default_factory=dict)

    @property
    def never_played(self) -> int:
        """Episodes of the grid with no record at all."""
        return max(0, self.planned - self.recorded) if self.planned is not None else 0

    @property
    def complete(self) -> bool:
        """Every planned episode recorded and none errored."""
        return not self.never_played and not self.errored

    def line(self, run_dir: str | Path | None = None, as_wrong: bool = False) -> str | None:
        """"incomplete: 41 of 42 episodes never played, 1 errored — `arena resume DIR`", or None when complete.
        `as_wrong`: the Pass@1 shown counts the errored episodes as wrong (`--protocol original`)."""
        if self.complete:
            return None
        parts = []
        of = f" of {self.planned}" if self.planned is not None else ""
        if self.never_played:
            parts.append(f"{self.never_played}{of} episodes never played")
        if self.errored:
            errored = f"{self.errored} errored" if parts else f"{self.errored}{of} episodes errored"
            parts.append(errored + (" (in Pass@1 as the published script scores a failed request)" if as_wrong
                                    else " (left out of Pass@1)"))
        played = f"; {self.recorded - self.errored} played to the end" if self.planned is not None else ""
        resume = f" — `arena resume {run_dir}`" if run_dir is not None else " — `arena resume RUN_DIR`"
        if self.errored and not self.never_played and run_dir is not None:
            resume += " plays them again"
        return "incomplete: " + ", ".join(parts) + played + resume


def planned_of(summary: dict[str, Any] | None) -> int | None:
    """The planned count a summary dict holds (summary.json, a run's summary), None when it has none (run.json's is
    `RunInfo.planned_episodes`)."""
    value = (summary or {}).get(PLANNED)
    return value if isinstance(value, int) and value >= 0 else None


def completeness(summary: dict[str, Any], planned: int | None = None) -> Completeness:
    """A summary's recorded and errored episodes (from its groups' finish reasons) against `planned`. The one place
    the finish reasons of a summary's groups are added up (the CLI's exit-code checks read `finishes`)."""
    recorded = 0
    finishes: Counter[str] = Counter()
    for group in summary.get("groups", []):
        reasons = group.get("finish_reasons", {})
        recorded += sum(reasons.values()) if reasons else group.get("episodes", 0)
        finishes.update(reasons)
    errored = sum(n for reason, n in finishes.items() if reason in ERRORED)
    return Completeness(planned=planned, recorded=recorded, errored=errored, finishes=dict(finishes))
