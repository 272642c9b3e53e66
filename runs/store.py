"""The run directory: append-only JSON lines, content-addressed blobs, safe to kill at any moment.

    <out>/<run-id>/run.json         config (secrets redacted), versions, git hash, fingerprint
                  /episodes.jsonl   one Episode per line (flushed and fsynced per line)
                  /verdicts.jsonl   one Verdict per line
                  /calls.jsonl      every model call, exact request and response (endpoints/transcript.py)
                  /blobs/sha256/..  images by content hash
                  /summary.json     metrics recomputed from the two .jsonl files

A line cut short by a kill is dropped when the store is reopened; the latest
record of an episode key wins, so a retried episode supersedes its errored try.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from arena.blobs import BlobStore
from arena.trajectory import Episode
from arena.verdict import Verdict
from endpoints.transcript import CALLS_FILE

from .records import RunInfo, RunSummary
from .reduce import record_line

M = TypeVar("M", bound=BaseModel)


class RunStoreError(RuntimeError):
    """A run directory that cannot be used as asked (config mismatch, corrupt line)."""


def repair_torn_tail(path: Path) -> int:
    """Cut a trailing partial line (no newline) left by a killed writer; returns bytes removed."""
    if not path.is_file():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        block = min(size, 1 << 20)
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut != -1:
                keep = start + cut + 1
                break
            pos = start
        else:
            keep = 0
        fh.truncate(keep)
        return size - keep


def read_records(path: Path, model: type[M]) -> Iterator[M]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                return
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or "(line)"
                raise RunStoreError(f"{path}:{lineno}: not a valid {model.__name__} record: field {field}: "
                                    f"{err['msg']}") from None


class RunStore:
    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.episodes_path = self.dir / "episodes.jsonl"
        self.verdicts_path = self.dir / "verdicts.jsonl"
        self.run_json = self.dir / "run.json"
        self.summary_path = self.dir / "summary.json"
        self.blobs = BlobStore(self.dir / "blobs")

    def exists(self) -> bool:
        return self.run_json.is_file()

    def open(self, info: dict[str, Any], *, force: bool = False) -> None:
        """Create the run, or reopen it after checking that its grid is the same."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.exists():
            old = _read_json(self.run_json)
            if old.get("fingerprint") != info.get("fingerprint") and not force:
                raise RunStoreError(
                    f"{self.run_json}: this run was started with a different configuration "
                    f"(fingerprint {old.get('fingerprint')} != {info.get('fingerprint')}); use a new --run-id, "
                    "or --force to continue it with the new configuration"
                )
            info = {**old, **info, "created": old.get("created", info.get("created")),
                    "resumed": old.get("resumed", 0) + 1}
        self._write_json(self.run_json, _checked(RunInfo, info, self.run_json))
        for path in (self.episodes_path, self.verdicts_path, self.dir / CALLS_FILE):
            repair_torn_tail(path)

    def info(self) -> dict[str, Any]:
        """run.json, checked against `RunInfo` (an error names the file and field)."""
        return _checked(RunInfo, _read_json(self.run_json), self.run_json)

    def update_info(self, fields: dict[str, Any]) -> None:
        """Merge `fields` into run.json (atomically)."""
        self._write_json(self.run_json, {**self.info(), **fields})

    def _write_json(self, path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, path)

    def _append(self, path: Path, record: BaseModel) -> None:
        line = record_line(record)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def append_episode(self, episode: Episode) -> None:
        self._append(self.episodes_path, episode)

    def append_verdict(self, verdict: Verdict) -> None:
        self._append(self.verdicts_path, verdict)

    def all_episodes(self) -> list[Episode]:
        return list(read_records(self.episodes_path, Episode))

    def episodes(self) -> list[Episode]:
        """The latest record of each episode key, in first-seen order."""
        latest: dict[str, Episode] = {}
        for episode in read_records(self.episodes_path, Episode):
            latest[episode.key] = episode
        return list(latest.values())

    def verdicts(self) -> list[Verdict]:
        return list(read_records(self.verdicts_path, Verdict))

    def write_summary(self, summary: dict[str, Any]) -> None:
        self._write_json(self.summary_path, _checked(RunSummary, summary, self.summary_path))


def _checked(model: type[BaseModel], data: dict[str, Any], path: Path) -> dict[str, Any]:
    """`data` validated as `model` (defaults filled in, the record version set), as plain JSON data."""
    try:
        return model.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(document)"
        raise RunStoreError(f"{path}: field {field}: {err['msg']}") from None


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object file; an error names the file, line and column."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunStoreError(f"{path}: not valid JSON ({exc.msg}: line {exc.lineno} column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise RunStoreError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not isinstance(data, dict):
        raise RunStoreError(f"{path}: must hold a JSON object, got {type(data).__name__}")
    return data
