"""An exclusive lock on a run directory, so two writers never append to one run at once.

`<run>/.lock` is locked with `fcntl.flock` for as long as a command writes the run
(`arena run`, `resume`, `judge`, `doctor --repair`); the holder writes its pid, host,
command and start time into it. A second writer fails at once with a message naming
the holder. The kernel drops the lock when its process dies (even by SIGKILL), so a
stale `.lock` file never blocks anything. flock works on local file systems; on NFS
it depends on the mount (Linux maps it to POSIX locks since 2.6.12).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType


class RunLockedError(RuntimeError):
    """Another process holds the run directory's lock."""


LOCK_NAME = ".lock"


HOLDER_WAIT_S = 2.0
"""How long a refused process waits for the holder to write its details (it writes them just after locking)."""


def holder(run_dir: Path) -> dict[str, object]:
    """What the lock file says about its (last) holder; empty when unreadable."""
    try:
        return json.loads((Path(run_dir) / LOCK_NAME).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def _holder_once_written(run_dir: Path) -> dict[str, object]:
    """The holder's details, waiting up to HOLDER_WAIT_S for a holder that has locked but not yet written them."""
    deadline = time.monotonic() + HOLDER_WAIT_S
    while True:
        who = holder(run_dir)
        if who.get("pid") is not None or time.monotonic() >= deadline:
            return who
        time.sleep(0.02)


class RunLock:
    """`with RunLock(run_dir, "arena run"):` holds the run's lock, or raises RunLockedError at once."""

    def __init__(self, run_dir: str | Path, command: str):
        self.dir = Path(run_dir)
        self.path = self.dir / LOCK_NAME
        self.command = command
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            who = _holder_once_written(self.dir)
            raise RunLockedError(
                f"{self.dir} is in use by another process: pid {who.get('pid', '?')} on host {who.get('host', '?')} "
                f"({who.get('command', 'unknown command')}, since {who.get('since', '?')}); wait for it to finish "
                "or stop it, then run this command again") from None
        except BaseException:
            os.close(fd)
            raise
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command,
                "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        data = (json.dumps(info) + "\n").encode()
        os.pwrite(fd, data, 0)  # written over the old details, then cut to length: never empty in between
        os.ftruncate(fd, len(data))
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.ftruncate(fd, 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
