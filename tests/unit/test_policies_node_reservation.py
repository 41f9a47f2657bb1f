"""Concrete nodes as Slurm's cons_tres picks them (harness.policies.node_choice) and the
backfill tunable ``slurm_node_reservation``: every value computed by hand."""

from __future__ import annotations

import pytest

from harness.policies.node_choice import NodeReservation, best_fit_nodes, consecutive_runs, usable_nodes
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.policies.tunables import PolicyParamError
from harness.policies.workspace import Workspace

# 8 compute nodes in one chassis and one BB node (the burst buffer as Slurm's one license pool)
EIGHT = Topology(
    compute_count=8, bb_count=1, bb_capacity_mb=1000, chassis_of_compute=(0,) * 8, bb_preference=((0,),) * 8
)
COUNTED = "backfill-1"
CONCRETE = "backfill-1[slurm_node_reservation=true]"


def running(job_id: int, nodes: tuple[int, ...], end: float) -> RunningJob:
    return RunningJob(job_id, 0.0, end, 0, Allocation(nodes, (0,) * len(nodes)))


def queued(job_id: int, nodes: int, walltime: float, share_mb: int = 0) -> QueuedJob:
    return QueuedJob(job_id, 0.0, walltime, nodes, share_mb)


def started(policy: str, state: ClusterState, queue: list[QueuedJob]) -> dict[int, tuple[int, ...]]:
    """The jobs the policy starts at 0 and their nodes."""
    return {s.job_id: s.allocation.compute for s in get_policy(policy).decide(state, queue, 0.0).starts}


def test_runs_of_consecutive_nodes() -> None:
    assert consecutive_runs([5, 0, 1, 4, 7]) == [[0, 1], [4, 5], [7]]
    assert consecutive_runs([]) == []


def test_best_fit_takes_the_tightest_run_that_holds_the_job_from_its_start() -> None:
    usable = [0, 1, *range(4, 13), 20, 21, 22]  # runs of 2, 9 and 3
    assert best_fit_nodes(usable, 3) == [20, 21, 22]  # 3 holds it; 9 is looser
    assert best_fit_nodes(usable, 2) == [0, 1]  # the pair is tightest, not the lowest of 9
    assert best_fit_nodes(usable, 4) == [4, 5, 6, 7]  # only the run of 9 holds 4
    # 12: no run holds it; the longest (9) whole, then the tightest holding the other 3
    assert best_fit_nodes(usable, 12) == [*range(4, 13), 20, 21, 22]
    assert best_fit_nodes(usable, 15) is None
    # Equal runs: the lowest-indexed. The slice's job 19174 (4 nodes) at 1,437 s found c065-c066
    # and c094-c096 free and ran on c[065,094-096]: the run of 3 whole, then the pair's first.
    assert best_fit_nodes([10, 11, 20, 21], 2) == [10, 11]
    assert best_fit_nodes([64, 65, 93, 94, 95], 4) == [64, 93, 94, 95]


def test_a_reservation_blocks_a_job_only_if_the_job_runs_into_it() -> None:
    held = [NodeReservation(100.0, 600.0, frozenset({0, 1, 2}))]
    assert usable_nodes([1, 2, 5], held, 0.0, 99.0) == [1, 2, 5]  # ends before it begins
    assert usable_nodes([1, 2, 5], held, 0.0, 100.0) == [5]  # ends as it begins: Slurm's <=
    assert usable_nodes([1, 2, 5], held, 0.0, 101.0) == [5]
    assert usable_nodes([1, 2, 5], held, 600.0, 900.0) == [1, 2, 5]  # after it


def test_running_jobs_are_placed_as_cons_tres_places_them() -> None:
    # Busy: 2, 3 and 7; free runs 0-1 and 4-6. A 2-node job takes the pair (tightest); the
    # counted workspace takes the lowest free nodes.
    state = ClusterState.from_running(EIGHT, [running(1, (2, 3), 500.0), running(2, (7,), 500.0)])
    job = queued(10, 2, 100.0)
    ws = Workspace(state, 0.0, slurm_nodes=True)
    assert ws.try_start(job) and ws.starts[0].allocation.compute == (0, 1)
    ws = Workspace(state, 0.0, slurm_nodes=True)
    assert ws.try_start(queued(11, 3, 100.0)) and ws.starts[0].allocation.compute == (4, 5, 6)
    ws = Workspace(state, 0.0)
    assert ws.try_start(queued(11, 3, 100.0)) and ws.starts[0].allocation.compute == (0, 1, 4)


