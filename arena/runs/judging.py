"""The judges of a run, built on demand from the run's judge name and options."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Awaitable, Callable

from arena.core.judge import JUDGES, Judge
from arena.judges.llm import JudgeCache
from arena.judges.metrics import AUTO
from arena.core.prompt_book import PromptBook
from arena.judges.protocols import protocol_options

from .names import did_you_mean
from .plugins import accepted_options, call_with_options


class Judges:
    """Judges built on demand: the run's judge, or with "auto" each task's own; under the `arena` protocol with
    the arena's variant of each judge (`arena.judges.protocols`). A judge whose factory takes `prompts` gets the
    run's prompt book (`arena.core.prompt_book`: the user's `--prompts` file over the arena's wording)."""

    def __init__(self, name: str, options: dict[str, Any], cache_path: Path, protocol: str | None = None,
                 append: Callable[[Path, bytes], Awaitable[Any]] | None = None, prompts: PromptBook | None = None):
        """`append` (the run writer's) writes judge-cache lines instead of the cache's default."""
        self.name, self.options, self.cache_path, self.protocol = name, options, cache_path, protocol
        self.append = append
        self.prompts = prompts or PromptBook()
        self._built: dict[str, Judge] = {}

    def get(self, judge_id: str) -> Judge:
        if judge_id not in self._built:
            if judge_id not in JUDGES:
                raise ValueError(f"unknown judge {judge_id!r}{did_you_mean(judge_id, JUDGES)}; known: {', '.join(sorted(JUDGES))}")
            factory = JUDGES[judge_id]
            given = protocol_options(judge_id, self.protocol, self.options)
            options = accepted_options(factory, given) if self.name == AUTO else given
            if "cache_path" not in options:
                options.update(accepted_options(factory, {"cache_path": str(self.cache_path)}))
            if "prompts" in inspect.signature(factory).parameters:
                options["prompts"] = self.prompts
            try:
                judge = self._built[judge_id] = call_with_options(factory, options, f"judge {judge_id!r}")
            except ValueError as exc:
                raise ValueError(f"{exc} (the run needs judge {judge_id!r}: give its endpoint with --judge-model and "
                                 "--judge-base-url, or pick another judge with --judge)") from None
            if self.append is not None and isinstance(getattr(judge, "cache", None), JudgeCache):
                judge.cache.append = self.append
        return self._built[judge_id]

    def write_through(self, append: Callable[[Path, bytes], Awaitable[Any]]) -> None:
        """Judge-cache lines of the judges built so far and of those built later are written by `append`."""
        self.append = append
        for judge in self._built.values():
            if isinstance(getattr(judge, "cache", None), JudgeCache):
                judge.cache.append = append

    def describe(self) -> dict[str, Any]:
        return {"judge": self.name, "built": {k: j.describe() for k, j in self._built.items()}}

    def prompt_templates(self) -> list[str]:
        """The prompt templates of the judges built so far (`arena.core.prompt_book`; run.json records their
        wording)."""
        return [n for judge in self._built.values() for n in getattr(judge, "prompt_templates", ())]

    async def aclose(self) -> None:
        for judge in self._built.values():
            await judge.aclose()
