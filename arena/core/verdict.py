"""The judge's verdict on one episode."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from .trajectory import Usage


class Verdict(BaseModel):
    """Score of one episode by one judge. `episode_id` ties it to the exact episode record.

    `supported` (tool settings, correct answers): whether the answer rests on evidence the episode retrieved
    ("yes" / "no" / "unknown"), with `support_reason`; None when not assessed."""

    episode_id: str
    key: str
    judge: str
    judge_version: str = "1"
    judge_model: str | None = None
    prompt_hash: str | None = None
    score: float
    correct: bool
    extracted: str | None = None
    rationale: str = ""
    raw: str | None = None
    error: str | None = None
    supported: Literal["yes", "no", "unknown"] | None = None
    support_reason: str | None = None
    usage: Usage | None = None  # tokens of the judge's own calls (None: none made or none reported)


AUTO = "auto"
"""The judge name meaning "each task's own judge" (a task without one: `normalized`)."""


def judge_for_task(task: Any, judge: str) -> str:
    """The judge whose verdict counts for a task (anything with a `judge` attribute): `judge`, or with "auto" the
    task's own (default normalized)."""
    return (task.judge or "normalized") if judge == AUTO else judge
