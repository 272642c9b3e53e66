"""Reverse-image search over a world's images: scenes, every visual anchor, entity logo cards.

A world lists what to index in `images/index.jsonl`: one entry per image or
region (`id`, `kind`, `title`, `url`, `thumbnail`, `source` image, optional
`box` inside the source, optional `extra_boxes` indexed exactly as given, such
as the region the crop tool takes for an anchor's relative box).

Each entry is described at several scales (its box with 0, 4, 12, 30 and 60 %
context around it) and each query through centred crops of itself (100, 93,
80, 65 and 50 %), so tight, rounded-out and loose crops all meet their anchor.
A description is an 8x8 and a 16x16 difference hash (Hamming), an 8x8 RGB
layout (mean absolute difference) and an 8x8x8-bin RGB histogram
(intersection); the score is their weighted mix in [0, 1], best over the
scale pairs. The weights were chosen on the full `vistahop-mini` world (seed 0)
to rank the anchor's own page first for exact crops, symmetric loose crops and
crops enlarged by up to 8/1000 of the image on each side. Results are distinct
pages (best variant per title and URL), best first.

Features are computed on first use from the (small) source images the manifest
names and cached under `<world>/.cache/image_index/`, keyed by the manifest's
hash, so a rebuilt world never reads a stale cache.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from pydantic import BaseModel, ValidationError

from arena.core.dataset import DatasetError
from arena.core.images import decode_image
from arena.core.paths import PathEscapeError, resolve_inside

MANIFEST = "images/index.jsonl"
CACHE_DIR = ".cache/image_index"
FEATURE_VERSION = "6"
PADDINGS = (0.0, 0.04, 0.12, 0.3, 0.6)
QUERY_FRACTIONS = (1.0, 0.93, 0.8, 0.65, 0.5)
LAYOUT_SIDE = 8
HISTOGRAM_LEVELS = 8
WEIGHTS = {"hash": 0.3, "layout": 0.4, "histogram": 0.3}
FIELDS = ("hash8", "hash16", "layout", "histogram")
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


class IndexEntry(BaseModel):
    """One line of `images/index.jsonl`; paths are relative to the world directory."""

    id: str
    kind: str
    title: str
    url: str
    thumbnail: str
    source: str
    box: list[int] | None = None
    extra_boxes: list[list[int]] = []
    entity: str | None = None


@dataclass(frozen=True)
class ImageHit:
    title: str
    url: str
    thumbnail: Path
    score: float
    kind: str
    entry: str


@dataclass
class Features:
    """Rows of descriptors: packed 8x8 and 16x16 dHash bits, 8x8 RGB layout in [0, 1], RGB histogram shares."""

    hash8: np.ndarray
    hash16: np.ndarray
    layout: np.ndarray
    histogram: np.ndarray

    @classmethod
    def stack(cls, rows: list["Features"]) -> "Features":
        return cls(*(np.concatenate([getattr(r, f) for r in rows]) for f in FIELDS))

    @classmethod
    def empty(cls) -> "Features":
        return cls(np.zeros((0, 8), np.uint8), np.zeros((0, 32), np.uint8),
                   np.zeros((0, 3 * LAYOUT_SIDE ** 2), np.float32), np.zeros((0, HISTOGRAM_LEVELS ** 3), np.float32))


def _small(image: Image.Image, size: tuple[int, int], mode: str) -> np.ndarray:
    return np.asarray(image.convert(mode).resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0), dtype=np.float32)


def _dhash(image: Image.Image, side: int) -> np.ndarray:
    gray = _small(image, (side + 1, side), "L")
    return np.packbits((gray[:, 1:] > gray[:, :-1]).ravel())[None, :]


def _histogram(image: Image.Image) -> np.ndarray:
    """Share of pixels in each RGB bin (tolerant to shifts and to the edges a crop adds or loses)."""
    levels = np.asarray(image.resize((64, 32), Image.Resampling.BILINEAR, reducing_gap=2.0), dtype=np.int32)
    levels = levels * HISTOGRAM_LEVELS // 256
    codes = (levels[..., 0] * HISTOGRAM_LEVELS + levels[..., 1]) * HISTOGRAM_LEVELS + levels[..., 2]
    counts = np.bincount(codes.ravel(), minlength=HISTOGRAM_LEVELS ** 3).astype(np.float32)
    return (counts / counts.sum())[None, :]


def _shrunk(image: Image.Image, side: int = 1024) -> Image.Image:
    """Large queries are box-reduced by an integer factor first (fast, and the features are tiny anyway)."""
    factor = math.ceil(max(image.width, image.height) / side)
    return image.reduce(factor) if factor > 1 else image


def describe(image: Image.Image) -> Features:
    """Features of one image (any size)."""
    rgb = _shrunk(image).convert("RGB")
    layout = _small(rgb, (LAYOUT_SIDE, LAYOUT_SIDE), "RGB").ravel() / 255.0
    return Features(hash8=_dhash(rgb, 8), hash16=_dhash(rgb, 16), layout=layout[None, :].astype(np.float32),
                    histogram=_histogram(rgb))


def _padded(box: list[int], pad: float, width: int, height: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = box
    dx, dy = int((x2 - x1) * pad), int((y2 - y1) * pad)
    return max(0, x1 - dx), max(0, y1 - dy), min(width, x2 + dx), min(height, y2 + dy)


def _hamming(query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return _POPCOUNT[np.bitwise_xor(rows, query)].sum(axis=1, dtype=np.int32)


class ReverseImageIndex:
    """Search a world's images by example; build with `load` or `for_world` (cached per world).

    The cache (`_cache`) is per process, not per run, on purpose: an index is a pure function of the world's
    on-disk image index (keyed by the world's path and its manifest's size and time, so a rebuilt world is a
    new key), holds nothing to release, and every run in the process reading that world may share it."""

    _cache: dict[tuple[str, str], "ReverseImageIndex"] = {}
    _lock = threading.Lock()

    def __init__(self, world: Path, entries: list[IndexEntry], features: Features, owners: np.ndarray):
        self.world = world
        self.entries = entries
        self.features = features
        self.owners = owners

    @staticmethod
    def manifest_path(world_dir: Path) -> Path:
        return Path(world_dir) / MANIFEST

    @classmethod
    def for_world(cls, world_dir: Path) -> "ReverseImageIndex | None":
        """The index of a world (built or read from its cache once per process), or None if it has none."""
        world = Path(world_dir).resolve()
        manifest = cls.manifest_path(world)
        if not manifest.is_file():
            return None
        stat = manifest.stat()
        key = (str(world), f"{stat.st_mtime_ns}:{stat.st_size}")
        with cls._lock:
            if key not in cls._cache:
                cls._cache[key] = cls.load(world)
            return cls._cache[key]

    @classmethod
    def load(cls, world_dir: Path) -> "ReverseImageIndex":
        """Read the manifest and the cached features (computing and caching them when missing)."""
        world = Path(world_dir).resolve()
        manifest = cls.manifest_path(world)
        raw = manifest.read_bytes()
        entries = _read_manifest(manifest, raw)
        digest = hashlib.sha256(raw + FEATURE_VERSION.encode()).hexdigest()[:24]
        cache = world / CACHE_DIR / f"{digest}.npz"
        if cache.is_file():
            try:
                with np.load(cache) as data:
                    features = Features(*(data[name] for name in FIELDS))
                    owners = data["owners"]
                if len(owners) and int(owners.max()) < len(entries):
                    return cls(world, entries, features, owners)
            except (OSError, KeyError, ValueError):
                pass
        features, owners = _compute(world, entries)
        _save(cache, features, owners)
        return cls(world, entries, features, owners)

    def search(self, image: Image.Image, k: int = 5) -> list[ImageHit]:
        """The `k` best-matching distinct pages (title + URL), best first.

        The query is also compared through centred crops of itself (93, 80, 65 and 50 %),
        so a loose crop around an anchor still meets the anchor's own entry.
        """
        if not self.entries:
            return []
        score = np.max([self._scores(describe(view)) for view in _centred_views(image)], axis=0)
        hits: list[ImageHit] = []
        seen: set[tuple[str, str]] = set()
        for row in np.argsort(-score, kind="stable"):
            entry = self.entries[int(self.owners[row])]
            page = (entry.title, entry.url)
            if page in seen:
                continue
            seen.add(page)
            hits.append(ImageHit(title=entry.title, url=entry.url, thumbnail=self.world / entry.thumbnail,
                                 score=round(float(score[row]), 4), kind=entry.kind, entry=entry.id))
            if len(hits) >= k:
                break
        return hits

    def _scores(self, q: Features) -> np.ndarray:
        f = self.features
        hashes = 1.0 - (_hamming(q.hash8[0], f.hash8) / 64.0 + _hamming(q.hash16[0], f.hash16) / 256.0) / 2.0
        layout = 1.0 - np.abs(f.layout - q.layout[0]).mean(axis=1)
        histogram = np.minimum(f.histogram, q.histogram[0]).sum(axis=1)
        return WEIGHTS["hash"] * hashes + WEIGHTS["layout"] * layout + WEIGHTS["histogram"] * histogram


def _centred_views(image: Image.Image) -> list[Image.Image]:
    image = _shrunk(image)
    views = []
    for fraction in QUERY_FRACTIONS:
        w, h = max(1, round(image.width * fraction)), max(1, round(image.height * fraction))
        left, top = (image.width - w) // 2, (image.height - h) // 2
        views.append(image if fraction == 1.0 else image.crop((left, top, left + w, top + h)))
    return views


def _read_manifest(path: Path, raw: bytes) -> list[IndexEntry]:
    """Entries of the manifest; a malformed line or a path leaving the world is an error naming the line."""
    world = path.parent.parent
    entries = []
    for lineno, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = IndexEntry.model_validate(json.loads(line))
            for field in ("thumbnail", "source"):
                resolve_inside(world, getattr(entry, field), where=f"{path}:{lineno}: field {field}")
        except (json.JSONDecodeError, ValidationError, PathEscapeError) as exc:
            raise DatasetError(f"{path}:{lineno}: bad image index entry ({exc})") from None
        entries.append(entry)
    return entries


def _compute(world: Path, entries: list[IndexEntry]) -> tuple[Features, np.ndarray]:
    rows: list[Features] = []
    owners: list[int] = []
    for number, entry in enumerate(entries):
        source = decode_image(resolve_inside(world, entry.source, where=f"{world / MANIFEST}: entry {entry.id}"))
        if entry.box is None:
            regions = [source]
        else:
            boxes = dict.fromkeys([_padded(entry.box, p, source.width, source.height) for p in PADDINGS]
                                  + [tuple(b) for b in entry.extra_boxes])
            regions = [source.crop(b) for b in boxes]
        for region in regions:
            rows.append(describe(region))
            owners.append(number)
    if not rows:
        return Features.empty(), np.zeros(0, np.int32)
    return Features.stack(rows), np.array(owners, dtype=np.int32)


def _save(path: Path, features: Features, owners: np.ndarray) -> None:
    """Write the cache atomically; a read-only world simply goes uncached."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, owners=owners, **{name: getattr(features, name) for name in FIELDS})
        os.replace(tmp, path)
    except OSError:
        pass
