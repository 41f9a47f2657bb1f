"""Executions whose jobs' ends are fixed when they start (no contention between jobs).

The Alloc-Only model (:mod:`harness.sim.engine`) and the storage tiers
(:mod:`harness.sim.tiers`) both know a job's end at its start; they keep the started
jobs in a heap of (end, plan row) and end them in that order. This is their shared
side of the simulator's execution interface (``busy``, ``next_time``, ``advance``,
``end``, ``timeout``); each computes the end in its own ``start``.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


class FixedEnds:
    """Started jobs by end time; ``end`` per plan row (NaN until started)."""

    def __init__(self, runtime: np.ndarray, walltime: np.ndarray) -> None:
        self.heap: list[tuple[float, int]] = []
        self.end = np.full(len(runtime), np.nan)
        self.timeout = runtime > walltime  # killed at the walltime

    def ends_at(self, row: int, end: float) -> None:
        """Plan row ``row`` has started and will end at ``end``."""
        self.end[row] = end
        heapq.heappush(self.heap, (float(self.end[row]), row))

    def busy(self) -> bool:
        return bool(self.heap)

    def next_time(self) -> float:
        return self.heap[0][0] if self.heap else math.inf

    def advance(self, now: float) -> list[int]:
        """The rows that have ended by ``now``, earliest first."""
        ended = []
        while self.heap and self.heap[0][0] <= now:
            ended.append(heapq.heappop(self.heap)[1])
        return ended
