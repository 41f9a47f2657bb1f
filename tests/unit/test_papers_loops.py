"""benchmarks/cerberus.py's event loop and benchmarks/lackner.py's simulator runs on hand-computed cases."""

from __future__ import annotations

import pandas as pd
import pytest

import benchmarks.cerberus as cerberus  # fails, never skips, if it cannot import
import benchmarks.lackner as lackner
from harness.model.paths import repo_path
from harness.platform import load_platform
from harness.policies.cerberus import CerberusConfig
from harness.policies.sas import StorageAware
from harness.policies.tiers import JobIo, TierChooser, TierRates

# Two jobs of 4 nodes x 1,000 MB on 4 nodes: staging 4,000 MB at 5,000 MB/s takes 0.8 s.
TWO = pd.DataFrame(
    {"job_id": [1, 2], "submit": [0.0, 0.0], "nodes": [4, 4], "bb_per_node_mb": [1000, 1000],
     "runtime": [100.0, 100.0], "walltime": [100.0, 100.0]}
)  # fmt: skip


def ends(phases: int) -> list[float]:
    loop = cerberus.Loop(TWO, 4, 10_000, phases, CerberusConfig(knapsack=False))
    loop.go()
    return loop.end.tolist()


def test_one_phase_holds_nodes_through_staging() -> None:
    # A: 0 -> 0.8 + 100 + 0.8 = 101.6; B starts then and ends at 203.2.
    assert ends(1) == pytest.approx([101.6, 203.2])


def test_three_phases_overlap_staging_with_the_other_jobs_run() -> None:
    # Both stage in at 0 (8,000 of 10,000 MB); A runs 0.8-100.8 and stages out to 101.6;
    # B, staged since 0.8, runs 100.8-200.8 and stages out to 201.6.
    assert ends(3) == pytest.approx([101.6, 201.6])


def test_sas_puts_a_job_on_hps_when_it_is_faster_alone() -> None:
    # 100,000 MB of input at R_lps = 1,000 MB/s: 100 s of the 1,000 s on LPS, 6.67 s on
    # HPS, plus 20 s of stage-in at 5,000 MB/s: 1,000 - 93.33 + 20 = 926.67 s on HPS.
    platform = load_platform(repo_path("benchmarks", "platforms", "lackner-2048.toml"))
    plan = pd.DataFrame(
        {"job_id": [1], "submit": [0.0], "nodes": [1], "runtime": [1000.0], "walltime": [1000.0],
         "bb_per_node_mb": [0]}
    )  # fmt: skip
    io = {1: JobIo(100_000.0, 0.0, 0.0, 100_000)}
    rates = TierRates.of_platform(platform)  # the platform's: R_lps 1,000, R_hps 15,000, stage 5,000 MB/s
    sas = lackner.run(plan, io, StorageAware("sas", TierChooser("sas"), rates, io), platform)
    lps = lackner.run(plan, io, StorageAware("lps", TierChooser("lps"), rates, io), platform)
    assert sas["mean_turnaround_s"] == pytest.approx(1000.0 - 100.0 + 100_000 / 15_000 + 20.0)
    assert sas["hps_share"] == 1.0
    assert lps["mean_turnaround_s"] == pytest.approx(1000.0)
    assert lackner.p_of("random-0.35") == 0.35 and lackner.p_of("hps") == 1.0
