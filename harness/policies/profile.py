"""Availability profile: free resources over future time, for reservations and plans.

The profile is piecewise constant. Segment ``k`` covers ``[times[k], times[k+1])``
(the last one runs forever). ``res[k, 0]`` is the number of free compute nodes and
``res[k, 1 + b]`` the free MB of BB node ``b``. Compute nodes are interchangeable
for feasibility (any compute node may use any BB node), so a count suffices for
them; BB nodes are kept apart because a node's share cannot be split between BB
nodes.

A job of ``n`` nodes and ``share`` MB per node fits on ``[t, t + d)`` when the
minimum free compute over that window is at least ``n`` and
``sum_b (min free of BB node b over the window) // share >= n``: its shares stay on
the same BB nodes for its whole run. Every check is vectorised over the segments
with as few numpy calls as possible: the plan policy places millions of jobs.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from harness.policies import kernels
from harness.policies.state import RunningJob, Topology

# A running job past its expected end (possible on a live Slurm while it is being
# killed) is assumed to release its nodes this much later, so that the profile at
# ``now`` never counts nodes that are still busy.
OVERRUN_GRACE_S = 1.0
_MIN_DURATION_S = 1e-6


class AvailabilityProfile:
    __slots__ = ("res", "times")

    def __init__(self, times: np.ndarray, res: np.ndarray) -> None:
        self.times = times
        self.res = res

    @classmethod
    def from_running(
        cls,
        topology: Topology,
        running: Iterable[RunningJob],
        now: float,
        free_compute: int,
        free_bb_mb: Iterable[int],
        holding_bb: Iterable[RunningJob] = (),
    ) -> AvailabilityProfile:
        """Profile from ``now`` on, with running jobs releasing at their expected end
        (``holding_bb``: jobs that hold burst buffer but no compute nodes)."""
        bb_count = topology.bb_count
        released: dict[float, list[int]] = {}  # release time -> [nodes, MB of BB node 0, ...]
        holders = [(job, job.nodes) for job in running] + [(job, 0) for job in holding_bb]
        for job, nodes in holders:
            end = job.expected_end if job.expected_end > now else now + OVERRUN_GRACE_S
            row = released.get(end)
            if row is None:
                row = released[end] = [0] * (1 + bb_count)
            row[0] += nodes
            for b in job.allocation.bb:
                row[1 + b] += job.bb_per_node_mb
        times = sorted(released)
        first = [free_compute, *free_bb_mb]
        rows = np.array([first] + [released[t] for t in times], dtype=np.int64)
        return cls(np.array([now, *times], dtype=np.float64), np.cumsum(rows, axis=0))

    def copy(self) -> AvailabilityProfile:
        return AvailabilityProfile(self.times.copy(), self.res.copy())

    @property
    def now(self) -> float:
        return float(self.times[0])

    @property
    def compute(self) -> np.ndarray:
        return self.res[:, 0]

    @property
    def bb(self) -> np.ndarray:
        return self.res[:, 1:]

    # -- queries ----------------------------------------------------------------
    def window_from_now(self, duration: float, closed: bool = False) -> tuple[int, np.ndarray]:
        """Minimum free compute and per-BB-node MB over ``[now, now + duration)`` (``closed``:
        over ``[now, now + duration]``, so a reservation starting at the end counts too)."""
        end = self.times[0] + duration
        j = max(int(np.searchsorted(self.times, end, side="right" if closed else "left")), 1)
        low = self.res[:j].min(axis=0)
        return int(low[0]), low[1:]

    def window_min(self, start: float, duration: float) -> np.ndarray:
        """Minimum of every column over ``[start, start + duration)`` (``start`` >= now)."""
        first = max(int(np.searchsorted(self.times, start, side="right")) - 1, 0)
        stop = max(int(np.searchsorted(self.times, start + duration, side="left")), first + 1)
        return self.res[first:stop].min(axis=0)

    def prefix_minima(self) -> np.ndarray:
        """Row ``k``: minimum of every column over segments ``0..k`` (windows starting now)."""
        return np.minimum.accumulate(self.res, axis=0)

    def earliest_start(
        self, nodes: int, share_mb: int, duration: float, with_bb: bool = True
    ) -> tuple[int, np.ndarray]:
        """First segment where the job can start and hold its resources for ``duration``.

        Returns the segment index and the per-BB-node minimum over the job's window.
        Raises ``ValueError`` if the job never fits (not even on the empty machine).
        """
        if not kernels.AVAILABLE:
            return self.earliest_start_numpy(nodes, share_mb, duration, with_bb)
        duration = max(duration, _MIN_DURATION_S)
        k, low = kernels.earliest_start(self.times, self.res, nodes, share_mb, duration, with_bb)
        if k == kernels.NEVER:
            raise ValueError(f"a job of {nodes} x {share_mb} MB never fits")
        return int(k), low

    def placed(self, nodes: int, share_mb: int, duration: float) -> tuple[AvailabilityProfile, float]:
        """A new profile with the job added at its earliest start (compute, best-fit BB) and that start."""
        if not kernels.AVAILABLE:
            k, low = self.earliest_start_numpy(nodes, share_mb, duration)
            start = float(self.times[k])
            bb = reserve_bb(low, nodes, share_mb) if share_mb > 0 else None
            return self.occupied(start, duration, nodes, bb), start
        duration = max(duration, _MIN_DURATION_S)
        times, res, start = kernels.place(self.times, self.res, nodes, share_mb, duration)
        if start != start:  # nan
            raise ValueError(f"a job of {nodes} x {share_mb} MB never fits")
        return AvailabilityProfile(times, res), float(start)

    def earliest_start_numpy(
        self, nodes: int, share_mb: int, duration: float, with_bb: bool = True
    ) -> tuple[int, np.ndarray]:
        """:meth:`earliest_start` in vectorised numpy (used without numba; the reference in tests)."""
        times, res = self.times, self.res
        # Window of start i: segments [i, ends[i]); ends[i] > i as durations are > 0.
        ends = times.searchsorted(times + max(duration, _MIN_DURATION_S))
        compute_bad = res[:, 0] < nodes
        candidates = _clear_windows(compute_bad, ends)
        if not (with_bb and share_mb > 0):
            if len(candidates):
                i = int(candidates[0])
                return i, res[i : int(ends[i]), 1:].min(axis=0)
            raise ValueError(f"a job of {nodes} nodes never fits")
        # Often the first start free of compute is free of BB too: try it before
        # screening every segment for BB.
        if len(candidates):
            i = int(candidates[0])
            low = self._bb_fit(i, int(ends[i]), nodes, share_mb)
            if low is not None:
                return i, low
        bad = compute_bad | ((res[:, 1:] // share_mb).sum(axis=1) < nodes)
        for i in _clear_windows(bad, ends).tolist():
            low = self._bb_fit(i, int(ends[i]), nodes, share_mb)
            if low is not None:
                return i, low
        raise ValueError(f"a job of {nodes} x {share_mb} MB never fits")

    def _bb_fit(self, i: int, e: int, nodes: int, share_mb: int) -> np.ndarray | None:
        """Per-BB-node minimum over segments ``[i, e)`` if the job's shares fit in it."""
        low = self.res[i, 1:] if e - i == 1 else self.res[i:e, 1:].min(axis=0)
        # The shares need the same BB nodes for the whole window: only the per-node
        # minimum over the window tells whether they fit.
        return low if int((low // share_mb).sum()) >= nodes else None

    # -- updates ----------------------------------------------------------------
    def occupied(
        self, start: float, duration: float, nodes: int, bb_mb: np.ndarray | None
    ) -> AvailabilityProfile:
        """A new profile with ``nodes`` and ``bb_mb`` (per BB node) taken on ``[start, start + duration)``."""
        if kernels.AVAILABLE:
            bb = np.zeros(self.res.shape[1] - 1, dtype=np.int64) if bb_mb is None else bb_mb
            times, res = kernels.occupied(self.times, self.res, start, duration, nodes, bb)
            return AvailabilityProfile(times, res)
        return self.occupied_numpy(start, duration, nodes, bb_mb)

    def occupied_numpy(
        self, start: float, duration: float, nodes: int, bb_mb: np.ndarray | None
    ) -> AvailabilityProfile:
        """:meth:`occupied` in numpy (used without numba; the reference in tests)."""
        times, res = self.times, self.res
        end = start + duration
        i = int(times.searchsorted(start))
        j = int(times.searchsorted(end))
        k = len(times)
        split_i = not (i < k and times[i] == start)
        split_j = not (j < k and times[j] == end)
        if not (split_i or split_j):
            new_times, new_res = times, res.copy()  # times are never changed in place: share them
        else:
            # A new breakpoint's segment inherits the resources of the segment it splits.
            size = k + split_i + split_j
            new_times = np.empty(size)
            new_res = np.empty((size, res.shape[1]), dtype=res.dtype)
            new_times[:i], new_res[:i] = times[:i], res[:i]
            at = i
            if split_i:
                new_times[at], new_res[at] = start, res[i - 1]
                at += 1
            new_times[at : at + j - i], new_res[at : at + j - i] = times[i:j], res[i:j]
            at += j - i
            if split_j:
                new_times[at], new_res[at] = end, res[j - 1]
                at += 1
            new_times[at:], new_res[at:] = times[j:], res[j:]
        lo, hi = i, j + split_i
        new_res[lo:hi, 0] -= nodes
        if bb_mb is not None:
            new_res[lo:hi, 1:] -= bb_mb
        return AvailabilityProfile(new_times, new_res)

    def occupy(self, start: float, duration: float, nodes: int, bb_mb: np.ndarray | None) -> None:
        """In-place variant of :meth:`occupied`."""
        new = self.occupied(start, duration, nodes, bb_mb)
        self.times, self.res = new.times, new.res


def _clear_windows(bad: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Starts ``i`` whose window ``[i, ends[i])`` holds no ``bad`` segment."""
    blocked = bad.cumsum()
    return ((blocked[ends - 1] - blocked + bad) == 0).nonzero()[0]


def reserve_bb(window_min_mb: np.ndarray, nodes: int, share_mb: int) -> np.ndarray:
    """MB to hold on each BB node for a future reservation of ``nodes`` shares.

    Best fit: BB nodes with the least room that still host a share go first, which
    keeps the large free spaces for jobs with large shares.
    """
    if share_mb <= 0:
        return np.zeros(len(window_min_mb), dtype=np.int64)
    # Plain Python: with a dozen BB nodes it beats a chain of small numpy calls.
    room = window_min_mb.tolist()
    take = [0] * len(room)
    left = nodes
    for b in sorted(range(len(room)), key=room.__getitem__):
        k = min(left, room[b] // share_mb)
        if k > 0:
            take[b] = k * share_mb
            left -= k
            if left == 0:
                return np.array(take, dtype=np.int64)
    raise ValueError("not enough BB room for the reservation")
