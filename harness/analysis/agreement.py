"""How alike the schedules of repeated runs of one plan are (``harness run --repeat N``).

The spread of a metric over repetitions (RSD, C95) says how far the numbers move; this says
whether the schedule itself repeats: the same jobs started in the same order, at the same
second. On the event-driven clock a run should give the same schedule every time
(docs/virtual-time.md); on the wall clock or at a fixed speed-up, real latencies decide some
starts and the order moves.

Every repetition is compared with the first one, on the jobs both started. Starts are in the
trace's seconds; the order is by start to the whole second, then job id (Slurm stamps whole
seconds: two jobs of one second are not ordered by their stamps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats


def start_order(schedule: pd.DataFrame) -> list[int]:
    """The job ids that started, by start (whole second), then job id."""
    started = schedule.dropna(subset=["start"])
    keys = pd.DataFrame({"second": np.floor(started["start"].to_numpy(float)), "job_id": started["job_id"]})
    return [int(j) for j in keys.sort_values(["second", "job_id"], kind="stable")["job_id"]]


def pair_agreement(first: pd.DataFrame, other: pd.DataFrame) -> dict[str, Any]:
    """One repetition against the first: identical start order, Kendall's tau of the starts of
    the jobs both started, and how many of those started in the same (whole) second."""
    both = first[["job_id", "start"]].merge(other[["job_id", "start"]], on="job_id", suffixes=("_a", "_b"))
    both = both.dropna()
    same = int((np.floor(both["start_a"]) == np.floor(both["start_b"])).sum())
    tau = float(stats.kendalltau(both["start_a"], both["start_b"]).statistic) if len(both) > 1 else math.nan
    return {
        "identical_start_order": start_order(first) == start_order(other),
        "kendall_tau": tau,
        "jobs_compared": len(both),
        "jobs_same_start": same,
    }


def schedule_agreement(schedules: Sequence[pd.DataFrame]) -> dict[str, Any]:
    """Every repetition against the first: how many have its start order (the first counts),
    the lowest Kendall tau and the fewest jobs started at the same second, and each pair."""
    if not schedules:
        return {"repetitions": 0}
    pairs = [pair_agreement(schedules[0], other) for other in schedules[1:]]
    started = len(start_order(schedules[0]))
    return {
        "repetitions": len(schedules),
        "identical_start_order": 1 + sum(p["identical_start_order"] for p in pairs),
        "kendall_tau_min": min((p["kendall_tau"] for p in pairs), default=1.0),
        "jobs_same_start_min": min((p["jobs_same_start"] for p in pairs), default=started),
        "jobs_started_first": started,
        "pairs": pairs,
    }
