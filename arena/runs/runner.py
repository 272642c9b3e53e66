"""Execute a run: load data, build the grid, run missing episodes concurrently, judge, summarise.

Resumable: episodes already finished under the same run id are skipped, errored
ones are run again, and finished episodes lacking a verdict are judged. Episodes are
played by a backend: this process's event loop (asyncio), local worker processes
(`--workers`, `arena.runs.backends.worker_backend`) or Ray workers (`arena.runs.backends.ray_backend`). An episode is
finished where it was played (`arena.runs.finishing`: cost, record bytes, judging, verdict bytes) and its records
are appended there too where that process shares the run directory (worker processes, Ray on a local instance or
with `ray_shared_dir`), else here; each process's writes go through one writer thread (`arena.store.writer`, group
commit) and every append takes the run's append lock (`arena.store.shared_appends`): an episode is fsynced, with its
model calls, before it is counted. This process reads only the episode's brief (`arena.runs.briefs`) for its stops,
the harness meter and the progress. The playing phase is measured (`arena.runs.harness_cost`: summary.json `harness`).
Budget sweeps may share trajectory prefixes (`arena.runs.prefix`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import orjson

from arena.agents.truncation import MARGIN, OLLAMA_REMEDY, CeilingWatch
from arena.core.dataset import Dataset
from arena.core.trajectory import Episode, Step, Usage
from arena.core.verdict import Verdict
from arena.endpoints.client import LearnedParams, learned_params, param_lines, use_params
from arena.judges.completeness import PLANNED
from arena.judges.metrics import AUTO, judge_for_task
from arena.core.prompt_book import PromptBook, prompts_note
from arena.judges.protocols import judged, published_request, sampling_differences
from arena.judges.run_summary import summarize_scan
from arena.store.lock import RunLock
from arena.store.run_index import scan_lines
from arena.store.scan import RunScan, model_call_counts_scan, scan_run
from arena.store.shared_appends import SharedAppends
from arena.store.store import RunStore
from arena.store.writer import RunWriter

from .allocator import keep_freed_memory, startup_frozen
from .backends import Backend, make_backend, prepare_workers
from .backends.ray_address import ray_address_problem
from .briefs import EpisodeBrief, VerdictBrief, own_steps
from .config import RunConfig, redacted, slug
from .finishing import Finished, Finisher, JudgeFailure, also_judges, landed, run_judges, submit, token_sums
from .finished import NOTHING_LEFT, left_over, stamp, still_finished
from .fork import fork_prefix
from .harness_cost import HarnessMeter
from .judging import Judges
from .limits import RunSlots
from .plugins import load_plugins
from .outage import outage_of_episode, outage_of_verdict
from .prefix import copied_episode, derive, failed_episode
from .prefix import link as prefix_link
from .pricing import agent_prices, price_of, usage_cost
from .provenance import git_hash, versions
from .pricing import cost as token_cost
from .stops import FAILED, RunStops, endpoint_label
from .sweep import Cell, Family, grid_size
from .sweep import plan as plan_families
from .validate import check_judges, check_tool_options
from .workbench import EpisodeJob, Workbench

logger = logging.getLogger(__name__)


@dataclass
class RunResult:
    """What a run did. `episodes` and `verdicts` are read from the store when first asked for, as the store
    was when the run ended (`sizes`: bytes of episodes.jsonl and verdicts.jsonl then; both are append-only)."""

    run_dir: Path
    run_id: str
    summary: dict[str, Any]
    ran: int = 0
    grid: int = 0
    """Episodes in the run's grid."""
    unrecorded: int = 0
    """Episodes of the grid with no record in the store at the end (the run stopped early)."""
    stopped: str | None = None
    """Why the run stopped before playing its whole grid (None when it did not), set by what stopped it."""
    unwritten: list[str] = field(default_factory=list)
    """One message per record (episode or verdict) that could not be written to the store."""
    sizes: tuple[int, int] | None = None

    @cached_property
    def episodes(self) -> list[Episode]:
        return RunStore(self.run_dir).episodes(upto=self.sizes[0] if self.sizes else None)

    @cached_property
    def verdicts(self) -> list[Verdict]:
        return RunStore(self.run_dir).verdicts(upto=self.sizes[1] if self.sizes else None)


def data_warnings(bench: Workbench) -> list[str]:
    """What the datasets say about the run's protocol (e.g. frame orders that differ between protocols)."""
    return [d.meta["protocol_warnings"][bench.config.grid.protocol] for d in bench.datasets
            if bench.config.grid.protocol in (d.meta.get("protocol_warnings") or {})]


