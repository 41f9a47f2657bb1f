"""Every policy's decisions respect the machine, on many random busy states."""

from __future__ import annotations

import numpy as np
import pytest

from harness.platform import load_platform
from harness.policies.allocation import choose_allocation
from harness.policies.registry import get_policy
from harness.policies.state import ClusterState, QueuedJob, RunningJob, Topology

TOPO = Topology.from_platform(load_platform())
POLICIES = [
    "fcfs", "filler", "backfill-no-future-1", "backfill-2", "backfill-sjf-1",
    "maxutil-1.0-1", "window-10-1", "plan-square-0", "plan-start-1",
]  # fmt: skip


def random_job(rng: np.random.Generator, job_id: int, submit: float) -> QueuedJob:
    nodes = int(rng.choice([1, 1, 2, 4, 8, 16, 32, 64]))
    cap = TOPO.bb_capacity_mb // -(-nodes // TOPO.bb_count)  # largest share that can ever fit
    share = int(min(cap, rng.lognormal(8.0, 1.0)))
    return QueuedJob(job_id, submit, float(rng.uniform(60, 20_000)), nodes, share)


def random_state(rng: np.random.Generator, now: float) -> ClusterState:
    free = [list(range(c * 8, c * 8 + 8)) for c in range(TOPO.bb_count)]
    free_bb = [TOPO.bb_capacity_mb] * TOPO.bb_count
    running = []
    busy_target = int(rng.integers(30, 90))  # leave room: the decisions must start something
    for job_id in range(1000, 1040):
        job = random_job(rng, job_id, 0.0)
        if sum(r.nodes for r in running) + job.nodes > busy_target:
            continue
        alloc = choose_allocation(TOPO, free, free_bb, job.nodes, job.bb_per_node_mb)
        if alloc is None:
            continue
        for c, b in zip(alloc.compute, alloc.bb, strict=True):
            free[TOPO.chassis_of_compute[c]].remove(c)
            free_bb[b] -= job.bb_per_node_mb
        start = now - float(rng.uniform(0, job.walltime))
        running.append(RunningJob(job_id, start, start + job.walltime, job.bb_per_node_mb, alloc))
    return ClusterState.from_running(TOPO, running)


STARTED: dict[str, int] = dict.fromkeys(POLICIES, 0)


@pytest.mark.parametrize("seed", range(12))
def test_decisions_never_overcommit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    now = 50_000.0
    state = random_state(rng, now)
    queue = [random_job(rng, i, now - float(rng.uniform(0, 10_000))) for i in range(int(rng.integers(1, 30)))]
    queue.sort(key=lambda j: (j.submit, j.job_id))
    by_id = {j.job_id: j for j in queue}
    for name in POLICIES:
        decision = get_policy(name, seed=seed).decide(state, queue, now)
        free = set(state.free_compute)
        bb_left = list(state.free_bb_mb)
        started = [s.job_id for s in decision.starts]
        STARTED[name] += len(started)
        assert len(set(started)) == len(started) and set(started) <= set(by_id), name
        for s in decision.starts:
            job = by_id[s.job_id]
            assert len(s.allocation.compute) == job.nodes, name
            assert set(s.allocation.compute) <= free, f"{name}: node taken twice"
            free -= set(s.allocation.compute)
            for b in s.allocation.bb:  # one share per compute node, whole on one BB node
                bb_left[b] -= job.bb_per_node_mb
        assert min(bb_left) >= 0, f"{name}: a BB node is over-allocated"
        assert decision.planned_order is None or not set(decision.planned_order) & set(started)


def test_the_random_states_let_every_policy_start_jobs() -> None:
    # guards the test above against states so full that nothing is ever started
    assert all(count > 0 for count in STARTED.values()), STARTED
