"""A small index next to episodes.jsonl: one entry per record (offset, length, key, id, finish reason, ...).

    <run>/episodes.idx   one JSON array per line: offset, length, key, id, finish reason, the task's judge,
                         and the per-episode fields metrics need (`FIELDS`, the answer included), about
                         300 bytes per episode

The store appends an entry after each episode record, so resume, lookups and the
summary read a few MB instead of parsing every trajectory (a 100,000-episode run's
episodes.jsonl is 1.7 GB, its index 30 MB). The index is a cache: it is checked
against episodes.jsonl whenever it is loaded (the last entry must point at a whole
line holding the same episode id), caught up from the first byte it does not
cover (a writer killed between the two appends), and rebuilt from scratch when
missing, torn or inconsistent (e.g. after `arena doctor --repair` rewrote the file).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, NamedTuple

import orjson

from arena.core.jsonl import append_line
from arena.core.trajectory import Episode

INDEX_NAME = "episodes.idx"


class IndexSourceError(ValueError):
    """episodes.jsonl holds a line that is not an episode record (named by file and byte offset or line)."""


class Entry(NamedTuple):
    """One episode record: where it lies in episodes.jsonl and the few fields that metrics and resume need."""

    offset: int
    length: int
    key: str
    id: str
    finish: str
    judge: str | None
    agent: str = ""
    setting: str = ""
    max_rounds: int = 10
    max_calls: int = 1
    has_tools: bool = False
    repeat: int = 0
    task_id: str = ""
    level: str | None = None
    category: str | None = None
    suite: str = ""
    tool_calls: int = 0
    calls_per_tool: dict = {}
    tools: tuple = ()
    rounds: int = 0
    invalid: int = 0
    ignored: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    model_calls: int = 0
    steps: int = 0
    answer: str | None = None

    def row(self) -> bytes:
        return orjson.dumps(list(self)) + b"\n"

    @classmethod
    def from_row(cls, values: list) -> "Entry":
        if len(values) != len(FIELDS):
            raise ValueError(f"an index entry has {len(FIELDS)} fields, this one {len(values)}")
        values[18] = tuple(values[18])
        return cls._make(values)


FIELDS = Entry._fields

def entry_of(line: bytes, offset: int) -> Entry:
    """The index entry of one episodes.jsonl line (raises ValueError, KeyError or TypeError when it is not an
    episode record); defaults are those of `arena.core.trajectory.Episode`."""
    e = orjson.loads(line)
    task, budget, totals = e["task"], e["budget"], e.get("totals") or {}
    calls = (e.get("meta") or {}).get("model_calls")
    steps = len(e.get("steps") or [])
    tools = tuple(e.get("tools") or ())
    return Entry(
        offset, len(line), str(e["key"]), str(e["id"]), str(e["finish_reason"]), task.get("judge"), str(e["agent"]),
        str(e["setting"]), int(budget.get("max_rounds", 10)), int(budget.get("max_calls_per_round", 1)), bool(tools),
        int(e.get("repeat", 0)), str(task["id"]), task.get("level"), task.get("category"), str(task["suite"]),
        int(totals.get("tool_calls", 0)), dict(totals.get("calls_per_tool") or {}), tools,
        int(totals.get("rounds", 0)), int(totals.get("invalid_calls", 0)), int(totals.get("ignored_calls", 0)),
        int(totals.get("prompt_tokens") or 0), int(totals.get("completion_tokens") or 0), float(totals.get("seconds", 0.0)),
        int(calls) if isinstance(calls, int) and not isinstance(calls, bool) else steps, steps,
        None if e.get("answer") is None else str(e["answer"]))


def entry_of_episode(episode: Episode, length: int, offset: int = 0) -> Entry:
    """`entry_of(episode_line(episode), offset)` from the episode itself, its line `length` bytes long: the values
    its line was written from, as they read back (the fields are typed: a validated episode's line parses into
    them), without parsing the line again where it was just made (`arena.runs.finishing.Finisher.finish`)."""
    task, budget, totals = episode.task, episode.budget, episode.totals
    calls, steps = episode.meta.get("model_calls"), len(episode.steps)
    return Entry(
        offset, length, episode.key, episode.id, episode.finish_reason, task.judge, episode.agent, episode.setting,
        budget.max_rounds, budget.max_calls_per_round, bool(episode.tools), episode.repeat, task.id, task.level,
        task.category, task.suite, totals.tool_calls, dict(totals.calls_per_tool), tuple(episode.tools),
        totals.rounds, totals.invalid_calls, totals.ignored_calls, totals.prompt_tokens or 0,
        totals.completion_tokens or 0, float(totals.seconds),
        calls if isinstance(calls, int) and not isinstance(calls, bool) else steps, steps, episode.answer)


def scan_lines(path: Path, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every whole line of `path` from byte `start` (a torn last line is skipped)."""
    with path.open("rb") as fh:
        fh.seek(start)
        offset = start
        for line in fh:
            if not line.endswith(b"\n"):
                return
            yield offset, line
            offset += len(line)