def dataset_record(dataset: Dataset) -> dict[str, Any]:
    """A dataset's entry in run.json `datasets`; with its file's `population` when its suite's published rule counted
    one (`Dataset.population`: what the suite's figures divide by under `--protocol original`)."""
    record = {"name": dataset.name, "source": str(dataset.source), "root": str(dataset.root),
              "tasks": len(dataset.tasks), "world": dataset.meta.get("world")}
    if dataset.population is not None:
        record["population"] = dataset.population
    return record


def agent_warnings(bench: Workbench) -> list[str]:
    """Tasks that name the kind of agent they need (`metadata.requires_agent`) but are played by another kind."""
    warnings = []
    for agent in bench.agents:
        kind = agent.describe().get("kind", agent.id)
        needing: dict[str, list[str]] = {}
        for _, task in bench.pairs:
            need = task.metadata.get("requires_agent")
            if need and need != kind:
                needing.setdefault(need, []).append(task.id)
        for need, ids in sorted(needing.items()):
            warnings.append(f"{len(ids)} task(s) (e.g. {ids[0]}) need an agent of kind {need!r}; agent "
                            f"{agent.id!r} is of kind {kind!r}, so its results on them do not measure what those "
                            "tasks define")
    return warnings


def published_requests(bench: Workbench) -> tuple[list[dict[str, Any]], list[str]]:
    """Under `--protocol original`, per suite whose published script sends sampling fields and per agent: the
    fields, their source, and those the agent's explicit options replace ([{field, published, sent}]); with one
    warning line per replaced field (printed when the run starts, kept in `run.json` / `summary.json`)."""
    suites = sorted({t.suite for _, t in bench.pairs if t.layout.sampling or published_request(t.suite)}
                    if bench.config.grid.protocol == "original" else set())
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    for suite in suites:
        request = published_request(suite)
        if request is None:
            continue
        for agent in bench.agents:
            explicit = getattr(getattr(agent, "inner", agent), "explicit_sampling", None)
            entry: dict[str, Any] = {"suite": suite, "agent": agent.id, "fields": dict(request.fields),
                                     "source": request.source}
            if explicit is None:
                entry["sent"] = False  # an agent that does not build chat requests itself (scripted, smolagents)
                entries.append(entry)
                continue
            entry["differences"] = sampling_differences(request.fields, explicit())
            entries.append(entry)
            for d in entry["differences"]:
                said = f"sends {d['published']!r}" if d["published"] is not None else "does not send it"
                lines.append(f"agent {agent.id}: {suite} request field {d['field']} sent as {d['sent']!r}, the "
                             f"published script {said} ({request.source})")
    return entries, lines


def with_run_cassette(config: RunConfig, store: RunStore) -> RunConfig:
    """The config with its live-web cassette: `tool_options.cassette`, else `<run dir>/cassettes.sqlite`."""
    tools = config.tools.model_dump()
    if tools.get("web", "offline") == "offline" or tools.get("cassette"):
        return config
    return config.updated(tools={**tools, "cassette": str(store.dir / "cassettes.sqlite")})


def default_run_id(bench: Workbench, config: RunConfig) -> str:
    who = bench.agents[0].id if len(bench.agents) == 1 else f"{len(bench.agents)}-agents"
    return f"{slug(bench.datasets[0].name)}-{slug(who)}-{config.grid_fingerprint()[:8]}"


