"""Cerberus in three phases (``cerberus-3phase``): demands, the two knapsacks, a simulation.

Platforms are ``tiny`` ones of ``test_simulator_io``: links of 100 MB/s everywhere, so
100 MB take 1 s. Knapsacks count the burst buffer in units of 10 MB (``unit_mb=10``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harness.flow.io_network import IONetwork
from harness.policies.base import SelectsStagedRuns
from harness.policies.cerberus import CerberusConfig
from harness.policies.cerberus_phases import CerberusThreePhase
from harness.policies.phase_demand import PhaseDemand, staging_s_alone
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from tests.unit.test_sim_staging import staged
from tests.unit.test_simulator_io import io_plan, tiny

TEN_MB = CerberusConfig(unit_mb=10)
TEN_MB_FCFS = CerberusConfig(knapsack=False, unit_mb=10)


def test_one_allocation_holds_the_request_in_every_phase_and_asks_for_it_once() -> None:
    demand = PhaseDemand.slurm_life_cycle(QueuedJob(1, 0.0, 100.0, 4, 250))
    assert (demand.bb_in_mb, demand.bb_run_mb, demand.bb_out_mb, demand.held_mb) == (1000, 1000, 1000, 1000)
    assert demand.asked_at_stage_in() == 1000
    assert demand.asked_at_run() == (4, 0)
    assert demand.asked_at_stage_out() == 0
    # demands that differ per phase (BBSim's): one allocation must hold the largest
    assert PhaseDemand(2, 300, 500, 100).held_mb == 500


def test_staging_time_alone_is_the_simulators_max_min_share() -> None:
    # One BB node: 2 compute nodes x 50 MB = 100 MB over BB link and PFS (100 MB/s): 1 s.
    assert staging_s_alone(IONetwork.from_platform(tiny(1, 2, 100)), [(0, 2)], 50.0) == pytest.approx(1.0)
    # Two BB nodes, 100 MB on each: the BB links give 100 MB/s each but the PFS link
    # (100 MB/s) is shared, 50 MB/s each: 2 s.
    two = IONetwork.from_platform(tiny(2, 2, 100))
    assert staging_s_alone(two, [(0, 2), (1, 2)], 50.0) == pytest.approx(2.0)
    # one compute node alone is capped by its card (100 MB/s): 50 MB take 0.5 s
    assert staging_s_alone(two, [(1, 1)], 50.0) == pytest.approx(0.5)
    assert staging_s_alone(two, [(0, 2)], 0.0) == 0.0


def apart(topology: Topology, running: list[RunningJob] | None = None) -> ClusterState:
    """A state of the simulator's staging off the allocation."""
    state = ClusterState.from_running(topology, running or [])
    return ClusterState(
        topology, state.running, state.free_compute, state.free_bb_mb, {}, (), staged_apart=True
    )


# tiny(2, 2, 100): chassis 0 (c0, c1, bb0), chassis 1 (c2, c3, bb1); 2 x 100 MB of BB.
# Requests in units of 10 MB: J1 2 x 50 MB = 10, J2 1 x 70 = 7, J3 1 x 60 = 6, J4 1 x 40 = 4,
# J5 no I/O. Capacity 20 units: the only subset filling it is {J1, J3, J4} (10 + 6 + 4;
# J2 with any other gives 17 or less). J5 takes no BB and is always selected.
QUEUE = [
    QueuedJob(1, 0.0, 100.0, 2, 50),
    QueuedJob(2, 1.0, 100.0, 1, 70),
    QueuedJob(3, 2.0, 100.0, 1, 60),
    QueuedJob(4, 3.0, 100.0, 1, 40),
    QueuedJob(5, 4.0, 100.0, 2, 0),
]


def test_stage_in_knapsack_fills_the_burst_buffer_and_places_the_shares() -> None:
    topology = Topology.from_platform(tiny(2, 2, 100))
    decision = CerberusThreePhase("c", TEN_MB).decide(apart(topology), QUEUE, now=5.0)
    # In queue order: J1's two shares stay in chassis 0 (bb0 full); J3 and J4 go to
    # chassis 1 (60 + 40 MB on bb1); J5 takes no BB (its share 0 goes to its own chassis).
    assert [(s.job_id, s.allocation) for s in decision.starts] == [
        (1, Allocation((0, 1), (0, 0))),
        (3, Allocation((2,), (1,))),
        (4, Allocation((2,), (1,))),  # a wish only: the run selection takes the nodes free then
        (5, Allocation((0, 1), (0, 0))),
    ]
    # FCFS per queue: J1 (100 MB, 100 left), J2 (70, 30 left), J3 (60) does not fit: stop.
    fcfs = CerberusThreePhase("f", TEN_MB_FCFS).decide(apart(topology), QUEUE, now=5.0)
    assert [s.job_id for s in fcfs.starts] == [1, 2, 5]


