"""Finishing a played episode where it was played: its cost, its record's bytes, its judging and its verdicts' bytes.

Contract: a `Finisher` turns a played `Episode` into a `Finished`, everything the driver needs to record it without
parsing anything:
- `line`: the episodes.jsonl line exactly as `RunStore.append_episode` writes it (`arena.store.store.episode_line`,
  format version set; `meta.cost` set from the agent's price, `arena.runs.pricing`), and `entry`, its index entry
  (`arena.store.run_index.entry_of`, offset 0: whoever appends it sets the offset; both by
  `arena.store.store.episode_line_entry`);
- `verdicts`: the verdicts.jsonl lines of the run judge's verdict and of the other judges the task names under
  `--judge auto` (`also_judges`), unless the episode ended in an error (`ERRORED`: not judged, except where the
  published evaluator scores a failed request, `arena.judges.protocols.judged`). Judge calls go
  through the gate's slot of the judge endpoint and are recorded as calls.jsonl lines (role `judge`) by the sink
  given; the other judges' calls are not recorded (as the runner never did);
- `brief`: the `EpisodeBrief` (with the verdict's `VerdictBrief`) the driver's stops, meter and progress read;
- `learned`: the limits and refused fields learned in this process, when they changed since the last episode
  finished here (None: unchanged), which the driver takes into run.json (`take_learned`);
- `calls`, `cache`: calls.jsonl and judge_cache.jsonl lines made in another process, appended as they are (empty
  when the finisher writes them itself, in the driver).

`submit` and `landed` append a `Finished` through a run writer; a worker sharing the run directory does so itself
(`RunAppender`) and sends the driver the `landed` episode (its brief, where its line lies), whose `record` then
writes nothing; else the driver's runner does.

The same finisher runs in worker processes and Ray actors (`Finisher.for_bench`, built from the run's config as
the driver's judges are, `run_judges`) and in the driver (the asyncio backend, episodes derived from a shared
prefix; `judge` alone for a resumed run's unjudged episodes), so the driver has one way to record an episode.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from arena.core.blobs import BlobStore
from arena.core.trajectory import Episode, plus_tokens
from arena.core.verdict import Verdict
from arena.endpoints import transcript
from arena.endpoints.client import learned_params, restore_params, run_params
from arena.judges.metrics import AUTO, judge_for, judge_for_task
from arena.judges.protocols import judged
from arena.core.prompt_book import PromptBook
from arena.store.run_index import Entry
from arena.store.shared_appends import SharedAppends
from arena.store.store import Appended, RunStore, episode_line_entry, verdict_line
from arena.store.writer import AWAITED_COMMIT_WINDOW, RunWriter, settled

from .briefs import EpisodeBrief, VerdictBrief, by_position, own_steps
from .config import RunConfig
from .judging import Judges
from .limits import endpoint_of
from .pricing import agent_prices
from .pricing import cost as token_cost

JUDGE_CACHE = "judge_cache.jsonl"
"""The judges' cache of model outputs, in the run directory."""


class JudgeFailure(RuntimeError):
    """A judge raised while scoring an episode that is recorded all the same (`Finished.judge_failure`)."""


@by_position
@dataclass
class Finished:
    """A finished episode's records as bytes and its brief (see the module docstring). `line` and `entry` are None
    for an episode that was only judged (already in the store)."""

    brief: EpisodeBrief
    line: bytes | None
    entry: Entry | None
    verdicts: list[bytes] = field(default_factory=list)
    learned: dict[str, Any] | None = None
    calls: list[bytes] = field(default_factory=list)
    cache: list[bytes] = field(default_factory=list)
    judge_failure: str | None = None
    """A judge raised instead of returning a verdict (a bug, not a server's error, which a verdict records): the
    episode is recorded unjudged all the same (nothing finished is lost), then the run fails with this message;
    `arena resume` judges it."""
    judged_only: bool = False
    """An episode already in the store, only judged now: `verdicts` are its new lines, there is no `line`."""
    landed: bool = False
    """Its records are on disk (`landed`): `stored` and `unwritten` say how it went; nothing is left to write."""
    stored: tuple[int, int] | None = None
    """Where its line lies in episodes.jsonl (offset, length), once landed (None: it could not be written)."""
    unwritten: str | None = None
    """Once landed: what could not be written (`episode KEY: error`, or `verdict of episode KEY: error`)."""

    def line_bytes(self, store: RunStore) -> bytes:
        """Its episodes.jsonl line: the bytes it carries, else read where it landed."""
        if self.line is not None:
            return self.line
        if self.stored is None:
            raise RuntimeError(f"episode {self.brief.key} was not written: {self.unwritten}")
        return store.read_line(*self.stored)


