"""The memory settings of a process that plays episodes: freed megabytes are kept for reuse, and the objects it
starts with are left out of Python's full garbage collections.

A run moves images and request bodies of megabytes each (a 4K photo is ~15 MB of base64 in every request that
shows it). glibc's malloc serves a block above its mmap threshold (128 kB at first, raised on the fly up to
32 MiB) with a fresh memory mapping and gives it back at `free`, and hands the top of its heap back once more
than twice that threshold is free. Every new buffer then starts as untouched pages that the kernel must fault in
and zero one 4 kB page at a time: measured on the tests' 4K-photo workload (`bench/overhead.py --photo`), ~1,200
page faults and ~5 ms of kernel time per round at concurrency 1, where the work itself is the same buffers over
and over.

`keep_freed_memory()` fixes the mmap threshold at glibc's largest (32 MiB) and lets up to `TRIM_THRESHOLD` of free
heap stay with the process, so those buffers are reused (the run's peak memory is not raised: only what was
freed is kept). It does nothing outside glibc, or when the user has set glibc's malloc through the environment
(`MALLOC_*` variables or `GLIBC_TUNABLES`): their choice stands.

`startup_frozen()` keeps the objects that exist when a run starts playing (modules, the workbench, the datasets)
out of Python's full (oldest-generation) collections while it plays: such a collection walks every tracked object,
and it stops the event loop, so every episode in flight, while it does. Measured at 256-way (`bench/overhead.py
--scale`): full collections in the driver took 36-73 ms each while playing, 6 ms with the start-up objects frozen.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
from contextlib import contextmanager
from typing import Iterator

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's ceiling for it on 64-bit (HEAP_MAX_SIZE / 2); a larger value is refused
TRIM_THRESHOLD = 512 << 20

_done: list[bool] = []


def _libc() -> ctypes.CDLL:
    """The C library: glibc by its soname, else whatever `find_library` finds (which starts `ldconfig`, ~4 ms)."""
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return ctypes.CDLL(ctypes.util.find_library("c"))


def keep_freed_memory() -> bool:
    """Tune glibc's malloc for this process (once); True when the settings were taken."""
    if _done:
        return _done[0]
    user_set = any(name.startswith("MALLOC_") for name in os.environ) or "malloc" in os.environ.get(
        "GLIBC_TUNABLES", "")
    taken = False
    if sys.platform.startswith("linux") and not user_set:
        try:
            mallopt = _libc().mallopt
        except (OSError, AttributeError):  # not glibc (musl has no mallopt)
            mallopt = None
        if mallopt is not None:
            taken = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                     TRIM_THRESHOLD))
    _done.append(taken)
    return taken


_frozen_depth = [0]  # runs playing in this process inside `startup_frozen` (a library user may run several at once)


@contextmanager
def startup_frozen() -> Iterator[None]:
    """Collect the young generations, then leave every object that exists now out of the cyclic collector until
    the block ends (`gc.freeze` / `gc.unfreeze`). Garbage is freed as before; only reference cycles among the frozen
    objects (the few that had already grown old, found by no full collection here: one costs ~35 ms at a run's start,
    a walk over every object the imports made, for ~100 objects of garbage) wait for the block's end, when they are
    collectable again. Blocks may nest or overlap (two runs in one event loop): the first to enter freezes, the last
    to leave unfreezes."""
    if _frozen_depth[0] == 0:
        gc.collect(1)
        gc.freeze()
    _frozen_depth[0] += 1
    try:
        yield
    finally:
        _frozen_depth[0] -= 1
        if _frozen_depth[0] == 0:
            gc.unfreeze()
