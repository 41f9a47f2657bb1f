"""`--compare-sim` with both twins: the measured launch delay and the tick-aware figures."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.analysis.document import Table, _fidelity_section
from harness.emulation.fidelity import LaunchDelay, compare_with_both_twins, measured_launch_delay
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from tests.platforms import tiny_machine

TINY = tiny_machine()  # 4 compute nodes, 2 BB nodes of 100 MB

# Shrunk plan (shrink 0.5): two whole-machine jobs, (job_id, submit, runtime, walltime, nodes, bb)
TWO_WIDE = pd.DataFrame(
    [(1, 0.3, 2.5, 10.0, 4, 0), (2, 0.5, 1.0, 10.0, 4, 0)],
    columns=["job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb"],
)


def test_native_delay_is_the_median_quick_start_latency() -> None:
    # waits 0.3, 0.5, 2.0 (waited for resources: left out), 0.2 -> median of 0.3, 0.5, 0.2
    results = pd.DataFrame({"submit": [0.0, 1.0, 2.0, 3.0], "start": [0.3, 1.5, 4.0, 3.2],
                            "slurm_job_id": [11, 12, 13, 14]})  # fmt: skip
    delay = measured_launch_delay(results, [], t0=100.0)
    assert (delay.seconds, delay.jobs) == (pytest.approx(0.3), 3)
    assert delay.source == "submission to start, jobs started within one pass"


def test_agent_delay_runs_from_the_release_to_the_start() -> None:
    # released at 100.5 (jobs 11, 12) and 103.0 (job 13), i.e. 0.5 and 3.0 after t0 = 100;
    # started 1.0, 1.25, 4.0 after t0: delays 0.5, 0.75, 1.0; job 99 is not in the results
    results = pd.DataFrame({"submit": [0.0] * 3, "start": [1.0, 1.25, 4.0], "slurm_job_id": [11, 12, 13]})
    decisions: list[dict] = [
        {"t": 100.5, "started": [11, 12]},
        {"t": 103.0, "started": [13, 99]},
        {"t": 104.0},
    ]
    delay = measured_launch_delay(results, decisions, t0=100.0)
    assert (delay.seconds, delay.source, delay.jobs) == (0.75, "agent release to start", 3)


def test_nothing_measurable_gives_no_delay() -> None:
    results = pd.DataFrame({"submit": [0.0], "start": [5.0], "slurm_job_id": [11]})
    assert measured_launch_delay(results, [], t0=0.0).jobs == 0
    assert measured_launch_delay(results, [], t0=0.0).seconds == 0.0


def test_both_twins_in_original_time() -> None:
    # The "emulation" is the tick-aware schedule itself (shrunk): starts 1.25 and 4.25.
    # Original time (x2): tick 2 s, delay 0.5 s; submits 0.6 and 1.0. Ideal twin: 0.6 and
    # 5.6 -> mean wait (0 + 4.6) / 2 = 2.3; emulated: (1.9 + 7.5) / 2 = 4.7.
    emulated = simulate(TWO_WIDE, get_policy("fcfs"), TINY, tick=1.0, launch_delay=0.25).jobs
    delay = LaunchDelay(0.25, "agent release to start", 2)
    found, ideal = compare_with_both_twins(TWO_WIDE, emulated, "fcfs", TINY, 0.5, delay)
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
        "launch_delay_measured_from": "agent release to start",
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
    assert "every 2.000 s and a launch delay of 0.500 s" in str(section.blocks[0])
