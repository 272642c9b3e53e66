"""Task files stored in a run without hashing them again: their content addresses, remembered across runs.

A run keeps every task image it shows as a blob named by the SHA-256 of its bytes (`arena.core.blobs`). A 4K photo
is ~17 MB: hashing it costs ~10-13 ms, every run, for every task, though the dataset has not changed since the
last run over it (a re-run, a resumed run, another budget of a sweep, another model). Like git's index, this
module remembers each file's digest with its `stat` signature (device, inode, size, mtime and ctime in
nanoseconds): while the signature holds, the file is copied into the run under the digest it had, and the
signature is checked again after the copy, so a file changed meanwhile is never stored under another content's
name (it is then copied and hashed as before). The ctime cannot be set back by any program, so a rewrite that
kept the size and forged the mtime still shows.

A digest is remembered only for a file last changed at least `RACY_NS` (2 s) before it was hashed, as git does
with its racily clean entries: file times come from a coarse clock (a kernel tick, a second or two on some file
systems), so a file rewritten at the same size within one tick of being hashed would keep its whole signature. A
file that young (or dated in the future) is copied and hashed at every use until it has settled.

The digests live in an SQLite file, `$ARENA_CACHE_DIR/file-digests.sqlite` (default
`$XDG_CACHE_HOME/arena`, else `~/.cache/arena`); `ARENA_CACHE_DIR=off` keeps them in this process only. A cache
that cannot be opened or written (a read-only home) is used as far as it goes and never fails a run.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from time import time_ns

from arena.core.blobs import BlobStore, file_ext

logger = logging.getLogger(__name__)
Signature = tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns
RACY_NS = 2_000_000_000  # a file changed more recently than this may change again unseen (see above)


def signature(path: str | Path) -> Signature:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def settled(sig: Signature) -> bool:
    """True when the file's last change (mtime or ctime) lies at least `RACY_NS` in the past."""
    return time_ns() - max(sig[3], sig[4]) >= RACY_NS  # (a time in the future never is)


def cache_dir() -> Path | None:
    """Where the digests are kept; None when `ARENA_CACHE_DIR=off`."""
    return _cache_dir(*_cache_env())


def _cache_env() -> tuple[str | None, str | None, str | None]:
    """The environment `cache_dir` depends on: ARENA_CACHE_DIR, XDG_CACHE_HOME and HOME."""
    env = os.environ
    return env.get("ARENA_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME")


@lru_cache(maxsize=8)
def _cache_dir(chosen: str | None, xdg: str | None, _home: str | None) -> Path | None:
    """`cache_dir` for these values of the environment (`_home`: HOME, which `Path.home` reads)."""
    if chosen is not None:
        return None if chosen.strip().lower() in ("off", "") else Path(chosen)
    base = xdg or str(Path.home() / ".cache")
    return Path(base) / "arena"


