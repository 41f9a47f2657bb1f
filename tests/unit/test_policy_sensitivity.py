"""benchmarks/policy_sensitivity.py: the jitter, the spread's figures, and a real simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchmarks.policy_sensitivity as sensitivity  # fails, never skips, if it cannot import
from harness.analysis.metrics import summary
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.sim.engine import simulate


def _plan(submits: list[float]) -> pd.DataFrame:
    n = len(submits)
    return pd.DataFrame({
        "job_id": range(1, n + 1), "submit": submits, "runtime": [100.0] * n, "walltime": [200.0] * n,
        "nodes": [96] * n, "bb_per_node_mb": [0] * n,
    })  # fmt: skip


def test_jitter_delays_each_submission_by_less_than_its_bound_and_nothing_else() -> None:
    plan = _plan([0.0, 10.0, 20.0, 30.0])  # 10 s apart: no delay below 2 s reaches the next
    out = sensitivity.jittered(plan, 2.0, seed=3)
    shift = out["submit"] - plan["submit"]
    assert shift.to_numpy() == pytest.approx(np.random.default_rng(3).uniform(0.0, 2.0, 4))
    assert out.drop(columns="submit").equals(plan.drop(columns="submit"))
    assert plan["submit"].tolist() == [0.0, 10.0, 20.0, 30.0]  # the input is not changed
    assert sensitivity.jittered(plan, 2.0, seed=4)["submit"].tolist() != out["submit"].tolist()


def test_jitter_keeps_the_trace_order_as_the_replay_submits() -> None:
    # Two jobs at the same second and one 0.1 s later: a later job is never submitted
    # before an earlier one; it waits for it (the running maximum of the delayed times).
    plan = _plan([0.0, 0.0, 0.1])
    draws = np.random.default_rng(0).uniform(0.0, 2.0, 3)  # 1.27, 0.54, 0.08: reordered
    delayed = np.array([0.0, 0.0, 0.1]) + draws
    assert delayed[2] < delayed[1] < delayed[0]  # unclamped, the draws would reverse the order
    expected = [delayed[0], max(delayed[0], delayed[1]), max(delayed[:3])]
    out = sensitivity.jittered(plan, 2.0, seed=0)["submit"].tolist()
    assert out == pytest.approx(expected)
    assert out == sorted(out)


def test_spread_figures_by_hand() -> None:
    # Draws 90, 100, 110, 120 around a reference of 100: mean 105, sample stdev
    # sqrt((225 + 25 + 25 + 225) / 3) = 12.9099, RSD 12.295 %; 90 and 110 are 10 % off
    # (outside 5 %), 120 is 20 % off: three of four.
    row = sensitivity.Spread("p", 100.0, [90.0, 100.0, 110.0, 120.0])
    assert row.rsd_pct == pytest.approx(12.2952, abs=1e-4)
    assert row.outside == 3
    line = sensitivity.markdown(row, 2.0)
    assert "105.0 s (+5.0%)" in line and "12.30 %" in line and "3 of 4" in line


def test_spread_calls_the_reference_once_per_draw_and_once_unperturbed() -> None:
    plan = _plan([0.0, 50.0])
    seen: list[float] = []

    def first_submit(p: pd.DataFrame) -> float:
        seen.append(float(p["submit"].iloc[1]))
        return 100.0 + float(p["submit"].iloc[0])

    row = sensitivity.spread(first_submit, plan, "p", 1.0, seeds=3)
    assert row.reference == 100.0
    assert len(row.perturbed) == 3 and all(100.0 <= w < 101.0 for w in row.perturbed)
    assert seen[-1] == 50.0 and all(50.0 <= s < 51.0 for s in seen)
    with pytest.raises(SystemExit, match="at least 2"):
        sensitivity.spread(first_submit, plan, "p", 1.0, seeds=1)


def test_a_whole_machine_queue_keeps_its_order_under_jitter_smaller_than_the_gaps() -> None:
    # Three jobs of the whole machine, 100 s each, submitted 10 s apart: FCFS runs them
    # back to back from the first one's submission d0, whatever 0-1 s of jitter adds.
    # With delays d0, d1, d2 the waits are 0, 90 + d0 - d1, 180 + d0 - d2: the mean wait
    # is 90 + (2 d0 - d1 - d2) / 3 (the reference: 90).
    platform = load_platform()
    plan = _plan([0.0, 10.0, 20.0])

    def mean_wait(p: pd.DataFrame) -> float:
        return float(summary(simulate(p, get_policy("fcfs"), platform).jobs, platform)["mean_wait"])

    row = sensitivity.spread(mean_wait, plan, "fcfs", 1.0, seeds=4)
    assert row.reference == pytest.approx(90.0)
    for seed, wait in enumerate(row.perturbed):
        d0, d1, d2 = np.random.default_rng(seed).uniform(0.0, 1.0, 3)
        assert wait == pytest.approx(90.0 + (2 * d0 - d1 - d2) / 3)
    assert row.outside == 0
