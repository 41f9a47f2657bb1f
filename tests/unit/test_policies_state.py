"""Cluster state, BB allocation and the availability profile, on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from harness.platform import load_platform
from harness.policies.allocation import choose_allocation, fits
from harness.policies.profile import AvailabilityProfile, reserve_bb
from harness.policies.state import Allocation, ClusterState, JobQueue, QueuedJob, RunningJob, Topology
from tests.platforms import tiny_machine

TOPO = Topology.from_platform(load_platform())


def tiny_topology(bb_capacity_mb: int = 100) -> Topology:
    """2 groups x 1 chassis x 2 compute nodes: compute 0,1 near BB 0; 2,3 near BB 1."""
    return Topology.from_platform(tiny_machine(bb_capacity_mb))


def free_by_chassis(topo: Topology, free: list[int]) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(topo.bb_count)]
    for c in sorted(free):
        out[topo.chassis_of_compute[c]].append(c)
    return out


# -- topology and state ------------------------------------------------------------
def test_topology_of_the_default_platform() -> None:
    assert (TOPO.compute_count, TOPO.bb_count, TOPO.bb_capacity_mb) == (96, 12, 40_000)
    assert TOPO.chassis_of_compute[7] == 0 and TOPO.chassis_of_compute[8] == 1
    # compute node 9 is in chassis 1 of group 0: own BB node, then the group's, then the rest
    assert TOPO.bb_preference[9] == (1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


def test_can_ever_run_needs_whole_shares() -> None:
    # 96 nodes need 8 shares per BB node: a share of 5000 MB fits 8 times in 40,000
    assert TOPO.can_ever_run(96, 5000)
    assert not TOPO.can_ever_run(96, 5001)
    assert not TOPO.can_ever_run(97, 1)
    assert not TOPO.can_ever_run(1, 40_001)


def test_state_from_running_jobs() -> None:
    job = RunningJob(7, 0.0, 100.0, 1000, Allocation((0, 1, 8), (0, 0, 1)))
    state = ClusterState.from_running(TOPO, [job])
    assert state.free_compute == tuple(i for i in range(96) if i not in (0, 1, 8))
    assert state.free_bb_mb[:3] == (38_000, 39_000, 40_000)


def test_state_rejects_a_node_used_twice() -> None:
    a = RunningJob(1, 0.0, 10.0, 0, Allocation((3,), (0,)))
    b = RunningJob(2, 0.0, 10.0, 0, Allocation((3,), (0,)))
    with pytest.raises(ValueError, match="allocated twice"):
        ClusterState.from_running(TOPO, [a, b])


def test_job_queue_is_a_sequence_of_jobs() -> None:
    jobs = [QueuedJob(5, 1.0, 60.0, 2, 300), QueuedJob(9, 2.0, 30.0, 1, 0)]
    queue = JobQueue.of(jobs)
    assert len(queue) == 2 and list(queue) == jobs and queue[-1] == jobs[1] and queue[0:1] == jobs[:1]
    assert queue.nodes.tolist() == [2, 1]


# -- allocation ------------------------------------------------------------------------
def test_allocation_keeps_shares_in_the_chassis() -> None:
    alloc = choose_allocation(TOPO, free_by_chassis(TOPO, list(range(96))), [40_000] * 12, 3, 10_000)
    assert alloc == Allocation((0, 1, 2), (0, 0, 0))


def test_allocation_spills_to_the_nearest_bb_node() -> None:
    # Only chassis 0 has free compute nodes; its BB node holds one 10,000 MB share.
    avail = [10_000] + [40_000] * 11
    alloc = choose_allocation(TOPO, free_by_chassis(TOPO, [0, 1, 2]), avail, 3, 10_000)
    # node 0 stays local; nodes 1 and 2 go to BB 1, the first of the group's other BB nodes
    assert alloc == Allocation((0, 1, 2), (0, 1, 1))


def test_allocation_prefers_chassis_whose_bb_node_has_room() -> None:
    # Chassis 0 has 8 free nodes but a full BB node; chassis 1 has 2 free nodes and room.
    avail = [0, 40_000] + [0] * 10
    free = [*range(8), 8, 9]
    alloc = choose_allocation(TOPO, free_by_chassis(TOPO, free), avail, 3, 10_000)
    # nodes 8, 9 (chassis 1) keep their share local; node 0 spills to BB 1
    assert alloc == Allocation((0, 8, 9), (1, 1, 1))


def test_allocation_never_splits_a_share_nor_overfills() -> None:
    # 12 BB nodes with 9,000 MB each host one 5,000 MB share each: 12 shares at most.
    avail = [9_000] * 12
    assert choose_allocation(TOPO, free_by_chassis(TOPO, list(range(96))), avail, 13, 5_000) is None
    alloc = choose_allocation(TOPO, free_by_chassis(TOPO, list(range(96))), avail, 12, 5_000)
    assert alloc is not None
    usage = alloc.bb_usage_mb(5_000, 12)
    assert usage == [5_000] * 12
    assert fits(96, avail, 12, 5_000) and not fits(96, avail, 13, 5_000)


def test_allocation_with_fixed_bb_counts() -> None:
    topo = tiny_topology()
    alloc = choose_allocation(topo, free_by_chassis(topo, [0, 1, 2, 3]), [100, 100], 2, 40, bb_counts=[0, 2])
    # both shares on BB 1: its own chassis' compute nodes 2 and 3 are taken
    assert alloc == Allocation((2, 3), (1, 1))
    assert choose_allocation(topo, free_by_chassis(topo, [0, 1]), [100, 100], 2, 60, bb_counts=[2, 0]) is None


# -- profile ---------------------------------------------------------------------------
def two_running_jobs_profile() -> AvailabilityProfile:
    topo = tiny_topology()
    running = [
        RunningJob(1, 0.0, 50.0, 60, Allocation((0,), (0,))),
        RunningJob(2, 0.0, 80.0, 30, Allocation((2, 3), (1, 1))),
    ]
    state = ClusterState.from_running(topo, running)
    return AvailabilityProfile.from_running(topo, running, 10.0, len(state.free_compute), state.free_bb_mb)


def test_profile_from_running_jobs() -> None:
    prof = two_running_jobs_profile()
    assert prof.times.tolist() == [10.0, 50.0, 80.0]
    assert prof.compute.tolist() == [1, 2, 4]
    assert prof.bb.tolist() == [[40, 40], [100, 40], [100, 100]]


def test_earliest_start_waits_for_compute_and_bb() -> None:
    prof = two_running_jobs_profile()
    assert prof.earliest_start(1, 40, 100.0)[0] == 0  # one node and 40 MB are free now
    assert prof.earliest_start(2, 10, 100.0)[0] == 1  # two nodes from t=50
    assert prof.earliest_start(1, 50, 100.0)[0] == 1  # 50 MB on one BB node from t=50
    assert prof.earliest_start(3, 40, 5.0)[0] == 2  # three nodes from t=80
    assert prof.earliest_start(3, 70, 5.0, with_bb=False)[0] == 2


def test_earliest_start_keeps_shares_on_one_bb_node() -> None:
    # Each segment alone has room for one 100 MB share, but on alternating BB nodes:
    # a job of [0, 15) would have to move its share from BB 0 to BB 1 at t=10.
    prof = AvailabilityProfile(
        np.array([0.0, 10.0, 20.0]), np.array([[2, 100, 0], [2, 0, 100], [2, 100, 100]], dtype=np.int64)
    )
    index, low = prof.earliest_start(1, 100, 15.0)
    assert (index, low.tolist()) == (1, [0, 100])


def test_occupied_splits_segments_and_leaves_the_original() -> None:
    prof = two_running_jobs_profile()
    new = prof.occupied(20.0, 40.0, 1, np.array([30, 0]))
    assert new.times.tolist() == [10.0, 20.0, 50.0, 60.0, 80.0]
    assert new.compute.tolist() == [1, 0, 1, 2, 4]
    assert new.bb.tolist() == [[40, 40], [10, 40], [70, 40], [100, 40], [100, 100]]
    assert prof.times.tolist() == [10.0, 50.0, 80.0]


def test_window_from_now() -> None:
    prof = two_running_jobs_profile().occupied(60.0, 10.0, 2, np.array([0, 20]))
    low_compute, low_bb = prof.window_from_now(55.0)  # [10, 65) crosses the hole at [60, 70)
    assert low_compute == 0 and low_bb.tolist() == [40, 20]


def test_reserve_bb_is_best_fit() -> None:
    # shares of 30 MB: BB 1 (40 MB) is the tightest that still hosts one, then BB 0, BB 2
    taken = reserve_bb(np.array([90, 40, 100]), 3, 30)
    assert taken.tolist() == [60, 30, 0]
    with pytest.raises(ValueError):
        reserve_bb(np.array([20, 20]), 1, 30)
