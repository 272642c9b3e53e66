"""The configuration of a run: the record is the store's (`arena.store.run_config.RunConfig`, in sections, re-exported
here); this module adds what running needs of it: the redacted form run.json keeps, and directory-safe names."""

from __future__ import annotations

import re
from typing import Any

from arena.endpoints.redact import redact_text
from arena.store.run_config import AgentChoice, EndpointLimit, ForkSource, RunConfig

__all__ = ["RunConfig", "AgentChoice", "EndpointLimit", "ForkSource", "redacted", "redact", "slug"]

_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


def redacted(config: RunConfig) -> RunConfig:
    """The config as run.json keeps it: secret-looking values masked, credentials in URLs removed (`redact`)."""
    return RunConfig.model_validate(redact(config.model_dump(mode="json")))


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