def submit(writer: RunWriter, store: RunStore, finished: Finished, last: bool = False) -> "Future[Appended | None]":
    """Queue a finished episode's records in the run writer: its calls.jsonl and judge-cache lines (appended, fsynced
    before the commit), then its line and verdict lines (one group commit, the episode first; a judged-only episode:
    its verdict lines). The future completes once they are on disk (`landed`). `last`: nothing else is playing or
    waiting to (`RunWriter.commit`)."""
    if finished.calls:
        writer.append_lines(store.calls_path, finished.calls)
    if finished.cache:
        writer.append_lines(store.dir / JUDGE_CACHE, finished.cache)
    if finished.judged_only:
        return writer.commit(store.verdicts_path, store.append_verdict_lines, finished.verdicts, last=last)
    paths = (store.episodes_path, store.verdicts_path) if finished.verdicts else store.episodes_path
    return writer.commit(paths, store.append_finished, finished.line, finished.entry, finished.verdicts, last=last)


async def landed(written: "Future[Appended | None]", finished: Finished) -> Finished:
    """`finished` once the write `submit` queued has ended: `landed`, with `stored` and `unwritten` set and the
    lines it no longer needs dropped (its own `line` is kept). A failed write is reported, never raised: the other
    episodes go on and the run's exit status says so."""
    key = finished.brief.key
    try:
        appended = await settled(written)
    except (OSError, ValueError) as exc:
        appended = None
        what = "verdict of episode" if finished.judged_only else "episode"
        finished.unwritten = f"{what} {key}: {type(exc).__name__}: {exc}"
    if appended is not None:
        finished.stored = (appended.offset, len(finished.line or b""))
        if appended.problem:
            finished.unwritten = f"verdict of episode {key}: {appended.problem}"
    finished.landed = True
    finished.entry, finished.verdicts, finished.calls, finished.cache = None, [], [], []
    return finished


class RunAppender:
    """A worker's own appends to the run directory it plays for (shared with the driver's filesystem): the episodes
    it finished, recorded by its own run writer (group commit, its own fsyncs) under the run's append lock
    (`arena.store.shared_appends`), so that the driver writes nothing for them. Used from the worker's event loop."""

    def __init__(self, run_dir: str | Path, name: str = "arena-worker-writer"):
        self.writer = RunWriter(name, files=SharedAppends(run_dir), window=AWAITED_COMMIT_WINDOW)
        self.store = RunStore(run_dir)
        self.store.use_appender(self.writer.files)

    async def record(self, finished: Finished) -> Finished:
        """Append the episode's records and wait until they are on disk; returns it `landed`, without its line (the
        driver reads only its brief, and `stored` if it needs the line)."""
        finished = await landed(submit(self.writer, self.store, finished), finished)
        finished.line = None
        return finished

    async def aclose(self) -> None:
        """Flush and stop the writer."""
        await asyncio.to_thread(self.writer.close)


def also_judges(tasks: Iterable[Any], judge: str) -> dict[str, list[str]]:
    """Under `--judge auto`, by task id, the other scoring methods a task names (VistaHop's reward_fn and
    unused_reward_fn under --protocol original): computed too, while the task's own judge is the one that counts."""
    if judge != AUTO:
        return {}
    return {t.id: [j for j in t.metadata.get("judges", []) if j != judge_for_task(t, AUTO)] for t in tasks}


def run_judges(config: RunConfig, run_dir: Path, book: PromptBook) -> Judges:
    """The run's judges as the config names them (judge, options, protocol; the run's prompt book `book`, loaded
    once from its prompts file by the workbench; cache in `run_dir`)."""
    return Judges(config.judge.name or AUTO, config.judge.options, Path(run_dir) / JUDGE_CACHE, config.grid.protocol,
                  prompts=book)


def token_sums(counts: Iterable[tuple[int | None, int | None]]) -> tuple[int | None, int | None]:
    """The sums of (prompt, completion) token counts, each None only where every count is None: the fields of the
    `Usage` sum of the usages counted, without building one per call."""
    prompt = completion = None
    for p, c in counts:
        prompt, completion = plus_tokens(prompt, p), plus_tokens(completion, c)
    return prompt, completion


def spent_cost(episode: Episode, price: tuple[float, float] | None) -> float | None:
    """Dollars of the model calls this episode made itself (None: unpriced, or no tokens reported)."""
    if price is None:
        return None
    steps = own_steps(episode.steps, episode.meta.get("model_calls"))
    return token_cost(*token_sums((s.usage.prompt_tokens, s.usage.completion_tokens) for s in steps), price)


def take_learned(agents: list[Any], learned: dict[str, Any] | None) -> None:
    """Driver side: the limits (by agent id) and refused request fields another process learned, taken here."""
    if not learned:
        return
    for agent in agents:
        if learned["limits"].get(agent.id):
            agent.apply_limits(learned["limits"][agent.id])
    restore_params(learned["params"])


