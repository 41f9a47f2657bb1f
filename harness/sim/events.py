"""A queue of timed events in which a pending event can be moved or cancelled.

The I/O-aware simulator needs it: when a transfer starts or ends, every other
transfer's rate changes, so the time of the next transfer completion moves. Each
event has a key; ``push`` of a key already queued moves it. Moved and cancelled
entries stay in the heap, marked stale by a version number, and are skipped when
they reach the top (lazy deletion: O(log n) per operation).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)  # what names an entry: any hashable the caller picks


class EventQueue(Generic[K]):
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, K]] = []
        self._live: dict[K, tuple[float, int]] = {}
        self._counter = itertools.count()  # ties: first pushed, first out

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: K) -> bool:
        return key in self._live

    def push(self, time: float, key: K) -> None:
        """Schedule ``key`` at ``time``, moving it if it is already queued."""
        version = next(self._counter)
        self._live[key] = (time, version)
        heapq.heappush(self._heap, (time, version, key))

    def cancel(self, key: K) -> None:
        self._live.pop(key, None)

    def time_of(self, key: K) -> float | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def peek_time(self) -> float:
        """Time of the first live event (+inf when none)."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else float("inf")

    def pop(self) -> tuple[float, K]:
        self._drop_stale()
        time, _, key = heapq.heappop(self._heap)
        del self._live[key]
        return time, key

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._live.get(heap[0][2], (None, -1))[1] != heap[0][1]:
            heapq.heappop(heap)


def next_pass(now: float, tick: float) -> float:
    """The first scheduling pass at or after ``now`` when passes fall every ``tick`` (0: at once)."""
    if tick <= 0:
        return now
    return math.ceil(now / tick - 1e-9) * tick
