"""sigsleep's phase lists from the plan, and the per-job I/O columns from its records (hand-computed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.emulation.head.replay import ReplayOptions, sbatch_command
from harness.emulation.iolive.phases import PLAN_COLUMN, add_phases, phase_list, phase_stats, with_phase_lists
from harness.model.timescale import TimeScale
from harness.platform import load_platform

MACHINE = load_platform(None)
JOB = {"job_id": 5, "nodes": 4, "runtime": 330.0, "walltime": 600.0, "bb_per_node_mb": 1000, "io_phases": 3,
       "io_compute_s": 300.0, "io_comm_mb": 100.0, "io_checkpoint_mb": 500.0, "io_time_scale": 10.0,
       "io_stage_in_mb": 1000.0, "io_stage_out_mb": 1000.0}  # fmt: skip


def test_three_compute_phases_with_two_checkpoints_of_the_whole_job() -> None:
    # each phase 300 / 3 = 100 s (the communication, 100 MB x 3 / 12,500 MB/s = 0.024 s, is shorter);
    # a checkpoint is 4 nodes x 500 MB
    assert phase_list(JOB, 1250.0) == (
        "compute:100.000000,checkpoint:2000.000000,compute:100.000000,checkpoint:2000.000000,compute:100.000000"
    )


def test_communication_longer_than_compute_sets_the_phase_and_no_checkpoint_without_data() -> None:
    job = {
        **JOB,
        "nodes": 101,
        "io_phases": 2,
        "io_compute_s": 1.0,
        "io_checkpoint_mb": 0.0,
        "io_time_scale": 1.0,
    }
    assert phase_list(job, 1250.0) == "compute:8.000000,compute:8.000000"  # 100 MB x 100 / 1250 MB/s
    assert phase_list({"nodes": 1, "runtime": 5.0}, 1250.0) is None
    plan = with_phase_lists(pd.DataFrame([JOB, job]), MACHINE)
    assert plan[PLAN_COLUMN].tolist() == [phase_list(JOB, 1250.0), "compute:8.000000,compute:8.000000"]


def test_the_replay_gives_sigsleep_the_phases_instead_of_the_runtime(tmp_path) -> None:
    job = {**JOB, PLAN_COLUMN: "compute:1,checkpoint:2"}
    wrap = sbatch_command(job, ReplayOptions(run_dir=tmp_path, run_id="r"), 0.0)[-1]
    assert "--phases compute:1,checkpoint:2 --time-scale 10 --walltime" in wrap and "--runtime" not in wrap
    plain = sbatch_command(JOB, ReplayOptions(run_dir=tmp_path, run_id="r"), 0.0)[-1]
    assert "--runtime 330.000000" in plain and "--phases" not in plain


def _record(job_id: int) -> dict:
    phases = [
        {"kind": "compute", "channel": None, "seconds": 10.0, "mb": None, "running": 10.0},
        {"kind": "checkpoint", "channel": "checkpoint", "seconds": None, "mb": 2500.0, "running": 4.0,
         "moved_mb": 2500.0},
        {"kind": "compute", "channel": None, "seconds": 10.0, "mb": None, "running": 10.0},
    ]  # fmt: skip
    return {"job_id": job_id, "nodelist": "c001", "running": 24.0, "phases": phases}


def test_phase_columns_and_dilation_against_the_same_job_alone() -> None:
    results = pd.DataFrame({
        "job_id": [1, 2], "stage_in_s": [2.0, np.nan], "stage_in_solo_s": [1.0, np.nan],
        "stage_in_mb": [1250.0, np.nan], "stage_out_s": [np.nan] * 2, "stage_out_solo_s": [np.nan] * 2,
        "stage_out_mb": [np.nan] * 2,
    })  # fmt: skip
    out = add_phases(results, [_record(1), {"job_id": 2, "running": 3.0}], MACHINE, scale=TimeScale())
    one = out.iloc[0]
    assert (one["compute_s"], one["checkpoint_s"], one["io_s"]) == (20.0, 4.0, 6.0)
    assert one["io_bytes"] == 3750e6  # 2500 MB checkpoint + 1250 MB staged in
    # alone: 20 s compute + 2500 MB at c001's 1250 MB/s + 1 s stage-in = 23 s; it took 24 + 2
    assert one["solo_s"] == 23.0 and one["dilation"] == pytest.approx(26.0 / 23.0)
    assert all(math.isnan(out.iloc[1][c]) for c in ("compute_s", "dilation"))
    assert phase_stats(out) == {"jobs_with_phases": 1, "mean_compute_s": 20.0, "mean_checkpoint_s": 4.0,
                                "mean_io_s": 6.0, "mean_dilation": round(26.0 / 23.0, 6)}  # fmt: skip


def test_a_job_on_lps_counts_its_pfs_phases_as_io() -> None:
    # The LPS copy of job 1 (harness.emulation.iolive.tiers): 1,250 MB read from the PFS, a
    # checkpoint of 2,500 MB to the PFS, 625 MB written; alone, c001's card (1,250 MB/s) binds
    # (PFS 5,000 MB/s): 1 + 2 + 0.5 s of I/O and 20 s of compute = 23.5 s alone; it took 1.5 +
    # 2 + 1 s of I/O (3.5 + 20 = 24.5 s; no staging by Slurm).
    rec = _record(1)
    rec["phases"][1].update(kind="io", channel="pfs", running=2.0)
    io = {"kind": "io", "channel": "pfs", "seconds": None}
    rec["phases"] = [{**io, "mb": 1250.0, "running": 1.5, "moved_mb": 1250.0}, *rec["phases"],
                     {**io, "mb": 625.0, "running": 1.0, "moved_mb": 625.0}]  # fmt: skip
    rec["running"] = 24.5
    nan = [np.nan]
    results = pd.DataFrame({"job_id": [1], **{f"stage_{k}_{c}": nan for k in ("in", "out")
                                               for c in ("s", "solo_s", "mb")}})  # fmt: skip
    one = add_phases(results, [rec], MACHINE, scale=TimeScale()).iloc[0]
    assert (one["compute_s"], one["checkpoint_s"], one["io_s"]) == (20.0, 0.0, 4.5)
    assert one["io_bytes"] == 4375e6
    assert one["solo_s"] == 23.5 and one["dilation"] == pytest.approx(24.5 / 23.5)


def test_phase_agreement_with_the_twin() -> None:
    from harness.emulation.collect.fidelity import staging_agreement

    emu = pd.DataFrame({"checkpoint_s": [10.0, 20.0], "io_s": [20.0, 20.0], "dilation": [1.2, 1.4]})
    sim = pd.DataFrame({"checkpoint_s": [10.0, 20.0], "io_s": [25.0, 25.0], "dilation": [1.0, 1.0]})
    got = staging_agreement(emu, sim)
    assert got["mean_checkpoint_s"] == {"emulated": 15.0, "simulated": 15.0, "rel_diff": 0.0}
    assert got["mean_io_s"]["rel_diff"] == pytest.approx(-0.2)
    assert got["mean_dilation"]["emulated"] == pytest.approx(1.3) and got["mean_dilation"]["simulated"] == 1.0
