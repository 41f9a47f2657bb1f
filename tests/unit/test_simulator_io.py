"""The simulator's io-aware model on hand-computed schedules."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.platform import platform_from_dict
from harness.policies.registry import get_policy
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate


def tiny(chassis: int, per_chassis: int, capacity_mb: int) -> object:
    """Links of 100 MB/s everywhere, so that sizes in MB read as hundredths of seconds."""
    return platform_from_dict(
        {
            "platform": {"name": "tiny-io"},
            "topology": {"groups": 1, "chassis_per_group": chassis, "compute_per_chassis": per_chassis},
            "compute": {"prefix": "c", "digits": 3, "cpus": 1, "real_memory_mb": 100, "partition": "compute"},
            "burst_buffer": {
                "prefix": "bb", "digits": 2, "cpus": 1, "real_memory_mb": 100, "partition": "bb",
                "capacity_mb": capacity_mb, "license": "bb",
            },
            "network": {"controller_host": "localhost", "controller_port": 6817, "slurmd_base_port": 17001},
            "deploy": {"node_containers": 1},
            "io": {"compute_link_mbps": 100, "bb_node_mbps": 100, "pfs_mbps": 100},
        }
    )  # fmt: skip


def io_plan(rows: list[dict]) -> pd.DataFrame:
    base = {"submit": 0.0, "runtime": 100.0, "walltime": 1000.0, "io_comm_mb": 0.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def job(job_id: int, **kw: float) -> dict:
    return {"job_id": job_id, "nodes": 2, "bb_per_node_mb": 25, **kw}


def test_a_job_alone_runs_for_the_sum_of_its_phases() -> None:
    # 2 nodes on one BB node, every link 100 MB/s: stage-in 2 x 50 MB = 1 s; compute
    # 2 x 50 s; one checkpoint of 2 x 25 MB = 0.5 s, drained in the background
    # during the second phase; stage-out 1 s. 1 + 50 + 0.5 + 50 + 1 = 102.5 s.
    plan = io_plan([job(1, io_compute_s=100.0, io_phases=2, io_checkpoint_mb=25.0,
                        io_stage_in_mb=50.0, io_stage_out_mb=50.0)])  # fmt: skip
    platform = tiny(1, 2, 100)
    result = simulate(plan, get_policy("fcfs"), platform, model="io-aware")
    row = result.jobs.iloc[0]
    assert row["end"] == pytest.approx(102.5)
    assert (row["stage_in_s"], row["compute_s"], row["checkpoint_s"], row["stage_out_s"]) == pytest.approx(
        (1.0, 100.0, 0.5, 1.0)
    )
    assert row["io_bytes"] == pytest.approx(300e6)  # in, checkpoint, drain, out
    assert row["contention_free_s"] == pytest.approx(102.5)
    assert row["dilation"] == pytest.approx(1.0)
    assert row["contended_s"] == 0.0
    assert result.link_bytes["pfs"] == pytest.approx(250e6)
    # the PFS link carries stage-in [0, 1], the drain [51.5, 52] and stage-out [101.5, 102.5];
    # the BB link those and the checkpoint [51, 51.5]
    assert result.bandwidth is not None
    timeline = result.bandwidth
    assert timeline["time"].tolist() == [0.0, 1.0, 51.0, 51.5, 52.0, 101.5, 102.5]
    assert (timeline["pfs_bps"] / 1e8).tolist() == [1, 0, 0, 1, 0, 1, 0]
    assert (timeline["bb_bps"] / 1e8).tolist() == [1, 0, 1, 1, 0, 1, 0]
    assert check_schedule(result.jobs, platform) == []


def overlapping(walltime_first: float) -> pd.DataFrame:
    # two identical jobs on one BB node checkpoint at t = 10 together
    spec = {"io_compute_s": 20.0, "io_phases": 2, "io_checkpoint_mb": 50.0, "io_stage_in_mb": 0.0,
            "io_stage_out_mb": 0.0}  # fmt: skip
    return io_plan([job(1, walltime=walltime_first, **spec), job(2, **spec)])


def test_an_overlapping_checkpoint_dilates_a_job_by_the_hand_computed_factor() -> None:
    # Alone: checkpoint 100 MB at 100 MB/s [10, 11], second phase [11, 21], its drain
    # [11, 12]: 21 s. Together the BB link is shared: checkpoints [10, 12] at 50 MB/s
    # each, drains [12, 14], second phases [12, 22]: 22 s, dilation 22 / 21; the job
    # got half its bandwidth for 4 of its 4 s of I/O.
    result = simulate(overlapping(1000.0), get_policy("fcfs"), tiny(1, 4, 100), model="io-aware")
    jobs = result.jobs.set_index("job_id")
    assert jobs["end"].tolist() == pytest.approx([22.0, 22.0])
    assert jobs.loc[1, "checkpoint_s"] == pytest.approx(2.0)
    assert jobs.loc[1, "contention_free_s"] == pytest.approx(21.0)
    assert jobs.loc[1, "dilation"] == pytest.approx(22.0 / 21.0)
    assert jobs.loc[1, "io_s"] == pytest.approx(4.0)
    assert jobs.loc[1, "contended_s"] == pytest.approx(4.0)
    assert jobs.loc[1, "interference_fraction"] == pytest.approx(4.0 / 22.0)


def test_a_dilated_job_is_killed_at_its_walltime() -> None:
    # 21.5 s would do alone (21 s); contention makes it 22: killed at 21.5, and the
    # other job, alone for its last 0.5 s, still ends at 22
    result = simulate(overlapping(21.5), get_policy("fcfs"), tiny(1, 4, 100), model="io-aware")
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "status"] == "timeout"
    assert jobs.loc[1, "end"] == pytest.approx(21.5)
    assert jobs.loc[2, "status"] == "completed"
    assert jobs.loc[2, "end"] == pytest.approx(22.0)
    assert check_schedule(result.jobs, tiny(1, 4, 100)) == []


def test_unknown_model_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown job model 'io'"):
        simulate(io_plan([job(1)]), get_policy("fcfs"), tiny(1, 2, 100), model="io")


def test_simulate_command_reports_io_metrics() -> None:
    import json

    from click.testing import CliRunner

    from harness.cli import main

    args = ["simulate", "--model", "io-aware", "--first-n", "30", "--json", "bundled"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    summary = json.loads(result.output)["backfill-1"]
    assert summary["jobs"] == 30
    assert summary["mean_dilation"] >= 1.0
    assert 0 < summary["util_pfs_bw"] < 1
    plain = CliRunner().invoke(main, ["simulate", "--first-n", "30", "--json", "bundled"])
    assert "mean_dilation" not in json.loads(plain.output)["backfill-1"]