def test_a_pick_whose_shares_do_not_fit_one_bb_node_waits() -> None:
    topology = Topology.from_platform(tiny(2, 2, 100))
    # bb0 holds J9's 90 MB: 10 MB left there, 100 on bb1, 110 summed (11 units). J3 (6)
    # and J4 (4) fit the sum; one by one both fit bb1 only: 60 then 40 MB there.
    holder = RunningJob(9, 0.0, 50.0, 90, Allocation((0,), (0,)))
    decision = CerberusThreePhase("c", TEN_MB).decide(apart(topology, [holder]), QUEUE[2:4], now=5.0)
    assert [(s.job_id, s.allocation.bb) for s in decision.starts] == [(3, (1,)), (4, (1,))]
    # 50 MB free on each BB node: a 1-node job of 100 MB fits the 100 MB summed (the
    # knapsack picks it) but no BB node can hold its share: it waits.
    halves = [RunningJob(8, 0.0, 50.0, 50, Allocation((0,), (0,))),
              RunningJob(9, 0.0, 50.0, 50, Allocation((2,), (1,)))]  # fmt: skip
    whole = [QueuedJob(7, 0.0, 100.0, 1, 100)]
    assert CerberusThreePhase("c", TEN_MB).decide(apart(topology, halves), whole, now=5.0).starts == ()


# Staged-in jobs and 3 free compute nodes; profit = nodes x walltime.
# D 3 nodes x 60 s = 180, A 2 x 100 = 200, B 1 x 150 = 150, C 1 x 120 = 120. Within 3
# nodes: {A, B} 350, {A, C} 320, {B, C} 270, {D} 180: the knapsack takes A and B.
STAGED = [
    QueuedJob(4, 0.0, 60.0, 3, 10),  # D
    QueuedJob(1, 1.0, 100.0, 2, 10),  # A
    QueuedJob(2, 2.0, 150.0, 1, 10),  # B
    QueuedJob(3, 3.0, 120.0, 1, 10),  # C
]


def test_run_knapsack_over_staged_in_jobs_weighs_nodes_only() -> None:
    topology = Topology.from_platform(tiny(2, 2, 100))
    busy = RunningJob(9, 0.0, 50.0, 100, Allocation((0,), (0,)))  # c0 busy: 3 nodes free
    state = apart(topology, [busy])
    assert CerberusThreePhase("c", TEN_MB).select_staged(state, STAGED, now=10.0) == [1, 2]
    # FCFS: D first (3 nodes), then nothing fits.
    assert CerberusThreePhase("f", TEN_MB_FCFS).select_staged(state, STAGED, now=10.0) == [4]
    # Every job has waited past 5 s at t = 10: the guard takes them oldest first, D (3
    # nodes), then A (2) does not fit and stops the queue: D alone.
    guard = CerberusConfig(unit_mb=10, starvation_s=5.0)
    assert CerberusThreePhase("g", guard).select_staged(state, STAGED, now=10.0) == [4]


def test_alloc_only_state_decides_as_one_phase_cerberus() -> None:
    topology = Topology.from_platform(tiny(2, 2, 100))
    state = ClusterState.idle(topology)
    three = get_policy("cerberus-3phase[unit_mb=10]").decide(state, QUEUE, now=5.0)
    one = get_policy("cerberus[unit_mb=10]").decide(state, QUEUE, now=5.0)
    assert three.starts and three.starts == one.starts
    assert isinstance(get_policy("cerberus-3phase"), SelectsStagedRuns)
    assert not isinstance(get_policy("cerberus"), SelectsStagedRuns)
    fcfs = get_policy("cerberus-3phase-fcfs")
    assert isinstance(fcfs, CerberusThreePhase) and not fcfs.config.knapsack


