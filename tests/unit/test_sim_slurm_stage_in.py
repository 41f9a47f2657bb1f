"""The twin of Slurm's own burst-buffer stage-in (``stage_in="slurm"``,
:mod:`harness.sim.slurm_stage_in`) on hand-computed schedules.

The tiny platform of ``test_simulator_io``: every link 100 MB/s, one BB node (the pool).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.emulation.collect.fidelity import stage_in_for
from harness.policies.registry import get_policy
from harness.policies.state import Allocation, ClusterState, QueuedJob, RunningJob, Topology
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from harness.sim.machine import SimulationError
from harness.sim.slurm_stage_in import SlurmStageIn
from harness.sim.staged_machine import PoolMachine
from harness.sim.staging import SlurmPasses
from tests.unit.test_sim_staging import staged
from tests.unit.test_simulator_io import io_plan, tiny


def run(rows: list[dict], stage_in: str, per_chassis: int = 2, capacity_mb: int = 100):
    platform = tiny(1, per_chassis, capacity_mb)
    result = simulate(io_plan(rows), get_policy("fcfs"), platform, model="io-aware", staging="pool",
                      staged_start="backfill", stage_in=stage_in)  # fmt: skip
    assert check_schedule(result.jobs, platform) == []
    return result.jobs.set_index("job_id")


def test_slurm_stages_a_job_in_while_its_nodes_are_busy() -> None:
    # 2 nodes, a 100 MB pool. A (both nodes, 2 x 25 MB of BB, nothing to stage) runs [0, 10].
    # B (both nodes, 50 MB of BB) arrives at 1 and the pool has 50 MB left: Slurm stages its
    # 2 x 50 MB in at once, [1, 2], and B waits for the nodes until 10: [10, 15]. A policy
    # begins B's stage-in only when the nodes are free too: [10, 11], run [11, 16].
    rows = [staged(1, 10.0, 0.0, 0.0), staged(2, 5.0, 50.0, 0.0, submit=1.0)]
    slurm = run(rows, "slurm")
    assert (slurm.loc[2, "bb_start"], slurm.loc[2, "stage_in_s"]) == (1.0, 1.0)
    assert (slurm.loc[2, "start"], slurm.loc[2, "end"], slurm.loc[2, "node_wait_s"]) == (10.0, 15.0, 8.0)
    policy = run(rows, "policy")
    assert (policy.loc[2, "bb_start"], policy.loc[2, "start"], policy.loc[2, "end"]) == (10.0, 11.0, 16.0)


def test_past_a_job_waiting_for_nodes_the_stage_ins_of_jobs_with_free_nodes_go_first() -> None:
    # 4 nodes, a 100 MB pool. A (2 nodes, 20 MB) runs [0, 10]. B (4 nodes, 40 MB) arrives at
    # 0.5: the main scheduler stages it in (nothing to stage) and it waits for nodes, so the
    # main scheduler goes no further. Pool left: 40 MB.
    # C (4 nodes, 60 MB) arrives at 1: it does not fit, and Slurm's stage-in stops there.
    # D (1 node, 30 MB, walltime 5) arrives at 1.5: its node is free now, so its expected
    # start comes before C's: staged in at 1.5, it backfills at once (it ends by 6.5, long
    # before B's reservation at A's walltime end) and runs [1.5, 4.5].
    # At 10 A ends: B runs [10, 20]; the pool has 60 MB: C is staged in at 10 and runs [20, 22].
    rows = [
        staged(1, 10.0, 0.0, 0.0, nodes=2, bb_per_node_mb=10),
        staged(2, 10.0, 0.0, 0.0, submit=0.5, nodes=4, bb_per_node_mb=10),
        staged(3, 2.0, 0.0, 0.0, submit=1.0, nodes=4, bb_per_node_mb=15),
        staged(4, 3.0, 0.0, 0.0, submit=1.5, nodes=1, bb_per_node_mb=30, walltime=5.0),
    ]
    jobs = run(rows, "slurm", per_chassis=4)
    assert (jobs.loc[4, "bb_start"], jobs.loc[4, "start"], jobs.loc[4, "end"]) == (1.5, 1.5, 4.5)
    assert (jobs.loc[2, "bb_start"], jobs.loc[2, "start"], jobs.loc[2, "end"]) == (0.5, 10.0, 20.0)
    assert (jobs.loc[3, "bb_start"], jobs.loc[3, "start"], jobs.loc[3, "end"]) == (10.0, 20.0, 22.0)


def test_a_job_without_burst_buffer_goes_straight_to_the_nodes() -> None:
    # A (both nodes, 2 x 50 MB of BB, staged in over [0, 1]) holds the whole pool; B (one
    # node, no BB, walltime 3) arrives at 0.5: nothing to wait for, it backfills on a free
    # node at once, [0.5, 2.5]. A waits for it and runs [2.5, 12.5].
    rows = [staged(1, 10.0, 50.0, 0.0, bb_per_node_mb=50),
            staged(2, 2.0, 0.0, 0.0, submit=0.5, nodes=1, bb_per_node_mb=0, walltime=3.0)]  # fmt: skip
    jobs = run(rows, "slurm")
    assert (jobs.loc[2, "start"], jobs.loc[2, "end"]) == (0.5, 2.5)
    assert (jobs.loc[1, "bb_start"], jobs.loc[1, "start"], jobs.loc[1, "end"]) == (0.0, 2.5, 12.5)


def test_the_pool_takes_a_job_total_from_the_bb_nodes_with_most_room() -> None:
    topology = Topology.from_platform(tiny(3, 2, 100))  # 3 BB nodes of 100 MB
    machine = PoolMachine(topology)
    machine.free_bb = [100, 30, 70]

    def job(job_id: int, nodes: int, share: int) -> RunningJob:
        return RunningJob(job_id, 0.0, 10.0, share, Allocation(tuple(range(nodes)), (0,) * nodes))

    machine.start(job(1, 3, 50))  # 150 MB: 100 from the first, 50 from the third
    assert machine.free_bb == [0, 30, 20]
    with pytest.raises(SimulationError, match="pool is over-allocated"):
        machine.start(job(2, 2, 26))  # 52 MB > 50 left
    machine.start(job(3, 1, 45))  # 30 from the second, 15 from the third
    assert machine.free_bb == [0, 0, 5]
    machine.release_bb(1)
    assert machine.free_bb == [100, 0, 55]


def test_slurm_begins_stage_ins_itself_only_off_the_allocation_without_the_agent_or_tiers() -> None:
    with pytest.raises(ValueError, match="only without the ordering agent"):
        SlurmPasses(staged_start="reserved", stage_in="slurm")
    with pytest.raises(ValueError, match="unknown stage-in rule 'agent'"):
        SlurmPasses(stage_in="agent")
    plan, platform = io_plan([staged(1, 10.0, 50.0, 0.0)]), tiny(1, 2, 100)
    with pytest.raises(ValueError, match="only off the allocation"):
        simulate(plan, get_policy("fcfs"), platform, model="io-aware", stage_in="slurm")
    with pytest.raises(ValueError, match="--staging pool, not outside"):
        simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="outside", stage_in="slurm")
    with pytest.raises(ValueError, match="unknown stage-in rule 'agent'"):
        simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="pool", stage_in="agent")
    with pytest.raises(ValueError, match="chooses storage tiers"):
        simulate(plan, get_policy("sas"), platform, model="io-aware", staging="pool", stage_in="slurm")


def test_the_twin_lets_slurm_stage_in_under_its_own_scheduler_only() -> None:
    fcfs = get_policy("fcfs")
    assert stage_in_for("pool", "backfill", fcfs) == stage_in_for("pool", "in-order", fcfs) == "slurm"
    assert stage_in_for("pool", "reserved", fcfs) == "policy"  # the ordering agent releases the jobs
    assert stage_in_for("inside", None, fcfs) == "policy"
    assert stage_in_for("pool", "backfill", get_policy("sas")) == "policy"  # it chooses tiers


def test_a_job_without_burst_buffer_waiting_for_nodes_stops_the_main_scheduler() -> None:
    # 4 nodes, a 100 MB pool; a running job holds 2 nodes and 2 x 20 MB: 2 nodes and 60 MB
    # free. The first job waiting for nodes is row 5. Job 2 (row 2, 4 nodes, no BB) goes to
    # the nodes and finds them busy: the main scheduler stops there, before rows 3 and 4.
    # Slurm's stage-in after the pass then takes 3 (70 MB): it does not fit, so 4 (30 MB),
    # which would, is not staged in either.
    topology = Topology.from_platform(tiny(1, 4, 100))
    running = RunningJob(1, 0.0, 100.0, 20, Allocation((0, 1), (0, 0)))
    state = ClusterState.from_running(topology, [running])
    queue = [QueuedJob(2, 1.0, 50.0, 4, 0), QueuedJob(3, 2.0, 50.0, 1, 70), QueuedJob(4, 3.0, 50.0, 1, 30)]
    policy = SlurmStageIn("backfill-1", lambda: 5, {2: 2, 3: 3, 4: 4})
    assert [s.job_id for s in policy.decide(state, queue, 3.0).starts] == [2]
    # with nothing waiting and job 2 gone, the main scheduler reaches both: 4 fits, 3 does not
    alone = SlurmStageIn("backfill-1", lambda: None, {3: 3, 4: 4})
    assert [s.job_id for s in alone.decide(state, queue[1:], 3.0).starts] == [4]


def test_a_job_in_slurms_pool_shows_the_bb_node_each_of_its_nodes_checkpoints_to() -> None:
    # two chassis of 2 nodes, a BB node each; the pool places no share, so the results name
    # each compute node's chassis BB node (where its checkpoints go), not the nominal first
    platform = tiny(2, 2, 100)
    plan = io_plan([staged(1, 10.0, 0.0, 0.0, nodes=4, bb_per_node_mb=30)])
    result = simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="pool", stage_in="slurm")
    assert result.jobs.loc[0, "bb_nodes"] == "c001:bb01,c002:bb01,c003:bb02,c004:bb02"


def test_the_schedule_check_counts_slurms_pool_as_one_total() -> None:
    # two chassis of 2 nodes, two BB nodes of 100 MB: a pool of 200. Job 1 (c001, c002: both
    # checkpoint to bb01) holds 2 x 60 MB: over bb01's 100, within the pool's 200.
    platform = tiny(2, 2, 100)
    plan = io_plan(
        [staged(1, 10.0, 0.0, 0.0, bb_per_node_mb=60), staged(2, 10.0, 0.0, 0.0, bb_per_node_mb=60)]
    )
    jobs = simulate(
        plan, get_policy("fcfs"), platform, model="io-aware", staging="pool", stage_in="slurm"
    ).jobs
    assert jobs["bb_nodes"].tolist() == ["c001:bb01,c002:bb01", "c001:bb01,c002:bb01"]  # one after the other
    assert check_schedule(jobs, platform, pool=True) == []
    assert check_schedule(jobs, platform) == [
        "a BB node exceeds its capacity when job 1 starts",
        "a BB node exceeds its capacity when job 2 starts",
    ]
    overlapping = jobs.assign(bb_start=0.0)  # both held at once: 240 MB
    assert check_schedule(overlapping, platform, pool=True) == [
        "the burst-buffer pool exceeds its capacity when job 2 starts"
    ]


def test_harness_simulate_runs_slurms_stage_in_and_refuses_it_inside_the_allocation() -> None:
    common = [
        "simulate",
        "bundled",
        "--first-n",
        "60",
        "--model",
        "io-aware",
        "-p",
        "backfill-1,fcfs",
        "--json",
    ]

    def waits(*extra: str) -> dict[str, float]:
        result = CliRunner().invoke(main, [*common, "--staging", "pool", *extra], catch_exceptions=False)
        return {name: row["mean_wait"] for name, row in json.loads(result.output).items()}

    # the policies decide the stage-ins (1,305 s against 404 s on these 60 jobs); under Slurm's
    # own rule the policy only names the run, and both give Slurm's schedule (268 s)
    by_policy, by_slurm = waits(), waits("--stage-in", "slurm")
    assert by_policy["fcfs"] > 2 * by_policy["backfill-1"]
    assert by_slurm["fcfs"] == by_slurm["backfill-1"] < by_policy["backfill-1"]
    wrong = CliRunner().invoke(main, [*common, "--stage-in", "slurm"])
    assert wrong.exit_code != 0 and "only off the allocation (--staging outside or pool)" in wrong.output