class Finisher:
    """Finishes episodes played in this process (see the module docstring). `gate`: the Gate judge calls go
    through (`slot(endpoint)`); `keep_cache`: judge-cache lines are kept for `Finished.cache` (another process
    appends them) instead of written by the judges."""

    def __init__(self, judges: Judges, also: dict[str, list[str]], prices: dict[str, Any], agents: list[Any],
                 gate: Any, keep_cache: bool = False):
        self.judges, self.also, self.prices, self.agents, self.gate = judges, also, prices, agents, gate
        self.judge_name = judges.name
        self.judge_endpoint = endpoint_of(judges.options)
        self._cache: list[bytes] = []
        if keep_cache:
            judges.write_through(self._keep)
        self._learned = self._learned_now()
        self._learned_at = self._learned_version()

    @classmethod
    def for_bench(cls, config: RunConfig, bench: Any, gate: Any, run_dir: str | Path) -> "Finisher":
        """A worker's finisher: the run's judges built from its config (with the prompt book its workbench loaded),
        the prices of its workbench's agents."""
        judges = run_judges(config, Path(run_dir), bench.prompts)
        return cls(judges, also_judges((t for _, t in bench.pairs), judges.name),
                   agent_prices(bench.agents, config.stops.price), bench.agents, gate, keep_cache=True)

    async def _keep(self, _path: Path, line: bytes) -> None:
        self._cache.append(line)

    def _learned_now(self) -> dict[str, Any]:
        return {"limits": {a.id: a.learned_limits() for a in self.agents if a.learned_limits()},
                "params": learned_params()}

    def _learned_version(self) -> list[Any]:
        params = run_params()
        return [params, params.version, *[a.learned_version() for a in self.agents]]

    def learned(self) -> dict[str, Any] | None:
        """What was learned here, when it changed since last asked (None: unchanged). Collected only when the
        endpoints' learned fields or an agent's `learned_version` changed since."""
        version = self._learned_version()
        if version == self._learned_at:
            return None
        self._learned_at = version
        now = self._learned_now()
        if now == self._learned:
            return None
        self._learned = now
        return now

    async def finish(self, episode: Episode, blobs: BlobStore, calls: Any = None) -> Finished:
        """The played episode's cost, line, index entry and (unless it errored) verdicts; `blobs`: the store its
        images are read from; `calls`: the sink judge calls are recorded into (None: not recorded)."""
        price = self.prices.get(episode.agent)
        cost = token_cost(episode.totals.prompt_tokens, episode.totals.completion_tokens, price)
        if cost is not None:
            episode.meta["cost"] = round(cost, 8)
        line, entry = episode_line_entry(episode)
        brief = EpisodeBrief.of(episode, cost, spent_cost(episode, price))
        verdicts: list[bytes] = []
        failure = None
        if judged(episode.finish_reason, episode.task.suite, self.judges.protocol):  # errored: see `judged`
            try:
                brief.verdict, verdicts = await self.judge(episode, blobs, calls)
            except Exception as exc:
                failure = (f"judging episode {episode.key} failed ({type(exc).__name__}: {exc}); the episode is "
                           "recorded unjudged: `arena resume` judges it")
        return Finished(brief, line, entry, verdicts, self.learned(), cache=self.drain_cache(),
                        judge_failure=failure)

    async def judge(self, episode: Episode, blobs: BlobStore, calls: Any = None,
                    done: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset()
                    ) -> tuple[VerdictBrief, list[bytes]]:
        """The run judge's verdict (brief) and the verdict lines: its own, then those of the task's other judges
        not already in `done` ((episode id, judge) pairs recorded)."""
        verdict = await self._scored(judge_for(episode, self.judge_name), episode, blobs, calls)
        lines = [verdict_line(verdict)]
        for judge_id in self.also.get(episode.task.id, []):
            if (episode.id, judge_id) not in done:
                lines.append(verdict_line(await self._scored(judge_id, episode, blobs, None)))  # not recorded
        return VerdictBrief.of(verdict), lines

    async def _scored(self, judge_id: str, episode: Episode, blobs: BlobStore, calls: Any) -> Verdict:
        """A judge's verdict, its model calls recorded by `calls` (None: not recorded), made through the gate's slot
        of the judge endpoint (a run whose judges call no model has none: `Gate.slot(None)` is unlimited)."""
        judge = self.judges.get(judge_id)
        async with self.gate.slot(self.judge_endpoint):
            with transcript.scope(calls, episode.key, "judge"):
                return await judge.score(episode, blobs)

    def drain_cache(self) -> list[bytes]:
        """The judge-cache lines kept since last drained."""
        lines, self._cache = self._cache, []
        return lines

    async def aclose(self) -> None:
        await self.judges.aclose()
