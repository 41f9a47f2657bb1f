"""Metrics core: per-job metrics, aggregates, utilisation, bootstrap and repetition statistics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.analysis.metrics import (
    bootstrap_ci,
    job_metrics,
    makespan,
    quantiles,
    repetition_stats,
    summary,
    utilisation,
)
from harness.platform import load_platform

PLATFORM = load_platform()

# Three jobs: (submit, start, end, nodes, BB MB per node)
#   job 1 waits 100 s, runs 300 s: F = 400, sld = 4/3, bsld = max(400 / 600, 1) = 1
#   job 2 waits 1000 s, runs 1000 s: F = 2000, sld = bsld = 2
#   job 3 waits 0 s, runs 0 s: F = 0, sld = 0 / 1 = 0, bsld = 1
TABLE = pd.DataFrame(
    {
        "job_id": [1, 2, 3],
        "submit": [0.0, 0.0, 500.0],
        "start": [100.0, 1000.0, 500.0],
        "end": [400.0, 2000.0, 500.0],
        "walltime": [600.0, 1000.0, 60.0],
        "nodes": [2, 48, 1],
        "bb_per_node_mb": [1000, 10_000, 0],
        "status": ["completed", "timeout", "completed"],
    }
)


def test_job_metrics_by_hand() -> None:
    m = job_metrics(TABLE)
    assert m["wait"].tolist() == [100.0, 1000.0, 0.0]
    assert m["turnaround"].tolist() == [400.0, 2000.0, 0.0]
    assert m["slowdown"].tolist() == pytest.approx([4 / 3, 2.0, 0.0])
    assert m["bsld"].tolist() == pytest.approx([1.0, 2.0, 1.0])
    assert m["wslowdown"].tolist() == pytest.approx([8 / 3, 96.0, 0.0])


def test_bounded_slowdown_threshold() -> None:
    # with tau = 60 s job 1's bsld is 400 / 300
    assert job_metrics(TABLE, tau=60.0)["bsld"].tolist() == pytest.approx([4 / 3, 2.0, 1.0])


def test_metrics_take_the_times_as_given() -> None:
    doubled = TABLE.assign(**{c: TABLE[c] * 2.0 for c in ("submit", "start", "end")})
    m = job_metrics(doubled)
    assert m["wait"].tolist() == [200.0, 2000.0, 0.0]
    # job 1 now runs 600 s: bsld = 800 / 600
    assert m["bsld"].tolist() == pytest.approx([800 / 600, 2.0, 1.0])


def test_makespan_and_utilisation() -> None:
    assert makespan(TABLE) == 2000.0
    util_c, util_bb = utilisation(TABLE, PLATFORM)
    # node-seconds: 2 * 300 + 48 * 1000 = 48,600 over 96 nodes x 2000 s
    assert util_c == pytest.approx(48_600 / (96 * 2000))
    # MB-seconds: 2 * 1000 * 300 + 48 * 10,000 * 1000 over 480,000 MB x 2000 s
    assert util_bb == pytest.approx((600_000 + 480_000_000) / (480_000 * 2000))


def test_summary_keys_and_values() -> None:
    s = summary(TABLE, PLATFORM)
    assert s["jobs"] == 3
    assert s["mean_wait"] == pytest.approx(1100 / 3)
    assert (s["median_wait"], s["max_wait"]) == (100.0, 1000.0)
    assert s["mean_turnaround"] == pytest.approx(2400 / 3)
    assert s["mean_slowdown"] == pytest.approx((4 / 3 + 2) / 3)
    assert s["mean_bsld"] == pytest.approx(4 / 3)
    assert s["makespan"] == 2000.0 and s["timeouts"] == 1
    assert "mean_wait_ci95" not in s
    with_ci = summary(TABLE, PLATFORM, ci=True)
    lo, hi = with_ci["mean_wait_ci95"]
    assert 0.0 <= lo <= with_ci["mean_wait"] <= hi <= 1000.0


def test_summary_of_no_jobs() -> None:
    s = summary(TABLE.iloc[:0], PLATFORM)
    assert s["jobs"] == 0 and math.isnan(s["mean_wait"]) and s["makespan"] == 0.0


def test_letter_value_quantiles() -> None:
    q = quantiles(np.arange(33, dtype=float))
    assert q[0.5] == 16.0 and q[1 / 32] == 1.0 and q[31 / 32] == 31.0


def test_bootstrap_interval() -> None:
    assert bootstrap_ci([5.0] * 20) == (5.0, 5.0)
    values = np.random.default_rng(1).exponential(100.0, size=2000)
    lo, hi = bootstrap_ci(values, seed=3)
    assert lo < values.mean() < hi and hi - lo < 20.0
    assert bootstrap_ci(values, seed=3) == (lo, hi)
    lo_med, hi_med = bootstrap_ci(values, np.median, resamples=200)
    assert lo_med < np.median(values) < hi_med


def test_repetition_stats_reproduce_barberato_table_4_4() -> None:
    # Response times of 10 shuffled runs (Barberato 2018, Table 4.4, column RT);
    # the table gives AVE 1543.6, SSD 204.9, RSD 13.3 %, C95 146.5 (to its 0.1 precision;
    # C95 = 2.262 * 204.87 / sqrt(10) = 146.56, which the table truncates).
    rt = [1478.4, 1453.2, 1249.7, 1740.0, 1710.0, 1538.6, 1241.7, 1721.9, 1418.3, 1884.2]
    stats = repetition_stats(rt)
    assert round(stats["AVE"], 1) == 1543.6
    assert round(stats["SSD"], 1) == 204.9
    assert round(stats["RSD"], 1) == 13.3
    assert stats["C95"] == pytest.approx(146.5, abs=0.1)


def test_repetition_stats_edge_cases() -> None:
    single = repetition_stats([3.0])
    assert single["AVE"] == 3.0 and single["SSD"] == 0.0 and math.isnan(single["C95"])
    with pytest.raises(ValueError):
        repetition_stats([])
