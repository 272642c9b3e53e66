"""Score a finished run again with other judges, keeping every judge's verdicts side by side.

Verdicts are appended to the run's verdicts.jsonl under the judge's id, or under a
label (`--as`) so that two configurations of one judge (two LLM judge models) stay
apart. Agreement between two judges is measured on the episodes both scored: percent
of equal correct/incorrect decisions and Cohen's kappa.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.endpoints import transcript
from arena.judges.agreement import Agreement, agreements
from arena.judges.metrics import AUTO, judge_for, summarize
from arena.judges.protocols import judged
from arena.core.prompt_book import PromptBook
from arena.store.lock import RunLock
from arena.store.store import RunStore
from arena.store.writer import RunWriter, settled

from .judging import Judges
from .limits import EndpointGate, endpoint_of
from .plugins import load_plugins


@dataclass
class RejudgeResult:
    judge: str
    scored: int
    skipped: int
    summary: dict[str, Any]
    agreements: list[Agreement]


async def rejudge(run_dir: str | Path, judge: str, options: dict[str, Any] | None = None, *,
                  label: str | None = None, redo: bool = False, concurrency: int = 8,
                  progress: Callable[[Episode, Verdict], None] | None = None,
                  on_start: Callable[[int, int], None] | None = None) -> RejudgeResult:
    """Score the run's episodes with `judge` (or "auto": each task's own) and store the verdicts."""
    load_plugins()
    options = dict(options or {})
    if label and judge == AUTO:
        raise ValueError("--as names one judge; it cannot be used with --judge auto")
    store = RunStore(run_dir)
    if not store.exists():
        raise ValueError(f"{run_dir}: not a run directory (no run.json)")
    with RunLock(store.dir, "arena judge"):
        return await _rejudge(store, judge, options, label=label, redo=redo, concurrency=concurrency,
                              progress=progress, on_start=on_start)


async def _rejudge(store: RunStore, judge: str, options: dict[str, Any], *, label: str | None, redo: bool,
                   concurrency: int, progress: Callable[[Episode, Verdict], None] | None,
                   on_start: Callable[[int, int], None] | None = None) -> RejudgeResult:
    info = store.info()
    recorded = info.config
    gate = EndpointGate(recorded.schedule.endpoint_limits if recorded else {})
    episodes, verdicts = store.episodes(), store.verdicts()
    judges = Judges(judge, options, store.dir / "judge_cache.jsonl", info.protocol,
                    prompts=PromptBook.load(recorded.judge.prompts if recorded else None))  # checked again
    name_of = (lambda e: label) if label else (lambda e: judge_for(e, judge))
    have = {(v.episode_id, v.judge) for v in verdicts if v.error is None}
    todo = [e for e in episodes if judged(e.finish_reason, e.task.suite, judges.protocol)
            and (redo or (e.id, name_of(e)) not in have)]
    slots = asyncio.Semaphore(concurrency)
    writer = RunWriter()  # verdicts, calls and judge-cache lines written off the event loop, in order
    judges.write_through(writer.append_async)
    calls = writer.recorder(store.dir, store.blobs.root) \
        if recorded is None or recorded.output.transcript else None
    if on_start:
        on_start(len(todo), len(episodes))

    async def score(episode: Episode) -> None:
        async with slots, gate.slot(endpoint_of(options)):
            with transcript.scope(calls, episode.key, "judge"):
                verdict = await judges.get(judge_for(episode, judge)).score(episode, store.blobs)
        if label:
            verdict = verdict.model_copy(update={"judge": label})
        await settled(writer.commit(store.verdicts_path, store.append_verdict, verdict))
        if progress:
            progress(episode, verdict)

    try:
        await asyncio.gather(*(score(e) for e in todo))
        await writer.drained()
        if writer.problems:
            raise OSError("could not write to the run: " + "; ".join(writer.problems))
    finally:
        await judges.aclose()
        await asyncio.to_thread(writer.close)
    verdicts = store.verdicts()
    counted = label or judge
    return RejudgeResult(judge=counted, scored=len(todo), skipped=len(episodes) - len(todo),
                         summary=summarize(episodes, verdicts, counted, info.populations()),
                         agreements=agreements(episodes, verdicts))