class FileDigests:
    """Blob ids of files by path, valid while the file's signature holds (in memory, and in SQLite if it opens)."""

    def __init__(self, directory: Path | None):
        self._known: dict[str, tuple[Signature, str]] = {}
        self._asked: set[str] = set()  # paths looked up in SQLite
        self._resolved: dict[str, str] = {}  # a path as given -> its resolved path when last resolved
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if directory is None:
            return
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(directory / "file-digests.sqlite", timeout=5, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # a cache: no fsync per remembered digest
            self._db.execute("CREATE TABLE IF NOT EXISTS digests (path TEXT PRIMARY KEY, signature TEXT NOT NULL, "
                             "blob_id TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            logger.debug("file digests kept in memory only (%s: %s)", directory, exc)
            self._db = None

    def resolved(self, name: str) -> tuple[str, Signature]:
        """The resolved path of the file `name` leads to and its signature. A name resolved before is not resolved
        again (a `realpath`: one `lstat` per component) while the file the name leads to now (`stat` follows
        links) has the very signature of the one its earlier resolution names: the same device and inode, unchanged
        since (a rename or a new link changes the ctime), hence the same content under that path."""
        now = signature(name)
        where = self._resolved.get(name)
        if where is not None:
            try:
                if signature(where) == now:
                    return where, now
            except OSError:
                pass
        where = self._resolved[name] = str(Path(name).resolve())
        return where, signature(where)

    def known(self, name: str) -> str | None:
        """The blob id remembered in memory for the file `name` leads to, when `resolved(name)` would find it at once
        (the name resolved before, the file's signature unchanged since) and that signature is the remembered
        digest's: a `stat` (two for a name that is not its resolved path), no resolution, no SQLite."""
        where = self._resolved.get(name)
        entry = self._known.get(where) if where is not None else None
        if entry is None:
            return None
        try:
            now = signature(name)
            if where != name and signature(where) != now:
                return None
        except OSError:
            return None
        return entry[1] if entry[0] == now else None

    def get(self, path: str, sig: Signature) -> str | None:
        with self._lock:
            known = self._known.get(path)
            if known is None and self._db is not None and path not in self._asked:
                self._asked.add(path)  # (asked once per process: a digest this process finds is kept in memory)
                try:
                    row = self._db.execute("SELECT signature, blob_id FROM digests WHERE path = ?", (path,)).fetchone()
                except sqlite3.Error:
                    row = None
                if row is not None:
                    known = self._known[path] = (tuple(int(x) for x in row[0].split()), row[1])  # type: ignore[misc]
        return known[1] if known is not None and known[0] == sig else None

    def put(self, path: str, sig: Signature, blob_id: str) -> None:
        with self._lock:
            if self._known.get(path) == (sig, blob_id):
                return
            self._known[path] = (sig, blob_id)
            if self._db is not None:
                try:
                    self._db.execute("INSERT OR REPLACE INTO digests VALUES (?, ?, ?)",
                                     (path, " ".join(map(str, sig)), blob_id))
                except sqlite3.Error as exc:
                    logger.debug("file digest not kept: %s", exc)


_DIGESTS: dict[Path | None, FileDigests] = {}
_OPENING = threading.Lock()  # one FileDigests (one SQLite connection) per directory, however many threads ask first


def digests() -> FileDigests:
    """This process's digests for the current `cache_dir()`."""
    where = _cache_dir(*_cache_env())
    known = _DIGESTS.get(where)
    if known is None:
        with _OPENING:
            known = _DIGESTS.get(where)
            if known is None:
                known = _DIGESTS[where] = FileDigests(where)
    return known


def remembered(path: str | Path) -> tuple[str, Signature, str | None]:
    """The file's resolved path, its signature now, and the blob id remembered for it while that signature holds."""
    known = digests()
    where, now = known.resolved(os.fspath(path))
    return where, now, known.get(where, now)


def remember(where: str, before: Signature, blob_id: str) -> None:
    """Remember `blob_id` (the hash of what was read from `where` since its signature was `before`) if the file has
    not changed meanwhile and has settled (`settled`)."""
    if signature(where) == before and settled(before):
        digests().put(where, before, blob_id)


def put_task_file(blobs: BlobStore, path: str | Path) -> str:
    """Store the file `path` in `blobs` and return its blob id: copied under its remembered digest while its
    signature holds before and after the copy, else copied and hashed (`BlobStore.write`) and remembered if the
    file has settled (`settled`)."""
    where, before, known = remembered(path)
    if known is not None:
        if blobs.path(known).exists():
            return known
        target = blobs.path(known)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=blobs.root, prefix=".tmp-")
        os.close(fd)
        try:
            shutil.copyfile(where, tmp)
            if signature(where) == before:
                os.replace(tmp, target)
                return known
        finally:
            Path(tmp).unlink(missing_ok=True)
    blob_id = blobs.write(None, Path(where), file_ext(where))
    remember(where, before, blob_id)  # (not if it changed while copied, or may change again unseen)
    return blob_id


class TaskFileBlobs(BlobStore):
    """A run's blob store written directly (by a worker process, not through the run writer) whose `put_file` stores
    a task file under its remembered digest (`put_task_file`): the episodes of a task after the first neither copy
    nor hash its image again.

    It remembers the ids it has seen on disk (blobs are never removed in a run): a blob put again (the same image
    or system prompt in another round or episode) costs no path and no `stat`; `holds` answers on an event loop,
    and so does `held_file` for a task file it has stored, once a `put_file` has looked up the digests in use."""

    def __init__(self, root: str | Path):
        super().__init__(root)
        self._stored: set[str] = set()
        self._digests: FileDigests | None = None  # the task files' digests `put_file` last used (`held_file`)

    def write(self, blob_id: str | None, data: bytes | Path, ext: str = "bin") -> str:
        if blob_id is not None and blob_id in self._stored:
            return blob_id
        stored = super().write(blob_id, data, ext)
        self._stored.add(stored)
        return stored

    def put_file(self, path: str | Path) -> str:
        self._digests = digests()  # (the environment names them: looked up here, off the event loop)
        stored = put_task_file(self, path)
        self._stored.add(stored)
        return stored

    def holds(self, blob_id: str) -> bool:
        return blob_id in self._stored

    def held_file(self, path: str | Path) -> str | None:
        known = self._digests.known(os.fspath(path)) if self._digests is not None else None
        return known if known is not None and known in self._stored else None
