"""The machine of the simulator when burst buffer and compute nodes are taken apart
(staging off the allocation, :mod:`harness.sim.staging`), and Slurm's pool of it."""

from __future__ import annotations

from dataclasses import replace

from harness.policies.state import Allocation, ClusterState, RunningJob, Topology
from harness.sim.machine import SimMachine, SimulationError


class StagedMachine(SimMachine):
    """A machine on which burst buffer and compute nodes are taken and freed apart.

    ``start`` (the policy's decision) takes the BB shares only; the execution takes and
    frees the compute nodes (:meth:`take_nodes`, :meth:`release_nodes`) and frees the
    burst buffer (:meth:`release_bb`). Policies see in ``running`` the jobs on compute
    nodes; the BB of jobs staging in or out is taken from ``free_bb`` only.
    """

    def __init__(self, topology: Topology) -> None:
        super().__init__(topology)
        self.holding: dict[int, RunningJob] = {}  # BB held: stage-in start to stage-out end

    def state(self, memo: dict | None) -> ClusterState:
        held = tuple(j for i, j in self.holding.items() if i not in self.running)
        return replace(super().state(memo), holding_bb=held, staged_apart=True)

    def start(self, job: RunningJob) -> None:
        for b in job.allocation.bb:
            self.free_bb[b] -= job.bb_per_node_mb
        if min(self.free_bb) < 0:
            raise SimulationError(f"job {job.job_id}: a BB node is over-allocated")
        self.holding[job.job_id] = job

    def take_nodes(self, job_id: int, compute: tuple[int, ...], now: float) -> RunningJob:
        held = self.holding[job_id]
        for c in compute:
            if not self.free[c]:
                raise SimulationError(f"job {job_id}: compute node {c} is busy")
            self.free[c] = False
        self.free_count -= len(compute)
        walltime = held.expected_end - held.start
        job = RunningJob(
            job_id, now, now + walltime, held.bb_per_node_mb, Allocation(compute, held.allocation.bb)
        )
        self.running[job_id] = job
        return job

    def release_nodes(self, job_id: int) -> None:
        job = self.running.pop(job_id)
        for c in job.allocation.compute:
            self.free[c] = True
        self.free_count += job.nodes

    def release_bb(self, job_id: int) -> None:
        job = self.holding.pop(job_id)
        for b in job.allocation.bb:
            self.free_bb[b] += job.bb_per_node_mb

    def finish(self, job_id: int) -> None:
        """Nothing: the execution has freed what the job held as each phase ended."""


class PoolMachine(StagedMachine):
    """A :class:`StagedMachine` whose burst buffer is one pool, as Slurm's ``burst_buffer/lua``
    counts it: a job takes its total size wherever there is room, with no whole share per BB
    node (``allocation.bb`` is nominal). The space is taken from the BB nodes with the most
    room first, so the per-node free space adds up to the pool's."""

    def __init__(self, topology: Topology) -> None:
        super().__init__(topology)
        self.taken: dict[int, list[int]] = {}  # job id -> MB taken on each BB node

    def start(self, job: RunningJob) -> None:
        need = job.bb_per_node_mb * job.nodes
        if need > sum(self.free_bb):
            raise SimulationError(f"job {job.job_id}: the burst-buffer pool is over-allocated")
        taken = [0] * len(self.free_bb)
        for b in sorted(range(len(self.free_bb)), key=lambda b: (-self.free_bb[b], b)):
            taken[b] = min(self.free_bb[b], need)
            self.free_bb[b] -= taken[b]
            need -= taken[b]
        self.taken[job.job_id] = taken
        self.holding[job.job_id] = job

    def release_bb(self, job_id: int) -> None:
        self.holding.pop(job_id)
        for b, mb in enumerate(self.taken.pop(job_id)):
            self.free_bb[b] += mb
