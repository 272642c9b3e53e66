"""How much an agent may do in one episode."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Budget(BaseModel):
    """Round budget and limits of one episode. `final_answer_turn` (arena default) makes one tool-less turn asking
    for the answer when the rounds run out; off reproduces the original VistaArena, where such an episode has no
    answer. `on_invalid="stop"` ends an episode at an invalid turn; the default shows the model an error observation
    and goes on. A run under `--protocol original` turns both off/on unless they are given explicitly."""

    max_rounds: int = Field(10, ge=1)
    max_calls_per_round: int = Field(1, ge=1)
    tool_limits: dict[str, int] = Field(default_factory=dict)
    max_tokens: int | None = Field(None, ge=1)
    max_seconds: float | None = Field(None, gt=0)
    final_answer_turn: bool = True
    on_invalid: Literal["observe", "stop"] = "observe"
