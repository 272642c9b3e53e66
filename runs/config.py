"""The configuration of a run: the grid of episodes and everything needed to reproduce it."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, Field

from arena.budget import Budget
from arena.tool import ToolOptions

_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


class RunConfig(BaseModel):
    """Grid = tasks x settings x max_rounds x repeats for one agent, scored by one judge.

    `agent_options` / `judge_options` are passed to the registered factories
    (e.g. `model`, `base_url`, `api_key_env`, `tool_mode` for `openai`; `script`
    for `scripted`). API keys are never stored: name the environment variable.
    """

    data: str
    root: str | None = None
    fmt: str | None = None
    corpus: str | None = None
    agent: str = "openai"
    agent_options: dict[str, Any] = Field(default_factory=dict)
    settings: list[str] = Field(default_factory=lambda: ["search+crop"])
    max_rounds: list[int] = Field(default_factory=lambda: [10])
    repeats: int = Field(1, ge=1)
    seed: int = 0
    concurrency: int = Field(8, ge=1)
    judge: str | None = "normalized"
    judge_options: dict[str, Any] = Field(default_factory=dict)
    tool_options: ToolOptions = Field(default_factory=ToolOptions)
    budget: Budget = Field(default_factory=Budget)
    show_budget: bool = False
    limit: int | None = Field(None, ge=1)
    task_ids: list[str] | None = None
    run_id: str | None = None
    out: str = "logs"

    def grid_fingerprint(self) -> str:
        """Hash of what decides the episodes (not concurrency, output place or judge)."""
        keep = self.model_dump(mode="json", exclude={"concurrency", "out", "run_id", "judge", "judge_options"})
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]

    def redacted(self) -> dict[str, Any]:
        return redact(self.model_dump(mode="json"))


def redact(value: Any, key: str = "") -> Any:
    """Mask values of secret-looking keys (names of environment variables are kept)."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and _SECRET.search(key) and not key.endswith("_env") and isinstance(value, str) and value:
        return "***"
    return value
