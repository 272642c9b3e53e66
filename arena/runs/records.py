"""The two JSON documents of a run directory, as typed, versioned records.

`run.json` (`RunInfo`): what was run (the redacted config, its fingerprint, agents, datasets,
versions). `summary.json` (`RunSummary`): the metrics recomputed from episodes and verdicts.
Both carry `version` (the record format); fields added by newer writers are kept when read back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RECORD_VERSION = 1


class RunInfo(BaseModel):
    """run.json: a run's identity and configuration (API keys never stored, base URLs redacted)."""

    model_config = ConfigDict(extra="allow")

    version: int = RECORD_VERSION
    run_id: str | None = None
    fingerprint: str | None = None
    judge: str | None = None
    """The judge the run is scored with ("auto": each task's own); what summary, report, view and export show."""
    config: dict[str, Any] = Field(default_factory=dict)
    agent: dict[str, Any] = Field(default_factory=dict)
    agents: list[dict[str, Any]] = Field(default_factory=list)
    datasets: list[dict[str, Any]] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    git: str | None = None
    warnings: list[str] = Field(default_factory=list)
    created: str | None = None
    resumed: int = 0


class RunSummary(BaseModel):
    """summary.json: one entry per (agent, setting, max_rounds) group, for the judge named in `judge`."""

    model_config = ConfigDict(extra="allow")

    version: int = RECORD_VERSION
    run_id: str | None = None
    judge: str
    groups: list[dict[str, Any]] = Field(default_factory=list)
    judges: dict[str, Any] = Field(default_factory=dict)
    model_calls: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    prefix_sharing: bool = False
