"""Staging outside the allocation (Slurm's burst-buffer life cycle) on hand-computed schedules.

The tiny platform of ``test_simulator_io``: one chassis of 2 compute nodes, one BB
node, every link 100 MB/s, so that 100 MB take 1 s. Each job takes both nodes and
25 MB of burst buffer per node (50 MB on the BB node).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.policies.registry import get_policy
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from tests.unit.test_simulator_io import io_plan, job, tiny

NO_IO = {"io_phases": 1, "io_checkpoint_mb": 0.0, "io_stage_in_mb": 0.0, "io_stage_out_mb": 0.0}


def run(rows: list[dict], staging: str, capacity_mb: int = 100):
    platform = tiny(1, 2, capacity_mb)
    result = simulate(io_plan(rows), get_policy("fcfs"), platform, model="io-aware", staging=staging)
    assert check_schedule(result.jobs, platform) == []
    return result.jobs.set_index("job_id")


def staged(job_id: int, compute_s: float, stage_in_mb: float, stage_out_mb: float, **kw: float) -> dict:
    return job(job_id, **{**NO_IO, "io_compute_s": compute_s, "io_stage_in_mb": stage_in_mb,
                          "io_stage_out_mb": stage_out_mb, **kw})  # fmt: skip


def test_the_nodes_are_free_during_stage_in_and_the_bb_is_held_from_its_start() -> None:
    # Job 1 stages 2 x 50 MB in over [0, 1]. Job 2 (no I/O, 5 s) arrives at 0.5 and
    # takes the free nodes at once, [0.5, 5.5]; job 1, staged in at 1, waits for them
    # and runs [5.5, 15.5]; its BB is held from 0 to 15.5 (no stage-out).
    jobs = run([staged(1, 10.0, 50.0, 0.0), staged(2, 5.0, 0.0, 0.0, submit=0.5)], "outside")
    assert (jobs.loc[2, "start"], jobs.loc[2, "end"]) == (0.5, 5.5)
    assert (jobs.loc[1, "start"], jobs.loc[1, "end"], jobs.loc[1, "runtime"]) == (5.5, 15.5, 10.0)
    assert (jobs.loc[1, "bb_start"], jobs.loc[1, "bb_end"]) == (0.0, 15.5)
    assert jobs.loc[1, "stage_in_s"] == 1.0
    assert jobs.loc[1, "node_wait_s"] == 4.5
    assert jobs.loc[1, "dilation"] == pytest.approx(1.0)  # the wait for nodes is no I/O dilation
    # inside the allocation job 1 holds the nodes from 0 to 11: job 2 runs [11, 16]
    inside = run([staged(1, 10.0, 50.0, 0.0), staged(2, 5.0, 0.0, 0.0, submit=0.5)], "inside")
    assert (inside.loc[1, "start"], inside.loc[1, "end"]) == (0.0, 11.0)
    assert (inside.loc[2, "start"], inside.loc[2, "end"]) == (11.0, 16.0)


def test_a_second_job_uses_the_nodes_during_the_first_ones_stage_out() -> None:
    # Job 1 runs [0, 10] and stages 2 x 50 MB out over [10, 11], holding 50 MB of BB
    # until 11; job 2 (waiting since 0) gets the nodes at 10 and runs [10, 15].
    jobs = run([staged(1, 10.0, 0.0, 50.0), staged(2, 5.0, 0.0, 0.0)], "outside")
    assert (jobs.loc[1, "start"], jobs.loc[1, "end"]) == (0.0, 10.0)
    assert (jobs.loc[1, "bb_start"], jobs.loc[1, "bb_end"]) == (0.0, 11.0)
    assert jobs.loc[1, "stage_out_s"] == 1.0
    assert (jobs.loc[2, "start"], jobs.loc[2, "end"]) == (10.0, 15.0)
    inside = run([staged(1, 10.0, 0.0, 50.0), staged(2, 5.0, 0.0, 0.0)], "inside")
    assert (inside.loc[1, "end"], inside.loc[2, "start"], inside.loc[2, "end"]) == (11.0, 11.0, 16.0)


def test_the_bb_is_held_across_stage_in_run_and_stage_out() -> None:
    # 50 MB per BB node: job 2 needs the whole BB node too. Job 1: stage-in [0, 1], run
    # [1, 11], stage-out [11, 12]; job 2 (arrived at 0.5) can start only at 12, when
    # the BB is freed, although the nodes were free during [0.5, 1] and from 11.
    jobs = run([staged(1, 10.0, 50.0, 50.0), staged(2, 5.0, 0.0, 0.0, submit=0.5)], "outside", capacity_mb=50)
    assert (jobs.loc[1, "bb_start"], jobs.loc[1, "start"], jobs.loc[1, "end"], jobs.loc[1, "bb_end"]) == (
        0.0, 1.0, 11.0, 12.0,
    )  # fmt: skip
    assert (jobs.loc[2, "bb_start"], jobs.loc[2, "start"], jobs.loc[2, "end"]) == (12.0, 12.0, 17.0)


def test_the_walltime_bounds_the_run_only_and_a_killed_job_still_stages_out() -> None:
    # Run 10 s within a walltime of 10.5: inside, stage-in (1 s) + run exceed it.
    fits = [staged(1, 10.0, 50.0, 0.0, walltime=10.5)]
    assert run(fits, "outside").loc[1, "status"] == "completed"
    assert run(fits, "inside").loc[1, "status"] == "timeout"
    # a 20 s run with a walltime of 10: killed at 1 + 10, then stages out [11, 12]
    killed = run([staged(1, 20.0, 50.0, 50.0, walltime=10.0)], "outside").loc[1]
    assert killed["status"] == "timeout"
    assert (killed["start"], killed["end"], killed["bb_end"]) == (1.0, 11.0, 12.0)
    assert (killed["compute_s"], killed["stage_out_s"]) == (10.0, 1.0)


def test_outside_staging_needs_the_io_aware_model_and_a_known_name() -> None:
    plan = io_plan([staged(1, 10.0, 0.0, 0.0)])
    with pytest.raises(ValueError, match="needs the io-aware job model"):
        simulate(plan, get_policy("fcfs"), tiny(1, 2, 100), staging="outside")
    with pytest.raises(ValueError, match="unknown staging 'beside'"):
        simulate(plan, get_policy("fcfs"), tiny(1, 2, 100), model="io-aware", staging="beside")


def test_simulate_command_stages_outside() -> None:
    args = ["simulate", "--model", "io-aware", "--staging", "outside", "--first-n", "30", "--json", "bundled"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    summary = json.loads(result.output)["backfill-1"]
    assert summary["jobs"] == 30
    assert summary["mean_dilation"] >= 1.0
    refused = CliRunner().invoke(main, ["simulate", "--staging", "outside", "--first-n", "5", "bundled"])
    assert refused.exit_code != 0
    assert "needs the io-aware job model" in refused.output


def test_a_reserving_policy_sees_the_bb_of_a_job_staging_out() -> None:
    # 50 MB per BB node: job 2 needs the BB that job 1 holds while staging out [10, 11].
    # backfill-1 reserves for job 2 (a profile where that BB is never released would
    # refuse it as never fitting) and starts it at 11.
    platform = tiny(1, 2, 50)
    plan = io_plan([staged(1, 10.0, 0.0, 50.0), staged(2, 5.0, 0.0, 0.0)])
    result = simulate(plan, get_policy("backfill-1"), platform, model="io-aware", staging="outside")
    jobs = result.jobs.set_index("job_id")
    assert (jobs.loc[2, "start"], jobs.loc[2, "end"]) == (11.0, 16.0)
    assert check_schedule(result.jobs, platform) == []


def test_the_profile_releases_the_bb_of_a_staging_job_but_no_nodes() -> None:
    from harness.policies.profile import AvailabilityProfile
    from harness.policies.state import Allocation, RunningJob, Topology

    topo = Topology.from_platform(tiny(1, 2, 100))
    on_nodes = RunningJob(1, 0.0, 20.0, 25, Allocation((0,), (0,)))
    staging = RunningJob(2, 0.0, 10.0, 25, Allocation((1,), (0,)))
    prof = AvailabilityProfile.from_running(topo, [on_nodes], 5.0, 1, [50], holding_bb=[staging])
    assert prof.times.tolist() == [5.0, 10.0, 20.0]
    assert prof.compute.tolist() == [1, 1, 2]
    assert prof.bb[:, 0].tolist() == [50, 75, 100]


def fast_pfs(capacity_mb: int = 100) -> object:
    """``tiny(2, 2, ...)`` (chassis 0: c001, c002, bb01; chassis 1: c003, c004, bb02) with a
    PFS of 400 MB/s, so that only the BB-node links (100 MB/s) bind a staging."""
    platform = tiny(2, 2, capacity_mb)
    return replace(platform, io=replace(platform.io, pfs_mbps=400.0))


def test_pool_stripes_staging_over_every_bb_node_and_checkpoints_to_the_chassis_bb_node() -> None:
    # Job 1, 2 nodes (c001, c002, chassis 0), 100 MB in and out, 2 phases of 10 s with a
    # checkpoint of 2 x 25 MB between. Pool: the stage-in is 2 stripes of 50 MB, one per
    # BB node, weight 1 and cap 100 MB/s each: 0.5 s (through its own BB node alone it
    # would be 100 MB at 100 MB/s, 1 s). The checkpoint goes to bb01 (chassis 0): 50 MB
    # at 100 MB/s, 0.5 s; its drain bb01 -> PFS [10.5 + 0.5, 11.5] runs during the second
    # phase. Run [0.5, 21], stage-out striped [21, 21.5].
    platform = fast_pfs()
    rows = [staged(1, 20.0, 50.0, 50.0, io_phases=2, io_checkpoint_mb=25.0)]
    result = simulate(io_plan(rows), get_policy("fcfs"), platform, model="io-aware", staging="pool")
    assert check_schedule(result.jobs, platform) == []
    one = result.jobs.set_index("job_id").loc[1]
    assert (one["bb_start"], one["start"], one["end"], one["bb_end"]) == pytest.approx((0.0, 0.5, 21.0, 21.5))
    assert (one["stage_in_s"], one["checkpoint_s"], one["stage_out_s"]) == pytest.approx((0.5, 0.5, 0.5))
    assert one["dilation"] == pytest.approx(1.0)  # alone: the same striped routes
    assert result.link_bytes["bb01"] == pytest.approx(50e6 + 50e6 + 50e6 + 50e6)  # in, ckpt, drain, out
    assert result.link_bytes["bb02"] == pytest.approx(50e6 + 50e6)  # its stripes of in and out only
    outside = simulate(io_plan(rows), get_policy("fcfs"), platform, model="io-aware", staging="outside")
    assert outside.link_bytes["bb02"] == 0.0  # fcfs put both BB shares on bb01


def test_pool_stagings_of_two_jobs_share_every_bb_node() -> None:
    # Two 2-node jobs submitted together, 100 MB in each, no compute to speak of: 4
    # stripes of 50 MB, two on each BB node at 50 MB/s: both stage in over [0, 1].
    # Each alone would take 0.5 s: dilation (1 + 0.01) / (0.5 + 0.01).
    platform = fast_pfs()
    rows = [staged(1, 0.01, 50.0, 0.0), staged(2, 0.01, 50.0, 0.0)]
    result = simulate(io_plan(rows), get_policy("fcfs"), platform, model="io-aware", staging="pool")
    jobs = result.jobs.set_index("job_id")
    assert list(jobs["stage_in_s"]) == pytest.approx([1.0, 1.0])
    assert list(jobs["dilation"]) == pytest.approx([1.01 / 0.51] * 2)


def test_in_a_pool_a_later_staged_job_backfills_when_it_does_not_delay_the_first() -> None:
    # 2 nodes. A (2 nodes) stages in over [0, 1]; R (1 node, walltime 25) arrives at 0.5
    # and takes a free node at once; A, staged in at 1, waits for R: its reservation is
    # R's walltime end, 25.5. B (1 node, walltime 6, no staging) arrives at 1.5 and ends
    # by 7.5 <= 25.5: it backfills at once, [1.5, 6.5]. R ends at 20.5, A runs [20.5, 30.5].
    # With "outside" (first come, first served) B waits behind A until 30.5.
    rows = [staged(1, 10.0, 50.0, 0.0), staged(2, 20.0, 0.0, 0.0, submit=0.5, walltime=25.0, nodes=1),
            staged(3, 5.0, 0.0, 0.0, submit=1.5, walltime=6.0, nodes=1)]  # fmt: skip
    pool = run(rows, "pool")
    assert (pool.loc[3, "start"], pool.loc[3, "end"]) == pytest.approx((1.5, 6.5))
    assert (pool.loc[1, "start"], pool.loc[1, "end"], pool.loc[1, "node_wait_s"]) == pytest.approx(
        (20.5, 30.5, 19.5)
    )
    outside = run(rows, "outside")
    assert (outside.loc[3, "start"], outside.loc[3, "end"]) == pytest.approx((30.5, 35.5))


def test_slurm_passes_delay_the_stage_in_and_the_start_of_a_staged_job() -> None:
    # Passes every 1 s; the stage-in begins 0.25 after the pass that picked the job, and a
    # staged-in job starts 0.1 after the next pass. A arrives at 0.3: picked at 1.0, stages
    # in [1.25, 2.25], starts at 3.1, runs 10 s. Dilation leaves out both waits for Slurm:
    # (13.1 - 1.0 - 0.85 - 0.25) / (1 + 10) = 1.
    platform = tiny(1, 2, 100)
    plan = io_plan([staged(1, 10.0, 50.0, 0.0, submit=0.3)])
    result = simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="pool",
                      tick=1.0, launch_delay=0.1, stage_delay=0.25)  # fmt: skip
    one = result.jobs.set_index("job_id").loc[1]
    assert (one["bb_start"], one["start"], one["end"], one["bb_end"]) == pytest.approx((1.0, 3.1, 13.1, 13.1))
    assert (one["stage_in_s"], one["node_wait_s"], one["dilation"]) == pytest.approx((1.0, 0.85, 1.0))
    with pytest.raises(ValueError, match="stage delay needs staging off the allocation"):
        simulate(plan, get_policy("fcfs"), platform, model="io-aware", stage_delay=0.25)


def test_reserved_staged_start_keeps_the_released_nodes_through_the_stage_in() -> None:
    # The ordering agent's Slurm: A (2 nodes) is released at 0 on both nodes, which idle
    # while it stages in [0, 1]; it runs [1, 11]. B (1 node, no staging) arrives at 0.5 and
    # finds no free node: [11, 16]. With backfill (Slurm's own scheduler) B takes a node
    # that A only wants, [0.5, 5.5], and A waits for it: [5.5, 15.5].
    platform = tiny(1, 2, 100)
    plan = io_plan([staged(1, 10.0, 50.0, 0.0), staged(2, 5.0, 0.0, 0.0, submit=0.5, nodes=1)])

    def run_with(order: str):
        fcfs = get_policy("fcfs")
        result = simulate(plan, fcfs, platform, model="io-aware", staging="pool", staged_start=order)
        return result.jobs.set_index("job_id")

    reserved, backfill = run_with("reserved"), run_with("backfill")
    assert (reserved.loc[1, "start"], reserved.loc[1, "end"], reserved.loc[1, "node_wait_s"]) == (
        1.0,
        11.0,
        0.0,
    )
    assert (reserved.loc[2, "start"], reserved.loc[2, "end"]) == (11.0, 16.0)
    assert (backfill.loc[2, "start"], backfill.loc[2, "end"]) == (0.5, 5.5)
    assert (backfill.loc[1, "start"], backfill.loc[1, "end"]) == (5.5, 15.5)
    with pytest.raises(ValueError, match="unknown staged start 'random'"):
        simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="pool", staged_start="random")


def test_the_agent_decides_on_its_poll_and_slurm_starts_on_its_pass() -> None:
    # Decisions every 0.1 (the agent's poll), Slurm's passes every 1: A arrives at 0.35, is
    # released at 0.4, stages in [0.4, 1.4] on its reserved nodes and starts on the pass at 2.
    platform = tiny(1, 2, 100)
    plan = io_plan([staged(1, 10.0, 50.0, 0.0, submit=0.35)])
    result = simulate(plan, get_policy("fcfs"), platform, model="io-aware", staging="pool",
                      staged_start="reserved", tick=1.0, decision_tick=0.1)  # fmt: skip
    one = result.jobs.set_index("job_id").loc[1]
    assert (one["bb_start"], one["start"], one["end"]) == pytest.approx((0.4, 2.0, 12.0))