async def execute(config: RunConfig, *, progress: Callable[[EpisodeBrief, VerdictBrief | None], None] | None = None,
                  force: bool = False, on_start: Callable[[int, int], None] | None = None,
                  run_dir: str | Path | None = None, on_open: Callable[[Path], None] | None = None) -> RunResult:
    """Play every missing episode of the grid, judge what lacks a verdict, write the summary.

    The run directory is `run_dir` when given (resume in place: a moved or renamed
    run continues where it lies), else `<out>/<run id>`. It is locked for the whole
    run (`arena.store.lock`): a second writer stops at once. With a live-web mode and no
    cassette in the tools' options, the cassette is `<run dir>/cassettes.sqlite`. The config is not changed: what
    the run resolves (the prompts file's absolute path, the protocol, the cassette) goes into new records, the
    one run.json keeps. `progress` is called once per episode recorded or judged, with its brief and its verdict's
    (`arena.runs.briefs`; None: not judged). `on_open` is told the run directory once it is known, before anything
    is written there."""
    keep_freed_memory()
    if config.judge.prompts:  # workers load it too, wherever they run
        prompts = str(Path(config.judge.prompts).resolve())
        config = config.updated(judge=config.judge.model_copy(update={"prompts": prompts}))
    if config.schedule.workers and config.schedule.backend != "ray":
        prepare_workers()  # the workers' fork server imports the arena while the data loads
    load_plugins()  # every template registered before the prompts file is checked
    book = PromptBook.load(config.judge.prompts)  # the whole file checked before anything runs
    bench = Workbench(config, prompts=book)  # `bench.config`: the protocol resolved
    try:
        with startup_frozen():
            return await _execute(bench.config, bench, progress=progress, force=force, on_start=on_start,
                                  run_dir=run_dir, on_open=on_open)
    finally:
        await bench.aclose()


async def _execute(config: RunConfig, bench: Workbench, *, progress, force: bool, on_start,
                   run_dir: str | Path | None, on_open: Callable[[Path], None] | None = None) -> RunResult:
    run_id = config.output.run_id or default_run_id(bench, config)
    store = RunStore(Path(run_dir) if run_dir is not None else Path(config.output.out) / run_id)
    if on_open is not None:
        on_open(store.dir)
    judges = run_judges(config, store.dir, bench.prompts)
    also = also_judges((t for _, t in bench.pairs), judges.name)
    for judge_id in sorted({judge_for_task(task, config.judge.name or AUTO) for _, task in bench.pairs}
                           | {j for ids in also.values() for j in ids}):
        judges.get(judge_id)
    check_judges(lambda task: judges.get(judge_for_task(task, config.judge.name or AUTO)), [t for _, t in bench.pairs])
    check_tool_options(config.tools, config.grid.settings)
    if config.schedule.backend == "ray" and (problem := ray_address_problem(config.schedule.ray_address)):
        raise RuntimeError(problem)  # a cluster that cannot be reached: said at once, nothing written
    with RunLock(store.dir, "arena run"):  # checked before: a run that cannot start writes nothing
        return await _execute_locked(config, bench, progress=progress, force=force, on_start=on_start,
                                     run_id=run_id, store=store, judges=judges, also=also)


async def _execute_locked(config: RunConfig, bench: Workbench, *, progress, force: bool, on_start, run_id: str,
                          store: RunStore, judges: Judges, also: dict[str, list[str]]) -> RunResult:
    """The run under its lock, in four phases: open (run.json, the backend), plan (what is left to play and to
    judge), schedule (play, record, judge), summarise (summary.json)."""
    session = RunSession(config, bench, store, judges, also, run_id, progress)
    try:
        session.open(force)
        work = session.plan()
        if on_start:
            on_start(work.missing + len(work.unjudged), work.grid)
        await session.schedule(work)
        return await session.summarise(work)
    finally:
        await session.close()


@dataclass
class Work:
    """What a run has left (the plan phase): the grid's families, the episodes already done (key -> index
    entry), those of them lacking the run judge's verdict, and the number of grid cells to play."""

    families: list[Family]
    done: dict[str, Any]
    unjudged: list[Episode]
    missing: int

    @property
    def grid(self) -> int:
        return grid_size(self.families)


