"""`arena doctor RUN`: check a run directory and repair what can be repaired (`--repair`).

Checks: run.json readable; every line of episodes.jsonl, verdicts.jsonl and
judge_cache.jsonl a valid record, none torn; verdicts whose episode record does not
exist (orphans); every image an episode refers to present in the blob store with the
content its name promises; no leftovers of interrupted blob writes; the episode
index consistent with episodes.jsonl; summary.json equal to the metrics recomputed
from the two .jsonl files.

Repairs (only with the run's lock, so never under a running writer): a torn last line
is cut; corrupt lines and orphan verdicts are moved, unchanged, to
`<run>/quarantine/<file>` (nothing is deleted), the file rewritten atomically without
them; blob leftovers are removed; the index is rebuilt; summary.json is recomputed.
Missing or altered blobs cannot be repaired and are reported.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson
from pydantic import ValidationError

from arena.core.jsonl import append_line, repair_torn_tail
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .lock import RunLock, RunLockedError
from .run_index import EpisodeIndex, IndexSourceError, entry_of
from .scan import RunScan, model_call_counts_scan, scan_run
from .store import RunStore

Summarize = Callable[[RunScan, str], dict[str, Any]]
"""The metrics of a scanned run for a judge (`arena.judges.run_summary.summarize_scan`), what summary.json holds."""


@dataclass
class Finding:
    kind: str
    where: str
    message: str
    repairable: bool
    repaired: bool = False

    def line(self) -> str:
        state = "repaired" if self.repaired else ("repairable" if self.repairable else "cannot be repaired")
        return f"{self.where}: {self.kind}: {self.message} [{state}]"


@dataclass
class DoctorReport:
    run_dir: Path
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing is left to repair."""
        return all(f.repaired for f in self.findings)


def _validate_cache_line(line: bytes) -> None:
    row = orjson.loads(line)
    if not isinstance(row, dict) or not isinstance(row.get("key"), str) or not isinstance(row.get("output"), str):
        raise ValueError("expected {\"key\": str, \"output\": str}")


def _check_lines(path: Path, validate: Callable[[bytes], Any], report: DoctorReport
                 ) -> tuple[list[tuple[int, bytes, Any]], list[tuple[int, bytes, str]], int]:
    """(valid lines with their parsed value, corrupt lines with the reason, torn tail bytes) of a .jsonl file."""
    good: list[tuple[int, bytes, Any]] = []
    bad: list[tuple[int, bytes, str]] = []
    torn = 0
    if not path.is_file():
        return good, bad, torn
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                torn = len(line)
                break
            if not line.strip():
                continue
            try:
                good.append((lineno, line, validate(line)))
            except (ValidationError, ValueError, TypeError) as exc:
                reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                bad.append((lineno, line, reason[:200]))
    report.counts[path.name] = len(good)
    return good, bad, torn


def _quarantine(store: RunStore, path: Path, drop: set[int]) -> None:
    """Move the lines numbered in `drop` to quarantine/<name> and rewrite `path` without them (atomically)."""
    target = store.dir / "quarantine" / path.name
    target.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".doctor-tmp")
    with path.open("rb") as src, tmp.open("wb") as out:
        for lineno, line in enumerate(src, 1):
            if not line.endswith(b"\n"):
                break
            if lineno in drop:
                append_line(target, line, fsync=False)
            else:
                out.write(line)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _index_problem(store: RunStore) -> str | None:
    """Why the episode index does not match episodes.jsonl (None when it does)."""
    index_path = store.episodes_path.with_name("episodes.idx")
    if not store.episodes_path.is_file():
        return None
    if not index_path.is_file():
        return "missing"
    expected = []
    with store.episodes_path.open("rb") as fh:
        offset = 0
        for line in fh:
            if not line.endswith(b"\n"):
                break
            if line.strip():
                try:
                    expected.append(entry_of(line, offset).row())
                except (ValueError, KeyError, TypeError):
                    return "episodes.jsonl has corrupt lines"
            offset += len(line)
    with index_path.open("rb") as fh:
        actual = [line for line in fh if line.endswith(b"\n")]
    if actual != expected:
        return f"{len(actual)} entries, episodes.jsonl has {len(expected)} records"
    return None


