"""Statistics of a result table, checked on values worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.experiments.stats import group_stats, ranking, ratio_summary, ratios

# mean_wait of policy A (the baseline) and B on two periods, two repetitions each;
# util_compute A 0.5 and B 0.6 everywhere.
WAIT = {
    ("A", 1, 0): 10.0, ("A", 1, 1): 20.0, ("A", 2, 0): 40.0, ("A", 2, 1): 40.0,
    ("B", 1, 0): 5.0, ("B", 1, 1): 30.0, ("B", 2, 0): 20.0, ("B", 2, 1): 80.0,
}  # fmt: skip


def table() -> pd.DataFrame:
    rows = []
    for (policy, period, rep), wait in WAIT.items():
        key = f"{policy}{period}{rep}"
        axes = {"key": key, "policy": policy, "period": period, "bb_seed": 2020, "rep": rep}
        rows.append({**axes, "metric": "mean_wait", "value": wait, "seconds": 1.0, "host": "h"})
        util = 0.5 if policy == "A" else 0.6
        rows.append({**axes, "metric": "util_compute", "value": util, "seconds": 1.0, "host": "h"})
    return pd.DataFrame(rows)


def test_group_stats_over_repetitions() -> None:
    g = group_stats(table(), "mean_wait")
    assert list(g.columns[:3]) == ["policy", "period", "bb_seed"]
    a1 = g[(g["policy"] == "A") & (g["period"] == 1)].iloc[0]
    # values 10 and 20: mean 15, SSD (divisor n) 5, RSD 100 * 5 / 15, C95 = t(0.975, 1) * 5 / sqrt(2)
    assert (a1["n"], a1["mean"], a1["median"], a1["AVE"], a1["SSD"]) == (2, 15.0, 15.0, 15.0, 5.0)
    assert a1["RSD"] == pytest.approx(33.3333, rel=1e-5)
    assert a1["C95"] == pytest.approx(12.7062 * 5 / 2**0.5, rel=1e-4)
    a2 = g[(g["policy"] == "A") & (g["period"] == 2)].iloc[0]
    assert (a2["SSD"], a2["C95"]) == (0.0, 0.0)


def test_group_stats_over_periods_too() -> None:
    g = group_stats(table(), "mean_wait", over=("period", "rep"))
    assert g.set_index("policy")["mean"].to_dict() == {"A": 27.5, "B": 33.75}
    assert g.set_index("policy")["median"].to_dict() == {"A": 30.0, "B": 25.0}


def test_ratios_match_period_and_repetition() -> None:
    r = ratios(table(), "mean_wait", "A")
    got = {(p, rep): v for p, rep, v in zip(r["period"], r["rep"], r["ratio"], strict=True)}
    assert got == {(1, 0): 0.5, (1, 1): 1.5, (2, 0): 0.5, (2, 1): 2.0}


def test_ratio_summary_quartiles() -> None:
    s = ratio_summary(ratios(table(), "mean_wait", "A")).iloc[0]
    # sorted ratios 0.5 0.5 1.5 2.0: Q1 at rank 0.75 -> 0.5, median 1.0, Q3 at rank 2.25 -> 1.625
    assert (s["policy"], s["n"], s["q1"], s["median"], s["q3"]) == ("B", 4, 0.5, 1.0, 1.625)
    assert (s["mean"], s["below_1"]) == (1.125, 2)


def test_ratios_skip_cells_without_a_usable_baseline() -> None:
    t = table()
    t.loc[(t["key"] == "A10") & (t["metric"] == "mean_wait"), "value"] = 0.0
    t = t[t["key"] != "A21"]
    r = ratios(t, "mean_wait", "A")
    assert sorted(zip(r["period"], r["rep"], strict=True)) == [(1, 1), (2, 0)]


def test_ranking_with_baseline() -> None:
    rank = ranking(table(), ["mean_wait", "util_compute"], baseline="A").set_index("policy")
    # mean_wait: A scores 1, B's median ratio is 1.0 (a tie); util: B 1.2 (higher is better)
    assert rank.loc["B", "mean_wait_score"] == 1.0 and rank.loc["B", "util_compute_score"] == pytest.approx(
        1.2
    )
    assert rank["mean_wait_rank"].to_dict() == {"B": 1.0, "A": 1.0}
    assert rank["util_compute_rank"].to_dict() == {"B": 1.0, "A": 2.0}
    assert rank["rank"].to_dict() == {"B": 1, "A": 2} and list(rank.index) == ["B", "A"]


def test_ranking_without_baseline_uses_means() -> None:
    rank = ranking(table(), ["mean_wait", "util_compute"]).set_index("policy")
    assert rank["mean_wait_score"].to_dict() == {"A": 27.5, "B": 33.75}
    assert rank["mean_rank"].to_dict() == {"A": 1.5, "B": 1.5} and rank["rank"].to_dict() == {"A": 1, "B": 1}