def five_jobs() -> list[dict]:
    """tiny(1, 4, 100): 4 compute nodes, one BB node of 100 MB. All submitted at 0.

    ========  =====  ==========  ========  =======  ========  ===================
    job       nodes  BB (MB)     stage-in  compute  walltime  profit (nodes x wt)
    ========  =====  ==========  ========  =======  ========  ===================
    J1        2      2 x 30 = 60  0         10       20        40
    J2        1      1 x 50 = 50  50 MB     10       20        20
    J3        2      2 x 20 = 40  0         10       25        50
    J4        3      none         0         5        10        30
    J5        1      none         0         5        50        50
    ========  =====  ==========  ========  =======  ========  ===================
    """
    rows = [
        staged(1, 10.0, 0.0, 0.0, walltime=20.0, bb_per_node_mb=30),
        staged(2, 10.0, 50.0, 0.0, walltime=20.0, bb_per_node_mb=50, nodes=1),
        staged(3, 10.0, 0.0, 0.0, walltime=25.0, bb_per_node_mb=20),
        staged(4, 5.0, 0.0, 0.0, walltime=10.0, bb_per_node_mb=0, nodes=3),
        staged(5, 5.0, 0.0, 0.0, walltime=50.0, bb_per_node_mb=0, nodes=1),
    ]
    return rows


def schedule(policy: str) -> dict[int, tuple[float, float, float, float]]:
    platform = tiny(1, 4, 100)
    result = simulate(io_plan(five_jobs()), get_policy(policy), platform, model="io-aware", staging="outside")
    assert check_schedule(result.jobs, platform) == []
    jobs = result.jobs.set_index("job_id")
    return {
        int(j): (float(r["bb_start"]), float(r["start"]), float(r["end"]), float(r["bb_end"]))
        for j, r in jobs.iterrows()
    }


def test_three_phase_schedule_derived_by_hand() -> None:
    # t=0, Q_I (100 MB = 10 units): J1 6 + J3 4 = 10 fills it (J2's 5 with either is
    # less); J4, J5 (no I/O) always. All four stage in nothing: staged in at 0.
    # t=0, Q_R (4 nodes): {J3, J5} 100 beats {J1, J5} 90, {J1, J3} 90, {J4, J5} 80.
    # J3 runs [0, 10], J5 [0, 5]. 1 node left: J1 (2) and J4 (3) wait.
    # t=5: J5 ends, 2 nodes: J1 runs [5, 15] (J4 needs 3). BB full (60 + 40): J2 waits.
    # t=10: J3 ends, its 40 MB freed: J2's 50 still does not fit; J4 (3) not in 2 nodes.
    # t=15: J1 ends: 4 nodes, J4 runs [15, 20]; 100 MB free: J2 stages 50 MB in
    # (1 node, 100 MB/s) over [15, 15.5], runs [15.5, 25.5] on the last node.
    assert schedule("cerberus-3phase[unit_mb=10]") == {
        1: (0.0, 5.0, 15.0, 15.0),
        2: (15.0, 15.5, 25.5, 25.5),
        3: (0.0, 0.0, 10.0, 10.0),
        4: (0.0, 15.0, 20.0, 20.0),
        5: (0.0, 0.0, 5.0, 5.0),
    }


def test_three_phase_fcfs_schedule_derived_by_hand() -> None:
    # t=0, Q_I in order: J1 60 MB (40 left), J2 50 does not fit: stop; J4, J5 always.
    # t=0, Q_R in staging order: J1 (2 of 4 nodes), J4 (3) does not fit: stop.
    # t=10: J1 ends: 4 nodes: J4 and J5 run [10, 15]. 100 MB free: J2 (50) and J3 (40)
    # stage in; J3 at once, J2 over [10, 10.5]; no node is free until 15.
    # t=15: J3 then J2 (staging order) run [15, 25].
    assert schedule("cerberus-3phase-fcfs[unit_mb=10]") == {
        1: (0.0, 0.0, 10.0, 10.0),
        2: (10.0, 15.0, 25.0, 25.0),
        3: (10.0, 15.0, 25.0, 25.0),
        4: (0.0, 10.0, 15.0, 15.0),
        5: (0.0, 10.0, 15.0, 15.0),
    }


def test_simulate_command_runs_three_phases() -> None:
    import json

    from click.testing import CliRunner

    from harness.cli import main

    policies = "cerberus-3phase,cerberus-3phase-fcfs"
    args = ["simulate", "--model", "io-aware", "--staging", "outside", "-p", policies,
            "--first-n", "20", "--json", "bundled"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    summary = json.loads(result.output)
    assert summary["cerberus-3phase"]["jobs"] == 20 and summary["cerberus-3phase-fcfs"]["jobs"] == 20


def test_a_run_selection_of_a_job_not_staged_in_is_refused() -> None:
    from harness.sim.machine import SimulationError

    class Wrong(CerberusThreePhase):
        def select_staged(self, state: ClusterState, staged: Sequence[QueuedJob], now: float) -> list[int]:
            return [999]

    plan = io_plan(five_jobs())
    with pytest.raises(SimulationError, match="not staged in"):
        simulate(plan, Wrong("w", TEN_MB), tiny(1, 4, 100), model="io-aware", staging="outside")
