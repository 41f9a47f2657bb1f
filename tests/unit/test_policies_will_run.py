"""Slurm's will-run windows (harness.policies.will_run): where Slurm's backfill reserves a
blocked job, computed by hand from select/cons_tres's ``_future_run_test`` of Slurm 24.11."""

from __future__ import annotations

import pytest

from harness.emulation.collect.fidelity import will_run_params
from harness.model.timescale import TimeScale
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.policies.tunables import PolicyParamError
from harness.policies.will_run import Candidate, WillRunWindows, last_released

TOPO = Topology.from_platform(load_platform())
ON_BARRIERS = WillRunWindows(30.0, 0.0)  # Slurm's clock at the trace's 0 is a multiple of 30 s


def kept(*ends: float) -> list[Candidate]:
    return [Candidate(end, True) for end in ends]


def fits_once(index: int):
    """The job fits once the walk has gone past ``jobs[index]``."""
    return lambda count: count > index


def test_the_barrier_is_the_next_multiple_of_the_window_on_slurms_clock() -> None:
    # 6,559 % 30 = 19: 6,559 + (30 - 19) = 6,570; a barrier itself moves a whole window on.
    assert ON_BARRIERS.barrier_after(6559.0) == 6570.0
    assert ON_BARRIERS.barrier_after(6570.0) == 6600.0
    # The slice's run: Slurm's t0 % 30 = 23; (23 + 6,559) % 30 = 12: 6,559 + 18 = 6,577,
    # the "ending within 30 seconds of 04:48:30" of slurmctld's log (t0 + 6,577).
    assert WillRunWindows(30.0, 23.0).barrier_after(6559.0) == 6577.0


def test_a_group_ends_at_its_last_job_not_at_the_first_end_where_the_job_fits() -> None:
    # Ends 6,528, 6,559, 6,565, 6,597; the job fits once 6,559 is released (index 1).
    # First job 6,528: barrier 6,528 + (30 - 18) = 6,540; the group takes every end up to
    # 6,540 + 30 = 6,570: 6,528, 6,559, 6,565 (6,597 > 6,570 closes it). It fits: its start
    # is the last released end, 6,565 (index 2), not 6,559.
    assert last_released(kept(6528, 6559, 6565, 6597), fits_once(1), ON_BARRIERS, None) == 2
    # The walk stops at Slurm's later_start: with 6,559 the limit the group is 6,528, 6,559.
    assert last_released(kept(6528, 6559, 6565, 6597), fits_once(1), ON_BARRIERS, 6559.0) == 1


def test_the_window_doubles_after_a_failed_test() -> None:
    # Ends 100, 140, 200, 230, 330; the job fits once 200 is released (index 2).
    # Barrier 100 + (30 - 10) = 120. Group 1: ends <= 150: 100, 140 (200 > 150); no fit.
    # Window 60: 200 > 180, so 120: 200 <= 240. Group 2: 200, 230 (330 > 240); fits, and
    # the start is 230 (index 3), the group's last end.
    assert last_released(kept(100, 140, 200, 230, 330), fits_once(2), ON_BARRIERS, None) == 3
    # Never fitting: every job released and tested, then None.
    assert last_released(kept(100, 140, 200), lambda count: False, ON_BARRIERS, None) is None


def test_a_skipped_job_is_not_released_but_the_walk_goes_on_past_it() -> None:
    # 6,565 shares neither nodes nor a license with the job: skipped. Barrier 6,570; the
    # walk takes 6,559, skips 6,565, takes 6,570 (<= 6,600): the start is 6,570 (index 2).
    jobs = [Candidate(6559, True), Candidate(6565, False), Candidate(6570, True)]
    assert last_released(jobs, fits_once(0), ON_BARRIERS, None) == 2
    # Stopped at 6,565: the skipped job is the last examined, the start is 6,559 (index 0).
    assert last_released(jobs, fits_once(0), ON_BARRIERS, 6565.0) == 0


def running(job_id: int, first: int, nodes: int, end: float, share: int) -> RunningJob:
    compute = tuple(range(first, first + nodes))
    alloc = Allocation(compute, tuple(TOPO.chassis_of_compute[c] for c in compute))
    return RunningJob(job_id, 0.0, end, share, alloc)


