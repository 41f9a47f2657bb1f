"""Availability profile: free resources over future time, for reservations and plans.

The profile is piecewise constant. Segment ``k`` covers ``[times[k], times[k+1])``
(the last one runs forever) and holds the number of free compute nodes and the free
MB of every BB node. Compute nodes are interchangeable for feasibility (any compute
node may use any BB node), so a count suffices for them; BB nodes are kept apart
because a node's share cannot be split between BB nodes.

A job of ``n`` nodes and ``share`` MB per node fits on ``[t, t + d)`` when the
minimum free compute over that window is at least ``n`` and
``sum_b (min free of BB node b over the window) // share >= n``: its shares stay on
the same BB nodes for its whole run. Numpy keeps every check vectorised over the
segments, which matters because the plan policy builds thousands of plans.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from harness.policies.state import RunningJob, Topology

# A running job past its expected end (possible on a live Slurm while it is being
# killed) is assumed to release its nodes this much later, so that the profile at
# ``now`` never counts nodes that are still busy.
OVERRUN_GRACE_S = 1.0


class AvailabilityProfile:
    __slots__ = ("bb", "compute", "times")

    def __init__(self, times: np.ndarray, compute: np.ndarray, bb: np.ndarray) -> None:
        self.times = times
        self.compute = compute
        self.bb = bb

    @classmethod
    def from_running(
        cls,
        topology: Topology,
        running: Iterable[RunningJob],
        now: float,
        free_compute: int,
        free_bb_mb: Iterable[int],
    ) -> AvailabilityProfile:
        """Profile from ``now`` on, with running jobs releasing at their expected end."""
        bb_count = topology.bb_count
        released: dict[float, list] = {}  # release time -> [nodes, MB per BB node]
        for job in running:
            end = job.expected_end if job.expected_end > now else now + OVERRUN_GRACE_S
            entry = released.get(end)
            if entry is None:
                entry = released[end] = [0, [0] * bb_count]
            entry[0] += job.nodes
            per_bb = entry[1]
            for b in job.allocation.bb:
                per_bb[b] += job.bb_per_node_mb
        times = sorted(released)
        start_bb = np.asarray(list(free_bb_mb), dtype=np.int64)
        compute = np.array([free_compute] + [released[t][0] for t in times], dtype=np.int64)
        bb = np.array([start_bb.tolist()] + [released[t][1] for t in times], dtype=np.int64).reshape(
            len(times) + 1, bb_count
        )
        return cls(np.array([now, *times], dtype=np.float64), np.cumsum(compute), np.cumsum(bb, axis=0))

    def copy(self) -> AvailabilityProfile:
        return AvailabilityProfile(self.times.copy(), self.compute.copy(), self.bb.copy())

    @property
    def now(self) -> float:
        return float(self.times[0])

    # -- queries ----------------------------------------------------------------
    def window_from_now(self, duration: float) -> tuple[int, np.ndarray]:
        """Minimum free compute and per-BB-node MB over ``[now, now + duration)``."""
        j = max(int(np.searchsorted(self.times, self.times[0] + duration, side="left")), 1)
        return int(self.compute[:j].min()), self.bb[:j].min(axis=0)

    def earliest_start(self, nodes: int, share_mb: int, duration: float, with_bb: bool = True) -> int:
        """Index of the first segment where the job can start and hold its resources.

        Raises ``ValueError`` if it never fits (not even on the empty machine).
        """
        times = self.times
        k = len(times)
        ends = np.searchsorted(times, times + duration, side="left")
        np.maximum(ends, np.arange(1, k + 1), out=ends)
        bad = self.compute < nodes
        check_bb = with_bb and share_mb > 0
        if check_bb:
            bad |= (self.bb // share_mb).sum(axis=1) < nodes
        blocked = np.concatenate(([0], np.cumsum(bad)))
        candidates = np.flatnonzero(blocked[ends] == blocked[:k])
        if not check_bb:
            if len(candidates):
                return int(candidates[0])
            raise ValueError(f"a job of {nodes} nodes never fits")
        # Segment-wise checks pass; the job still needs the same BB nodes over the
        # whole window, which only the per-node minimum tells.
        for i in candidates.tolist():
            e = int(ends[i])
            if e - i == 1 or int((self.bb[i:e].min(axis=0) // share_mb).sum()) >= nodes:
                return i
        raise ValueError(f"a job of {nodes} x {share_mb} MB never fits")

    def window_bb_min(self, start_index: int, duration: float) -> np.ndarray:
        """Per-BB-node minimum free MB over ``[times[start_index], + duration)``."""
        t = self.times[start_index]
        e = max(int(np.searchsorted(self.times, t + duration, side="left")), start_index + 1)
        return self.bb[start_index:e].min(axis=0)

    # -- updates ----------------------------------------------------------------
    def occupy(self, start: float, duration: float, nodes: int, bb_mb: np.ndarray | None) -> None:
        """Take ``nodes`` compute nodes and ``bb_mb`` (per BB node) on ``[start, start + duration)``."""
        i = self._breakpoint(start)
        j = self._breakpoint(start + duration)
        self.compute[i:j] -= nodes
        if bb_mb is not None:
            self.bb[i:j] -= bb_mb

    def _breakpoint(self, t: float) -> int:
        """Index of the segment starting exactly at ``t``, splitting one if needed."""
        i = int(np.searchsorted(self.times, t, side="left"))
        if i < len(self.times) and self.times[i] == t:
            return i
        # The new segment inherits the resources of the segment it splits. Plain
        # slicing into fresh arrays is several times faster than np.insert here.
        self.times = _insert_row(self.times, i, t)
        self.compute = _insert_row(self.compute, i, self.compute[i - 1])
        self.bb = _insert_row(self.bb, i, self.bb[i - 1])
        return i


def _insert_row(a: np.ndarray, i: int, value: object) -> np.ndarray:
    out = np.empty((a.shape[0] + 1, *a.shape[1:]), dtype=a.dtype)
    out[:i] = a[:i]
    out[i] = value
    out[i + 1 :] = a[i:]
    return out


def reserve_bb(window_min_mb: np.ndarray, nodes: int, share_mb: int) -> np.ndarray:
    """MB to hold on each BB node for a future reservation of ``nodes`` shares.

    Best fit: BB nodes with the least room that still host a share go first, which
    keeps the large free spaces for jobs with large shares.
    """
    take = np.zeros(len(window_min_mb), dtype=np.int64)
    if share_mb <= 0:
        return take
    slots = window_min_mb // share_mb
    left = nodes
    for b in np.argsort(window_min_mb, kind="stable").tolist():
        if slots[b] <= 0:
            continue
        n = min(left, int(slots[b]))
        take[b] = n * share_mb
        left -= n
        if left == 0:
            return take
    raise ValueError("not enough BB room for the reservation")
