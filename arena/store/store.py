"""The run directory: append-only JSON lines, content-addressed blobs, safe to kill at any moment.

    <out>/<run-id>/run.json         config (secrets redacted), versions, git hash, fingerprint
                  /episodes.jsonl   one Episode per line (flushed and fsynced per line)
                  /episodes.idx     key -> byte offset of each record (`arena.store.run_index`, rebuildable)
                  /verdicts.jsonl   one Verdict per line
                  /calls.jsonl      every model call, exact request and response (`arena.store.calls`)
                  /blobs/sha256/..  images by content hash
                  /summary.json     metrics recomputed from the two .jsonl files
Every file's record type and the format version: `arena.store.records`; older runs: `arena.store.migrate`.
                  /.lock            held by the process writing the run (`arena.store.lock`)

A line cut short by a kill is ignored by readers and cut by the next append
(`arena.core.jsonl`); the latest record of an episode key wins, so a retried episode
supersedes its errored try.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, NamedTuple, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from arena.core.blobs import BlobStore
from arena.core.jsonl import Appender, append_line, repair_torn_tail
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .calls import CALLS_FILE
from .records import FORMAT_VERSION, RunInfo, RunSummary
from .reduce import as_is_bytes, record_bytes, record_line
from .run_index import Entry, EpisodeIndex, entry_of, entry_of_episode, scan_lines
from .shared_appends import SharedAppends

M = TypeVar("M", bound=BaseModel)


class RunStoreError(RuntimeError):
    """A run directory that cannot be used as asked (config mismatch, corrupt line)."""


def read_records(path: Path, model: type[M], upto: int | None = None) -> Iterator[M]:
    """The records of a .jsonl file (a torn last line ignored); with `upto`, only those in its first bytes."""
    if not path.is_file():
        return
    offset = 0
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            offset += len(line)
            if not line.endswith(b"\n") or (upto is not None and offset > upto):
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


def episode_line(episode: Episode) -> bytes:
    """The episodes.jsonl line of an episode, exactly as the store appends it (the record's `format` set to the
    version it is written in): made where the episode was played, appended by `RunStore.append_episode_line`."""
    episode.format = FORMAT_VERSION
    return record_bytes(episode)


def episode_line_entry(episode: Episode) -> tuple[bytes, Entry]:
    """`episode_line` and its index entry at offset 0 (`entry_of` of the line): made from the episode itself when
    its line was written as it is, read from the line when the line had to be reduced (its values cut)."""
    episode.format = FORMAT_VERSION
    line = as_is_bytes(episode)
    if line is None:
        line = record_line(episode).encode()
        return line, entry_of(line, 0)
    return line, entry_of_episode(episode, len(line))


def verdict_line(verdict: Verdict) -> bytes:
    """The verdicts.jsonl line of a verdict, exactly as the store appends it."""
    return record_bytes(verdict)


class Appended(NamedTuple):
    """Where an episode line went (its offset in episodes.jsonl) and why its verdict lines could not follow it
    (None: they did)."""

    offset: int
    problem: str | None


class RunStore:
    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.episodes_path = self.dir / "episodes.jsonl"
        self.verdicts_path = self.dir / "verdicts.jsonl"
        self.calls_path = self.dir / CALLS_FILE
        self.run_json = self.dir / "run.json"
        self.summary_path = self.dir / "summary.json"
        self.blobs = BlobStore(self.dir / "blobs")
        self._index: EpisodeIndex | None = None
        self._shared: SharedAppends | None = None
        self.append_line = append_line
        """How record lines (and index entries) are appended: `arena.core.jsonl.append_line`, or through the run
        writer's held-open files (`use_appender`)."""

    def use_appender(self, appender: Appender | SharedAppends) -> None:
        """Append records and index entries through `appender` (a run writer's `files`, used only on its thread:
        every append of this store must then be made there). With `SharedAppends` (other processes append to the
        run too) an episode's line and index entry are appended together under its lock, and the index this store
        holds is dropped (it is read again when next asked for)."""
        self.append_line = appender.line_writer()
        self._shared = appender if isinstance(appender, SharedAppends) else None
        if self._shared is not None:
            self._index = None
        elif self._index is not None:
            self._index.append_line = self.append_line

    def exists(self) -> bool:
        return self.run_json.is_file()

    def open(self, info: dict[str, Any] | RunInfo, *, force: bool = False) -> None:
        """Create the run, or reopen it after checking that its grid is the same."""
        if isinstance(info, RunInfo):
            info = info.model_dump(mode="json")
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
        self._write_json(self.run_json, _checked(RunInfo, {**info, "version": FORMAT_VERSION}, self.run_json))
        for path in (self.episodes_path, self.verdicts_path, self.dir / CALLS_FILE):
            repair_torn_tail(path)
        self._index = None

    def info(self) -> RunInfo:
        """run.json read as `RunInfo` (older formats read into the current fields; an error names file and field)."""
        return _validated(RunInfo, _read_json(self.run_json), self.run_json)

    def update_info(self, fields: dict[str, Any]) -> None:
        """Merge `fields` into run.json (atomically)."""
        self._write_json(self.run_json, _checked(RunInfo, {**self.info().model_dump(mode="json"), **fields},
                                                 self.run_json))

    def _write_json(self, path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(json_document(data))
        os.replace(tmp, path)

    def index(self, persist: bool = True) -> EpisodeIndex:
        """The episode index, checked against episodes.jsonl when first asked for (see `arena.store.run_index`).

        Writers (holding the run's lock) persist its repairs; readers pass `persist=False`. Where other processes
        append to the run (`use_appender` with `SharedAppends`), it is read again each time it is asked for."""
        if self._index is None or (persist and not self._index.persist) or self._shared is not None:
            self._index = EpisodeIndex.load(self.episodes_path, persist)
            self._index.append_line = self.append_line
        return self._index

    def held_index(self) -> EpisodeIndex | None:
        """The index this store has loaded, while it is current (None: not loaded, or other processes append to the
        run, `use_appender` with `SharedAppends`)."""
        return self._index if self._shared is None else None

    def append_episode(self, episode: Episode, fsync: bool = True) -> None:
        """Append the episode's line (fsynced unless `fsync` is off: the run writer's group commit fsyncs it) and
        its index entry."""
        line = episode_line(episode)
        self.append_episode_line(line, entry_of(line, 0), fsync)

    def append_episode_line(self, line: bytes, entry: Entry, fsync: bool = True) -> int:
        """Append an episode line made by `episode_line` (here or in a worker process), with its index entry as
        `entry_of(line, offset)` gives it for any offset: the line is not parsed again, only the entry's offset set.
        Returns the line's offset."""
        if self._shared is not None:
            self._index = None
            return self._shared.append_episode(line, entry, fsync)
        index = self.index()
        offset = self.append_line(self.episodes_path, line, fsync=fsync)
        index.add(entry._replace(offset=offset))
        return offset

    def append_finished(self, line: bytes, entry: Entry, verdicts: list[bytes], fsync: bool = True) -> Appended:
        """An episode line (`append_episode_line`), then its verdict lines (`verdict_line`), in that order; returns
        the line's offset and why the verdict lines could not be written (None: they were), the episode being
        written by then. Raises when the episode's own line could not be written (nothing else is)."""
        if self._shared is not None:  # all under one hold of the run's append lock
            self._index = None
            return Appended(*self._shared.append_finished(line, entry, self.verdicts_path, verdicts, fsync))
        offset = self.append_episode_line(line, entry, fsync)
        try:
            self.append_verdict_lines(verdicts, fsync)
        except (OSError, ValueError) as exc:
            return Appended(offset, f"{type(exc).__name__}: {exc}")
        return Appended(offset, None)

    def read_line(self, offset: int, length: int) -> bytes:
        """The `length` bytes of episodes.jsonl at `offset` (a record's line)."""
        with self.episodes_path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    def read_episode(self, entry: Entry) -> Episode:
        """The episode record an index entry points at."""
        line = self.read_line(entry.offset, entry.length)
        try:
            return Episode.model_validate_json(line)
        except ValidationError as exc:
            raise RunStoreError(f"{self.episodes_path}: byte {entry.offset}: not a valid Episode record: "
                                f"{exc.errors()[0]['msg']}") from None

    def append_verdict(self, verdict: Verdict, fsync: bool = True) -> None:
        self.append_line(self.verdicts_path, verdict_line(verdict), fsync=fsync)

    def append_verdict_lines(self, lines: list[bytes], fsync: bool = True) -> None:
        """Verdict lines made by `verdict_line` (here or in a worker process), in order."""
        for line in lines:
            self.append_line(self.verdicts_path, line, fsync=fsync)

    def all_episodes(self) -> list[Episode]:
        return list(read_records(self.episodes_path, Episode))

    def episodes(self, upto: int | None = None) -> list[Episode]:
        """The latest record of each episode key, in first-seen order (of the file's first `upto` bytes)."""
        latest: dict[str, Episode] = {}
        for episode in read_records(self.episodes_path, Episode, upto):
            latest[episode.key] = episode
        return list(latest.values())

    def verdicts(self, upto: int | None = None) -> list[Verdict]:
        return list(read_records(self.verdicts_path, Verdict, upto))

    def sizes(self) -> tuple[int, int]:
        """Bytes of episodes.jsonl and verdicts.jsonl now: what `episodes(upto=)` and `verdicts(upto=)` take to
        read the store as it is at this moment (the files are append-only)."""
        return tuple(p.stat().st_size if p.is_file() else 0 for p in (self.episodes_path, self.verdicts_path))

    def verdict_pairs(self) -> set[tuple[str, str]]:
        """(episode id, judge) of every verdict record, read without building Verdict objects."""
        pairs: set[tuple[str, str]] = set()
        for lineno, (_, line) in enumerate(scan_lines(self.verdicts_path) if self.verdicts_path.is_file() else [], 1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
                pairs.add((str(record["episode_id"]), str(record["judge"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise RunStoreError(f"{self.verdicts_path}:{lineno}: not a valid Verdict record: {exc}") from None
        return pairs

    def write_summary(self, summary: dict[str, Any]) -> None:
        self._write_json(self.summary_path, _checked(RunSummary, summary, self.summary_path))


def json_document(data: Any) -> bytes:
    """`json.dumps(data, indent=2, sort_keys=True, default=str) + "\\n"` (ASCII) as bytes, byte for byte: written by
    orjson when its compact form is the standard library's (encoded by its C encoder: the indented form is not, it
    is pure Python, ~5 ms for a run.json), else by `json.dumps` itself (a float orjson writes otherwise, e.g.
    1e-05, a non-ASCII or DEL character, NaN, an integer past 64 bits, an object only `str` can write)."""
    try:
        compact = json.dumps(data, sort_keys=True, default=str, separators=(",", ":")).encode()
        if orjson.dumps(data, option=orjson.OPT_SORT_KEYS) == compact:
            return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        pass
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def _checked(model: type[BaseModel], data: dict[str, Any], path: Path) -> dict[str, Any]:
    """`data` validated as `model` (defaults filled in, the record version set), as plain JSON data."""
    return _validated(model, data, path).model_dump(mode="json")


def _validated(model: type[M], data: dict[str, Any], path: Path) -> M:
    """`data` validated as `model`; an error names the file and the field."""
    try:
        return model.model_validate(data)
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