# 88 of the 96 nodes busy in four jobs of 22 nodes (1,000 MB of BB per node), 8 free.
# W (52 nodes, BB) fits once 6,528 and 6,559 have ended: 8 + 22 + 22 = 52, so t0 = 6,559.
# C (8 free nodes, no BB) ends at 100 + 6,462 = 6,562: under EASY it would hold 8 nodes at
# 6,559 (44 < 52) and push W to 6,565, so it waits. Slurm's will-run (barriers on 30 s):
# 6,528 is released before t0; the walk starts at 6,559 (barrier 6,570, group up to
# 6,600), stops after 6,565 (the next instant nodes come free), and releases 6,559 and
# 6,565 (it shares W's license): W is reserved at 6,565, and C, ended by then, starts now.
STATE = ClusterState.from_running(
    TOPO,
    [running(1, 0, 22, 6528.0, 1000), running(2, 22, 22, 6559.0, 1000),
     running(3, 44, 22, 6565.0, 1000), running(4, 66, 22, 6597.0, 1000)],
)  # fmt: skip
QUEUE = [QueuedJob(10, 0.0, 3600.0, 52, 1000), QueuedJob(11, 1.0, 6462.0, 8, 0)]


def test_easy_reserves_at_the_first_end_where_the_job_fits() -> None:
    decision = get_policy("backfill-1").decide(STATE, QUEUE, 100.0)
    assert decision.reservations == ((10, 6559.0),)
    assert decision.starts == ()


def test_slurms_will_run_reserves_at_the_groups_last_end_and_backfills_in_front() -> None:
    policy = get_policy("backfill-1[slurm_will_run=true;will_run_origin_s=0]")
    decision = policy.decide(STATE, QUEUE, 100.0)
    assert decision.reservations == ((10, 6565.0),)
    assert [start.job_id for start in decision.starts] == [11]


def test_on_slurms_clock_the_barrier_moves_and_so_may_the_reservation() -> None:
    # Origin 23: barrier (23 + 6,559) % 30 = 12, 6,559 + 18 = 6,577, group up to 6,607; the
    # walk still stops after 6,565: the same 6,565.
    policy = get_policy("backfill-1[slurm_will_run=true;will_run_origin_s=23]")
    assert policy.decide(STATE, QUEUE, 100.0).reservations == ((10, 6565.0),)


def test_the_tunables_and_the_twin_of_a_slurm_run() -> None:
    assert get_policy("backfill-1").will_run is None
    assert get_policy("backfill-1[slurm_will_run=false]").will_run is None
    # 53 s of Slurm's clock past a barrier is 23 s past the last one.
    assert get_policy("backfill-1[slurm_will_run=true;will_run_origin_s=53]").will_run == WillRunWindows(
        30.0, 23.0
    )
    with pytest.raises(PolicyParamError):
        get_policy("backfill-1[slurm_will_run=yes]")
    # The slice's run: t0 = 1,795,774,493 s = 59,859,149 x 30 + 23, at x1.
    assert will_run_params("backfill-1", TimeScale(), 1_795_774_493.0) == {
        "slurm_will_run": "true", "will_run_window_s": 30.0, "will_run_origin_s": 23.0,
        "slurm_node_reservation": "true",
    }  # fmt: skip
    assert (
        will_run_params("backfill-1", TimeScale(), 0.0, node_reservation=False)["slurm_node_reservation"]
        == "false"
    )
    # x10 (shrink 0.9): 30 s of Slurm's clock are 300 trace seconds, 23 s are 230.
    found = will_run_params("backfill-1", TimeScale(0.9), 1_795_774_493.0)
    assert found["will_run_window_s"] == pytest.approx(300.0)
    assert found["will_run_origin_s"] == pytest.approx(230.0)
    assert will_run_params("fcfs", TimeScale(), 1_795_774_493.0) == {}


def test_a_job_started_in_the_same_pass_is_walked_like_a_running_one() -> None:
    # 8 nodes free; H (7 nodes, BB) starts now, at 100, and ends at 100 + 6,465 = 6,565. W (44
    # nodes) fits once 6,528 and 6,559 have ended (1 + 22 + 22 = 45): t0 = 6,559. Slurm's will-run sees H
    # running: the walk releases 6,559 and H's 6,565 (the next instant nodes come free, H shares
    # W's license): W at 6,565. EASY: 6,559.
    state = ClusterState.from_running(
        TOPO,
        [running(1, 0, 22, 6528.0, 1000), running(2, 22, 22, 6559.0, 1000), running(3, 44, 44, 9000.0, 1000)],
    )
    queue = [QueuedJob(20, 0.0, 6465.0, 7, 1000), QueuedJob(21, 1.0, 3600.0, 44, 1000)]
    windows = get_policy("backfill-1[slurm_will_run=true;will_run_origin_s=0]").decide(state, queue, 100.0)
    assert [start.job_id for start in windows.starts] == [20]
    assert windows.reservations == ((21, 6565.0),)
    assert get_policy("backfill-1").decide(state, queue, 100.0).reservations == ((21, 6559.0),)
