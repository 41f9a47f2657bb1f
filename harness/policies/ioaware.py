"""I/O-aware FCFS and EASY backfilling (Herbein et al., Section 3.4) and their I/O-ignorant twins.

Each job has a constant per-node I/O rate (its burst buffers' drain rate to the
parallel file system, Section 3.1). The I/O-aware schedulers place a job only where
every link from its nodes up to the PFS still has that rate free
(:mod:`harness.policies.iotree`); the I/O-ignorant ones treat the rate as zero and
so may over-allocate links, which the simulator turns into contention.

FCFS starts jobs in arrival order and stops at the first that cannot start. EASY
then computes the head job's *shadow time*: running jobs release their nodes,
bandwidth and burst buffer at their expected ends until the head fits; the nodes it
would take there are held for it. Every later job starts now if it fits now and
either ends before the shadow time or also fits beside the head at the shadow time.
Burst-buffer shares are honoured too, so the policies run on any platform.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.policies.allocation import choose_allocation
from harness.policies.base import Decision, Policy, Start
from harness.policies.iotree import (
    EDR_NODE_MB_S,
    HERBEIN_CORE_MB_S,
    HERBEIN_NODE_RATE_MB_S,
    HERBEIN_PFS_MB_S,
    HERBEIN_SWITCH_MB_S,
    Bandwidth,
    IoTree,
)
from harness.policies.profile import OVERRUN_GRACE_S
from harness.policies.state import Allocation, ClusterState, QueuedJob, Topology


@dataclass(frozen=True)
class IoTreeSpec:
    """Link bandwidths (MB/s) to build the tree of a platform: one edge switch per chassis."""

    node_mb_s: float
    switch_mb_s: float
    chain: tuple[tuple[str, float], ...]

    @classmethod
    def herbein(cls, underprovision: float = 0.0) -> IoTreeSpec:
        """CTS-1's links with the PFS cut by ``underprovision`` (0.3 = 30 %)."""
        if not 0.0 <= underprovision < 1.0:
            raise ValueError(f"PFS underprovisioning must be in [0, 1), got {underprovision}")
        pfs = HERBEIN_PFS_MB_S * (1.0 - underprovision)
        return cls(EDR_NODE_MB_S, HERBEIN_SWITCH_MB_S, (("core", HERBEIN_CORE_MB_S), ("pfs", pfs)))

    def build(self, topology: Topology) -> IoTree:
        return IoTree.uniform(topology.chassis_of_compute, self.node_mb_s, self.switch_mb_s, self.chain)


@dataclass
class _Moment:
    """Free nodes, bandwidth in use and free burst buffer at one instant."""

    bw: Bandwidth
    free_bb: np.ndarray

    def copy(self) -> _Moment:
        return _Moment(self.bw.copy(), self.free_bb.copy())

    def apply(self, alloc: Allocation, rate: float, share_mb: int, sign: int) -> None:
        if sign > 0:
            self.bw.take(alloc.compute, rate)
        else:
            self.bw.release(alloc.compute, rate)
        np.add.at(self.free_bb, np.asarray(alloc.bb, dtype=np.int64), -sign * share_mb)


