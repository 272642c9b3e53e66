"""The configuration of a run: the grid of episodes and everything needed to reproduce it."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from arena.core.budget import Budget
from arena.core.tool import ToolOptions
from arena.endpoints.redact import redact_text
from arena.store.migrate import fingerprint_fields

_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


class AgentChoice(BaseModel):
    """One agent of a grid: a registered agent name and the options of its factory."""

    agent: str
    options: dict[str, Any] = Field(default_factory=dict)


class EndpointLimit(BaseModel):
    """Admission limits of one model endpoint (a base URL), shared by every episode and judge using it."""

    max_parallel: int | None = Field(None, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)


class ForkSource(BaseModel):
    """Continue a recorded episode: its first `at_round` rounds are played back before the agent takes over."""

    run_dir: str
    episode_id: str
    at_round: int = Field(ge=0)
    prefix_mode: Literal["reuse", "replay"] = "reuse"


class RunConfig(BaseModel):
    """Grid = tasks x settings x max_rounds x repeats x agents, scored by one judge.

    `agent_options` / `judge_options` are passed to the registered factories
    (e.g. `model`, `base_url`, `api_key_env`, `tool_mode` for `openai`; `script`
    for `scripted`). API keys are never stored: name the environment variable.
    `agents` lists several agents for a sweep (replacing `agent`/`agent_options`).
    `prefix_sharing` (None = automatic) derives the smaller budgets of a budget
    sweep from the largest one's trajectory (see `arena.runs.prefix`). `backend`, `workers` and
    `endpoint_limits` decide scheduling only; `fork` continues a recorded episode.
    `protocol` (None = by the data: `original` for a published format, `arena` for
    generated worlds) picks the published pipeline or the arena's; it is resolved and
    recorded when the run starts.
    `levels` / `categories` / `suites` keep only the tasks with one of those values (then `limit` applies).
    `transcript` False leaves every model call out of `calls.jsonl` (endpoints/transcript.py).
    `prompts` is a prompts file (YAML: template name -> text, `arena.core.prompt_book`) whose texts replace the
    arena's wording of those prompts (e.g. a paper's published judge prompt or agent instructions); checked before
    the first episode. A run resolves it to an absolute path (its worker processes load it too).
    """

    data: str
    root: str | None = None
    fmt: str | None = None
    corpus: str | None = None
    agent: str = "openai"
    agent_options: dict[str, Any] = Field(default_factory=dict)
    settings: list[str] = Field(default_factory=lambda: ["search+crop"])
    max_rounds: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [10], min_length=1)
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
    levels: list[str] | None = None
    categories: list[str] | None = None
    suites: list[str] | None = None
    run_id: str | None = None
    out: str = "logs"
    agents: list[AgentChoice] = Field(default_factory=list)
    prefix_sharing: bool | None = None
    backend: Literal["asyncio", "ray"] = "asyncio"
    ray_address: str | None = None
    ray_workers: int | None = Field(None, ge=1)
    ray_shared_dir: bool = False
    """The run directory lies on a filesystem every node of the Ray cluster mounts at the same path (NFS, Lustre...):
    the actors write its blobs and append their episodes' records there themselves, as on a local Ray instance and
    as local worker processes do; else they send them back to the driver."""
    workers: int | None = Field(None, ge=1)
    """Worker processes playing episodes (`arena.runs.backends.worker_backend`; None: this process's event loop)."""
    endpoint_limits: dict[str, EndpointLimit] = Field(default_factory=dict)
    fork: ForkSource | None = None
    retry_errors: bool = False
    fail_fast: int = Field(3, ge=0)
    price: list[float] | None = Field(None, min_length=2, max_length=2)
    max_cost: float | None = Field(None, gt=0)
    protocol: Literal["original", "arena"] | None = None
    transcript: bool = True
    prompts: str | None = None

    def agent_choices(self) -> list[AgentChoice]:
        """The grid's agents: `agents` when given, else the single `agent` with `agent_options`."""
        return list(self.agents) or [AgentChoice(agent=self.agent, options=self.agent_options)]

    def shares_prefixes(self) -> bool:
        """Prefix sharing for budget sweeps: as asked, or by default when the agent is not told its budget."""
        if self.fork is not None or len(set(self.max_rounds)) < 2:
            return False
        return (not self.show_budget) if self.prefix_sharing is None else self.prefix_sharing

    def grid_fingerprint(self) -> str:
        """Hash of what decides the episodes (not concurrency, scheduling, output place or judge)."""
        keep = self.model_dump(mode="json", exclude={"concurrency", "out", "run_id", "judge", "judge_options",
                                                     "backend", "ray_address", "ray_workers", "ray_shared_dir",
                                                     "workers",
                                                     "endpoint_limits", "retry_errors", "fail_fast", "price",
                                                     "max_cost", "transcript", "prompts"})
        for name in ("agents", "prefix_sharing", "fork", "levels", "categories", "suites"):
            if keep.get(name) in (None, []):
                keep.pop(name, None)
        keep = fingerprint_fields(keep)  # as older runs hashed it (`arena.store.migrate`)
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]

    def redacted(self) -> dict[str, Any]:
        return redact(self.model_dump(mode="json"))


def redact(value: Any, key: str = "") -> Any:
    """Mask values of secret-looking keys (names of environment variables are kept) and credentials
    in URLs (userinfo, `key=`/`token=`... query parameters)."""
    if isinstance(value, dict):
        return {redact_text(k): redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and _SECRET.search(key) and not key.endswith("_env") and isinstance(value, str) and value:
        return "***"
    return redact_text(value) if isinstance(value, str) else value


def slug(text: str) -> str:
    """A name safe for a directory: runs of other characters become one dash, at most 48 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:48] or "run"
