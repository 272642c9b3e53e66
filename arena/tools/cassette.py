"""Cassettes: live web-tool traffic recorded in an SQLite file and replayed later.

Every request a live tool makes (a search listing, a fetched page, a summary, a
thumbnail) goes through `Cassette.through(kind, backend, request, produce)`.
The entry's key is the SHA-256 of the canonical JSON of `(kind, backend,
normalised request)`, where `backend` names the source and the arena's format
version (e.g. `ddgs.text/1`), so a format change never replays stale entries and
a library upgrade alone does not invalidate a shipped cassette.

Modes (`--web`):
- `live`: the network only; with a cassette named it records like `record`;
- `record`: what the cassette holds is replayed, what it lacks is fetched and stored;
- `replay`: the cassette only; the network is never touched and a miss is a
  `CassetteMiss` (a ToolError, so the agent sees an error observation naming the
  request and the file, and the run goes on);
- `refresh`: each request is fetched anew the first time it is seen by this
  process and stored over the old entry; later identical requests replay it.

Concurrent identical requests share one fetch, so episodes that ask the same
thing at the same time observe the same response, as they will on replay.
Tools build the observation from the recorded value only, so the text is the
same whether it came from the network or from the cassette.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sqlite3
import threading
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

from arena.core.tool import ToolError

FORMAT_VERSION = 1
MODES = ("live", "record", "replay", "refresh")
Mode = Literal["live", "record", "replay", "refresh"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    backend TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    blob BLOB,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class CassetteError(ValueError):
    """A cassette file that cannot be used (wrong format, not SQLite, bad mode)."""


class CassetteMiss(ToolError):
    """Replay asked for a request the cassette does not hold."""


@dataclass
class Recorded:
    """A response as stored: JSON data and optional raw bytes (thumbnails)."""

    data: Any
    blob: bytes | None = None


class Entry(BaseModel):
    """One cassette entry, as exported (blob base64-encoded)."""

    key: str
    kind: str
    backend: str
    request: dict[str, Any]
    response: Any
    blob_b64: str | None = None
    recorded_at: str


def normalize_text(text: str) -> str:
    """NFKC, case-folded, white space collapsed: how queries are compared."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def normalize_url(url: str) -> str:
    """Lower-case scheme and host, default port and fragment dropped; path and query kept."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    port = parts.port
    if port and not ((parts.scheme == "http" and port == 80) or (parts.scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path or "/", parts.query, ""))


def request_key(kind: str, backend: str, request: dict[str, Any]) -> str:
    canonical = json.dumps({"kind": kind, "backend": backend, "request": request}, sort_keys=True,
                           ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def describe_request(kind: str, backend: str, request: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(request.items()))
    return f"{kind} via {backend} ({shown})"


class CassetteStore:
    """The SQLite file: thread-safe get/put and the maintenance operations (stats, export, merge)."""

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise CassetteError(f"{self.path}: no such cassette")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE name='format'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('format', ?), ('created', ?)",
                                 (str(FORMAT_VERSION), _now()))
                self._db.commit()
            elif int(row[0]) != FORMAT_VERSION:
                raise CassetteError(f"{self.path}: cassette format {row[0]}, this arena reads format {FORMAT_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise CassetteError(f"{self.path}: not a cassette ({exc})") from None

    def get(self, key: str) -> Recorded | None:
        with self._lock:
            row = self._db.execute("SELECT response, blob FROM entries WHERE key=?", (key,)).fetchone()
        return None if row is None else Recorded(json.loads(row[0]), row[1])

    def put(self, kind: str, backend: str, request: dict[str, Any], value: Recorded,
            recorded_at: str | None = None) -> str:
        key = request_key(kind, backend, request)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, kind, backend, json.dumps(request, sort_keys=True, ensure_ascii=False),
                              json.dumps(value.data, ensure_ascii=False), value.blob, recorded_at or _now()))
            self._db.commit()
        return key

    def entries(self) -> Iterator[Entry]:
        with self._lock:
            rows = self._db.execute("SELECT key, kind, backend, request, response, blob, recorded_at FROM entries "
                                    "ORDER BY kind, backend, key").fetchall()
        for key, kind, backend, request, response, blob, recorded_at in rows:
            yield Entry(key=key, kind=kind, backend=backend, request=json.loads(request),
                        response=json.loads(response),
                        blob_b64=base64.b64encode(blob).decode() if blob is not None else None,
                        recorded_at=recorded_at)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            groups = self._db.execute(
                "SELECT kind, backend, COUNT(*), SUM(LENGTH(response) + COALESCE(LENGTH(blob), 0)), "
                "MIN(recorded_at), MAX(recorded_at) FROM entries GROUP BY kind, backend ORDER BY kind, backend"
            ).fetchall()
            created = self._db.execute("SELECT value FROM meta WHERE name='created'").fetchone()
        return {
            "path": str(self.path), "format": FORMAT_VERSION, "created": created[0] if created else None,
            "entries": sum(g[2] for g in groups), "bytes": self.path.stat().st_size,
            "groups": [{"kind": k, "backend": b, "entries": n, "payload_bytes": int(size or 0),
                        "first": first, "last": last} for k, b, n, size, first, last in groups],
        }

    def merge_from(self, other: "CassetteStore", prefer: Literal["existing", "newer", "incoming"] = "existing"
                   ) -> dict[str, int]:
        """Copy the other cassette's entries in; on a key present in both, keep by `prefer`."""
        counts = {"added": 0, "replaced": 0, "kept": 0}
        for entry in other.entries():
            with self._lock:
                row = self._db.execute("SELECT recorded_at FROM entries WHERE key=?", (entry.key,)).fetchone()
            if row is not None:
                take = prefer == "incoming" or (prefer == "newer" and entry.recorded_at > row[0])
                if not take:
                    counts["kept"] += 1
                    continue
                counts["replaced"] += 1
            else:
                counts["added"] += 1
            blob = base64.b64decode(entry.blob_b64) if entry.blob_b64 is not None else None
            self.put(entry.kind, entry.backend, entry.request, Recorded(entry.response, blob), entry.recorded_at)
        return counts

    def close(self) -> None:
        with self._lock:
            self._db.close()