def diagnose(store: RunStore, report: DoctorReport, repair: bool, summarize: Summarize | None = None) -> None:
    def found(kind: str, where: str, message: str, repairable: bool, fix: Callable[[], None] | None = None) -> None:
        finding = Finding(kind, where, message, repairable)
        if repair and repairable and fix is not None:
            fix()
            finding.repaired = True
        report.findings.append(finding)

    files = ((store.episodes_path, lambda b: Episode.model_validate_json(b)),
             (store.verdicts_path, lambda b: Verdict.model_validate_json(b)),
             (store.dir / "judge_cache.jsonl", _validate_cache_line))
    parsed: dict[str, list[tuple[int, bytes, Any]]] = {}
    drops: dict[Path, set[int]] = {}
    for path, validate in files:
        good, bad, torn = _check_lines(path, validate, report)
        parsed[path.name] = good
        for lineno, _, reason in bad:
            found("corrupt_line", f"{path}:{lineno}", reason, True, lambda: None)
            drops.setdefault(path, set()).add(lineno)
        if torn:
            found("torn_tail", f"{path}:{len(good) + len(bad) + 1}", f"{torn} bytes without a newline (a writer was "
                  "killed mid-line)", True, lambda p=path: repair_torn_tail(p))
    episode_ids = {value.id for _, _, value in parsed["episodes.jsonl"]}
    for lineno, _, verdict in parsed["verdicts.jsonl"]:
        if verdict.episode_id not in episode_ids:
            found("orphan_verdict", f"{store.verdicts_path}:{lineno}",
                  f"verdict of judge {verdict.judge!r} for episode {verdict.episode_id} that has no record", True,
                  lambda: None)
            drops.setdefault(store.verdicts_path, set()).add(lineno)
    if repair:
        for path, lines in drops.items():
            _quarantine(store, path, lines)
    referenced: set[str] = set()
    for _, _, episode in parsed["episodes.jsonl"]:
        referenced.update(episode.images)
        for step in episode.steps:
            if step.observation is not None:
                referenced.update(step.observation.images)
    for blob_id in sorted(referenced):
        try:
            path = store.blobs.path(blob_id)
        except ValueError as exc:
            found("bad_blob_id", str(store.episodes_path), str(exc), False)
            continue
        if not path.is_file():
            found("missing_blob", str(path), f"image {blob_id} referenced by an episode is not stored", False)
        elif hashlib.sha256(path.read_bytes()).hexdigest() != blob_id.split(":", 1)[1].rsplit(".", 1)[0]:
            found("altered_blob", str(path), f"content of {blob_id} does not match its hash", False)
    report.counts["blobs referenced"] = len(referenced)
    if store.blobs.root.is_dir():
        for leftover in sorted(store.blobs.root.rglob(".tmp-*")):
            found("blob_leftover", str(leftover), "temporary file of an interrupted image write", True,
                  lambda p=leftover: p.unlink(missing_ok=True))
    problem = _index_problem(store)
    if problem is not None:
        found("stale_index", str(store.episodes_path.with_name("episodes.idx")), problem, True,
              lambda: EpisodeIndex.rebuild(store.episodes_path))
    _check_summary(store, report, found, summarize)


def _check_summary(store: RunStore, report: DoctorReport, found, summarize: Summarize | None) -> None:
    if not store.summary_path.is_file():
        found("no_summary", str(store.summary_path), "the run never finished (arena resume finishes it)", False)
        return
    if summarize is None or any(f.kind == "corrupt_line" and not f.repaired for f in report.findings):
        return
    try:
        written = json.loads(store.summary_path.read_text(encoding="utf-8"))
        scan = scan_run(store)
    except (ValueError, RuntimeError, OSError) as exc:
        found("unreadable", str(store.summary_path), str(exc), False)
        return
    judge = written.get("judge", "auto")
    recomputed = json.loads(json.dumps(summarize(scan, judge), default=str))
    if written.get("groups") != recomputed["groups"]:
        found("summary_mismatch", str(store.summary_path),
              "metrics differ from those recomputed from episodes.jsonl and verdicts.jsonl", True,
              lambda: store.write_summary({**written, **recomputed, "model_calls": model_call_counts_scan(scan)}))


def check_run(run_dir: str | Path, *, repair: bool = False, summarize: Summarize | None = None) -> DoctorReport:
    """Check a run directory; with `repair`, under its lock, repair what can be repaired. summary.json is checked
    against `summarize` (the store computes no metrics: the CLI passes `arena.judges.run_summary.summarize_scan`);
    without it, the summary is not checked."""
    store = RunStore(run_dir)
    report = DoctorReport(Path(run_dir))
    if not store.exists():
        raise ValueError(f"{run_dir}: not a run directory (no run.json)")
    try:
        store.info()
    except (OSError, ValueError) as exc:
        report.findings.append(Finding("unreadable", str(store.run_json), str(exc), False))
        return report
    try:
        lock = RunLock(store.dir, "arena doctor --repair" if repair else "arena doctor").acquire()
    except RunLockedError as exc:
        if repair:
            raise
        report.findings.append(Finding("in_use", str(store.dir), str(exc), False))
        lock = None
    try:
        diagnose(store, report, repair, summarize)
    except IndexSourceError as exc:
        report.findings.append(Finding("corrupt_line", str(store.episodes_path), str(exc), False))
    finally:
        if lock is not None:
            lock.release()
    return report
