"""`--compare-sim` with both twins: the measured launch delay and the tick-aware figures."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.analysis.blocks import Table
from harness.analysis.fidelity_section import fidelity_section as _fidelity_section
from harness.emulation.collect.fidelity import (
    LaunchDelay,
    compare_with_both_twins,
    license_pool,
    measured_launch_delay,
    staged_start_for,
    with_minute_limits,
)
from harness.model.timescale import TimeScale
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.slurm.config import SchedulerConfig
from tests.platforms import tiny_machine

TINY = tiny_machine()  # 4 compute nodes, 2 BB nodes of 100 MB

# Shrunk plan (shrink 0.5): two whole-machine jobs, (job_id, submit, runtime, walltime, nodes, bb)
TWO_WIDE = pd.DataFrame(
    [(1, 0.3, 2.5, 10.0, 4, 0), (2, 0.5, 1.0, 10.0, 4, 0)],
    columns=["job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb"],
)


def test_delay_is_the_median_time_after_a_whole_wall_clock_second() -> None:
    # t0 = 100.75: starts at 101.0, 101.875, 103.05, 104.2 and 105.1 on the wall clock, i.e.
    # 0.0, 0.875, 0.05, 0.2, 0.1 after a whole second -> median 0.1; the unstarted job is left out
    results = pd.DataFrame({"start": [0.25, 1.125, 2.3, 3.45, 4.35, None]})
    delay = measured_launch_delay(results, t0=100.75)
    assert delay.seconds == pytest.approx(0.1) and delay.jobs == 5


def test_nothing_started_gives_no_delay() -> None:
    assert measured_launch_delay(pd.DataFrame({"start": [None]}), t0=0.0) == LaunchDelay(0.0, 0)


def test_stage_delay_is_measured_on_the_stage_in_begins() -> None:
    # t0 = 10.5: stage-ins begin at 11.9, 12.8, 14.3 on the wall clock -> 0.9, 0.8, 0.3 -> 0.8;
    # a run without staging has no such column
    results = pd.DataFrame({"start": [2.0, 3.0, 4.0], "stage_in_begin": [1.4, 2.3, 3.8]})
    assert measured_launch_delay(results, 10.5, "stage_in_begin").seconds == pytest.approx(0.8)
    assert measured_launch_delay(results.drop(columns="stage_in_begin"), 10.5, "stage_in_begin").jobs == 0


def test_staged_jobs_get_nodes_as_the_runs_slurm_gives_them() -> None:
    assert staged_start_for(SchedulerConfig(mode="backfill")) == "backfill"
    assert staged_start_for(SchedulerConfig(mode="builtin")) == "in-order"
    assert staged_start_for(SchedulerConfig(mode="builtin", external_ordering=True)) == "reserved"


def test_both_twins_in_original_time() -> None:
    # At shrink 0.5 Slurm's 1 s pass and a 0.25 s delay are 2 s and 0.5 s of the trace; the
    # "emulation" is the tick-aware schedule itself, in the trace's time: submits 0.6 and 1.0,
    # starts 2.5 and 8.5. Ideal twin: 0.6 and 5.6 -> mean wait (0 + 4.6) / 2 = 2.3; emulated:
    # (1.9 + 7.5) / 2 = 4.7.
    plan = TimeScale(0.5).trace_table(TWO_WIDE)
    emulated = simulate(plan, get_policy("fcfs"), TINY, tick=2.0, launch_delay=0.5).jobs
    delay = LaunchDelay(0.25, 2)
    found, ideal = compare_with_both_twins(plan, emulated, "fcfs", TINY, TimeScale(0.5), delay)
    assert ideal["start"].tolist() == pytest.approx([0.6, 5.6])
    wait = found["metrics"]["mean_wait"]
    assert (wait["emulated"], wait["simulated"]) == (pytest.approx(4.7), pytest.approx(2.3))
    assert wait["rel_diff"] == pytest.approx(2.4 / 2.3)
    ticked = found["tick_aware"]
    assert (ticked["tick_s"], ticked["launch_delay_s"], ticked["launch_delay_jobs"]) == (2.0, 0.5, 2)
    assert ticked["metrics"]["mean_wait"]["simulated"] == pytest.approx(4.7)
    assert ticked["metrics"]["mean_wait"]["rel_diff"] == pytest.approx(0.0, abs=1e-12)
    assert ticked["mean_abs_start_shift_s"] == pytest.approx(0.0, abs=1e-12)


def test_report_shows_both_twins() -> None:
    ticked = {
        "tick_s": 2.0,
        "launch_delay_s": 0.5,
        "minute_limits": True,
        "launch_delay_jobs": 2,
        "metrics": {"mean_wait": {"simulated": 4.7, "rel_diff": 0.0}},
    }
    fidelity = {
        "simulator_policy": "fcfs", "start_order": {"jobs": 2, "kendall_tau": 1.0},
        "mean_abs_start_shift_s": 1.0, "tick_aware": ticked,
        "metrics": {"mean_wait": {"emulated": 4.7, "simulated": 2.3, "rel_diff": 1.04}},
    }  # fmt: skip
    section = _fidelity_section(fidelity)
    table = section.blocks[1]
    assert isinstance(table, Table)
    assert table.headers[-2:] == ["tick-aware twin", "relative difference (tick-aware)"]
    assert len(table.rows[0]) == 6
    assert "every 2.000 s and a launch delay of 0.500 s after it" in str(section.blocks[0])
    assert "rounded up to Slurm's whole minutes." in str(section.blocks[0])
    ticked.update(slurm_will_run=True, slurm_node_reservation=True)
    assert "minutes; reservations at Slurm's will-run windows on the nodes cons_tres picks." in str(
        _fidelity_section(fidelity).blocks[0]
    )


def test_slurm_plans_with_whole_minutes() -> None:
    # 4 nodes, unshrunk. Job 1 (2 nodes, runs 10 s, limit 30 s), job 2 (4 nodes) at 0.5, job 3
    # (2 nodes, 25 s, limit 25 s) at 1. Exact limits: job 3 ends by 26 <= job 2's reserved
    # start 30 -> backfilled at 1, job 2 starts 26. Whole minutes: job 1 planned to 60, job 3
    # to 61 > 60 -> not backfilled.
    jobs = pd.DataFrame(
        [(1, 0.0, 10.0, 30.0, 2, 0), (2, 0.5, 5.0, 100.0, 4, 0), (3, 1.0, 25.0, 25.0, 2, 0)],
        columns=["job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb"],
    )
    emulated = simulate(jobs, get_policy("backfill-1"), TINY).jobs
    assert emulated["start"].tolist() == [0.0, 26.0, 1.0]  # job 3 backfilled (the ideal twin)
    found, _ = compare_with_both_twins(
        jobs, emulated, "backfill-1", TINY, TimeScale(), LaunchDelay(0.0, 0), minute_limits=True
    )
    # tick 1 s, minute limits: job 1 at 0 (to 10), job 2 planned at 60 would block job 3
    # (planned 1..61) -> job 3 waits; at 10 job 1 ends, job 2 starts 10 (to 15), job 3 at 15
    ticked = found["tick_aware"]
    assert ticked["minute_limits"] is True
    assert ticked["slurm_will_run"] is True  # Slurm's reservations: 60 s, job 1's end, alone in its window
    assert ticked["slurm_node_reservation"] is True  # and its nodes, as cons_tres picks them
    assert ticked["metrics"]["mean_wait"]["simulated"] == pytest.approx((0.0 + 9.5 + 14.0) / 3)


def test_minute_limits_round_up_to_whole_minutes() -> None:
    jobs = pd.DataFrame({"job_id": [1, 2, 3, 4], "walltime": [0.5, 60.0, 61.0, 125.3]})
    assert with_minute_limits(jobs, TimeScale())["walltime"].tolist() == [60.0, 60.0, 120.0, 180.0]
    assert jobs["walltime"].tolist() == [0.5, 60.0, 61.0, 125.3]  # a copy
    # at shrink 0.5 Slurm sees 0.25, 30, 30.5 and 62.65 s: 1, 1, 1 and 2 minutes, 120 s of
    # the trace each
    assert with_minute_limits(jobs, TimeScale(0.5))["walltime"].tolist() == [120.0, 120.0, 120.0, 240.0]


def test_slurms_own_scheduler_counts_the_burst_buffer_as_one_license_pool() -> None:
    # TINY's 2 BB nodes of 100 MB. Job 1 (2 nodes x 60 MB, runs 10 s) leaves 40 MB on each BB
    # node; job 2 (1 node x 60 MB, at 0.5) finds no BB node with 60 MB and waits for job 1's
    # end at 10: mean wait (0 + 9.5) / 2 = 4.75. Slurm's license pool has 200 - 120 = 80 MB:
    # job 2 starts on the next 1-s pass, at 1: mean wait (0 + 0.5) / 2 = 0.25.
    jobs = pd.DataFrame(
        [(1, 0.0, 10.0, 60.0, 2, 60), (2, 0.5, 10.0, 60.0, 1, 60)],
        columns=["job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb"],
    )
    emulated = simulate(jobs, get_policy("backfill-1"), TINY).jobs
    exact, _ = compare_with_both_twins(jobs, emulated, "backfill-1", TINY, TimeScale(), LaunchDelay(0.0, 0))
    pooled, _ = compare_with_both_twins(
        jobs, emulated, "backfill-1", TINY, TimeScale(), LaunchDelay(0.0, 0), minute_limits=True
    )
    assert exact["tick_aware"]["bb_pool"] is False
    assert exact["tick_aware"]["metrics"]["mean_wait"]["simulated"] == pytest.approx(4.75)
    assert pooled["tick_aware"]["bb_pool"] is True
    assert pooled["tick_aware"]["metrics"]["mean_wait"]["simulated"] == pytest.approx(0.25)
    assert license_pool(TINY).bb_count == 1 and license_pool(TINY).bb_capacity_mb == 200
