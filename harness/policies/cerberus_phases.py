"""Cerberus in three phases, as in the poster: a knapsack per queue at every decision.

A job waits first in ``Q_I`` (stage-in), then, staged in, in ``Q_R`` (run), then in
``Q_O`` (stage-out). Where the burst buffer is Slurm's (one allocation from stage-in start
to stage-out end, :mod:`harness.policies.phase_demand`):

* :meth:`CerberusThreePhase.decide` is the ``Q_I`` selection: the subset of the waiting
  jobs whose allocations fill the free burst buffer best (``select_staging``: subset sum,
  jobs without I/O always selected, the starvation guard first). A start takes the job's
  BB shares and begins its stage-in; its compute nodes are only a wish (the run
  selection gives it the nodes free when it runs).
* :meth:`CerberusThreePhase.select_staged` is the ``Q_R`` selection: among the staged-in
  jobs, the subset of largest profit within the free compute nodes (``select_run``; the
  BB is held already, so it asks none).
* ``Q_O`` needs no selection: a job's stage-out uses the allocation it still holds, so
  the knapsack over ``Q_O`` would take every job; the simulator starts it at the run's end.

Where a start takes nodes and burst buffer at once (``ClusterState.staged_apart`` False:
the alloc-only model, staging inside the allocation, the live ordering agent), the three
queues are one and the policy decides as ``cerberus`` (:class:`CerberusRun`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.policies.allocation import choose_allocation
from harness.policies.base import Decision, Policy, Start
from harness.policies.cerberus import CerberusConfig, CerberusRun, PhaseJob, select_run, select_staging
from harness.policies.phase_demand import PhaseDemand
from harness.policies.state import ClusterState, QueuedJob, Topology


class CerberusThreePhase(Policy):
    """Stage-in knapsack on decisions, run knapsack on staged-in jobs (see the module)."""

    description = (
        "Cerberus three-phase: stage-in knapsack on BB, run knapsack on nodes among staged-in jobs "
        "(staging outside the allocation; else as cerberus)"
    )
    # Stage-ins need no free compute node: the policy must see events when none is free.
    needs_every_event = True

    def __init__(self, name: str, config: CerberusConfig | None = None) -> None:
        super().__init__(name)
        self.config = config or CerberusConfig()
        self._one_phase = CerberusRun(name, self.config)

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        if not state.staged_apart:
            return self._one_phase.decide(state, queue, now)
        demands = [PhaseDemand.slurm_life_cycle(job) for job in queue]
        waiting = [
            PhaseJob(job.job_id, job.submit, job.nodes, demand.asked_at_stage_in(), job.walltime)
            for job, demand in zip(queue, demands, strict=True)
        ]
        picked = set(select_staging(waiting, sum(state.free_bb_mb), now, self.config))
        return Decision(tuple(_place_shares(state.topology, state.free_bb_mb, queue, picked)))

    def select_staged(self, state: ClusterState, staged: Sequence[QueuedJob], now: float) -> list[int]:
        phase = []
        for job in staged:
            nodes, new_bb = PhaseDemand.slurm_life_cycle(job).asked_at_run()
            phase.append(PhaseJob(job.job_id, job.submit, nodes, new_bb, job.walltime))
        return select_run(phase, len(state.free_compute), 0, now, self.config)


def _place_shares(
    topology: Topology, free_bb_mb: Sequence[int], queue: Sequence[QueuedJob], picked: set[int]
) -> list[Start]:
    """BB shares for the picked jobs, in queue order; a pick whose shares do not fit the BB
    nodes one by one (the knapsack sees their sum) waits for the next decision. Compute
    nodes are chosen as if all were free: the run selection takes the ones free then."""
    every_node: list[list[int]] = [[] for _ in topology.bbs_of_chassis]
    for c, chassis in enumerate(topology.chassis_of_compute):
        every_node[chassis].append(c)
    avail = list(free_bb_mb)
    starts = []
    for job in queue:
        if job.job_id not in picked:
            continue
        alloc = choose_allocation(topology, every_node, avail, job.nodes, job.bb_per_node_mb)
        if alloc is None:
            continue
        for b in alloc.bb:
            avail[b] -= job.bb_per_node_mb
        starts.append(Start(job.job_id, alloc))
    return starts
