"""When Slurm's own scheduler begins a stage-in (``burst_buffer/lua``), as a pool twin's decisions.

Read from Slurm 24.11's source. A pending job's burst buffer is allocated, and its
stage-in begun, as soon as the pool has room, whether or not nodes are free:
- the main scheduler tests each job in priority order, and ``select_nodes`` asks the
  plugin to stage it in (``bb_g_job_test_stage_in(job, false)``) before it looks for
  nodes;
- after each backfill pass, ``bb_g_job_try_stage_in`` takes every pending job with an
  expected start, in order of that start, and allocates while the pool has room; it stops
  at the first that does not fit (``_try_alloc_job_bb``);
- a job whose stage-in has not begun gets no nodes in the backfill pass (``continue``
  after ``bb_g_job_get_est_start``); once staged in, the scheduler gives it nodes in
  priority order (:class:`harness.sim.staging.SlurmPasses` ``staged_start``).

The main scheduler never stops at a job that waits for its burst buffer (its
``ESLURM_BURST_BUFFER_WAIT`` is a ``continue``); it stops the partition at the first job
that has its burst buffer (or needs none) and finds its nodes busy. So the twin of a run
under Slurm's own scheduler (not the ordering agent, which releases a job only when its
policy starts it), at each pass:
1. in queue order, up to the first job waiting for nodes, begins every stage-in that fits;
2. then, in Slurm's order of expected start (the jobs whose nodes are free now first, then
   queue order), begins stage-ins while the pool has room, and stops at the first that
   does not fit.
A job without a burst buffer has nothing to stage: it goes straight to waiting for nodes,
and the staged-in jobs take nodes in queue order as ``staged_start`` says. The twin's
policy only names the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.policies.base import Decision, Policy, Start
from harness.policies.state import Allocation, ClusterState, QueuedJob


class SlurmStageIn(Policy):
    """Begin stage-ins as Slurm does (see the module); ``first_waiting()`` is the plan row of
    the first job waiting for nodes (``None``: none), ``rows`` the plan row of each job id."""

    needs_every_event = True  # a stage-in may begin whatever the free nodes

    def __init__(self, name: str, first_waiting: Callable[[], int | None], rows: Mapping[int, int]) -> None:
        super().__init__(name)
        self.first_waiting = first_waiting
        self.rows = rows

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        pool, free = sum(state.free_bb_mb), len(state.free_compute)  # the pool: one total (PoolMachine)
        blocked = self.first_waiting()
        starts: list[Start] = []
        later: list[QueuedJob] = []
        for job in queue:
            if job.bb_per_node_mb <= 0:  # to the nodes at once; it blocks the main scheduler if none are free
                starts.append(_start(job))
                if job.nodes > free:
                    row = self.rows[job.job_id]
                    blocked = row if blocked is None else min(blocked, row)
                free -= min(job.nodes, free)
            elif (blocked is None or self.rows[job.job_id] < blocked) and job.bb_total_mb <= pool:
                starts.append(_start(job))  # reached by the main scheduler, and it fits
                pool -= job.bb_total_mb
            else:
                later.append(job)
        for job in sorted(later, key=lambda j: j.nodes > free):  # stable: queue order within
            if job.bb_total_mb > pool:
                break
            starts.append(_start(job))
            pool -= job.bb_total_mb
        return Decision(tuple(starts))


def _start(job: QueuedJob) -> Start:
    """The job's stage-in begins (its BB nodes are nominal: :class:`PoolMachine` takes its
    total from the pool; its compute nodes are chosen when it runs, ``_take_nodes``)."""
    return Start(job.job_id, Allocation(tuple(range(job.nodes)), (0,) * job.nodes))
