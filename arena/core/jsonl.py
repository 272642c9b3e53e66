"""Append-only JSON-lines files that survive a writer killed mid-line.

A kill (or a full disk) can leave a last line without its newline. Every append first cuts such a torn tail, so the
new record never glues onto broken bytes, then writes one whole line and fsyncs it. Readers treat a line without a
newline as absent."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO, Callable


def cut_torn_tail(fd: int, size: int) -> int:
    """Truncate a file open for writing (descriptor `fd`, `size` bytes) after its last newline; returns bytes
    removed."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    block = min(size, 1 << 20)
    pos, keep = size, 0
    while pos > 0:
        start = max(0, pos - block)
        cut = os.pread(fd, pos - start, start).rfind(b"\n")
        if cut != -1:
            keep = start + cut + 1
            break
        pos = start
    os.ftruncate(fd, keep)
    return size - keep


def _cut_torn_tail(fh: BinaryIO, size: int) -> int:
    """`cut_torn_tail` of a file object just opened (nothing buffered)."""
    return cut_torn_tail(fh.fileno(), size)


def repair_torn_tail(path: Path) -> int:
    """Cut a trailing partial line (no newline) left by a killed writer; returns bytes removed."""
    if not path.is_file():
        return 0
    with path.open("rb+") as fh:
        return _cut_torn_tail(fh, os.fstat(fh.fileno()).st_size)


class Appender:
    """Append-only files held open between appends by the one thread that appends to them (a run's writer, which
    holds the run's lock): the first append to a path opens it (unbuffered) and cuts a torn tail, later ones write
    at the end they know (its size kept here: one system call per append, no `fstat`). A failed write closes the
    file and forgets it, so the next append opens it again and cuts whatever the failure left. Fsync is the
    caller's (any descriptor of the file will do). `close` closes every file."""

    def __init__(self) -> None:
        self._open: dict[Path, BinaryIO] = {}
        self._size: dict[Path, int] = {}

    def append(self, path: Path, data: bytes, fsync: bool = False) -> int:
        """Append whole lines (`data` ends with a newline); returns their offset (the file's size before them)."""
        if not data.endswith(b"\n"):
            raise ValueError("a JSON line must end with a newline")
        fh = self._open.get(path)
        if fh is None:
            fh = path.open("ab+", buffering=0)
            size = os.fstat(fh.fileno()).st_size
            self._size[path] = size - _cut_torn_tail(fh, size)
            self._open[path] = fh
        offset = self._size[path]
        try:
            left = memoryview(data)
            while left:
                left = left[fh.write(left):]
            if fsync:
                os.fsync(fh.fileno())
        except BaseException:
            self._open.pop(path, None)
            fh.close()
            raise
        self._size[path] = offset + len(data)
        return offset

    def line_writer(self) -> Callable[..., int]:
        """`append_line`'s signature over this appender (`fsync` keyword as there)."""
        return lambda path, line, *, fsync=True: self.append(path, line, fsync)

    def held_fd(self, path: Path) -> int | None:
        """The descriptor `path` is held open with (None: not open here), for the caller's fsync."""
        fh = self._open.get(path)
        return fh.fileno() if fh is not None else None

    def held(self) -> contextlib.AbstractContextManager[None]:
        """A batch of appends (nothing to hold: no other process appends to these files; `SharedAppends.held`)."""
        return contextlib.nullcontext()

    def close(self) -> None:
        for fh in self._open.values():
            fh.close()
        self._open.clear()
        self._size.clear()


def append_line(path: Path, line: bytes, *, fsync: bool = True) -> int:
    """Append one line (`line` must end with a newline) after cutting any torn tail; returns its offset."""
    if not line.endswith(b"\n"):
        raise ValueError("a JSON line must end with a newline")
    with path.open("ab+") as fh:
        size = os.fstat(fh.fileno()).st_size
        offset = size - _cut_torn_tail(fh, size)
        fh.write(line)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
        return offset