def test_the_counted_twin_backfills_a_job_that_the_concrete_reservation_refuses() -> None:
    # A holds 2-7 until 100; 0 and 1 are free. The top job T (7 nodes) starts at 100 when A ends:
    # all 8 nodes free then, one run: cons_tres reserves 0-6. Counted, 8 - 7 = 1 node is spare
    # from 100 on, so B (1 node, 1,000 s: past 100) backfills now; concretely both free nodes,
    # 0 and 1, are T's: B is refused.
    state = ClusterState.from_running(EIGHT, [running(1, (2, 3, 4, 5, 6, 7), 100.0)])
    queue = [queued(10, 7, 500.0), queued(11, 1, 1000.0)]
    assert started(COUNTED, state, queue) == {11: (0,)}
    assert started(CONCRETE, state, queue) == {}
    policy = get_policy(CONCRETE)
    assert policy.decide(state, queue, 0.0).reservations == ((10, 100.0),)
    # A job that ends before the reservation's start may use its nodes; one ending just as it
    # starts (at 100) may not in Slurm's backfill, while the counted twin starts it.
    assert started(CONCRETE, state, [queued(10, 7, 500.0), queued(12, 2, 99.0)]) == {12: (0, 1)}
    assert started(CONCRETE, state, [queued(10, 7, 500.0), queued(12, 2, 100.0)]) == {}
    assert started(COUNTED, state, [queued(10, 7, 500.0), queued(12, 2, 100.0)]) == {12: (0, 1)}


def test_a_candidate_that_fits_on_other_free_nodes_is_allowed() -> None:
    # A holds 0-5 until 100; 6 and 7 are free. T (7 nodes) is reserved on 0-6 at 100 (the first
    # 7 of the run 0-7): node 7 stays free of it, so B (1 node, past 100) starts there. C (2
    # nodes, past 100) would need 6 too: refused, as the count refuses it (one node spare).
    state = ClusterState.from_running(EIGHT, [running(1, (0, 1, 2, 3, 4, 5), 100.0)])
    assert started(CONCRETE, state, [queued(10, 7, 500.0), queued(11, 1, 1000.0)]) == {11: (7,)}
    assert started(CONCRETE, state, [queued(10, 7, 500.0), queued(13, 2, 1000.0)]) == {}
    assert started(COUNTED, state, [queued(10, 7, 500.0), queued(13, 2, 1000.0)]) == {}


def test_a_job_ending_as_the_reservation_begins_needs_its_license_then() -> None:
    # A holds 0-5 until 100. T (7 nodes, 140 MB each: 980 of the pool's 1,000 MB) is reserved at
    # 100 on 0-6. C (1 node, 100 MB, 100 s) ends at 100: on node 7 it needs none of T's nodes,
    # but Slurm's backfill counts its window closed, [0, 100], and at 100 the pool has 20 MB
    # left beside T: refused. The counted twin's window is [0, 100): C starts.
    state = ClusterState.from_running(EIGHT, [running(1, (0, 1, 2, 3, 4, 5), 100.0)])
    queue = [queued(10, 7, 500.0, 140), queued(11, 1, 100.0, 100)]
    assert started(COUNTED, state, queue) == {11: (6,)}
    assert started(CONCRETE, state, queue) == {}
    # 20 MB fit beside T: C then starts on node 7, off T's nodes.
    assert started(CONCRETE, state, [queue[0], queued(11, 1, 100.0, 20)]) == {11: (7,)}


def test_the_tunable() -> None:
    assert get_policy(COUNTED).slurm_nodes is False
    assert get_policy(CONCRETE).slurm_nodes is True
    with pytest.raises(PolicyParamError):
        get_policy("backfill-1[slurm_node_reservation=yes]")
