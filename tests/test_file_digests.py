"""Task files stored in a run under the digest remembered from an earlier run (`arena.store.file_digests`): not hashed
again while their stat signature holds, hashed again when it does not, never stored under a stale name."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from arena.core.blobs import BlobStore
from arena.store import file_digests
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.openai_server import OpenAIStub


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(file_digests, "_DIGESTS", {})
    return tmp_path / "cache"


@pytest.fixture
def later(monkeypatch) -> None:
    """The clock moved 10 s on: files written by the test count as settled (`file_digests.settled`)."""
    monkeypatch.setattr(file_digests, "time_ns", lambda: time.time_ns() + 10_000_000_000)


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """Names of the files hashed while copied into a blob store."""
    seen: list[str] = []
    real = BlobStore.write

    def spy(self, blob_id, data, ext="bin"):
        if blob_id is None:
            seen.append(Path(data).name)
        return real(self, blob_id, data, ext)
    monkeypatch.setattr(BlobStore, "write", spy)
    return seen


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_process_copies_without_hashing_and_a_changed_file_is_hashed_again(cache, hashed, later, tmp_path,
                                                                                    monkeypatch):
    photo = tmp_path / "photo.png"
    photo.write_bytes(os.urandom(300_000))
    first = file_digests.put_task_file(BlobStore(tmp_path / "run1"), photo)
    assert first == f"sha256:{sha(photo)}.png" and hashed == ["photo.png"]
    assert (cache / "file-digests.sqlite").is_file()
    monkeypatch.setattr(file_digests, "_DIGESTS", {})  # another process: only the SQLite file is left
    run2 = BlobStore(tmp_path / "run2")
    assert file_digests.put_task_file(run2, photo) == first and hashed == ["photo.png"]
    assert run2.get(first) == photo.read_bytes()
    assert file_digests.put_task_file(run2, photo) == first  # already there: nothing copied
    photo.write_bytes(os.urandom(300_000))  # same size, new bytes; a new mtime even within the same clock tick
    os.utime(photo, ns=(photo.stat().st_atime_ns, photo.stat().st_mtime_ns + 1_000_000))
    run3 = BlobStore(tmp_path / "run3")
    changed = file_digests.put_task_file(run3, photo)
    assert changed == f"sha256:{sha(photo)}.png" != first and hashed == ["photo.png", "photo.png"]
    assert not run3.path(first).exists()


def test_a_file_that_changes_while_copied_is_never_stored_under_its_old_digest(cache, hashed, later, tmp_path,
                                                                              monkeypatch):
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"A" * 100_000)
    old = file_digests.put_task_file(BlobStore(tmp_path / "run1"), photo)
    real = shutil.copyfile
    rewrites = []

    def copy_then_rewrite(src, dst, *args, **kwargs):
        out = real(src, dst, *args, **kwargs)
        if not rewrites:  # the source changes right after the first copy, as a concurrent writer would do it
            rewrites.append(Path(src).write_bytes(b"B" * 100_000))
        return out
    monkeypatch.setattr(file_digests.shutil, "copyfile", copy_then_rewrite)
    run2 = BlobStore(tmp_path / "run2")
    got = file_digests.put_task_file(run2, photo)
    assert got == f"sha256:{sha(photo)}.png" != old and run2.get(got) == b"B" * 100_000
    assert not run2.path(old).exists() and not list(run2.root.glob(".tmp-*"))


def test_a_file_changed_less_than_two_seconds_ago_is_hashed_at_every_use_until_it_settles(cache, hashed, tmp_path,
                                                                                          monkeypatch):
    """As git's racily clean entries: a file times its changes by a coarse clock, so a rewrite of the same size
    within one tick of the hashing could keep the whole signature; such a young file's digest is not remembered."""
    photo = tmp_path / "photo.png"
    photo.write_bytes(os.urandom(50_000))
    blob = file_digests.put_task_file(BlobStore(tmp_path / "run1"), photo)
    assert file_digests.put_task_file(BlobStore(tmp_path / "run2"), photo) == blob
    assert hashed == ["photo.png", "photo.png"]
    photo.write_bytes(os.urandom(50_000))  # rewritten at once, same size: whatever the clock's tick, not missed
    assert file_digests.put_task_file(BlobStore(tmp_path / "run3"), photo) == f"sha256:{sha(photo)}.png"
    monkeypatch.setattr(file_digests, "time_ns", lambda: photo.stat().st_ctime_ns + file_digests.RACY_NS)
    file_digests.put_task_file(BlobStore(tmp_path / "run4"), photo)  # settled: hashed once more, and remembered
    assert file_digests.put_task_file(BlobStore(tmp_path / "run5"), photo) == f"sha256:{sha(photo)}.png"
    assert len(hashed) == 4
    monkeypatch.setattr(file_digests, "time_ns", lambda: photo.stat().st_mtime_ns - 1)  # dated in the future
    assert not file_digests.settled(file_digests.signature(photo))


def test_an_unusable_cache_directory_never_fails_a_run(tmp_path, monkeypatch, hashed, later):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("ARENA_CACHE_DIR", str(blocker / "arena"))
    monkeypatch.setattr(file_digests, "_DIGESTS", {})
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"x" * 1000)
    blob = file_digests.put_task_file(BlobStore(tmp_path / "run1"), photo)
    assert file_digests.put_task_file(BlobStore(tmp_path / "run2"), photo) == blob and hashed == ["photo.png"]
    monkeypatch.setenv("ARENA_CACHE_DIR", "off")
    assert file_digests.cache_dir() is None


def test_runs_over_one_dataset_hash_its_task_images_once(cache, hashed, later, tiny_data, tmp_path):
    from tests.test_transcript import crop_agent

    for name in ("first", "second"):
        with OpenAIStub(crop_agent(native=False)) as server:
            result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / name), task_ids=["q1"],
                                   max_rounds=[4], agent_options={"model": "qwen", "base_url": server.base_url}))
        task_blobs = [p for p in (result.run_dir / "blobs").rglob("*") if p.is_file() and
                      p.read_bytes() == (tiny_data.parent / "images" / "scene.png").read_bytes()]
        assert len(task_blobs) == 1  # the task image is in each run's blobs
    assert hashed.count("scene.png") == 1


def test_a_name_seen_before_is_not_resolved_again_while_it_leads_to_the_same_file(cache, hashed, later, tmp_path,
                                                                                 monkeypatch):
    """`remembered` resolves a path once per process while the file it leads to keeps its signature; a link
    pointed at another file is resolved again, and that file's own digest is used."""
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.write_bytes(os.urandom(20_000))
    b.write_bytes(os.urandom(20_000))
    link = tmp_path / "task.png"
    link.symlink_to(a)
    blob_a = file_digests.put_task_file(BlobStore(tmp_path / "run1"), link)
    resolved: list[str] = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p, **kw: resolved.append(str(p)) or real(p, **kw))
    assert file_digests.remembered(link) == (str(a), file_digests.signature(a), blob_a) and resolved == []
    link.unlink()
    link.symlink_to(b)
    where, _, known = file_digests.remembered(link)
    assert where == str(b) and known is None and resolved == [str(link)]
    assert file_digests.put_task_file(BlobStore(tmp_path / "run2"), link) == f"sha256:{sha(b)}.png"
