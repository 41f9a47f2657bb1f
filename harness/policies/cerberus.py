"""Cerberus (Yan, Yang, Jin, Lan): three queues, one knapsack per phase.

A job passes three queues: stage-in ``Q_I``, run ``Q_R`` and stage-out ``Q_O``.
At every scheduling point Cerberus selects from each queue independently:

* ``Q_I`` and ``Q_O``: the subset maximising the burst-buffer volume moved within the
  free burst buffer (:func:`~harness.policies.knapsack.subset_sum`); a job without
  I/O is always selected at stage-in, since it takes no burst buffer;
* ``Q_R``: the subset maximising the sum of profits ``p_i = f(c_i, bb_run_i, ert_i)``
  within the free compute nodes and burst buffer
  (:func:`~harness.policies.knapsack.two_constraint`). The poster leaves ``f`` open;
  the default here is ``c_i x ert_i`` (node-seconds: the work started), and
  :data:`PROFITS` names the alternatives.

Starvation guard: jobs that have waited longer than ``starvation_s`` stop the normal
selection of their queue: they are dispatched first, oldest first, and if one does
not fit nothing else from that queue is selected until it has been (the free
resources then accumulate for it); the normal selection then runs on the rest.
``knapsack=False`` gives ``cerberus-fcfs``: every queue in arrival order, stopping at
the first job that does not fit.

This module is the selection only; the staging life cycle (burst buffer held from
stage-in start, nodes from run start) belongs to the simulator, and the policy that uses
both selections as the poster's three queues is
:class:`~harness.policies.cerberus_phases.CerberusThreePhase` (``cerberus-3phase``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.policies import knapsack
from harness.policies.base import Decision, Policy
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.workspace import Workspace

# Burst-buffer volumes enter the knapsack in units of this many MB: 1 GB keeps the
# run table of the thesis's platform (96 nodes x 480 GB) at 97 x 481 cells.
DEFAULT_UNIT_MB = 1000
DEFAULT_STARVATION_S = 86_400.0


@dataclass(frozen=True, slots=True)
class PhaseJob:
    """A job waiting in one of the three queues."""

    job_id: int
    since: float  # when it entered the system (submission): the starvation clock
    nodes: int
    bb_mb: int  # burst buffer the phase needs (bb_in, bb_run or bb_out)
    walltime: float  # the user's estimate ert_i


Profit = Callable[[PhaseJob], float]

PROFITS: dict[str, Profit] = {
    "node-seconds": lambda j: float(j.nodes) * j.walltime,
    "nodes": lambda j: float(j.nodes),
    "bb": lambda j: float(j.bb_mb),
    "count": lambda j: 1.0,
}
DEFAULT_PROFIT = "node-seconds"


@dataclass(frozen=True)
class CerberusConfig:
    knapsack: bool = True  # False: FCFS per queue (cerberus-fcfs)
    profit: str = DEFAULT_PROFIT
    unit_mb: int = DEFAULT_UNIT_MB
    starvation_s: float = DEFAULT_STARVATION_S
    window: int | None = None  # consider only the first N jobs of a queue (None: all)

    def __post_init__(self) -> None:
        if self.profit not in PROFITS:
            raise ValueError(f"unknown Cerberus profit {self.profit!r}; known: {', '.join(PROFITS)}")
        if self.unit_mb <= 0 or self.starvation_s <= 0:
            raise ValueError("Cerberus unit and starvation threshold must be positive")
        if self.window is not None and self.window < 1:
            raise ValueError("Cerberus window must be >= 1")


def starving(jobs: Sequence[PhaseJob], now: float, threshold_s: float) -> list[PhaseJob]:
    """Jobs that have waited longer than ``threshold_s``, oldest first."""
    return sorted((j for j in jobs if now - j.since > threshold_s), key=lambda j: (j.since, j.job_id))


def dispatch_starving(
    jobs: Sequence[PhaseJob], free_nodes: int, free_bb_mb: int, now: float, threshold_s: float
) -> tuple[list[int], bool, int, int]:
    """The guard: starving jobs in age order while they fit.

    Returns their ids, whether the normal selection may go on (every starving job
    fitted), and the nodes and MB left.
    """
    chosen: list[int] = []
    for job in starving(jobs, now, threshold_s):
        if job.nodes > free_nodes or job.bb_mb > free_bb_mb:
            return chosen, False, free_nodes, free_bb_mb
        chosen.append(job.job_id)
        free_nodes -= job.nodes
        free_bb_mb -= job.bb_mb
    return chosen, True, free_nodes, free_bb_mb


def select_staging(
    jobs: Sequence[PhaseJob], free_bb_mb: int, now: float, config: CerberusConfig
) -> list[int]:
    """Job ids (queue order) to start staging (in or out) now."""
    free_jobs = [j.job_id for j in jobs if j.bb_mb == 0]  # no I/O: always selected
    io_jobs = _window([j for j in jobs if j.bb_mb > 0], config)
    # Staging takes no compute nodes: the guard checks the burst buffer only.
    any_nodes = sum(j.nodes for j in io_jobs)
    chosen, go_on, _, free_bb_mb = dispatch_starving(io_jobs, any_nodes, free_bb_mb, now, config.starvation_s)
    rest = [j for j in io_jobs if j.job_id not in set(chosen)] if go_on else []
    if config.knapsack:
        weights = knapsack.to_units([j.bb_mb for j in rest], config.unit_mb, round_up=True)
        capacity = int(knapsack.to_units(free_bb_mb, config.unit_mb, round_up=False))
        chosen += [rest[i].job_id for i in knapsack.subset_sum(weights, capacity)]
    else:
        chosen += _fcfs(rest, free_bb_mb, lambda j: (0, j.bb_mb), 0)
    keep = set(free_jobs) | set(chosen)
    return [j.job_id for j in jobs if j.job_id in keep]


def select_run(
    jobs: Sequence[PhaseJob], free_nodes: int, free_bb_mb: int, now: float, config: CerberusConfig
) -> list[int]:
    """Job ids (queue order) to start running now: nodes and burst buffer within the free."""
    jobs = _window(list(jobs), config)
    chosen, go_on, free_nodes, free_bb_mb = dispatch_starving(
        jobs, free_nodes, free_bb_mb, now, config.starvation_s
    )
    if not go_on:
        return chosen
    taken = set(chosen)
    rest = [j for j in jobs if j.job_id not in taken]
    if not config.knapsack:
        picked = _fcfs(rest, free_bb_mb, lambda j: (j.nodes, j.bb_mb), free_nodes)
    else:
        picked = _run_knapsack(rest, free_nodes, free_bb_mb, config)
    keep = taken | set(picked)
    return [j.job_id for j in jobs if j.job_id in keep]


def _run_knapsack(
    jobs: list[PhaseJob], free_nodes: int, free_bb_mb: int, config: CerberusConfig
) -> list[int]:
    fitting = [j for j in jobs if j.nodes <= free_nodes and j.bb_mb <= free_bb_mb]
    if not fitting:
        return []
    profit = PROFITS[config.profit]
    picked = knapsack.two_constraint(
        [j.nodes for j in fitting],
        knapsack.to_units([j.bb_mb for j in fitting], config.unit_mb, round_up=True),
        [profit(j) for j in fitting],
        free_nodes,
        int(knapsack.to_units(free_bb_mb, config.unit_mb, round_up=False)),
    )
    return [fitting[i].job_id for i in picked]


def _window(jobs: list[PhaseJob], config: CerberusConfig) -> list[PhaseJob]:
    return jobs if config.window is None else jobs[: config.window]


def _fcfs(
    jobs: Sequence[PhaseJob],
    free_bb_mb: int,
    demand: Callable[[PhaseJob], tuple[int, int]],
    free_nodes: int,
) -> list[int]:
    """Arrival order, stopping at the first job whose (nodes, MB) demand does not fit."""
    chosen: list[int] = []
    nodes_left, bb_left = free_nodes, free_bb_mb
    for job in jobs:
        nodes, bb = demand(job)
        if nodes > nodes_left or bb > bb_left:
            break
        nodes_left -= nodes
        bb_left -= bb
        chosen.append(job.job_id)
    return chosen


def total_mb(jobs: Sequence[PhaseJob], ids: Sequence[int]) -> int:
    """Burst buffer taken by the selected ``ids`` (for checks and tests)."""
    wanted = set(ids)
    return int(np.sum([j.bb_mb for j in jobs if j.job_id in wanted], dtype=np.int64))


class CerberusRun(Policy):
    """Cerberus's run selection when a job is one allocation (stage-in, run, stage-out inside it).

    Every waiting job is in ``Q_R``: the knapsack (or FCFS) picks from the whole queue
    within the free nodes and the free burst buffer summed over BB nodes; the picks
    are then placed in queue order, and one whose shares do not fit the BB nodes
    individually (fragmentation) waits for the next pass.
    """

    description = "Cerberus run-phase knapsack (nodes x BB, profit = nodes x walltime) with starvation guard"

    def __init__(self, name: str, config: CerberusConfig | None = None) -> None:
        super().__init__(name)
        self.config = config or CerberusConfig()

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        # The queue is in submission order: the starving jobs are its first ones.
        late = int(np.searchsorted(jobs.submit, now - self.config.starvation_s, side="left"))
        free_bb = sum(state.free_bb_mb)
        for k in range(late):
            if not ws.try_start(jobs[k]):
                return ws.decision()  # the oldest starving job waits: nothing else starts
            free_bb -= int(jobs.nodes[k] * jobs.bb_per_node_mb[k])
        if late:
            jobs = JobQueue(*(col[late:] for col in (jobs.job_id, jobs.submit, jobs.walltime, jobs.nodes,
                                                     jobs.bb_per_node_mb)))  # fmt: skip
        n = len(jobs) if self.config.window is None else min(len(jobs), self.config.window)
        total = jobs.nodes[:n] * jobs.bb_per_node_mb[:n]
        fits = np.flatnonzero((jobs.nodes[:n] <= ws.free_count) & (total <= free_bb))
        phase = [
            PhaseJob(*row)
            for row in zip(jobs.job_id[fits].tolist(), jobs.submit[fits].tolist(), jobs.nodes[fits].tolist(),
                           total[fits].tolist(), jobs.walltime[fits].tolist(), strict=True)
        ]  # fmt: skip
        picked = set(select_run(phase, ws.free_count, free_bb, now, self.config))
        for k in fits.tolist():
            if int(jobs.job_id[k]) in picked:
                ws.try_start(jobs[k])
        return ws.decision()
