"""Appends to one run's JSON-lines files by several processes at once: the driver and its worker processes.

With `--workers N` each worker appends the records of the episodes it finished itself (its own group commit, its
own fsyncs), so the driver's per-episode path holds no write. The files stay the run's one set (episodes.jsonl, its
index, verdicts.jsonl, calls.jsonl, judge_cache.jsonl), so every reader reads them as it always did.

Contract:
- Every append holds an exclusive `flock` on the run's `.append-lock` for the write alone (never across an fsync):
  the lines of two processes never interleave, and the appender knows the offset it writes at (the file's size
  under the lock). A run writer holds it once for a batch of appends (`held`): each file is then checked
  (replaced? torn tail?) at its first append in the hold only, since no other appender writes while it is held.
- Under the lock, a torn tail (a process killed in the middle of its write, which the kernel can leave short) is
  cut from a file before anything is appended to it, so a new line never glues onto broken bytes, whoever left them.
- An episode line and its index entry are appended under one lock, after the index has been caught up to cover
  every whole line of episodes.jsonl (a process killed between its episode line and its entry): the index stays
  in file order with no gap, as `arena.store.run_index` requires.
- A file replaced under its name since it was opened (an index rebuilt, a file rewritten by `arena doctor --repair`)
  is opened again before the append, so that nothing goes to a file that is no longer the run's.
- Fsync is the caller's (a `RunWriter`'s rounds; any descriptor of a file will do). The interface is that of
  `arena.core.jsonl.Appender` (`append`, `line_writer`, `close`), plus `append_episode` and `append_finished`
  (an episode, its index entry and its verdict lines under one hold of the lock).
- flock works between processes on local file systems; on NFS it depends on the mount (as the run's own lock,
  `arena.store.lock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Callable, Iterator

import orjson

from arena.core.jsonl import cut_torn_tail

from .run_index import INDEX_NAME, Entry, IndexSourceError, index_lines

APPEND_LOCK = ".append-lock"
"""The empty file in the run directory whose `flock` is the run's append lock."""
TAIL_BLOCK = 4096
"""Bytes read at a time from a file's end (its torn tail, the index's last entry)."""


