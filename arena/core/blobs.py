"""Content-addressed storage of images (and other bytes) inside a run directory."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from .content_ids import content_id, known_content_id
from .context_image import known_png, png_of
from .images import decode_image


def file_ext(path: str | Path) -> str:
    """The blob extension of a file: its suffix in lower case, `bin` without one."""
    return Path(path).suffix.lstrip(".").lower() or "bin"


class BlobStore:
    """Stores bytes once under `blobs/sha256/<2>/<rest>.<ext>`; ids look like `sha256:<hex>.png`. Writes are atomic
    (temporary file, then rename): a killed run never leaves a half-written blob under its final name."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, blob_id: str) -> Path:
        algo, _, name = blob_id.partition(":")
        if algo != "sha256" or not name or "/" in name or name.startswith("."):
            raise ValueError(f"not a blob id: {blob_id!r}")
        return self.root / algo / name[:2] / name[2:]

    def content_file(self, blob_id: str) -> Path | None:
        """The file this store keeps `blob_id`'s bytes in (written once under their content address, never changed),
        for a blob it has stored; None for a store that keeps no such file (one in memory). Reading it gives bytes
        whose content id is `blob_id` with no hashing (`content_ids.vouch`)."""
        return self.path(blob_id)

    def put(self, data: bytes, ext: str = "png", blob_id: str | None = None) -> str:
        """Store `data`; its id is the hash of its bytes, or `blob_id` when the caller has that id already."""
        return self.write(blob_id or content_id(data, ext), data)

    def write(self, blob_id: str | None, data: bytes | Path, ext: str = "bin") -> str:
        """Store `data` (bytes, or a file the kernel copies) under `blob_id`, its content address; with None, under
        the hash of the copy made (a file that changes meanwhile is never stored under another content's name)."""
        if blob_id is not None and self.path(blob_id).exists():
            return blob_id
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                if isinstance(data, bytes):
                    fh.write(data)
            if isinstance(data, Path):
                shutil.copyfile(data, tmp)
            if blob_id is None:
                with open(tmp, "rb") as fh:
                    blob_id = f"sha256:{hashlib.file_digest(fh, 'sha256').hexdigest()}.{ext}"
            self.path(blob_id).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, self.path(blob_id))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return blob_id

    def put_image(self, image: Image.Image) -> str:
        return self.put(png_of(image), "png")

    def known_image(self, image: Image.Image) -> str | None:
        """`put_image(image)` when it leaves the caller nothing to compute or wait for (so an event loop may call it):
        the image's PNG and that PNG's id are in memory (`known_png`, `known_content_id`), and the store knows it holds
        the blob (`holds`) or takes it without a wait (`queued`). Else None: `put_image` may encode, hash, look at the
        disk or write (work for a thread)."""
        png = known_png(image)
        blob_id = None if png is None else known_content_id(png, "png")
        if blob_id is None or self.holds(blob_id):
            return blob_id
        return self.queued(blob_id, png)

    def queued(self, blob_id: str, data: bytes) -> str | None:
        """Take `data` under its id `blob_id` to be written later, in order, readable by `get` meanwhile; returns the
        id, or None when this store cannot (this one writes at once: it never can; a run writer's store can)."""
        return None

    def held_file(self, path: str | Path) -> str | None:
        """`put_file(path)`'s id when it takes no more than a `stat` (so an event loop may ask): the file's digest is
        known in memory for its unchanged signature and the store knows it holds that blob. Else None (this one
        never knows; a store that remembers what it stored and the files' digests says so)."""
        return None

    def holds(self, blob_id: str) -> bool:
        """Whether the store knows without any I/O that it holds `blob_id` (this one never does; a store that
        remembers what it stored says so)."""
        return False

    def put_file(self, path: str | Path) -> str:
        """Store a file, named by the hash of the copy made. (A run's store remembers files' digests across uses and
        runs: `arena.store.file_digests`.)"""
        return self.write(None, Path(path), file_ext(path))

    def get(self, blob_id: str) -> bytes:
        return self.path(blob_id).read_bytes()

    def get_image(self, blob_id: str) -> Image.Image:
        return decode_image(self.get(blob_id), blob_id)
