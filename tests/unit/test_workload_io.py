"""The job I/O models (Kopański, Lackner, Herbein) on hand-computed jobs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.workload.io import HerbeinIO, IOModelError, KopanskiIO, LacknerIO, io_model
from harness.workload.io.herbein import interference, progress_rate


def jobs(rows: list[tuple[int, float, int, int]]) -> pd.DataFrame:
    """Rows of (job_id, runtime, nodes, bb_per_node_mb)."""
    return pd.DataFrame(rows, columns=["job_id", "runtime", "nodes", "bb_per_node_mb"])


def test_kopanski_shortens_computation_and_splits_it_into_phases() -> None:
    table = jobs([(1, 10_000.0, 4, 5000), (2, 100.0, 1, 10), (3, 200.0, 1, 40_000), (4, 100_000.0, 2, 100)])
    out = KopanskiIO().apply(table, seed=1)
    # 10000 - 40 * 5000 / 1250 = 9840 s, round(9840 / 3600) = 3 phases
    # 100 - 40 * 10 / 1250 = 99.68 s, 1 phase
    # 200 - 40 * 40000 / 1250 < 0: the 5 % floor, 10 s, 1 phase
    # 100000 - 3.2 = 99996.8 s: 28 phases, capped at 10
    assert out["io_compute_s"].tolist() == pytest.approx([9840.0, 99.68, 10.0, 99_996.8])
    assert out["io_phases"].tolist() == [3, 1, 1, 10]
    assert out["io_checkpoint_mb"].tolist() == [2500.0, 5.0, 20_000.0, 50.0]
    assert out["io_stage_in_mb"].tolist() == [5000.0, 10.0, 40_000.0, 100.0]
    assert out["io_stage_out_mb"].tolist() == out["io_stage_in_mb"].tolist()


def test_kopanski_on_a_shrunk_replay_keeps_the_phases() -> None:
    from harness.emulation.iolive.plugin import LiveIO
    from harness.model.timescale import TimeScale
    from harness.platform import load_platform

    plan = KopanskiIO().apply(jobs([(1, 10000.0, 4, 5000)]), seed=1)
    out = LiveIO().on_clock(TimeScale(0.5).slurm_table(plan), TimeScale(0.5), load_platform())
    assert out["io_phases"].tolist() == [3]  # drawn on the trace's 9840 s
    assert out["io_compute_s"].tolist() == [4920.0]  # 9840 s shrunk by half
    assert out["runtime"].tolist() == [5000.0] and out["io_time_scale"].tolist() == [2.0]
    assert out["io_sigsleep_phases"].iloc[0].startswith("compute:1640.000000,checkpoint:")


def test_kopanski_theta_depends_on_the_job_number_only() -> None:
    full = KopanskiIO().apply(jobs([(i, 1000.0, 2, 100) for i in range(1, 200)]), seed=7)
    part = KopanskiIO().apply(jobs([(150, 1000.0, 2, 100), (3, 1000.0, 2, 100)]), seed=7)
    by_id = full.set_index("job_id")["io_comm_mb"]
    assert part["io_comm_mb"].tolist() == [by_id[150], by_id[3]]
    # Normal(100 MB, 20 %)
    assert 95 < full["io_comm_mb"].mean() < 105
    assert 15 < full["io_comm_mb"].std() < 25


def test_a_trace_column_overrides_the_drawn_value() -> None:
    table = jobs([(1, 10_000.0, 4, 5000), (2, 10_000.0, 4, 5000)])
    table["io_phases"] = [7.0, np.nan]
    out = KopanskiIO().apply(table, seed=1)
    assert out["io_phases"].tolist() == [7, 3]


def test_a_slower_pfs_never_makes_a_tier_job_faster() -> None:
    """Issue 33: at lps_mbps = 1 the one checkpoint forced on a long job (4 nodes x 16,000 MB)
    took 64,000 s at R_lps, more than the job's 2,000 s: the compute time clipped at zero
    and on HPS the job ran 41 s (sim) instead of about 1,800. A checkpoint only where it fits."""
    from harness.policies.tiers import HPS, JobIo, TierRates, plans

    job = jobs([(1, 2000.0, 4, 16_000)])
    slow = LacknerIO(r_lps_mbps=1.0, staging_fraction_sd=0.0).apply(job, seed=1)
    # 5 % of 2000 s at 1 MB/s = 100 MB each way; 1800 MB of room left, a checkpoint is 64,000
    assert slow[["input_mb", "output_mb", "data_mb", "storage_mb"]].iloc[0].tolist() == [
        100.0,
        100.0,
        0.0,
        100.0,
    ]
    # on HPS: 2000 - 200 / 1 + 200 / 15 (it was max(2000 - 64200, 0) + 64200 / 15 = 4280)
    slow_hps = LacknerIO(r_lps_mbps=1.0).runtime_on(slow, "hps")[0]
    assert slow_hps == pytest.approx(2000 - 200 + 200 / 15)
    # the simulator's plan: 20 s staging in and out at 5 MB/s, the run 2000 - 200 x 14 / 15
    plan = plans(2000.0, 4, JobIo(100.0, 100.0, 0.0, 100), TierRates.lackner(1.0))[HPS]
    assert (plan.duration, plan.share_mb) == (pytest.approx(20 + 2000 - 200 * 14 / 15 + 20), 25)
    # at the default 1000 MB/s: 1e5 MB each way, rint(0.1 x 2e6 / 64000) = 3 checkpoints fit
    fast = LacknerIO(staging_fraction_sd=0.0).apply(job, seed=1)
    assert fast["data_mb"].tolist() == [192_000.0]
    fast_hps = LacknerIO().runtime_on(fast, "hps")[0]
    assert fast_hps == pytest.approx(2000 - 392 + 392_000 / 15_000)  # 1634.13 s
    assert slow_hps > fast_hps


def test_lackner_volumes_and_runtimes_per_tier() -> None:
    model = LacknerIO(staging_fraction_sd=0.0)
    out = model.apply(jobs([(1, 10_000.0, 2, 1000), (2, 1000.0, 1, 1000)]), seed=1)
    # 5 % of 10000 s at 1000 MB/s = 500000 MB each way; checkpoints of 2 x 1000 MB
    # filling 10 % of the runtime: 0.1 * 1e7 / 2000 = 500 of them
    assert out["input_mb"].tolist() == [500_000.0, 50_000.0]
    assert out["data_mb"].tolist() == [1_000_000.0, 0.0]  # no checkpoint under 1800 s
    assert out["storage_mb"].tolist() == [502_000.0, 50_000.0]
    # on HPS the 2e6 MB take 2e6 / 15000 s instead of 2000 s
    assert model.runtime_on(out, "hps")[0] == pytest.approx(8000 + 2e6 / 15_000)
    assert model.runtime_on(out, "lps").tolist() == [10_000.0, 1000.0]
    assert model.staging_s(out)[0] == pytest.approx(1e6 / 5000)
    with pytest.raises(IOModelError, match="unknown storage tier"):
        model.runtime_on(out, "tape")


def test_herbein_demand_and_interference() -> None:
    out = HerbeinIO().apply(jobs([(1, 100.0, 4, 10)]), seed=1)
    assert out["pfs_mbps_per_node"].tolist() == [18.0]
    assert interference(np.array([50.0, 18.0]), np.array([100.0, 18.0])).tolist() == [0.5, 1.0]
    assert progress_rate(np.array([0.5, 0.5]), np.array([1.0, 0.2])).tolist() == [0.5, 0.9]


def test_models_by_name_and_bad_parameters() -> None:
    assert io_model("kopanski").as_dict()["kappa"] == 40.0
    with pytest.raises(IOModelError, match="unknown I/O model 'x'"):
        io_model("x")
    with pytest.raises(IOModelError):
        KopanskiIO(max_phases=0)
    with pytest.raises(IOModelError, match="needs column"):
        KopanskiIO().apply(pd.DataFrame({"job_id": [1]}), seed=1)
