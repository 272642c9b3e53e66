"""Append-only JSON-lines files that survive a writer killed mid-line.

A kill (or a full disk) can leave a last line without its newline. Every append first cuts such a torn tail, so the
new record never glues onto broken bytes, then writes one whole line and fsyncs it. Readers treat a line without a
newline as absent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO


def _cut_torn_tail(fh: BinaryIO, size: int) -> int:
    """Truncate an open file (read+write) after its last newline; returns bytes removed."""
    if size == 0:
        return 0
    fh.seek(size - 1)
    if fh.read(1) == b"\n":
        return 0
    block = min(size, 1 << 20)
    pos, keep = size, 0
    while pos > 0:
        start = max(0, pos - block)
        fh.seek(start)
        cut = fh.read(pos - start).rfind(b"\n")
        if cut != -1:
            keep = start + cut + 1
            break
        pos = start
    fh.truncate(keep)
    return size - keep


def repair_torn_tail(path: Path) -> int:
    """Cut a trailing partial line (no newline) left by a killed writer; returns bytes removed."""
    if not path.is_file():
        return 0
    with path.open("rb+") as fh:
        return _cut_torn_tail(fh, os.fstat(fh.fileno()).st_size)


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