class SharedAppends:
    """Appends to the JSON-lines files of the run in `run_dir`, safe beside other processes doing the same (see the
    module docstring). One instance per process; not shared between threads (a run writer's thread uses it)."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.episodes_path = self.dir / "episodes.jsonl"
        self.index_path = self.dir / INDEX_NAME
        self._fds: dict[Path, int] = {}
        self._lock: int | None = None
        self._ends: dict[Path, int] | None = None
        """While the lock is held (`held`): each file appended to in this hold, and its end (whole lines) as written
        here; None while not held."""
        self._index_seen: tuple[int, int] = (0, 0)
        """(index size, bytes of episodes.jsonl it covers) as this process last saw them."""

    def _fd(self, path: Path) -> tuple[int, int]:
        """The descriptor of `path` as the file is now, and the offset of its end once a torn tail is cut (called
        under the lock; once per file in a hold, whose later appends know the end from their own writes): opened
        again when the file was replaced since it was opened (an index rebuilt, a file `arena doctor --repair`
        rewrote) or removed, so that nothing is appended to a file that is no longer the run's."""
        assert self._ends is not None, "called without the append lock"
        end = self._ends.get(path)
        if end is not None:
            return self._fds[path], end
        fd = self._fds.get(path)
        size = None
        if fd is not None:
            try:
                now, held = os.stat(path), os.fstat(fd)
                if (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                    size = held.st_size
            except FileNotFoundError:
                pass
            if size is None:
                os.close(fd)
                del self._fds[path]
                if path == self.index_path:
                    self._index_seen = (-1, 0)
        if size is None:
            fd = self._fds[path] = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            size = os.fstat(fd).st_size
        end = self._ends[path] = size - cut_torn_tail(fd, size)
        return fd, end

    def _write(self, path: Path, fd: int, end: int, data: bytes) -> None:
        """Write `data` at the end of `path` (its descriptor, its end as `_fd` gave it), under the lock. A failed
        write forgets the end (the next append looks at the file again, and cuts what the failure left)."""
        del self._ends[path]
        _write(fd, data)
        self._ends[path] = end + len(data)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the run's append lock for the appends made inside (re-entrant; an append outside a hold takes it for
        itself). Never hold it across an fsync: other processes wait for it."""
        if self._ends is not None:
            yield
            return
        if self._lock is None:  # opened on first use: the run directory exists by then
            self._lock = os.open(self.dir / APPEND_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._ends = {}
        try:
            yield
        finally:
            self._ends = None
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def append(self, path: Path, data: bytes, fsync: bool = False) -> int:
        """Append whole lines (`data` ends with a newline); returns their offset."""
        if not data.endswith(b"\n"):
            raise ValueError("a JSON line must end with a newline")
        with self.held():
            fd, offset = self._fd(path)
            self._write(path, fd, offset, data)
        if fsync:
            os.fsync(fd)
        return offset

    def append_episode(self, line: bytes, entry: Entry, fsync: bool = False) -> int:
        """Append an episode line and its index entry (`entry` as `entry_of(line, any offset)` gives it; its offset
        is set here); returns the line's offset."""
        return self.append_finished(line, entry, self.dir / "verdicts.jsonl", [], fsync)[0]

    def append_finished(self, line: bytes, entry: Entry, verdicts_path: Path, verdicts: list[bytes],
                        fsync: bool = False) -> tuple[int, str | None]:
        """Append an episode line and its index entry (as `append_episode`), then its verdict lines to
        `verdicts_path`, under one hold of the lock; returns the line's offset and why the verdict lines could not
        follow it (None: they did). Raises when the episode's own line could not be written (nothing else is)."""
        if not line.endswith(b"\n"):
            raise ValueError("a JSON line must end with a newline")
        with self.held():
            offset, episodes = self._append_episode(line, entry)
            problem, written = self._append_verdicts(verdicts_path, verdicts) if verdicts else (None, None)
        if fsync:
            os.fsync(episodes)
            if written is not None:
                os.fsync(written)
        return offset, problem

    def _append_episode(self, line: bytes, entry: Entry) -> tuple[int, int]:
        """The episode line and its entry appended (under the lock): the line's offset, the file's descriptor."""
        (episodes, offset), (index, index_size) = self._fd(self.episodes_path), self._fd(self.index_path)
        covered = self._covered(index, index_size)
        rows = self._missing_entries(covered) if covered is not None and covered < offset else []
        self._write(self.episodes_path, episodes, offset, line)
        rows.append(entry._replace(offset=offset).row())
        data = b"".join(rows)
        self._write(self.index_path, index, index_size, data)
        self._index_seen = (index_size + len(data), offset + len(line))
        return offset, episodes

    def _append_verdicts(self, path: Path, verdicts: list[bytes]) -> tuple[str | None, int | None]:
        """Verdict lines appended in one write (under the lock): why they could not be (None: they were), and the
        file's descriptor once written."""
        try:
            if not all(v.endswith(b"\n") for v in verdicts):
                raise ValueError("a JSON line must end with a newline")
            fd, end = self._fd(path)
            self._write(path, fd, end, b"".join(verdicts))
        except (OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}", None
        return None, fd

    def _covered(self, index: int, size: int) -> int | None:
        """Bytes of episodes.jsonl the index covers (its last entry's end); None when its last line is unreadable
        (left for `EpisodeIndex.load` to rebuild)."""
        if size == 0:
            return 0
        if size == self._index_seen[0]:
            return self._index_seen[1]
        last = _last_line(index, size)
        try:
            values = orjson.loads(last)
            return int(values[0]) + int(values[1])
        except (ValueError, TypeError, IndexError):
            return None

    def _missing_entries(self, start: int) -> list[bytes]:
        """Index rows of the whole episode lines of episodes.jsonl from byte `start` to its end (called under the
        lock: lines a process killed between its line and its entry left unindexed)."""
        rows = []
        try:
            for entry in index_lines(self.episodes_path, start, None):
                rows.append(entry.row())
        except IndexSourceError:  # not an episode record: `EpisodeIndex.load` rebuilds the index when it checks it
            pass
        return rows

    def held_fd(self, path: Path) -> int | None:
        """The descriptor this process appends to `path` through (None: none open), for the caller's fsync."""
        return self._fds.get(path)

    def line_writer(self) -> Callable[..., int]:
        """`append_line`'s signature over these appends (`fsync` keyword as there)."""
        return lambda path, line, *, fsync=True: self.append(path, line, fsync)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _last_line(fd: int, size: int) -> bytes:
    """The last line of a file that ends with a newline."""
    end = size - 1
    pos = end
    while pos > 0:
        start = max(0, pos - TAIL_BLOCK)
        cut = os.pread(fd, pos - start, start).rfind(b"\n")
        if cut != -1:
            return os.pread(fd, end - (start + cut + 1), start + cut + 1)
        pos = start
    return os.pread(fd, end, 0)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
