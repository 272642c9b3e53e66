"""A thread-safe least-recently-used cache bounded by entry count and by total weight: the one the arena's
process-wide caches use (decoded images, encodings, serialised request parts, content ids, search answers)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A thread-safe least-recently-used cache bounded by entry count and by total weight (bytes)."""

    def __init__(self, maxsize: int, max_bytes: int | None = None, weigh: Callable[[V], int] | None = None):
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.weigh = weigh or (lambda value: 0)
        self.bytes = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, pop: bool = False) -> V | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            value, weight = self._items.pop(key) if pop else self._items[key]
            self.bytes -= weight if pop else 0
            return value

    def put(self, key: K, value: V) -> None:
        weight = self.weigh(value)
        with self._lock:
            self.bytes += weight - (self._items.pop(key)[1] if key in self._items else 0)
            self._items[key] = (value, weight)
            while len(self._items) > self.maxsize or (
                    self.max_bytes is not None and self.bytes > self.max_bytes and len(self._items) > 1):
                self.bytes -= self._items.popitem(last=False)[1][1]
