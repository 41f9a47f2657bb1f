"""Cerberus's knapsacks and selections on hand-built instances with known optima."""

from __future__ import annotations

import itertools
import random

import pytest

from harness.policies import knapsack
from harness.policies.cerberus import CerberusConfig, PhaseJob, select_run, select_staging, total_mb

# Six jobs waiting for stage-in with 100 GB of burst buffer free. The only subset
# moving all 100 GB is {2, 3, 4} (40 + 35 + 25); FCFS takes 55 + 40 = 95 and stops
# at the 35 GB job, which no longer fits.
STAGE_IN = [
    PhaseJob(1, 0.0, 4, 55_000, 100.0),
    PhaseJob(2, 1.0, 4, 40_000, 100.0),
    PhaseJob(3, 2.0, 4, 35_000, 100.0),
    PhaseJob(4, 3.0, 4, 25_000, 100.0),
    PhaseJob(5, 4.0, 4, 70_000, 100.0),
    PhaseJob(6, 5.0, 4, 12_000, 100.0),
]
KNAPSACK = CerberusConfig()
FCFS = CerberusConfig(knapsack=False)


def test_stage_in_knapsack_picks_the_known_optimum() -> None:
    chosen = select_staging(STAGE_IN, 100_000, now=10.0, config=KNAPSACK)
    assert chosen == [2, 3, 4]
    assert total_mb(STAGE_IN, chosen) == 100_000


def test_stage_in_fcfs_stops_at_the_first_job_that_does_not_fit() -> None:
    assert select_staging(STAGE_IN, 100_000, now=10.0, config=FCFS) == [1, 2]


def test_jobs_without_io_are_always_selected_at_stage_in() -> None:
    jobs = [PhaseJob(7, 0.0, 1, 0, 10.0), *STAGE_IN, PhaseJob(8, 9.0, 2, 0, 10.0)]
    assert select_staging(jobs, 0, now=10.0, config=KNAPSACK) == [7, 8]
    assert select_staging(jobs, 100_000, now=10.0, config=KNAPSACK) == [7, 2, 3, 4, 8]


def test_units_round_demands_up_and_capacity_down() -> None:
    # In 1 GB units the jobs weigh 2, 2 and 2 against a capacity of 2: one fits,
    # although 2,500 MB would hold 1,200 + 1,300 MB. In 100 MB units (12, 12, 13
    # against 25) that pair is the exact optimum.
    jobs = [PhaseJob(i, 0.0, 1, mb, 1.0) for i, mb in enumerate((1_200, 1_200, 1_300))]
    assert select_staging(jobs, 2_500, 1.0, KNAPSACK) == [0]
    fine = CerberusConfig(unit_mb=100)
    assert select_staging(jobs, 2_500, 1.0, fine) == [0, 2]


@pytest.mark.parametrize("seed", range(20))
def test_stage_in_never_exceeds_the_free_burst_buffer(seed: int) -> None:
    rng = random.Random(seed)
    jobs = [PhaseJob(i, 0.0, 1, rng.randrange(1, 40_000), 1.0) for i in range(rng.randrange(1, 15))]
    free = rng.randrange(0, 100_000)
    chosen = select_staging(jobs, free, 1.0, CerberusConfig(unit_mb=rng.choice((1, 7, 1000))))
    assert total_mb(jobs, chosen) <= free


def _brute_force(nodes: list[int], bb: list[int], profit: list[float], cap_n: int, cap_b: int) -> float:
    best = 0.0
    for r in range(len(nodes) + 1):
        for subset in itertools.combinations(range(len(nodes)), r):
            if sum(nodes[i] for i in subset) <= cap_n and sum(bb[i] for i in subset) <= cap_b:
                best = max(best, sum(profit[i] for i in subset))
    return best


@pytest.mark.parametrize("seed", range(25))
def test_two_constraint_knapsack_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 13)
    nodes = [rng.randrange(0, 20) for _ in range(n)]
    bb = [rng.randrange(0, 30) for _ in range(n)]
    profit = [float(rng.randrange(1, 100)) for _ in range(n)]
    cap_n, cap_b = rng.randrange(0, 50), rng.randrange(0, 60)
    chosen = knapsack.two_constraint(nodes, bb, profit, cap_n, cap_b)
    assert sum(nodes[i] for i in chosen) <= cap_n
    assert sum(bb[i] for i in chosen) <= cap_b
    assert sum(profit[i] for i in chosen) == _brute_force(nodes, bb, profit, cap_n, cap_b)


