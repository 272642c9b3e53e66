"""`arena.runs.allocator.keep_freed_memory`: freed megabytes stay with the process for reuse instead of going back to
the kernel and being faulted in again, page by page, at the next allocation (glibc only)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import pytest

from arena.runs import allocator

# Allocates ten 4 MB buffers, frees them all, again and again: the pattern of a run's request bodies and images.
# Prints the page faults of the rounds after the first (the first touches fresh memory whatever the settings).
PATTERN = textwrap.dedent("""
    import resource, sys
    from arena.runs.allocator import keep_freed_memory
    print(keep_freed_memory() if sys.argv[1] == "tuned" else None)
    def churn():
        buffers = [bytearray(4 << 20) for _ in range(10)]
        for b in buffers:
            b[::4096] = b"x" * len(range(0, len(b), 4096))  # touch every page
        del buffers
    churn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        churn()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
                           reason="glibc's malloc only")


def faults(mode: str, **env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", PATTERN, mode], capture_output=True, text=True, check=True,
                         env={**clean, **env}, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    taken, count = out.stdout.split()
    return taken, int(count)


@glibc
def test_freed_buffers_are_reused_without_page_faults() -> None:
    default_taken, default = faults("default")
    taken, tuned = faults("tuned")
    assert taken == "True"
    # five rounds of 40 MB: ~51,000 pages faulted in again by default; a handful once the memory is kept
    assert default > 20_000 and tuned < default // 20


@glibc
def test_the_users_own_malloc_settings_stand() -> None:
    taken, _ = faults("tuned", MALLOC_ARENA_MAX="2")
    assert taken == "False"
    taken, _ = faults("tuned", GLIBC_TUNABLES="glibc.malloc.trim_threshold=1000000")
    assert taken == "False"


def test_tuning_is_done_once_per_process(monkeypatch) -> None:
    monkeypatch.setattr(allocator, "_done", [])
    first = allocator.keep_freed_memory()
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda *a: (_ for _ in ()).throw(AssertionError("again")))
    assert allocator.keep_freed_memory() is first


def test_startup_objects_are_frozen_while_a_run_plays_and_garbage_is_still_collected() -> None:
    class Node:
        me: object = None

    before = Node()
    before.me = before  # garbage in a cycle when the run starts: collected before the freeze, not frozen with it
    gone = weakref.ref(before)
    del before
    assert gc.get_freeze_count() == 0
    with allocator.startup_frozen():
        assert gc.get_freeze_count() > 0 and gone() is None
        made = Node()
        made.me = made
        inside = weakref.ref(made)
        del made
        gc.collect()
        assert inside() is None  # cycles made while playing are collected as before
        with allocator.startup_frozen():  # a second run in the same process
            pass
        assert gc.get_freeze_count() > 0  # the inner run's end does not unfreeze the outer run's objects
    assert gc.get_freeze_count() == 0


def test_a_run_start_collects_only_the_young_generations_before_the_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection at every run's start walked every object the imports made (~35 ms) for little garbage."""
    generations: list[tuple] = []
    collect = gc.collect
    monkeypatch.setattr(allocator.gc, "collect", lambda *args: generations.append(args) or collect(*args))
    with allocator.startup_frozen():
        pass
    assert generations == [(1,)]
