"""Compiled inner loops of the availability profile (numba), with a pure-numpy fallback.

The plan policy places millions of jobs on small profiles (tens of segments, one
compute column and a dozen BB columns). Vectorised numpy spends most of that time
in call overhead; these loops, compiled by numba, do one placement in a few
microseconds. They compute exactly what the numpy methods of
:class:`~harness.policies.profile.AvailabilityProfile` compute (the tests check
both against each other on random profiles), so results never depend on whether
numba is installed. ``HARNESS_NO_NUMBA=1`` forces the numpy path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

NEVER = -1  # earliest_start's segment index when the job never fits

F = TypeVar("F", bound=Callable[..., Any])


def _numba_jit() -> Callable[[F], F] | None:
    if os.environ.get("HARNESS_NO_NUMBA"):
        return None
    try:
        import numba
    except ImportError:
        return None
    return cast("Callable[[F], F]", numba.njit(cache=True, nogil=True))


_JIT = _numba_jit()
AVAILABLE = _JIT is not None


def _compiled(func: F) -> F:
    """``func`` compiled when numba is available; the plain function stays as ``func.py_func``."""
    return _JIT(func) if _JIT is not None else func


@_compiled
def _earliest_start(
    times: np.ndarray, res: np.ndarray, nodes: int, share: int, duration: float, with_bb: bool
) -> tuple[int, np.ndarray]:
    """First segment where the job fits for ``duration``, and the per-BB-node window minimum."""
    count, width = res.shape
    low = np.empty(width - 1, dtype=res.dtype)
    i = 0
    while i < count:
        horizon = times[i] + duration
        end = i + 1
        while end < count and times[end] < horizon:
            end += 1
        bad = -1
        for k in range(end - 1, i - 1, -1):
            if res[k, 0] < nodes:
                bad = k
                break
        if bad >= 0:
            i = bad + 1  # every start up to the blocking segment sees it too
            continue
        slots = 0
        for b in range(width - 1):
            m = res[i, 1 + b]
            for k in range(i + 1, end):
                if res[k, 1 + b] < m:
                    m = res[k, 1 + b]
            low[b] = m
            if share > 0:
                slots += m // share
        if not (with_bb and share > 0) or slots >= nodes:
            return i, low
        i += 1
    return NEVER, low


@_compiled
def _reserve_bb(low: np.ndarray, nodes: int, share: int) -> np.ndarray:
    """Best fit: the BB nodes with the least room that still host a share go first."""
    take = np.zeros(len(low), dtype=np.int64)
    if share <= 0:
        return take
    order = np.argsort(low, kind="mergesort")  # stable: ties by BB node index
    left = nodes
    for b in order:
        k = min(left, low[b] // share)
        if k > 0:
            take[b] = k * share
            left -= k
            if left == 0:
                return take
    take[0] = -1  # not enough room: the caller raises
    return take


@_compiled
def _occupied(
    times: np.ndarray, res: np.ndarray, start: float, duration: float, nodes: int, bb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """New (times, res) with ``nodes`` and ``bb`` (per BB node) taken on ``[start, start + duration)``."""
    count, width = res.shape
    end = start + duration
    i = np.searchsorted(times, start)
    j = np.searchsorted(times, end)
    split_i = not (i < count and times[i] == start)
    split_j = not (j < count and times[j] == end)
    size = count + int(split_i) + int(split_j)
    new_times = np.empty(size, dtype=times.dtype)
    new_res = np.empty((size, width), dtype=res.dtype)
    # Copy the segments in three runs, inserting the (up to two) new breakpoints between
    # them; a new breakpoint's segment inherits the resources of the segment it splits.
    new_times[:i], new_res[:i] = times[:i], res[:i]
    at = i
    if split_i:
        new_times[at], new_res[at] = start, res[i - 1]
        at += 1
    hi = at + j - i
    new_times[at:hi], new_res[at:hi] = times[i:j], res[i:j]
    lo, at = i, hi  # the job holds [start, end): from the start's breakpoint to the end's
    if split_j:
        new_times[at], new_res[at] = end, res[j - 1]
        at += 1
    new_times[at:], new_res[at:] = times[j:], res[j:]
    for k in range(lo, hi):
        new_res[k, 0] -= nodes
        for b in range(width - 1):
            new_res[k, 1 + b] -= bb[b]
    return new_times, new_res


@_compiled
def _place(
    times: np.ndarray, res: np.ndarray, nodes: int, share: int, duration: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Add a job at its earliest start (compute and BB, best-fit shares): new profile and start.

    The start is ``nan`` when the job never fits or its shares find no room.
    """
    k, low = _earliest_start(times, res, nodes, share, duration, True)
    if k == NEVER:
        return times, res, np.nan
    bb = _reserve_bb(low, nodes, share)
    if bb[0] < 0:
        return times, res, np.nan
    start = times[k]
    new_times, new_res = _occupied(times, res, start, duration, nodes, bb)
    return new_times, new_res, start


@_compiled
def _same(times_a: np.ndarray, res_a: np.ndarray, times_b: np.ndarray, res_b: np.ndarray) -> bool:
    """Whether two profiles of the same length are equal (the plan search compares many)."""
    for k in range(len(times_a)):
        if times_a[k] != times_b[k]:
            return False
    count, width = res_a.shape
    for k in range(count):
        for b in range(width):
            if res_a[k, b] != res_b[k, b]:
                return False
    return True


earliest_start = _earliest_start
reserve_bb = _reserve_bb
occupied = _occupied
place = _place
same = _same


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel now, not during the first decision."""
    if not AVAILABLE:
        return
    times = np.zeros(1)
    res = np.ones((1, 2), dtype=np.int64)
    place(times, res, 1, 1, 1.0)
    earliest_start(times, res, 1, 1, 1.0, False)
    occupied(times, res, 0.0, 1.0, 1, np.zeros(1, dtype=np.int64))
    reserve_bb(np.ones(1, dtype=np.int64), 1, 1)
    same(times, res, times, res)
