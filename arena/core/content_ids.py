"""Content addresses of bytes (`sha256:<hex>.<ext>`, the blob ids of a run's store), each `bytes` object hashed at
most once while it stays in `_IDS`, and not at all when the caller can vouch for its address (`vouch`)."""

from __future__ import annotations

import hashlib
import re

from .lru import LRU

CONTENT_ID = re.compile(r"sha256:([0-9a-f]{64})\.\w+")
"""A blob id that names its content (its digest captured): safe as a cache key, and what `vouch` can vouch for."""

_IDS: LRU[int, tuple[bytes, str]] = LRU(256, 64 << 20, lambda kept: len(kept[0]))
"""The SHA-256 hex digest of a `bytes` object, by its id (the entry holds the object, so the id is not reused)."""


def content_id(data: bytes, ext: str) -> str:
    """The blob id of `data`; a `bytes` object is hashed once while `_IDS` keeps it, and so its id, to itself."""
    if (kept := _IDS.get(id(data))) is None:
        kept = (data, hashlib.sha256(data).hexdigest())
        if type(data) is bytes:  # a bytearray may change between two puts: never kept
            _IDS.put(id(data), kept)
    return f"sha256:{kept[1]}.{ext}"


def known_content_id(data: bytes, ext: str) -> str | None:
    """`content_id(data, ext)` if `_IDS` holds it (no hashing), else None."""
    kept = _IDS.get(id(data))
    return None if kept is None else f"sha256:{kept[1]}.{ext}"


def vouch(data: bytes, blob_id: str) -> None:
    """Take `blob_id`'s digest as the content address of `data` without hashing it: for bytes just read from the
    file a blob store keeps under that id (written once, by content, never changed), such as the run's copy of a task
    image. `content_id(data, ...)` then costs nothing. Anything but a `bytes` object and an id that names its
    content (`CONTENT_ID`) is ignored."""
    named = CONTENT_ID.fullmatch(blob_id)
    if type(data) is bytes and named is not None:
        _IDS.put(id(data), (data, named.group(1)))