class RunSession:
    """One run in its phases (see `_execute_locked`); every episode is finished where it was played (a
    `Finisher`: in a worker, or here) and recorded by `record`, whichever way it came (played, derived from a shared
    prefix, or only judged)."""

    def __init__(self, config: RunConfig, bench: Workbench, store: RunStore, judges: Judges,
                 also: dict[str, list[str]], run_id: str,
                 progress: Callable[[EpisodeBrief, VerdictBrief | None], None] | None):
        self.config, self.bench, self.store, self.judges, self.also = config, bench, store, judges, also
        self.run_id, self.progress = run_id, progress
        # every append takes the run's append lock: workers append their own records, and so may, for a moment,
        # the workers of a killed run this one resumes
        self.writer = RunWriter(files=SharedAppends(store.dir))
        self.backend: Backend | None = None
        self.backend_closed: asyncio.Future[None] | None = None  # the backend's stop, once begun
        self.spent_worker_cpu: float | None = None
        self.judge_name = config.judge.name or AUTO
        self.judge_label = endpoint_label(config.judge.options)
        self.tasks: list[asyncio.Future] = []
        self.unwritten: list[str] = []
        self.prefix: list[Step] = []
        self.link: dict[str, Any] | None = None
        self.resend: dict[str, Any] | None = None  # a fork's recorded request, sent again (arena.runs.fork)
        self.verdicts_done: set[tuple[str, str]] = set()
        self.done: dict[str, Any] = {}
        self.agent_templates: list[str] | None = None

    def prompts_record(self) -> dict[str, Any]:
        """Which wording each prompt template of the run's agent and judge requests uses (`run.json` `prompts`; the
        agents' templates listed once per run: they follow from the grid, its datasets and agents)."""
        if self.agent_templates is None:
            self.agent_templates = self.bench.prompt_templates()
        return self.bench.prompts.run_record(self.agent_templates + self.judges.prompt_templates())

    # -- phase 1: open ---------------------------------------------------------------------------------------

    def open(self, force: bool) -> None:
        """Plan the grid's families and write (or check and update) run.json with its size, take a fork's recorded
        prefix, apply learned limits, start the backend and the recorder of model calls."""
        config, bench, store = self.config, self.bench, self.store
        self.requests, request_warnings = published_requests(bench)
        for line in request_warnings:
            logger.warning("%s", line)
        config = self.config = bench.config = with_run_cassette(config, store)
        self.info: dict[str, Any] = {
            "run_id": self.run_id, "fingerprint": config.grid_fingerprint(), "judge": config.judge.name or AUTO,
            "config": redacted(config).model_dump(mode="json"),
            "agent": bench.agents[0].describe(), "agents": [a.describe() for a in bench.agents],
            "datasets": [dataset_record(d) for d in bench.datasets],
            "versions": versions(), "git": git_hash(),
            "warnings": data_warnings(bench) + agent_warnings(bench) + request_warnings,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "prompts": self.prompts_record(),
        }
        self.families = plan_families(bench)
        self.info[PLANNED] = grid_size(self.families)  # what screens of an unfinished run count against
        if self.requests:
            self.info["published_requests"] = self.requests
        store.open(self.info, force=force)
        store.use_appender(self.writer.files)  # every record of the run is appended by the writer's thread
        if config.grid.fork is not None:
            self.prefix, self.link, self.resend = fork_prefix(config.grid.fork, store)
            store.update_info({"forked_from": self.link})
        recorded = store.info()
        self.learned: dict[str, Any] = dict(recorded.learned_limits)
        use_params(LearnedParams(recorded.learned_params))  # what this run's endpoints refused: run.json's, then new
        self.params = learned_params()
        for agent in bench.agents:
            agent.apply_limits(self.learned.get(agent.id) or {})
        self.judges.write_through(self.writer.append_async)
        self.prices = agent_prices(bench.agents, config.stops.price)
        self.calls = self.writer.recorder(store.dir, store.blobs.root) if config.output.transcript else None
        self.finisher = Finisher(self.judges, self.also, self.prices, bench.agents, bench.gate)
        self.backend = make_backend(config, bench, self.run_id, store, self.writer, self.finisher, self.calls)
        self.finisher.gate = self.backend.gate  # judge calls made here share the agents' limits
        kind = "ray" if config.schedule.backend == "ray" else "workers" if config.schedule.workers else "asyncio"
        self.meter = HarnessMeter(kind, (config.schedule.ray_workers if kind == "ray" else config.schedule.workers) or 0)
        self.stops = RunStops(threshold=config.stops.fail_fast or 10**9, max_cost=config.stops.max_cost,
                              endpoints={a.id: endpoint_label(a.describe()) for a in bench.agents})
        self.slots = RunSlots(config.schedule.concurrency)

    # -- phase 2: plan ---------------------------------------------------------------------------------------

    def plan(self) -> Work:
        """The grid's families (planned by `open`), what of it is done (errored episodes, and with --retry-errors
        every failed one, are played again) and the done episodes still lacking the run judge's verdict."""
        retried = FAILED if self.config.output.retry_errors else ("error",)
        self.done = {key: entry for key, entry in self.store.index().latest().items() if entry.finish not in retried}
        families = self.families
        self.verdicts_done = self.store.verdict_pairs()
        unjudged = [self.store.read_episode(entry) for entry in self.done.values()  # an errored one: see `judged`
                    if judged(entry.finish, entry.suite, self.config.grid.protocol)
                    and (entry.id, judge_for_task(entry, self.judge_name)) not in self.verdicts_done]
        missing = sum(1 for f in families for c in f.cells if c.key not in self.done)
        work = Work(families, self.done, unjudged, missing)
        return work

    # -- phase 3: schedule -----------------------------------------------------------------------------------

    async def schedule(self, work: Work) -> None:
        """Play every family with a cell left and judge every unjudged episode, concurrently; a stop (--fail-fast,
        --max-cost) cancels the rest. The first failure that is not a cancel is raised."""
        open_families = [f for f in work.families if any(c.key not in work.done for c in f.cells)]
        self.tasks.extend(asyncio.ensure_future(c) for c in [*(self.run_family(f) for f in open_families),
                                                             *(self.rejudge(e) for e in work.unjudged)])
        self.meter.start()
        try:
            outcomes = await asyncio.gather(*self.tasks, return_exceptions=True)
        finally:
            self.meter.stop()
        failures = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, asyncio.CancelledError)]
        if failures:
            raise failures[0]
        if self.stops.message is None and any(isinstance(o, asyncio.CancelledError) for o in outcomes):
            raise asyncio.CancelledError()
        self.save_learned()

    def stop_if(self, reason: str | None, outage: str | None = None) -> None:
        """Cancel every other task when a stop is decided: `reason` (--fail-fast, --max-cost), or an outage of an
        endpoint (`arena.runs.outage`), which becomes the run's stop message."""
        if outage and self.stops.message is None:
            self.stops.message = outage
        reason = reason or self.stops.message
        if reason:
            for task in self.tasks:
                if task is not asyncio.current_task():
                    task.cancel()

    def save_learned(self) -> None:
        now = {a.id: a.learned_limits() for a in self.bench.agents if a.learned_limits()}
        if now and now != self.learned:
            self.learned.update(now)
            self.store.update_info({"learned_limits": dict(self.learned)})
        if learned_params() != self.params:
            self.params.clear()
            self.params.update(learned_params())
            self.store.update_info({"learned_params": dict(self.params)})

    async def record(self, finished: Finished) -> None:
        """Commit a finished episode's records (`arena.runs.finishing.submit`: the episode line and its verdict lines
        in one group commit; a judged-only episode: its verdict lines) unless they landed already where it was
        finished (a worker process appends its own), decide the stops it brings, take what it taught into run.json
        and report it. Nothing of it is parsed: the brief says what the bookkeeping needs."""
        brief = finished.brief
        written = None if finished.landed else submit(self.writer, self.store, finished, last=self.slots.idle())
        # a stop is decided at once, so that no other request leaves while the line is being fsynced
        if not finished.judged_only:
            self.stop_if(self.stops.observe(brief), outage_of_episode(brief))
        # so is one the verdict brings (--fail-fast on judge errors, a judge endpoint refusing or unreachable)
        self.stop_if(self.stops.observe_verdict(brief.verdict, self.judge_label), outage_of_verdict(brief.verdict))
        if written is not None:
            finished = await landed(written, finished)
        if finished.unwritten:  # the other episodes go on; the exit status says so
            self.unwritten.append(finished.unwritten)
            if finished.stored is None and not finished.judged_only:
                return
            brief.verdict = None
        if finished.learned is not None:
            self.save_learned()
        if finished.judge_failure is not None:
            raise JudgeFailure(finished.judge_failure)
        if self.progress:
            self.progress(brief, brief.verdict)

    async def play(self, job: EpisodeJob, again: dict[str, Any] | None = None) -> Finished:
        assert self.backend is not None
        async with self.slots.slot():
            finished = await self.backend.play(job, again)
        self.meter.observe(finished.brief)
        await self.record(finished)
        return finished

    async def finish_here(self, episode: Episode) -> None:
        """Finish and record an episode made in this process (copied or failed from a shared prefix)."""
        async with self.slots.slot(judging=True):
            finished = await self.finisher.finish(episode, self.store.blobs, self.calls)
        await self.record(finished)

    async def derive_cell(self, source: Episode, cell: Cell) -> None:
        derivation = derive(source, cell.max_rounds)
        if derivation.kind == "copy":
            await self.finish_here(copied_episode(source, key=cell.key, max_rounds=cell.max_rounds, seed=cell.seed))
        elif derivation.kind == "error":
            await self.finish_here(failed_episode(source, key=cell.key, max_rounds=cell.max_rounds, seed=cell.seed))
        else:
            await self.play(cell.job(prefix=derivation.prefix, meta=prefix_link(source, cell.max_rounds)))

    async def run_family(self, family: Family) -> None:
        config, done = self.config, self.done
        head, rest = family.cells[0], family.cells[1:]
        if not family.shared:
            if head.key not in done:
                meta = {"forked_from": self.link} if config.grid.fork is not None else {}
                await self.play(head.job(prefix=self.prefix, meta=meta,
                                         prefix_mode=config.grid.fork.prefix_mode if config.grid.fork else "reuse"),
                                self.resend)
            return
        todo = [c for c in rest if c.key not in done]
        if head.key in done and not todo:
            return
        if head.key in done:
            source = self.store.read_episode(done[head.key])
        else:  # the prefix its budgets share, read from its line (the one place the driver parses an episode)
            source = Episode.model_validate_json((await self.play(head.job())).line_bytes(self.store))
        await asyncio.gather(*(self.derive_cell(source, cell) for cell in todo))

    async def rejudge(self, episode: Episode) -> None:
        async with self.slots.slot(judging=True):
            verdict, lines = await self.finisher.judge(episode, self.store.blobs, self.calls, self.verdicts_done)
        brief = EpisodeBrief.of(episode)
        brief.verdict = verdict
        await self.record(Finished(brief, None, None, lines, self.finisher.learned(), judged_only=True))

    # -- phase 4: summarise ----------------------------------------------------------------------------------

    async def summarise(self, work: Work) -> RunResult:
        """Wait for every write, recompute the summary from the store (costs from the trajectories when anything
        was played or judged, else last time's) and write summary.json."""
        config, store, writer = self.config, self.store, self.writer
        if self.stops.message:  # a stopped run's worker processes land what they had finished before it is read
            await self.close_backend()
        # every episode has landed (a worker's records are on disk before it reports them): the backend stops (its
        # worker processes wind down and exit) while the summary is made, instead of after it
        workers = self.backend.worker_cpu_seconds() if self.backend else self.spent_worker_cpu
        self.begin_backend_close()
        await writer.drained()
        self.unwritten.extend(writer.problems)
        scan = scan_run(store)
        summary = summarize_scan(scan, self.judge_name)
        summary.update({"run_id": self.run_id, PLANNED: work.grid, "protocol": config.grid.protocol,
                        "judges": self.judges.describe(),
                        "model_calls": model_call_counts_scan(scan), "prompts": self.prompts_record()})
        note = prompts_note(summary["prompts"]) if config.grid.protocol == "original" else None
        if note:
            summary["prompts_note"] = note
        recorded = set(scan.cols.get("key", ()))  # the scan already holds the index's keys
        result = RunResult(run_dir=store.dir, run_id=self.run_id, summary=summary, ran=work.missing,
                           sizes=store.sizes(), grid=work.grid, unwritten=self.unwritten, stopped=self.stops.message,
                           unrecorded=sum(1 for f in work.families for c in f.cells if c.key not in recorded))
        if not self.stops.message and not left_over(scan, work.families, self.judge_name):
            summary["finished"] = stamp(result.sizes, work.families, self.judge_name)
        warnings = list(self.info["warnings"])
        if work.missing or work.unjudged or not store.summary_path.is_file():
            truncation = add_costs(summary, scan, self.prices)
            warnings += truncation
            if truncation and getattr(store.info(), "truncation", None) != truncation:
                store.update_info({"truncation": truncation})  # run.json says it too (a server cutting prompts)
            add_judge_usage(summary, store.verdicts_path, result.sizes[1], price_of(config.judge.options.get("model")))
        else:  # nothing new was played or judged: the figures read from trajectories are those of last time
            previous = json.loads(store.summary_path.read_text())
            summary.update({k: previous[k] for k in ("cost", "judge_cost", "judge_tokens") if k in previous})
            costs = {(g["agent"], g["setting"], g["max_rounds"]): g["cost"] for g in previous.get("groups", [])
                     if "cost" in g}
            for group in summary.get("groups", []):
                if (group["agent"], group["setting"], group["max_rounds"]) in costs:
                    group["cost"] = costs[(group["agent"], group["setting"], group["max_rounds"])]
            warnings += [w for w in previous.get("warnings", []) if w not in warnings]
        if self.meter.times.episodes:
            summary["harness"] = self.meter.figures(workers)
        elif store.summary_path.is_file():  # nothing played now: the figures of the session that played
            previous_harness = json.loads(store.summary_path.read_text()).get("harness")
            if previous_harness:
                summary["harness"] = previous_harness
        if self.learned:
            summary["learned_limits"] = self.learned
        if self.params:
            summary["learned_params"] = dict(self.params)
            warnings += [line for line in param_lines(self.params) if line not in warnings]
        if self.stops.message:
            summary["stopped"] = self.stops.message
        if warnings:
            summary["warnings"] = warnings
        if config.shares_prefixes():
            summary["prefix_sharing"] = True
        store.write_summary(summary)
        return result

    async def close(self) -> None:
        """Close the judges and the backend, then flush and stop the writer (in every case)."""
        await self.judges.aclose()
        await self.close_backend()
        await asyncio.to_thread(self.writer.close)

    def begin_backend_close(self) -> asyncio.Future[None]:
        """Begin stopping the backend, once (its workers append their last records first); returns the stop, which
        `close` awaits whatever happens before."""
        if self.backend_closed is None:
            self.backend_closed = asyncio.ensure_future(self._stop_backend(self.backend))
        return self.backend_closed

    async def close_backend(self) -> None:
        """Stop the backend (begun now, or earlier by `begin_backend_close`) and wait until it has stopped."""
        await self.begin_backend_close()

    async def _stop_backend(self, backend: Backend | None) -> None:
        if backend is not None:
            await backend.aclose()
            self.spent_worker_cpu = backend.worker_cpu_seconds()
        self.backend = None