def validate_mode(mode: str, path: str | Path | None) -> None:
    """CassetteError when the mode is unknown or lacks the cassette it needs."""
    if mode not in MODES:
        raise CassetteError(f"unknown web mode {mode!r}; known: offline, {', '.join(MODES)}")
    if path is None and mode in ("record", "replay", "refresh"):
        raise CassetteError(f"--web {mode} needs a cassette file (--cassette FILE)")
    if mode == "replay" and path is not None and not Path(path).is_file():
        raise CassetteError(f"--web replay: no such cassette {path}")


class Cassette:
    """The mode logic in front of a store (or of nothing, for `live` without a file)."""

    def __init__(self, mode: str, path: str | Path | None = None):
        validate_mode(mode, path)
        self.mode: Mode = "record" if mode == "live" and path is not None else mode  # type: ignore[assignment]
        self.store = CassetteStore(path) if path is not None else None
        self._inflight: dict[str, asyncio.Future] = {}
        self._refreshed: set[str] = set()
        self.hits = 0
        self.misses = 0

    @property
    def offline(self) -> bool:
        """True when no request may reach the network."""
        return self.mode == "replay"

    @property
    def where(self) -> str:
        return str(self.store.path) if self.store else "no cassette"

    async def through(self, kind: str, backend: str, request: dict[str, Any],
                      produce: Callable[[], Awaitable[Recorded]]) -> Recorded:
        """The recorded response to `request`, fetched with `produce` when the mode allows."""
        if self.store is None:
            return await produce()
        key = request_key(kind, backend, request)
        if key in self._inflight:
            return await asyncio.shield(self._inflight[key])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await self._resolve(key, kind, backend, request, produce)
            future.set_result(value)
            return value
        except asyncio.CancelledError:
            future.set_exception(ToolError(f"{describe_request(kind, backend, request)} was cancelled"))
            future.exception()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            self._inflight.pop(key, None)

    async def _resolve(self, key: str, kind: str, backend: str, request: dict[str, Any],
                       produce: Callable[[], Awaitable[Recorded]]) -> Recorded:
        assert self.store is not None
        if self.mode in ("record", "replay") or (self.mode == "refresh" and key in self._refreshed):
            found = await asyncio.to_thread(self.store.get, key)
            if found is not None:
                self.hits += 1
                return found
        if self.mode == "replay":
            self.misses += 1
            raise CassetteMiss(f"cassette miss: {describe_request(kind, backend, request)} is not recorded in "
                               f"{self.where} (record it with --web record)")
        value = await produce()
        await asyncio.to_thread(self.store.put, kind, backend, request, value)
        self._refreshed.add(key)
        return value

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