@pytest.mark.parametrize("seed", range(10))
def test_subset_sum_matches_brute_force(seed: int) -> None:
    rng = random.Random(100 + seed)
    weights = [rng.randrange(0, 50) for _ in range(rng.randrange(1, 13))]
    cap = rng.randrange(0, 150)
    chosen = knapsack.subset_sum(weights, cap)
    best = max(
        sum(s) for r in range(len(weights) + 1) for s in itertools.combinations(weights, r) if sum(s) <= cap
    )
    assert sum(weights[i] for i in chosen) == best


def test_run_knapsack_maximises_node_seconds() -> None:
    # 10 nodes and 50 GB free. A (6 nodes x 1,000 s = 6,000) and B (4 x 1,000 = 4,000)
    # fill the nodes for 10,000; C (8 x 1,100 = 8,800) alone is less; D fits the
    # nodes but not the burst buffer.
    jobs = [
        PhaseJob(1, 0.0, 8, 10_000, 1_100.0),
        PhaseJob(2, 1.0, 6, 20_000, 1_000.0),
        PhaseJob(3, 2.0, 4, 30_000, 1_000.0),
        PhaseJob(4, 3.0, 1, 60_000, 99_000.0),
    ]
    assert select_run(jobs, 10, 50_000, now=5.0, config=KNAPSACK) == [2, 3]
    assert select_run(jobs, 10, 50_000, now=5.0, config=FCFS) == [1]


# The big job (10 nodes x 100 s) loses to the two small ones (5 x 1,000 s each)
# until it has waited longer than the threshold; then only it may start, and
# nothing starts while it does not fit.
STARVED = [
    PhaseJob(1, 0.0, 10, 0, 100.0),
    PhaseJob(2, 50.0, 5, 0, 1_000.0),
    PhaseJob(3, 60.0, 5, 0, 1_000.0),
]


def test_starvation_guard_dispatches_the_job_past_the_threshold() -> None:
    guard = CerberusConfig(starvation_s=500.0)
    assert select_run(STARVED, 10, 0, now=400.0, config=guard) == [2, 3]
    assert select_run(STARVED, 10, 0, now=501.0, config=guard) == [1]
    assert select_run(STARVED, 8, 0, now=501.0, config=guard) == []


def test_starvation_guard_at_stage_in_checks_the_burst_buffer_only() -> None:
    # Job 1 (4 nodes, 55 GB) has waited past 5 s at t = 10: it goes first, though
    # staging frees no nodes; then the knapsack fills the 45 GB left: 40 GB (job 2).
    guard = CerberusConfig(starvation_s=5.0)
    starved = [STAGE_IN[0], *(PhaseJob(j.job_id, 9.0, j.nodes, j.bb_mb, j.walltime) for j in STAGE_IN[1:])]
    assert select_staging(starved, 100_000, now=10.0, config=guard) == [1, 2]
    assert select_staging(starved, 50_000, now=10.0, config=guard) == []


def test_bad_configuration_is_named() -> None:
    with pytest.raises(ValueError, match="unknown Cerberus profit 'gold'"):
        CerberusConfig(profit="gold")
    with pytest.raises(knapsack.KnapsackError, match="capacity must be >= 0"):
        knapsack.subset_sum([1], -1)


def test_registry_names() -> None:
    from harness.policies.cerberus import CerberusRun
    from harness.policies.registry import get_policy

    knap, fcfs = get_policy("cerberus"), get_policy("cerberus-fcfs")
    assert isinstance(knap, CerberusRun) and knap.config.knapsack
    assert isinstance(fcfs, CerberusRun) and not fcfs.config.knapsack


def test_cerberus_run_dispatches_the_starving_job_in_a_simulation() -> None:
    # J1 takes all 96 nodes until t=1000. At t=1000 the knapsack prefers the sixteen
    # 6-node jobs (16 x 6 x 5,000 node-seconds) to J2 (96 x 100); once J2 has waited
    # past the threshold it goes first and the small jobs follow when it ends.
    import pandas as pd

    from harness.platform import load_platform
    from harness.policies.cerberus import CerberusRun
    from harness.sim.checks import check_schedule
    from harness.sim.engine import simulate

    rows = [(1, 0.0, 1_000.0, 1_000.0, 96, 0), (2, 1.0, 100.0, 100.0, 96, 0)]
    rows += [(3 + k, 2.0, 5_000.0, 5_000.0, 6, 0) for k in range(16)]
    plan = pd.DataFrame(rows, columns=["job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb"])
    platform = load_platform()
    for threshold, j2_start, small_start in ((1e9, 6_000.0, 1_000.0), (100.0, 1_000.0, 1_100.0)):
        result = simulate(plan, CerberusRun("cerberus", CerberusConfig(starvation_s=threshold)), platform)
        assert check_schedule(result.jobs, platform) == []
        start = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
        assert start[2] == j2_start and all(start[j] == small_start for j in range(3, 19))