def _spent_cost_of_record(record: dict[str, Any], price: tuple[float, float] | None) -> float | None:
    """`arena.runs.finishing.spent_cost` of an episode record (parsed JSON), without building the Episode."""
    if price is None:
        return None
    steps = own_steps(record.get("steps") or [], (record.get("meta") or {}).get("model_calls"))
    return token_cost(*token_sums(_token_counts(s.get("usage") or {}) for s in steps), price)


def _token_counts(usage: dict[str, Any]) -> tuple[int | None, int | None]:
    """(prompt, completion) tokens of a step's recorded usage; validated as `Usage` unless both are plain ints or
    absent (as the arena writes them)."""
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if (prompt is None or type(prompt) is int) and (completion is None or type(completion) is int):
        return prompt, completion
    checked = Usage.model_validate(usage)
    return checked.prompt_tokens, checked.completion_tokens


def add_costs(summary: dict[str, Any], scan: RunScan, prices: dict[str, Any], ratio: float = 0.75,
              floor: int = 1000, ceiling_turns: int = 2, ceiling_margin: float = MARGIN) -> list[str]:
    """One streaming pass over the run's current episode records (`scan`'s rows, one parsed record at a
    time, nothing kept but sums): the dollar cost per group (`cost`: its episodes' transcripts) and of the
    run (`cost` at the top: each model call once, so prefix-shared budgets are not paid twice), from tokens
    and the price in run.json, absent where the agent has no price or its server reported no tokens. Returns
    the truncation warnings: agents whose server counted far fewer prompt tokens than the arena sent
    (estimate, turns of at least `floor` tokens below `ratio`): the server probably cut the prompt without
    saying so (Ollama truncates to its num_ctx); and agents whose server's count stops at one ceiling (the
    highest count, reached in at least `ceiling_turns` turns) while the arena's estimate of those turns grows (by
    `ceiling_margin`) and past it: a fixed context the prompt is cut to (`arena.agents.truncation.CeilingWatch`, the
    rule the OpenAI agent notes on each such step); else agents with a turn whose count fell well below the
    endpoint's earlier counted/estimated ratio onto a ceiling (`CeilingWatch.ratio_cut`: seen on the first cut turn,
    `ratio_cut_line`)."""
    cols = scan.cols
    per_group: dict[tuple, float] = {}
    spent: float | None = None
    worst: dict[str, tuple[int, int, int]] = {}
    ceilings: dict[str, CeilingWatch] = {}
    for row, record in enumerate(scan.records_of()):
        agent = cols["agent"][row]
        price = prices.get(agent)
        totals = record.get("totals") or {}
        group = (agent, cols["setting"][row], cols["max_rounds"][row])
        if (c := token_cost(totals.get("prompt_tokens", 0), totals.get("completion_tokens", 0), price)) is not None:
            per_group[group] = per_group.get(group, 0.0) + c
        if (c := _spent_cost_of_record(record, price)) is not None:
            spent = (spent or 0.0) + c
        for s in record.get("steps") or ():
            served = (s.get("usage") or {}).get("prompt_tokens")
            sent = (s.get("input") or {}).get("token_estimate", 0)
            if served is not None and sent >= floor and served < ratio * sent:
                n, low, high = worst.get(agent, (0, served, sent))
                worst[agent] = (n + 1, served, sent) if served / sent < low / high else (n + 1, low, high)
            if served is not None and sent and agent not in worst:  # (an agent in `worst` gets no ceiling line)
                if (watch := ceilings.get(agent)) is None:  # (not a watch built per step to be thrown away)
                    watch = ceilings[agent] = CeilingWatch()
                watch.observe(served, sent)
    for group in summary.get("groups", []):
        if (known := per_group.get((group["agent"], group["setting"], group["max_rounds"]))) is not None:
            group["cost"] = round(known, 6)
    if spent is not None:
        summary["cost"] = round(spent, 6)
    lines = [f"{agent}: in {n} turn(s) the server counted far fewer prompt tokens than were sent (e.g. {low} vs "
             f"an estimated {high}); it may be truncating prompts silently ({OLLAMA_REMEDY})"
             for agent, (n, low, high) in sorted(worst.items())]
    lines += [f"{agent}: the server's prompt count stops at {w.top} tokens ({w.turns_at_top} turns) while the arena's "
              f"estimate grows to {w.grown}: it is probably cutting the prompt to a fixed context of {w.top} tokens and "
              f"answering from a cut conversation ({OLLAMA_REMEDY})"
              for agent, w in sorted(ceilings.items()) if agent not in worst and w.cut_to(ceiling_turns, ceiling_margin)]
    lines += [ratio_cut_line(agent, w) for agent, w in sorted(ceilings.items())
              if agent not in worst and not w.cut_to(ceiling_turns, ceiling_margin) and w.cut_example]
    return lines


