"""Herbein's I/O-aware FCFS/EASY against the I/O-ignorant twins on hand-built hierarchies."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from harness.policies.base import Decision
from harness.policies.ioaware import IoAware, IoTreeSpec
from harness.policies.iotree import Bandwidth, IoTree
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology

# 4 nodes on 2 edge switches (2 nodes each), one BB node per switch of 1,000 MB.
TOPO = Topology(4, 2, 1_000, (0, 0, 1, 1), ((0, 1), (0, 1), (1, 0), (1, 0)), ((0,), (1,)))
# Node links 100 MB/s, switches 100 MB/s, core 1,000 MB/s, PFS 100 MB/s.
SPEC = IoTreeSpec(100.0, 100.0, (("core", 1_000.0), ("pfs", 100.0)))
TREE = SPEC.build(TOPO)


def policy(aware: bool, backfill: bool = True, rates: dict[int, float] | None = None) -> IoAware:
    return IoAware("io", backfill=backfill, aware=aware, spec=SPEC, node_rate_mb_s=30.0, rates=rates)


def true_use(decision: Decision, rates: dict[int, float], running: Sequence[RunningJob] = ()) -> Bandwidth:
    """The bandwidth the started and running jobs really draw (ignorant or not)."""
    bw = Bandwidth(TREE)
    for job in running:
        bw.take(job.allocation.compute, rates.get(job.job_id, 30.0))
    for s in decision.starts:
        bw.take(s.allocation.compute, rates.get(s.job_id, 30.0))
    return bw


# A and B take 2 nodes x 30 MB/s each: 120 MB/s together against a 100 MB/s PFS.
TWO = [QueuedJob(1, 0.0, 100.0, 2, 0), QueuedJob(2, 1.0, 100.0, 2, 0)]


@pytest.mark.parametrize("backfill", [False, True])
def test_aware_never_oversubscribes_while_ignorant_does(backfill: bool) -> None:
    idle = ClusterState.idle(TOPO)
    aware = policy(True, backfill).decide(idle, TWO, now=0.0)
    ignorant = policy(False, backfill).decide(idle, TWO, now=0.0)
    assert [s.job_id for s in aware.starts] == [1]
    assert true_use(aware, {}).overloaded_links() == []
    assert [s.job_id for s in ignorant.starts] == [1, 2]
    assert true_use(ignorant, {}).overloaded_links() == ["pfs"]


def test_switch_bandwidth_spreads_a_job_over_switches() -> None:
    # Switches of 50 MB/s: each carries one node of 40 MB/s, the PFS both (80 <= 100).
    spec = IoTreeSpec(100.0, 50.0, (("core", 1_000.0), ("pfs", 100.0)))
    io = IoAware("io", spec=spec, node_rate_mb_s=40.0)
    decision = io.decide(ClusterState.idle(TOPO), [QueuedJob(1, 0.0, 10.0, 2, 0)], 0.0)
    assert decision.starts[0].allocation.compute == (0, 2)


def test_a_rate_above_the_node_link_never_fits() -> None:
    decision = policy(True, rates={1: 150.0}).decide(
        ClusterState.idle(TOPO), [QueuedJob(1, 0.0, 10.0, 1, 0)], 0.0
    )
    assert decision.starts == ()


def test_easy_backfills_only_what_leaves_the_heads_bandwidth() -> None:
    # R (nodes 0-1, 2 x 30 MB/s) runs until t=100. The head H (2 x 30) fits the
    # nodes now but not the PFS (60 + 60 > 100): its shadow time is t=100. S (1 node,
    # 20 MB/s, 50 s) ends before then and starts. L (1 node, 20 MB/s, 500 s) runs past
    # it, beside H: 60 + 20 = 80 <= 100 on the PFS, so it starts too. M (1 node,
    # 30 MB/s, 500 s) would make 60 + 20 + 30 = 110 at t=100 and waits.
    running = [RunningJob(9, 0.0, 100.0, 0, Allocation((0, 1), (0, 0)))]
    state = ClusterState.from_running(TOPO, running)
    rates = {9: 30.0, 1: 30.0, 2: 20.0, 3: 20.0, 4: 30.0}
    queue = [
        QueuedJob(1, 0.0, 1_000.0, 2, 0),
        QueuedJob(2, 1.0, 50.0, 1, 0),
        QueuedJob(3, 2.0, 500.0, 1, 0),
        QueuedJob(4, 3.0, 500.0, 1, 0),
    ]
    decision = policy(True, rates=rates).decide(state, queue, now=0.0)
    assert [s.job_id for s in decision.starts] == [2, 3]
    assert decision.reservations == ((1, 100.0),)
    assert true_use(decision, rates, running).overloaded_links() == []


def test_burst_buffer_shares_are_honoured() -> None:
    # Each BB node holds 1,000 MB: a 4-node job of 600 MB per node does not fit.
    decision = policy(False).decide(ClusterState.idle(TOPO), [QueuedJob(1, 0.0, 10.0, 4, 600)], 0.0)
    assert decision.starts == ()


def test_herbein_machine() -> None:
    tree = IoTree.herbein(0.3)
    assert tree.nodes == 3_888 and tree.switches == 24
    assert dict(tree.chain) == {"core": 432_000.0, "pfs": pytest.approx(49_000.0)}
    bw = Bandwidth(tree)
    # 18 MB/s per node: the 49 GB/s PFS carries 2,722 nodes, not all 3,888.
    assert bw.chain_room(18.0) == 2_722
    assert not bw.fits(3_888, 18.0) and bw.fits(2_722, 18.0)
    with pytest.raises(ValueError, match="underprovisioning must be in"):
        IoTree.herbein(1.0)


def test_registry_names() -> None:
    from harness.policies.registry import get_policy

    easy, ignorant, fcfs = get_policy("io-easy"), get_policy("io-ignorant-easy"), get_policy("io-fcfs")
    assert isinstance(easy, IoAware) and (easy.backfill, easy.aware) == (True, True)
    assert isinstance(ignorant, IoAware) and (ignorant.backfill, ignorant.aware) == (True, False)
    assert isinstance(fcfs, IoAware) and (fcfs.backfill, fcfs.aware) == (False, True)


def test_a_job_the_empty_machine_cannot_carry_does_not_block_the_queue() -> None:
    # 4 nodes x 30 MB/s = 120 MB/s > the 100 MB/s PFS: never satisfiable (Herbein rejects
    # it at submission); the job behind it starts.
    queue = [QueuedJob(1, 0.0, 10.0, 4, 0), QueuedJob(2, 1.0, 10.0, 1, 0)]
    for backfill in (False, True):
        decision = policy(True, backfill).decide(ClusterState.idle(TOPO), queue, 0.0)
        assert [s.job_id for s in decision.starts] == [2]


class _Watched(list[QueuedJob]):
    """A queue that counts the jobs a policy has looked at."""

    seen = 0

    def __iter__(self) -> Iterator[QueuedJob]:
        for job in super().__iter__():
            self.seen += 1
            yield job


def test_fcfs_looks_no_further_than_the_first_job_that_does_not_fit() -> None:
    # Job 1 takes 2 of the 4 nodes (60 MB/s of the PFS's 100); job 2 (2 x 30) would
    # overload the PFS: FCFS stops there and never looks at the 1,000 jobs behind it.
    queue = _Watched([QueuedJob(i, float(i), 100.0, 2, 0) for i in range(1, 1_003)])
    decision = policy(True, backfill=False).decide(ClusterState.idle(TOPO), queue, now=0.0)
    assert [s.job_id for s in decision.starts] == [1]
    assert queue.seen == 2
