"""FCFS without backfilling (Algorithm 1) and greedy filling (Algorithm 2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.policies.base import Decision, Policy
from harness.policies.state import ClusterState, JobQueue, QueuedJob
from harness.policies.workspace import Workspace


def start_in_order(ws: Workspace, jobs: Sequence[QueuedJob]) -> int:
    """FCFS: start jobs in order until one does not fit; return how many started."""
    for count, job in enumerate(jobs):
        if not ws.try_start(job):
            return count
    return len(jobs)


def start_or_reserve_head(ws: Workspace, jobs: Sequence[QueuedJob], depth: int) -> int:
    """The first ``depth`` jobs in order: started while they fit, the others reserved at their
    earliest start (the reservation depth); returns how many jobs that head holds."""
    head = min(depth, len(jobs))
    started = start_in_order(ws, jobs[:head])
    for pos in range(started, head):
        ws.reserve(jobs[pos])
    return head


class Fcfs(Policy):
    description = "FCFS without backfilling: start jobs in arrival order, stop at the first that does not fit"

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        ws = Workspace(state, now)
        start_in_order(ws, queue)
        return ws.decision()


class Filler(Policy):
    description = "greedy filling: start every job, in arrival order, that fits now (no reservations)"

    def decide(self, state: ClusterState, queue: Sequence[QueuedJob], now: float) -> Decision:
        jobs = JobQueue.of(queue)
        ws = Workspace(state, now)
        ws.fill(jobs, np.arange(len(jobs)))
        return ws.decision()
