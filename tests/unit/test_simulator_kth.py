"""The thesis's findings on the real KTH trace (Kopański Sections 4.2, 4.5, 4.7).

The fast policies on the trace's first quarter (6,251 jobs, 24 s in all); the slow
plan-based policy against SJF backfilling on one of the 16 periods of the split workload.
The whole trace is benchmarks/simulate.py's (its figures in docs/policies.md): there these
tests took 121 s of a 55-minute test run. The findings hold on the whole trace and on its
first quarter, not on every window: on the second half, no future BB reservations wait 8.0
times as long as backfill-1, not 10 (measured 2026-11-29).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pandas as pd
import pytest

from harness.analysis.metrics import summary
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from tests.kth import KTH, needs_kth

PLATFORM = load_platform()

pytestmark = [
    pytest.mark.slow,
    needs_kth,
]


FIRST_QUARTER = (0, 4)


@cache
def kth_plan(period: tuple[int, int] | None = None) -> pd.DataFrame:
    """The prepared trace, or its period (i, k): the i-th of k, from 0."""
    from harness.workload.plan import prepare

    plan, _ = prepare(KTH, period=period)
    return plan


@cache
def run(policy: str, period: tuple[int, int] = FIRST_QUARTER) -> dict[str, Any]:
    result = simulate(kth_plan(period), get_policy(policy), PLATFORM)
    assert check_schedule(result.jobs, PLATFORM) == []
    return summary(result.jobs, PLATFORM)


def test_the_full_trace_has_the_thesis_job_count() -> None:
    assert len(kth_plan()) == 28_453


def test_no_backfilling_and_no_future_bb_reservations_wait_ten_times_longer() -> None:
    backfill = run("backfill-1")["mean_wait"]
    assert run("fcfs")["mean_wait"] >= 10 * backfill
    assert run("backfill-no-future-1")["mean_wait"] >= 10 * backfill


def test_filler_has_a_longer_maximum_wait_than_backfilling() -> None:
    assert run("filler")["max_wait"] > run("backfill-1")["max_wait"]


def test_deeper_reservations_wait_longer() -> None:
    assert run("backfill-4")["mean_wait"] > run("backfill-1")["mean_wait"]


def test_plan_square_beats_sjf_backfilling_on_a_period() -> None:
    # Period 15 of 16 (index 14, 1305 jobs), as in the split workload of Section 4.1.
    plan = run("plan-square-0", (14, 16))
    sjf = run("backfill-sjf-1", (14, 16))
    assert plan["mean_wait"] <= 0.85 * sjf["mean_wait"]
    assert plan["mean_bsld"] <= 0.85 * sjf["mean_bsld"]
