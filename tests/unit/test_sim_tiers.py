"""Storage tiers in the simulator (harness/sim/tiers.py) on hand-computed cases.

Platform: Lackner's 128 nodes with one HPS pool of 2,048,000 MB; rates R_lps = 1,000,
R_hps = 15,000, R_stage = 5,000 MB/s (the defaults of [machine.io.tiers]).
"""

from __future__ import annotations

import pandas as pd
import pytest

from harness.model.paths import repo_path
from harness.platform import load_platform
from harness.policies.registry import UnknownPolicyError, get_policy
from harness.policies.sas import StorageAware
from harness.policies.tiers import JobIo, TierChooser
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate

PLATFORM = load_platform(repo_path("benchmarks", "platforms", "lackner-2048.toml"))


def plan(**cols: list) -> pd.DataFrame:
    n = len(cols["runtime"])
    base = {"job_id": list(range(1, n + 1)), "submit": [0.0] * n, "walltime": cols["runtime"],
            "bb_per_node_mb": [0] * n, "input_mb": [0.0] * n, "output_mb": [0.0] * n}  # fmt: skip
    return pd.DataFrame({**base, **cols})


def run(df: pd.DataFrame, name: str = "sas") -> pd.DataFrame:
    result = simulate(df, get_policy(name), PLATFORM, model="io-aware")
    assert check_schedule(result.jobs, PLATFORM) == []
    return result.jobs.sort_values("job_id").reset_index(drop=True)


def test_sas_job_on_hps_runs_faster_and_holds_its_share() -> None:
    # 100,000 MB of input: 100 s of the 1,000 s on LPS, 6.67 s on HPS, and 20 s of
    # stage-in at 5,000 MB/s: 1,000 - 93.33 + 20 = 926.67 s on HPS, holding 100,000 MB.
    df = plan(nodes=[1], runtime=[1000.0], input_mb=[100_000.0], data_mb=[0.0], storage_mb=[100_000])
    jobs = run(df)
    assert jobs["tier"].tolist() == ["hps"]
    assert jobs["end"].tolist() == pytest.approx([1000.0 - 100.0 + 100_000 / 15_000 + 20.0])
    assert jobs["bb_per_node_mb"].tolist() == [100_000]
    lps = run(df, "sas-lps")
    assert lps["tier"].tolist() == ["lps"] and lps["end"].tolist() == [1000.0]
    assert lps["bb_per_node_mb"].tolist() == [0]


def test_a_job_on_lps_holds_no_burst_buffer() -> None:
    # Job 1 (64 nodes) fills the pool (32,000 MB x 64) and saves 150 - 10 = 140 s of
    # checkpoints on HPS: 860 s < 1,000 s. Job 2 would save 15 - 1 = 14 s on HPS but wait
    # 860 s for it: 860 + 486 > 500, so LPS, started at 0 beside job 1 with no BB.
    df = plan(nodes=[64, 1], runtime=[1000.0, 500.0], data_mb=[150_000.0, 15_000.0],
              storage_mb=[2_048_000, 1_000])  # fmt: skip
    jobs = run(df)
    assert jobs["tier"].tolist() == ["hps", "lps"]
    assert jobs["start"].tolist() == [0.0, 0.0]
    assert jobs["end"].tolist() == pytest.approx([860.0, 500.0])
    assert jobs["bb_per_node_mb"].tolist() == [32_000, 0]
    # always-HPS: job 2 waits for the pool, then runs 500 - 14 = 486 s.
    hps = run(df, "sas-hps")
    assert hps["tier"].tolist() == ["hps", "hps"]
    assert hps["start"].tolist() == pytest.approx([0.0, 860.0])
    assert hps["end"].tolist() == pytest.approx([860.0, 860.0 + 486.0])


def test_the_policy_plans_with_declared_io_and_the_job_runs_with_its_actual_io() -> None:
    # Declared: 150,000 MB of checkpoints (HPS saves 140 s: chosen); actual: none, so the
    # job takes its whole 1,000 s on HPS.
    df = plan(nodes=[1], runtime=[1000.0], data_mb=[0.0], storage_mb=[1_000])
    declared = {1: JobIo(0.0, 0.0, 150_000.0, 1_000)}
    result = simulate(df, StorageAware("sas", TierChooser("sas"), io=declared), PLATFORM, model="io-aware")
    assert result.jobs["tier"].tolist() == ["hps"]
    assert result.jobs["end"].tolist() == [1000.0]


def test_any_policy_on_the_tiers_starts_its_jobs_on_hps() -> None:
    # A plain Start holds the BB request (the HPS share): the 926.67 s of the first case.
    df = plan(nodes=[1], runtime=[1000.0], input_mb=[100_000.0], data_mb=[0.0], storage_mb=[100_000])
    jobs = simulate(df, get_policy("fcfs"), PLATFORM, model="io-aware", tiers=True).jobs
    assert check_schedule(jobs, PLATFORM) == []
    assert jobs["tier"].tolist() == ["hps"] and jobs["bb_per_node_mb"].tolist() == [100_000]
    assert jobs["end"].tolist() == pytest.approx([1000.0 - 100.0 + 100_000 / 15_000 + 20.0])
    # a job whose share never fits has no HPS storage: LPS, its 100 s, no BB
    big = plan(nodes=[128], runtime=[100.0], input_mb=[50_000.0], data_mb=[0.0], storage_mb=[2_560_000])
    jobs = simulate(big, get_policy("fcfs"), PLATFORM, model="io-aware", tiers=True).jobs
    assert jobs["tier"].tolist() == ["lps"] and jobs["end"].tolist() == [100.0]


def test_a_job_past_its_walltime_is_killed() -> None:
    df = plan(nodes=[1], runtime=[1200.0], walltime=[1000.0], data_mb=[0.0], storage_mb=[0])
    jobs = run(df)
    assert jobs["tier"].tolist() == ["lps"]
    assert jobs["end"].tolist() == [1000.0] and jobs["status"].tolist() == ["timeout"]


def test_a_share_that_never_fits_goes_to_lps_under_every_policy() -> None:
    # 128 nodes x 20,000 MB > 2,048,000 MB: declared without HPS storage.
    df = plan(nodes=[128], runtime=[100.0], data_mb=[0.0], storage_mb=[2_560_000])
    assert run(df, "sas-hps")["tier"].tolist() == ["lps"]


def test_tier_policies_need_the_io_aware_model_and_a_probability() -> None:
    df = plan(nodes=[1], runtime=[10.0], data_mb=[0.0], storage_mb=[0])
    with pytest.raises(ValueError, match="policy sas chooses storage tiers: it needs --model io-aware"):
        simulate(df, get_policy("sas"), PLATFORM)
    with pytest.raises(UnknownPolicyError, match=r"sas-random-1\.5"):
        get_policy("sas-random-1.5")
    chooser = get_policy("sas-random-0.25", seed=7).chooser  # type: ignore[attr-defined]
    assert (chooser.kind, chooser.p, chooser.seed) == ("random", 0.25, 7)
