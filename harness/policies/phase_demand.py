"""What a job holds in each of Cerberus's three phases, and for how long.

The poster (Yan, Yang, Jin, Lan; ``004_0bb6199f149a50f8.txt``, Table 1) gives every job
three burst-buffer demands, one per phase: ``bb_in`` at stage-in (PFS -> BB), ``bb_run``
while running on ``c`` compute nodes for ``ert`` (its walltime here: a policy never
knows the runtime), and ``bb_out`` at stage-out (BB -> PFS). Its knapsacks weigh a
job by the demand of the phase it waits for: ``bb_in`` in ``Q_I``, ``(c, bb_run)`` in
``Q_R``, ``bb_out`` in ``Q_O``.

This project's burst buffer is Slurm's (``burst_buffer/lua``): one allocation per job,
taken when the stage-in begins and released when the stage-out ends; Slurm cannot
shrink or grow it between phases. So the three demands are one amount, the job's
request ``nodes x bb_per_node_mb``, held from the start of stage-in to the end of
stage-out, and a phase only asks for burst buffer *not yet held*:

============  ========================  ==================  ===============================
phase         holds                     new BB asked        for how long
============  ========================  ==================  ===============================
stage-in      the request, BB only      the request         its volume over the links
                                                            (:func:`staging_s_alone`)
run           ``c`` nodes + the request 0 (held already)    the run (bounded by walltime)
stage-out     the request, BB only      0 (held already)    its volume over the links
============  ========================  ==================  ===============================

Hence under Slurm's life cycle the ``Q_R`` knapsack has one binding constraint (nodes)
and ``Q_O`` selects every job at once (nothing it needs is free to compete for).
The stage-in and stage-out times are those of the io-aware simulator (docs/io-model.md):
one flow per BB node of the job, ``k x mb_per_node`` for its ``k`` compute nodes there,
over :meth:`~harness.flow.io_network.IONetwork.staging`'s route, weight ``k``, capped
at ``k`` network cards; :func:`staging_s_alone` asks the same max-min sharing for the
job alone, so no second conversion of volume and bandwidth to time exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.flow import NO_LINK, max_min_rates
from harness.flow.io_network import MB, IONetwork
from harness.policies.state import QueuedJob


@dataclass(frozen=True, slots=True)
class PhaseDemand:
    """A job's compute nodes and burst buffer (MB) in each of the three phases."""

    nodes: int
    bb_in_mb: int
    bb_run_mb: int
    bb_out_mb: int

    @classmethod
    def slurm_life_cycle(cls, job: QueuedJob) -> PhaseDemand:
        """One allocation, the job's request, in every phase (see the module's table)."""
        total = job.bb_total_mb
        return cls(job.nodes, total, total, total)

    @property
    def held_mb(self) -> int:
        """What one allocation covering every phase holds from stage-in to stage-out."""
        return max(self.bb_in_mb, self.bb_run_mb, self.bb_out_mb)

    def asked_at_stage_in(self) -> int:
        """Burst buffer the ``Q_I`` knapsack weighs the job by: the whole allocation."""
        return self.held_mb

    def asked_at_run(self) -> tuple[int, int]:
        """(nodes, new BB) the ``Q_R`` knapsack weighs the job by: the BB is already held."""
        return self.nodes, 0

    def asked_at_stage_out(self) -> int:
        """New BB the ``Q_O`` knapsack weighs the job by: none, the allocation is still held."""
        return 0


def staging_s_alone(net: IONetwork, by_bb: Sequence[tuple[int, int]], mb_per_node: float) -> float:
    """Seconds (of ``net``'s clock) to stage ``mb_per_node`` for each compute node of a job
    alone on the machine, ``by_bb`` listing ``(BB node, compute nodes on it)``: the transfers
    share the links by max-min as in the simulator; the last one to end gives the time."""
    flows = [(net.staging(b), k) for b, k in by_bb if k > 0]
    if mb_per_node <= 0 or not flows:
        return 0.0
    width = max(len(route) for route, _ in flows)
    routes = np.full((len(flows), width), NO_LINK, dtype=np.int64)
    for i, (route, _) in enumerate(flows):
        routes[i, : len(route)] = route
    weights = np.array([float(k) for _, k in flows])
    capacities = np.asarray(net.network.capacities, dtype=np.float64)
    rates = max_min_rates(routes, capacities, weights, weights * net.compute_link_bps)
    sizes = weights * mb_per_node * MB
    return float(np.max(sizes / rates))
