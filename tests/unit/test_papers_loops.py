"""benchmarks/cerberus.py's measures and benchmarks/lackner.py's simulator runs on hand-computed cases."""

from __future__ import annotations

import pandas as pd
import pytest

import benchmarks.cerberus as cerberus  # fails, never skips, if it cannot import
import benchmarks.lackner as lackner
from harness.model.paths import repo_path
from harness.platform import load_platform
from harness.policies.sas import StorageAware
from harness.policies.tiers import JobIo, TierChooser, TierRates


def test_cerberus_benchmark_measures_throughput_response_and_earlier_share() -> None:
    # Three jobs submitted at 0, 10, 20 leave at 100, 300 and 1,000 (the BB release when
    # staged outside): span 1,000 s, 3 jobs -> 1.5 per 500 s; responses 100, 290, 980.
    # The first 90 % (inverted CDF of 3 values: the 3rd) is all three: the same 1.5.
    jobs = pd.DataFrame({"job_id": [1, 2, 3], "submit": [0.0, 10.0, 20.0], "start": [50.0, 60.0, 520.0],
                         "end": [90.0, 280.0, 900.0], "bb_end": [100.0, 300.0, 1000.0],
                         "status": ["completed", "timeout", "completed"]})  # fmt: skip
    got = cerberus.measure(jobs, pd.DataFrame({"latency_s": [0.001, 0.003]}))
    assert got["jobs_per_500s"] == pytest.approx(1.5)
    assert got["mean_response_s"] == pytest.approx((100 + 290 + 980) / 3)
    assert got["mean_wait_s"] == pytest.approx((50 + 50 + 500) / 3)
    assert got["decision_p50_ms"] == pytest.approx(2.0)
    assert got["timeouts"] == 1
    # in one phase the same jobs left at 100, 250, 1,200: only job 3 left earlier in three
    one = pd.Series([100.0, 250.0, 1200.0], index=[1, 2, 3])
    assert cerberus.share_earlier(cerberus.finish_times(jobs), one) == pytest.approx(1 / 3)


def test_poster_arrivals_are_bbsims_poisson_seconds_in_queue_order() -> None:
    plan = pd.DataFrame({"job_id": [5, 3, 4], "submit": [7.0, 1.0, 2.0]})
    out = cerberus.poster_arrivals(plan, seed=1)
    gaps = out["submit"].diff().dropna()
    assert out["job_id"].tolist() == [3, 4, 5] and out["submit"].iat[0] == 0.0
    assert bool((gaps >= 0).all()) and bool((gaps == gaps.round()).all())


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
