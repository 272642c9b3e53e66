"""The judge interface: score a finished episode."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from typing import Any, Callable

from .blobs import BlobStore
from .discovery import registering
from .trajectory import Episode
from .verdict import Verdict


class Judge(ABC):
    """Scores episodes; `id` names the judge in verdicts.jsonl, `version` changes when its rules do."""

    id: str = "judge"
    version: str = "1"

    @abstractmethod
    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict: ...

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version}

    def missing(self, task: Any) -> str | None:
        """What this judge lacks to score `task` (e.g. a judge model), or None: checked before a run starts."""
        return None

    async def aclose(self) -> None:
        """Release connections."""

    def verdict(self, episode: Episode, **fields: Any) -> Verdict:
        return Verdict(episode_id=episode.id, key=episode.key, judge=self.id, judge_version=self.version, **fields)


JUDGES: dict[str, Callable[..., Judge]] = {}


def register_judge(name: str):
    """Decorator for a judge factory `factory(**options) -> Judge`."""
    return registering(JUDGES, name, "judge")


def text_hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]
