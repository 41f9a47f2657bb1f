"""Lackner's storage-aware scheduler: tier choice and backfilling on hand-built cases."""

from __future__ import annotations

import pytest

from harness.policies import tiers
from harness.policies.sas import StorageAware
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.policies.tiers import JobIo, TierChooser, TierRates, TierStart

# Lackner's shared pool: 8 compute nodes and one HPS of 1,000 MB.
TOPO = Topology(8, 1, 1_000, (0,) * 8, ((0,),) * 8, ((0,),))
RATES = TierRates.lackner(10.0)  # R_lps 10 MB/s, R_hps 150 MB/s, R_stage 50 MB/s

# 4 nodes, walltime 1,000 s on LPS, 5,000 MB of I/O and 800 MB of HPS wanted. On HPS
# the I/O takes 5,000/150 instead of 5,000/10 s: the run lasts 1,000 - 466.67 =
# 533.33 s, plus 500/50 = 10 s of stage-in and 10 s of stage-out: 553.33 s holding
# 4 nodes and 200 MB of HPS each.
JOB = QueuedJob(1, 0.0, 1_000.0, 4, 200)
IO = {1: JobIo(input_mb=500.0, output_mb=500.0, data_mb=4_000.0, storage_mb=800)}


def state_with_hps_busy_until(end: float) -> ClusterState:
    """Two nodes run a job holding 2 x 450 = 900 MB of the HPS until ``end``."""
    return ClusterState.from_running(TOPO, [RunningJob(9, 0.0, end, 450, Allocation((6, 7), (0, 0)))])


def sas(kind: str = "sas", p: float = 0.5) -> StorageAware:
    return StorageAware("sas", TierChooser(kind, p), RATES, IO)


def test_tier_plans_follow_the_rates() -> None:
    plans = tiers.plans(1_000.0, 4, IO[1], RATES)
    assert plans["lps"] == tiers.TierPlan("lps", 1_000.0, 0)
    assert plans["hps"].duration == pytest.approx(10.0 + 1_000.0 - 500.0 + 5_000.0 / 150.0 + 10.0)
    assert plans["hps"].share_mb == 200


def test_sas_takes_hps_when_it_is_free() -> None:
    decision = sas().decide(ClusterState.idle(TOPO), [JOB], now=0.0)
    assert [(s.job_id, s.tier) for s in decision.starts] == [(1, "hps")]
    assert isinstance(decision.starts[0], TierStart)


def test_sas_takes_lps_when_the_hps_wait_exceeds_the_gain() -> None:
    # HPS free at t=2,000: 2,000 + 553.33 > 0 + 1,000 on LPS.
    decision = sas().decide(state_with_hps_busy_until(2_000.0), [JOB], now=0.0)
    assert [(s.job_id, s.tier) for s in decision.starts] == [(1, "lps")]


def test_sas_waits_for_hps_when_the_wait_is_shorter_than_the_gain() -> None:
    # HPS free at t=300: 300 + 553.33 = 853.33 < 1,000, so the job waits for it.
    decision = sas().decide(state_with_hps_busy_until(300.0), [JOB], now=0.0)
    assert decision.starts == ()
    assert decision.reservations == ((1, 300.0),)


def test_jobs_without_declared_io_go_to_lps() -> None:
    job = QueuedJob(2, 0.0, 100.0, 1, 0)
    decision = sas().decide(ClusterState.idle(TOPO), [job], now=0.0)
    assert [(s.job_id, s.tier) for s in decision.starts] == [(2, "lps")]


@pytest.mark.parametrize(
    ("kind", "p", "started"),
    [("hps", 0.5, []), ("lps", 0.5, [(1, "lps")]), ("random", 0.0, [(1, "lps")]), ("random", 1.0, [])],
)
def test_baselines_ignore_the_turnaround(kind: str, p: float, started: list[tuple[int, str]]) -> None:
    decision = sas(kind, p).decide(state_with_hps_busy_until(2_000.0), [JOB], now=0.0)
    assert [(s.job_id, s.tier) for s in decision.starts] == started


def test_random_tier_is_stable_per_job_and_near_p() -> None:
    chooser = TierChooser("random", 0.3, seed=7)
    draws = [chooser.fixed(j, IO[1]) for j in range(2_000)]
    assert draws == [chooser.fixed(j, IO[1]) for j in range(2_000)]
    assert 0.27 < draws.count("hps") / 2_000 < 0.33


def test_backfilling_is_shortest_first_with_ties_by_storage() -> None:
    # The head needs all 8 nodes; 2 are busy until t=100, so it is reserved at 100.
    # Three 2-node jobs could use the 6 free nodes only if they end by t=100: B and
    # C do (50 s), D (500 s) does not. B and C tie on walltime; C wants less storage
    # and goes first. Without declared I/O all run on LPS.
    state = ClusterState.from_running(TOPO, [RunningJob(9, 0.0, 100.0, 0, Allocation((6, 7), (0, 0)))])
    queue = [
        QueuedJob(1, 0.0, 1_000.0, 8, 0),
        QueuedJob(2, 1.0, 50.0, 2, 0),
        QueuedJob(3, 2.0, 50.0, 2, 0),
        QueuedJob(4, 3.0, 500.0, 2, 0),
    ]
    io = {2: JobIo(storage_mb=50), 3: JobIo(storage_mb=10)}
    policy = StorageAware("sas", TierChooser("lps"), RATES, io)
    decision = policy.decide(state, queue, now=0.0)
    assert [s.job_id for s in decision.starts] == [3, 2]
    assert decision.reservations == ((1, 100.0),)


def test_bad_chooser_is_named() -> None:
    with pytest.raises(ValueError, match="unknown tier choice 'ssd'"):
        TierChooser("ssd")
    with pytest.raises(ValueError, match=r"probability of HPS must be in \[0, 1\]"):
        TierChooser("random", 1.5)
