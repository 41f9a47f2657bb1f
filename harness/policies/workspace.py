"""One scheduling pass: what is free now, the availability profile, the starts so far.

Policies compose their algorithms from three moves on a workspace: start a job now
(if it fits now and for its whole walltime, given the reservations), reserve a job
at its earliest future start, and greedily fill a list of jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.policies.allocation import choose_allocation
from harness.policies.base import Decision, Start
from harness.policies.node_choice import NodeReservation, best_fit_nodes, usable_nodes
from harness.policies.profile import OVERRUN_GRACE_S, AvailabilityProfile, reserve_bb
from harness.policies.state import Allocation, ClusterState, JobQueue, QueuedJob, RunningJob
from harness.policies.will_run import WillRunWindows, slurm_start_walked


class Workspace:
    def __init__(self, state: ClusterState, now: float, slurm_nodes: bool = False) -> None:
        """``slurm_nodes``: pick nodes as Slurm's cons_tres does and hold reservations on
        concrete nodes (:mod:`harness.policies.node_choice`); else count them."""
        topo = state.topology
        self.topology = topo
        self.now = now
        chassis_count = max(topo.chassis_of_compute, default=-1) + 1
        self.free_by_chassis: list[list[int]] = [[] for _ in range(chassis_count)]
        for c in sorted(state.free_compute):
            self.free_by_chassis[topo.chassis_of_compute[c]].append(c)
        self.free_count = len(state.free_compute)
        # what Slurm's will-run walks: the running jobs and those this pass started
        self.running: list[RunningJob] = list(state.running)
        self.profile = AvailabilityProfile.from_running(
            topo, state.running, now, self.free_count, state.free_bb_mb, state.holding_bb
        )
        self.starts: list[Start] = []
        self.reservations: list[tuple[int, float]] = []
        self.slurm_nodes = slurm_nodes
        self.held: list[NodeReservation] = []  # with ``slurm_nodes``: the reservations' nodes

    # -- the three moves ----------------------------------------------------------
    def try_start(self, job: QueuedJob, bb_counts: Sequence[int] | None = None) -> bool:
        """Start ``job`` now if it fits now and until its walltime ends.

        ``bb_counts`` optionally fixes the number of shares per BB node.
        """
        if job.nodes > self.free_count:
            return False
        # Slurm's backfill counts a job ending just as a reservation begins as overlapping it
        cmin, bb_min = self.profile.window_from_now(job.walltime, closed=self.slurm_nodes)
        if cmin < job.nodes:
            return False
        free_by_chassis = self.free_by_chassis
        if self.slurm_nodes:
            picked = best_fit_nodes(self._usable_now(job), job.nodes)
            if picked is None:
                return False
            chosen = set(picked)
            # only the chosen nodes are offered, so the allocator takes exactly them
            free_by_chassis = [[c for c in nodes if c in chosen] for nodes in self.free_by_chassis]
        alloc = choose_allocation(
            self.topology, free_by_chassis, bb_min.tolist(), job.nodes, job.bb_per_node_mb, bb_counts
        )
        if alloc is None:
            return False
        self._commit(job, alloc)
        return True

    def reserve(
        self,
        job: QueuedJob,
        with_bb: bool = True,
        will_run: WillRunWindows | None = None,
        horizon: float | None = None,
    ) -> float:
        """Hold resources for ``job`` at its earliest start; ``with_bb=False`` holds compute only;
        ``will_run``: where Slurm's backfill would put it instead (:mod:`harness.policies.will_run`);
        ``horizon``: a job that cannot start within this many seconds holds nothing (a planning
        horizon, beyond which later jobs may take its resources)."""
        prof = self.profile
        i, bb_min = prof.earliest_start(job.nodes, job.bb_per_node_mb, job.walltime, with_bb=with_bb)
        earliest = start = float(prof.times[i])
        walked = True  # without the will-run, a job ending at ``earliest`` frees its nodes for it
        if will_run is not None:
            start, walked = slurm_start_walked(prof, self.running, job, start, with_bb, will_run)
            bb_min = prof.window_min(start, job.walltime)[1:]
        if horizon is not None and start > self.now + horizon:
            return start
        if self.slurm_nodes:
            self._hold_nodes(job, earliest, start, walked)
        bb = reserve_bb(bb_min, job.nodes, job.bb_per_node_mb) if with_bb else None
        prof.occupy(start, job.walltime, job.nodes, bb)
        self.reservations.append((job.job_id, start))
        return start

    def fill(self, queue: JobQueue, order: Sequence[int] | np.ndarray) -> list[int]:
        """Greedy filling: start, in ``order``, every queue position that fits; return them."""
        order = np.asarray(order, dtype=np.int64)
        started: list[int] = []
        pos = 0
        while pos < len(order) and self.free_count > 0:
            k = self._first_fitting(queue, order, pos)
            if k is None:
                break
            job = queue[int(order[k])]
            if not self.try_start(job):  # the vectorised check is exact; this guards it
                raise AssertionError(f"job {job.job_id} passed the fit check but could not start")
            started.append(int(order[k]))
            pos = k + 1
        return started

    # -- helpers ---------------------------------------------------------------
    def _first_fitting(self, queue: JobQueue, order: np.ndarray, pos: int) -> int | None:
        """First index ``k >= pos`` of ``order`` whose job fits now, checked for all at once.

        Every window starts now, so prefix minima of the profile give each job's
        minimum free resources over its walltime.
        """
        idx = order[pos:]
        nodes = queue.nodes[idx]
        prof = self.profile
        ends = self.now + queue.walltime[idx]  # closed windows with ``slurm_nodes``, as in try_start
        last = np.searchsorted(prof.times, ends, side="right" if self.slurm_nodes else "left") - 1
        np.maximum(last, 0, out=last)
        low = prof.prefix_minima()
        cand = np.flatnonzero(low[last, 0] >= nodes)
        if len(cand) == 0:
            return None
        shares = queue.bb_per_node_mb[idx[cand]]
        bb_min = low[last[cand], 1:]
        slots = (bb_min // np.maximum(shares, 1)[:, None]).sum(axis=1)
        ok = (shares <= 0) | (slots >= nodes[cand])
        hits = np.flatnonzero(ok)
        # concrete reservations: the count fits, but the job may still need a reserved node
        for hit in hits.tolist() if self.slurm_nodes else hits[:1].tolist():
            k = pos + int(cand[hit])
            if not self.slurm_nodes or len(self._usable_now(queue[int(order[k])])) >= int(nodes[cand[hit]]):
                return k
        return None

    def _usable_now(self, job: QueuedJob) -> list[int]:
        """The free nodes ``job`` may take if it starts now: none that a reservation it would
        run into holds (Slurm's backfill keeps a later job off the reserved nodes)."""
        free = [c for nodes in self.free_by_chassis for c in nodes]
        return usable_nodes(free, self.held, self.now, self.now + job.walltime)

    def _hold_nodes(self, job: QueuedJob, earliest: float, start: float, walked: bool) -> None:
        """Hold the nodes cons_tres gives ``job`` at ``start``: its choice among the nodes idle
        now or of jobs ending before ``earliest`` (at it too if the will-run walked there);
        if those are too few, among all free at ``start``; else the reservation stays a count."""
        idle = [c for nodes in self.free_by_chassis for c in nodes]
        # a job past its expected end holds its nodes a little longer, as on the profile
        grace = self.now + OVERRUN_GRACE_S
        ends = [(r.expected_end if r.expected_end > self.now else grace, r.allocation.compute)
                for r in self.running]  # fmt: skip
        for through, inclusive in ((earliest, walked), (start, True)):
            freed = [nodes for end, nodes in ends if end < through or (inclusive and end == through)]
            free = idle + [c for nodes in freed for c in nodes]
            chosen = best_fit_nodes(usable_nodes(free, self.held, start, start + job.walltime), job.nodes)
            if chosen is not None:
                self.held.append(NodeReservation(start, start + job.walltime, frozenset(chosen)))
                return

    def _commit(self, job: QueuedJob, alloc: Allocation) -> None:
        chassis_of = self.topology.chassis_of_compute
        for c in alloc.compute:
            self.free_by_chassis[chassis_of[c]].remove(c)
        self.free_count -= job.nodes
        usage = np.bincount(np.asarray(alloc.bb, dtype=np.int64), minlength=self.topology.bb_count)
        self.profile.occupy(self.now, job.walltime, job.nodes, usage * job.bb_per_node_mb)
        self.starts.append(Start(job.job_id, alloc))
        self.running.append(
            RunningJob(job.job_id, self.now, self.now + job.walltime, job.bb_per_node_mb, alloc)
        )

    def decision(
        self, planned_order: Sequence[int] | None = None, memo: dict[str, Any] | None = None
    ) -> Decision:
        started = {s.job_id for s in self.starts}
        order = None
        if planned_order is not None:
            order = tuple(j for j in planned_order if j not in started) if started else tuple(planned_order)
        return Decision(tuple(self.starts), order, tuple(self.reservations), memo)