def ratio_cut_line(agent: str, watch: CeilingWatch) -> str:
    """The summary's line for an agent whose server cut turns by the ratio rule (`CeilingWatch.ratio_cut`)."""
    served, estimate, ratio = watch.cut_example or (0, 0, 0.0)
    return (f"{agent}: in {watch.cut_turns} turn(s) the server's prompt count fell to a fixed context (e.g. {served} "
            f"tokens for an estimated {estimate}, where its earlier turns counted {ratio:.2f} per estimated token): it "
            f"is probably cutting the prompt to a fixed context of {served} tokens and answering from a cut "
            f"conversation ({OLLAMA_REMEDY})")


def add_judge_usage(summary: dict[str, Any], path: Path, upto: int, price: tuple[float, float] | None) -> None:
    """Tokens of the judges' own calls (`judge_tokens`) and their cost (`judge_cost`, None when unpriced),
    from the verdict records in the first `upto` bytes of `path`, read one at a time with orjson."""
    total: Usage | None = None
    for _, line in scan_lines(path) if path.is_file() else ():
        if (upto := upto - len(line)) < 0:
            break
        usage = orjson.loads(line).get("usage") if line.strip() else None
        if usage is not None:
            total = (total or Usage()) + Usage.model_validate(usage)
    if total is not None:
        summary["judge_tokens"] = total.model_dump()
        summary["judge_cost"] = usage_cost(total, price)


async def confirm_finished(config: RunConfig, run_dir: Path) -> RunResult | None:
    """The result of resuming `run_dir` with `config` when the run is finished and unchanged since (its summary's
    `finished` stamp holds, `arena.runs.finished`): nothing is played, judged or written, and the summary is the one
    on disk. None when there may be something to do (then `execute`)."""
    store = RunStore(run_dir)
    if not store.summary_path.is_file() or config.output.retry_errors:
        return None
    summary = json.loads(store.summary_path.read_text())
    bench = Workbench(config)
    try:
        families = plan_families(bench)
        with RunLock(store.dir, "arena resume"):
            sizes = store.sizes()
            if not still_finished(summary.get("finished"), sizes, families, config.judge.name or AUTO):
                return None
    finally:
        await bench.aclose()
    logger.info("%s: %s", run_dir, NOTHING_LEFT)
    return RunResult(run_dir=store.dir, run_id=store.info().run_id or store.dir.name, summary=summary, ran=0,
                     grid=grid_size(families), sizes=sizes)


def run(config: RunConfig, **kwargs: Any) -> RunResult:
    """Synchronous wrapper of `execute`."""
    return asyncio.run(execute(config, **kwargs))