class IoAware(Policy):
    description = "I/O-aware EASY backfilling: PFS and switch bandwidth as a schedulable resource (Herbein)"
    needs_every_event = False

    def __init__(
        self,
        name: str,
        backfill: bool = True,
        aware: bool = True,
        spec: IoTreeSpec | None = None,
        node_rate_mb_s: float = HERBEIN_NODE_RATE_MB_S,
        rates: Mapping[int, float] | None = None,
    ) -> None:
        super().__init__(name)
        self.backfill = backfill
        self.aware = aware
        self.spec = spec or IoTreeSpec.herbein()
        self.node_rate_mb_s = node_rate_mb_s
        self.rates: Mapping[int, float] = rates or {}
        self._trees: dict[Topology, IoTree] = {}
        self._carried: dict[IoTree, dict[tuple[int, float], bool]] = {}

    def with_rates(self, rates: Mapping[int, float]) -> IoAware:
        """The same policy knowing every job's per-node I/O rate (from the plan)."""
        return IoAware(self.name, self.backfill, self.aware, self.spec, self.node_rate_mb_s, rates)

    def rate(self, job_id: int) -> float:
        """Per-node MB/s this policy accounts for a job (0 when I/O-ignorant)."""
        return self.rates.get(job_id, self.node_rate_mb_s) if self.aware else 0.0

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        topo = state.topology
        now_m = self._moment(state)
        starts: list[Start] = []
        ends: list[tuple[float, Allocation, float, int]] = [
            (max(j.expected_end, now + OVERRUN_GRACE_S) if j.expected_end <= now else j.expected_end,
             j.allocation, self.rate(j.job_id), j.bb_per_node_mb)
            for j in state.running
        ]  # fmt: skip
        # Herbein: a job whose bandwidth the empty machine cannot carry is rejected at
        # submission; here it is passed over (and never starts) instead of blocking the queue.
        # Lazily: FCFS stops at the first job that does not fit, however long the queue.
        carries = self._carries(now_m.bw.tree)
        waiting = (j for j in queue if carries(j.nodes, self.rate(j.job_id)))
        for job in waiting:
            alloc = _place(topo, now_m, job, self.rate(job.job_id))
            if alloc is None:  # the head: FCFS stops, EASY backfills the rest around it
                if not self.backfill:
                    break
                reservations = self._easy(topo, now_m, job, waiting, starts, ends, now)  # adds to starts
                return Decision(tuple(starts), None, reservations)
            self._start(now_m, starts, ends, job, alloc, now)
        return Decision(tuple(starts))

    def _carries(self, tree: IoTree) -> Callable[[int, float], bool]:
        """Whether the empty machine carries ``nodes`` at a per-node rate, memoised per tree."""
        known = self._carried.setdefault(tree, {})
        empty = Bandwidth(tree)

        def carries(nodes: int, rate: float) -> bool:
            fits = known.get((nodes, rate))
            if fits is None:
                fits = known[nodes, rate] = empty.fits(nodes, rate)
            return fits

        return carries

    # -- EASY -------------------------------------------------------------------------
    def _easy(
        self,
        topo: Topology,
        now_m: _Moment,
        head: QueuedJob,
        rest: Iterator[QueuedJob],
        starts: list[Start],
        ends: list[tuple[float, Allocation, float, int]],
        now: float,
    ) -> tuple[tuple[int, float], ...]:
        found = _shadow(topo, now_m, ends, head, self.rate(head.job_id))
        if found is None:  # the head never fits: nothing may be backfilled safely
            return ()
        shadow_t, shadow_m = found
        for job in rest:
            if now_m.bw.free.sum() == 0:
                break
            rate = self.rate(job.job_id)
            if now + job.walltime <= shadow_t:
                alloc = _place(topo, now_m, job, rate)
            else:
                alloc = _place(topo, now_m, job, rate, beside=shadow_m)
                if alloc is not None:
                    shadow_m.apply(alloc, rate, job.bb_per_node_mb, +1)
            if alloc is not None:
                self._start(now_m, starts, ends, job, alloc, now)
        return ((head.job_id, shadow_t),)

    def _start(
        self,
        now_m: _Moment,
        starts: list[Start],
        ends: list[tuple[float, Allocation, float, int]],
        job: QueuedJob,
        alloc: Allocation,
        now: float,
    ) -> None:
        rate = self.rate(job.job_id)
        now_m.apply(alloc, rate, job.bb_per_node_mb, +1)
        starts.append(Start(job.job_id, alloc))
        ends.append((now + job.walltime, alloc, rate, job.bb_per_node_mb))

    def _moment(self, state: ClusterState) -> _Moment:
        tree = self._trees.get(state.topology)
        if tree is None:
            tree = self._trees[state.topology] = self.spec.build(state.topology)
        moment = _Moment(Bandwidth(tree), np.asarray(state.free_bb_mb, dtype=np.int64).copy())
        for job in state.running:
            moment.bw.take(job.allocation.compute, self.rate(job.job_id))
        return moment


def _shadow(
    topo: Topology,
    now_m: _Moment,
    ends: list[tuple[float, Allocation, float, int]],
    head: QueuedJob,
    rate: float,
) -> tuple[float, _Moment] | None:
    """When the head fits as running jobs end, and the moment with the head placed there."""
    future = now_m.copy()
    order = sorted(range(len(ends)), key=lambda k: ends[k][0])
    k = 0
    while k < len(order):
        t = ends[order[k]][0]
        while k < len(order) and ends[order[k]][0] == t:
            _, alloc, job_rate, share = ends[order[k]]
            future.apply(alloc, job_rate, share, -1)
            k += 1
        placed = _place(topo, future, head, rate)
        if placed is not None:
            future.apply(placed, rate, head.bb_per_node_mb, +1)
            return t, future
    return None


def _place(
    topo: Topology, moment: _Moment, job: QueuedJob, rate: float, beside: _Moment | None = None
) -> Allocation | None:
    """Nodes and BB shares for ``job`` now, or ``None``; ``beside``: must also fit that moment."""
    if job.nodes > int(moment.bw.free.sum()):
        return None
    allowed = None if beside is None else beside.bw.free
    per_switch = moment.bw.room(rate, allowed)
    chain = moment.bw.chain_room(rate)
    free_bb = moment.free_bb
    if beside is not None:
        per_switch = np.minimum(per_switch, beside.bw.room(rate, moment.bw.free))
        chain = min(chain, beside.bw.chain_room(rate))
        free_bb = np.minimum(free_bb, beside.free_bb)
    if min(int(per_switch.sum()), chain) < job.nodes:
        return None
    picked = moment.bw.pick(job.nodes, per_switch, allowed)
    if picked is None:
        return None
    by_chassis: list[list[int]] = [[] for _ in range(max(topo.chassis_of_compute) + 1)]
    for c in picked:
        by_chassis[topo.chassis_of_compute[c]].append(c)
    return choose_allocation(topo, by_chassis, free_bb.tolist(), job.nodes, job.bb_per_node_mb)