def index_lines(path: Path, start: int, first_line: int | None) -> Iterator[Entry]:
    """The index entries of the lines of episodes.jsonl from byte `start` on (blank lines skipped); a line that is
    not an episode record raises `IndexSourceError` naming its line (counted from `first_line`) or byte."""
    for n, (offset, line) in enumerate(scan_lines(path, start)):
        if not line.strip():
            continue
        try:
            yield entry_of(line, offset)
        except (ValueError, KeyError, TypeError) as exc:
            where = f"line {first_line + n}" if first_line is not None else f"byte {offset}"
            raise IndexSourceError(f"{path}: {where}: not an episode record ({exc})") from None


class EpisodeIndex:
    """All records of episodes.jsonl in file order (several per key when an episode was retried)."""

    def __init__(self, episodes_path: Path, entries: list[Entry], persist: bool = True):
        self.episodes_path = episodes_path
        self.path = episodes_path.with_name(INDEX_NAME)
        self.entries = entries
        self.persist = persist
        self.append_line = append_line
        """How entries are appended (`arena.core.jsonl.append_line`, or a run writer's held-open files)."""

    @property
    def covered(self) -> int:
        return self.entries[-1].offset + self.entries[-1].length if self.entries else 0

    def latest(self) -> dict[str, Entry]:
        """The last record of each key, in first-seen key order (what `RunStore.episodes` returns)."""
        out: dict[str, Entry] = {}
        for entry in self.entries:
            out[entry.key] = entry
        return out

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        if self.persist:
            self.append_line(self.path, entry.row(), fsync=False)

    @classmethod
    def load(cls, episodes_path: Path, persist: bool = True) -> "EpisodeIndex":
        """The index, checked, caught up or rebuilt so that it covers every whole line of episodes.jsonl.

        With `persist` off (a reader that does not hold the run's lock) repairs stay in memory."""
        index = cls(episodes_path, [], persist)
        size = episodes_path.stat().st_size if episodes_path.is_file() else 0
        entries = index._read_entries()
        if entries is not None and index._consistent(entries, size):
            index.entries = entries
            if index.covered < size:
                for entry in index_lines(episodes_path, index.covered, None):
                    index.add(entry)
            return index
        return cls.rebuild(episodes_path, persist)

    @classmethod
    def rebuild(cls, episodes_path: Path, persist: bool = True) -> "EpisodeIndex":
        """Index episodes.jsonl from its first byte and replace the index file atomically (if `persist`)."""
        index = cls(episodes_path, [], persist)
        if episodes_path.is_file():
            index.entries = list(index_lines(episodes_path, 0, 1))
        if not persist:
            return index
        tmp = index.path.with_suffix(".idx.tmp")
        with tmp.open("wb") as fh:
            for entry in index.entries:
                fh.write(entry.row())
        os.replace(tmp, index.path)
        return index

    def _read_entries(self) -> list[Entry] | None:
        if not self.path.is_file():
            return None
        entries = []
        try:
            for _, line in scan_lines(self.path):
                entries.append(Entry.from_row(orjson.loads(line)))
        except (ValueError, TypeError):
            return None
        return entries

    def _consistent(self, entries: list[Entry], size: int) -> bool:
        if not entries:
            return True
        if entries[0].offset != 0:
            return False
        last = entries[-1]
        if last.offset + last.length > size:
            return False
        with self.episodes_path.open("rb") as fh:
            fh.seek(last.offset)
            line = fh.read(last.length)
        try:
            return line.endswith(b"\n") and entry_of(line, last.offset) == last
        except (ValueError, KeyError, TypeError):
            return False
