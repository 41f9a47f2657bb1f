"""EASY backfilling with reservation depth D (Algorithms 3, 4 and 5).

Steps of one pass: start the head of the queue in FIFO order while it fits; reserve
resources for the next D jobs at their earliest start (compute only for
``backfill-no-future-D``, compute and burst buffers otherwise); fill the rest of
the queue greedily (in arrival order, or by ascending walltime for SJF) without
touching the reservations; drop the reservations (they are rebuilt next pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.policies.base import Decision, Policy
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.will_run import WillRunWindows
from harness.policies.workspace import Workspace


def sjf_order(queue: JobQueue, positions: np.ndarray) -> np.ndarray:
    """``positions`` sorted by ascending walltime, ties kept in arrival order."""
    return positions[np.argsort(queue.walltime[positions], kind="stable")]


def backfill(
    ws: Workspace,
    queue: JobQueue,
    positions: np.ndarray,
    depth: int,
    future_bb: bool = True,
    sjf: bool = False,
    will_run: WillRunWindows | None = None,
    limits: PassLimits | None = None,
) -> list[int]:
    """One backfilling pass over ``positions`` (arrival order); returns the planned order (job ids)."""
    head = 0
    while head < len(positions) and ws.try_start(queue[int(positions[head])]):
        head += 1
    if ws.free_count == 0:  # nothing can be backfilled: spare the reservations
        return queue.job_id[positions[head:]].tolist()
    limits = limits or PassLimits()
    tested, untested = limits.split(positions[head:])
    reserved = tested[:depth]
    for pos in reserved.tolist():
        ws.reserve(queue[pos], with_bb=future_bb, will_run=will_run, horizon=limits.horizon_s)
    rest = tested[depth:]
    if sjf:
        rest = sjf_order(queue, rest)
    ws.fill(queue, rest)
    return queue.job_id[reserved].tolist() + queue.job_id[rest].tolist() + queue.job_id[untested].tolist()


@dataclass(frozen=True)
class PassLimits:
    """How far one backfilling pass looks: ``horizon_s``, the planning horizon (a job that cannot
    start within it gets no reservation); ``max_job_test``, how many of the jobs left after the
    head's starts it tests (reserves or fills). None: no limit (EASY)."""

    horizon_s: float | None = None
    max_job_test: int | None = None

    def split(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the positions the pass tests, those it leaves for the next pass)."""
        if self.max_job_test is None:
            return positions, positions[:0]
        return positions[: self.max_job_test], positions[self.max_job_test :]


class Backfill(Policy):
    description = "EASY backfilling, compute and BB reserved for the first D jobs"

    def __init__(
        self,
        name: str,
        depth: int,
        future_bb: bool = True,
        sjf: bool = False,
        will_run: WillRunWindows | None = None,
        limits: PassLimits | None = None,
        slurm_nodes: bool = False,
    ) -> None:
        """``will_run``: reserve where Slurm's backfill would (its will-run windows), not at
        the earliest start (None: EASY's exact reservations); ``limits``: how far a pass looks;
        ``slurm_nodes``: nodes as Slurm's cons_tres picks them, reservations on concrete nodes."""
        super().__init__(name)
        if depth < 0:
            raise ValueError("reservation depth must be >= 0")
        self.depth = depth
        self.future_bb = future_bb
        self.sjf = sjf
        self.will_run = will_run
        self.limits = limits
        self.slurm_nodes = slurm_nodes

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now, slurm_nodes=self.slurm_nodes)
        order = backfill(ws, jobs, np.arange(len(jobs)), self.depth, self.future_bb, self.sjf, self.will_run,
                         self.limits)  # fmt: skip
        return ws.decision(planned_order=order)
