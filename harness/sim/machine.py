"""The simulated machine: free compute nodes, free burst-buffer space, running jobs,
updated as jobs start and end; and the map of each job's compute nodes to its BB nodes."""

from __future__ import annotations

import functools

from harness.platform import Machine
from harness.policies.state import Allocation, ClusterState, RunningJob, Topology


class SimulationError(RuntimeError):
    """A policy asked for something impossible (the simulator never silently fixes it)."""


def bb_map_string(platform: Machine, alloc: Allocation) -> str:
    """``c001:bb01,c002:bb01``: each compute node with the BB node holding its share."""
    return ",".join(
        f"{platform.compute_name(c)}:{platform.bb.name(b + 1)}"
        for c, b in zip(alloc.compute, alloc.bb, strict=True)
    )


class SimMachine:
    """Free resources and running jobs, updated as jobs start and end."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.free = [True] * topology.compute_count
        self.free_count = topology.compute_count
        self.free_bb = [topology.bb_capacity_mb] * topology.bb_count
        self.running: dict[int, RunningJob] = {}

    def state(self, memo: dict | None) -> ClusterState:
        free = tuple(i for i, f in enumerate(self.free) if f)
        return ClusterState(
            self.topology, tuple(self.running.values()), free, tuple(self.free_bb), memo or {}
        )

    def start(self, job: RunningJob) -> None:
        alloc = job.allocation
        for c in alloc.compute:
            if not self.free[c]:
                raise SimulationError(f"job {job.job_id}: compute node {c} is busy")
            self.free[c] = False
        for b in alloc.bb:
            self.free_bb[b] -= job.bb_per_node_mb
        if min(self.free_bb) < 0:
            raise SimulationError(f"job {job.job_id}: a BB node is over-allocated")
        self.free_count -= len(alloc.compute)
        self.running[job.job_id] = job

    def finish(self, job_id: int) -> None:
        job = self.running.pop(job_id)
        for c in job.allocation.compute:
            self.free[c] = True
        for b in job.allocation.bb:
            self.free_bb[b] += job.bb_per_node_mb
        self.free_count += job.nodes


@functools.lru_cache(maxsize=8)
def _node_indices(platform: Machine) -> tuple[dict[str, int], dict[str, int]]:
    """Node name -> index, built once per machine (thousands of names per call otherwise)."""
    compute = {n: i for i, n in enumerate(platform.compute_nodes())}
    return compute, {n: i for i, n in enumerate(platform.bb_nodes())}


def parse_bb_map(platform: Machine, text: str) -> list[tuple[int, int]]:
    """Inverse of :func:`bb_map_string`: ``[(compute index, BB index), ...]``."""
    compute, bb = _node_indices(platform)
    pairs = []
    for item in filter(None, text.split(",")):
        c, b = item.split(":")
        pairs.append((compute[c], bb[b]))
    return pairs
