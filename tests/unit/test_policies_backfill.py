"""FCFS, filler and backfilling on hand-built scenarios with exact expected schedules."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from tests.plans import plan

PLATFORM = load_platform()
TOPO = Topology.from_platform(PLATFORM)


def starts(policy: str, jobs: pd.DataFrame) -> dict[int, float]:
    result = simulate(jobs, get_policy(policy), PLATFORM)
    assert check_schedule(result.jobs, PLATFORM) == []
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


def busy_state(nodes: int, end: float, share: int = 0) -> ClusterState:
    """``nodes`` compute nodes (0, 1, ...) busy until ``end``, each share on its chassis' BB node."""
    compute = tuple(range(nodes))
    alloc = Allocation(compute, tuple(TOPO.chassis_of_compute[c] for c in compute))
    return ClusterState.from_running(TOPO, [RunningJob(0, 0.0, end, share, alloc)])


# -- the starvation case of Section 4.2 ------------------------------------------------
# R holds 60 of the 96 nodes until t=1000. W (48 nodes x 9,000 MB = 432 GB of the
# 480 GB) needs 4 shares on every one of the 12 BB nodes, so it needs all of them.
# S (4 nodes x 10,000 MB, 5,000 s) arrives behind W and fits in the 36 free nodes.
STARVATION = plan(
    [
        (1, 0.0, 1000.0, 1000.0, 60, 1000),  # R
        (2, 1.0, 2000.0, 2000.0, 48, 9000),  # W
        (3, 2.0, 5000.0, 5000.0, 4, 10_000),  # S
    ]
)


def test_backfill_without_future_bb_lets_small_jobs_delay_the_wide_one() -> None:
    # W's compute reservation at t=1000 leaves room for S, which starts at t=2 and
    # fills one BB node (4 x 10,000 MB); at t=1000 W finds 44 of its 48 shares and
    # must wait for S to end at t=5002.
    assert starts("backfill-no-future-1", STARVATION) == {1: 0.0, 2: 5002.0, 3: 2.0}


def test_backfill_with_future_bb_keeps_the_wide_job_on_time() -> None:
    # W's reservation at t=1000 holds 36,000 MB of every BB node; S would need
    # 10,000 MB on some BB node before t=5002 and waits until W ends at t=3000.
    assert starts("backfill-1", STARVATION) == {1: 0.0, 2: 1000.0, 3: 3000.0}


def test_fcfs_never_overtakes_but_filler_does() -> None:
    jobs = plan(
        [
            (1, 0.0, 100.0, 100.0, 90, 0),
            (2, 1.0, 50.0, 60.0, 10, 0),  # does not fit beside job 1 (6 nodes free)
            (3, 2.0, 30.0, 40.0, 4, 0),
        ]
    )
    assert starts("fcfs", jobs) == {1: 0.0, 2: 100.0, 3: 100.0}
    assert starts("filler", jobs) == {1: 0.0, 2: 100.0, 3: 2.0}


def test_filler_delays_the_head_job_backfill_does_not() -> None:
    # Job 2 needs 93 nodes once job 1 (90 nodes) ends at t=100. Job 3 (4 nodes,
    # 200 s) fits at t=2 in the 6 free nodes: filler starts it, so at t=100 only 92
    # nodes are free and job 2 waits for job 3 to end at t=202. Backfill-1 reserves
    # 93 nodes for job 2 at t=100, which job 3 would cut into: job 3 waits instead.
    jobs = plan(
        [
            (1, 0.0, 100.0, 100.0, 90, 0),
            (2, 1.0, 50.0, 50.0, 93, 0),
            (3, 2.0, 200.0, 200.0, 4, 0),
        ]
    )
    assert starts("filler", jobs) == {1: 0.0, 2: 202.0, 3: 2.0}
    assert starts("backfill-1", jobs) == {1: 0.0, 2: 100.0, 3: 150.0}


def decide_ids(policy: str, state: ClusterState, queue: list[QueuedJob], now: float = 0.0) -> list[int]:
    return [s.job_id for s in get_policy(policy).decide(state, queue, now).starts]


def test_sjf_backfills_the_shortest_job_first() -> None:
    # 88 nodes busy until t=1000; head H (20 nodes) is reserved at t=1000. L and S
    # (8 nodes each) both end before it, but only one fits in the 8 free nodes.
    state = busy_state(88, 1000.0)
    queue = [
        QueuedJob(1, 0.0, 500.0, 20, 0),  # H
        QueuedJob(2, 1.0, 900.0, 8, 0),  # L
        QueuedJob(3, 2.0, 100.0, 8, 0),  # S
    ]
    assert decide_ids("backfill-1", state, queue) == [2]
    assert decide_ids("backfill-sjf-1", state, queue) == [3]


def test_reservation_depth_protects_the_first_d_jobs() -> None:
    # 90 nodes busy until t=100, 6 free. A (10 nodes) gets [100, 200); B (93 nodes)
    # can only have [200, 300). D (4 nodes, 500 s) fits now and leaves A room at
    # t=100 (92 free), but would leave B only 92 < 93 nodes at t=200.
    state = busy_state(90, 100.0)
    queue = [
        QueuedJob(1, 0.0, 100.0, 10, 0),  # A
        QueuedJob(2, 1.0, 100.0, 93, 0),  # B
        QueuedJob(3, 2.0, 500.0, 4, 0),  # D
    ]
    assert decide_ids("backfill-1", state, queue) == [3]  # only A is protected
    assert decide_ids("backfill-2", state, queue) == []  # B is protected too


@pytest.mark.parametrize("policy", ["fcfs", "filler", "backfill-1", "backfill-no-future-2", "backfill-sjf-3"])
def test_decisions_on_an_idle_machine_start_everything_that_fits(policy: str) -> None:
    queue = [QueuedJob(i, float(i), 100.0, 30, 1_000) for i in range(4)]
    # 4 x 30 nodes > 96: the first three start (BB holds 480 shares of 1,000 MB)
    assert decide_ids(policy, ClusterState.idle(TOPO), queue) == [0, 1, 2]
