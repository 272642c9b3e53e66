"""What the driver learns of a finished episode and its verdict: a few fields, never the records themselves.

An episode is finished where it was played (`arena.runs.finishing`): its records leave as bytes, with an
`EpisodeBrief` beside them holding exactly what the driver's run-wide bookkeeping reads, so the driver parses no
record: the stops (`arena.runs.stops`, `arena.runs.outage`: agent, whether a model replied, finish reason, error,
the cost of its own calls), the harness meter (`arena.runs.harness_cost`: own rounds and their seconds) and the
progress callback (finish reason, error, and the `VerdictBrief`: correct, score, judge error, whether the judge's
server answered). The attribute names are those of `Episode` and `Verdict`, so a progress callback reads either.
Both are plain dataclasses with slots, pickled as their constructor's arguments (`by_position`): cheap to send
between processes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from arena.core.trajectory import Episode, Step
from arena.core.verdict import Verdict


T = TypeVar("T")


def by_position(cls: type[T]) -> type[T]:
    """A dataclass whose instances pickle as the tuple of their field values, rebuilt by calling the class: about
    half the bytes and half the unpickling time of the default (the field names and values of each instance)."""
    names = tuple(f.name for f in fields(cls))

    def __reduce__(self: Any) -> tuple[type, tuple]:
        return cls, tuple(getattr(self, name) for name in names)
    cls.__reduce__ = __reduce__  # type: ignore[assignment]
    return cls


def own_steps(steps: list[Step], model_calls: Any) -> list[Step]:
    """The steps whose model calls an episode made itself (a prefix-shared or forked episode reuses the calls of its
    prefix: `meta.model_calls` counts only its own)."""
    if not isinstance(model_calls, int) or isinstance(model_calls, bool):
        return steps
    return steps[len(steps) - model_calls:] if model_calls else []


@by_position
@dataclass(slots=True)
class VerdictBrief:
    """A verdict as the driver sees it: `answered` is whether the judge's server replied (the verdict has `raw`)."""

    correct: bool
    score: float
    error: str | None = None
    answered: bool = False

    @classmethod
    def of(cls, verdict: Verdict) -> "VerdictBrief":
        return cls(verdict.correct, verdict.score, verdict.error, bool(verdict.raw))


@by_position
@dataclass(slots=True)
class EpisodeBrief:
    """A finished episode as the driver sees it. `cost`: dollars of its transcript (None: unpriced or no tokens
    reported); `spent`: of the model calls it made itself (what `--max-cost` counts); `rounds`, `seconds`,
    `model_seconds`, `tool_seconds`: its own steps' count and times, and its wall time (the harness meter's sums);
    `verdict`: its judge's verdict (None when not judged: errored, or the verdict could not be written)."""

    key: str
    id: str
    agent: str
    task_id: str
    finish_reason: str
    has_steps: bool
    error: str | None = None
    cost: float | None = None
    spent: float | None = None
    rounds: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    verdict: VerdictBrief | None = None

    @classmethod
    def of(cls, episode: Episode, cost: float | None = None, spent: float | None = None) -> "EpisodeBrief":
        steps = own_steps(episode.steps, episode.meta.get("model_calls"))
        model_seconds = tool_seconds = 0.0
        for step in steps:  # (one pass, in step order as `sum` adds them)
            model_seconds += step.model_seconds
            tool_seconds += step.tool_seconds
        return cls(episode.key, episode.id, episode.agent, episode.task.id, episode.finish_reason, bool(episode.steps),
                   episode.error, cost, spent, len(steps), episode.totals.seconds, model_seconds, tool_seconds)
