"""Scheduling metrics, shared by the simulator and the emulation.

Definitions follow Kopański (2020) Section 1.8 and Barberato (2018) Section 2.4,
for a results table with columns ``job_id, submit, start, end, runtime, nodes,
bb_per_node_mb`` (``runtime`` = actual run, ``end - start``):

* waiting time ``W = start - submit``; turnaround ``F = end - submit = W + p``;
* slowdown ``F / p``; bounded slowdown ``max(F / max(p, tau), 1)``, tau = 600 s;
* weighted slowdown ``nodes * F / p`` (Barberato Eq. 2.6);
* makespan ``max(end) - min(submit)``; compute utilisation
  ``sum(nodes * p) / (M * makespan)``, BB utilisation the same with the BB MB held.

Results are in the trace's own time (an emulation converts Slurm's times when it
collects them), so every figure is too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.model.metric_names import DEFAULT_TAU_S
from harness.platform import Machine

# A job that ran for less than this counts as having run this long in the slowdown,
# which would otherwise be infinite for zero-length jobs.
MIN_RUNTIME_S = 1.0
# Quantiles of a depth-4 letter-value (boxen) plot, as in Kopański Section 4.1.
LETTER_VALUE_QUANTILES: tuple[float, ...] = (
    1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 7 / 8, 15 / 16, 31 / 32,
)  # fmt: skip


def job_metrics(df: pd.DataFrame, tau: float = DEFAULT_TAU_S) -> pd.DataFrame:
    """Per-job ``wait, turnaround, runtime, slowdown, bsld, wslowdown``."""
    submit = df["submit"].to_numpy(np.float64)
    start = df["start"].to_numpy(np.float64)
    end = df["end"].to_numpy(np.float64)
    runtime = end - start
    wait = start - submit
    turnaround = end - submit
    slowdown = turnaround / np.maximum(runtime, MIN_RUNTIME_S)
    bsld = np.maximum(turnaround / np.maximum(runtime, tau), 1.0)
    return pd.DataFrame(
        {
            "job_id": df["job_id"].to_numpy(),
            "wait": wait,
            "turnaround": turnaround,
            "runtime": runtime,
            "slowdown": slowdown,
            "bsld": bsld,
            "wslowdown": slowdown * df["nodes"].to_numpy(np.float64),
        }
    )


def makespan(df: pd.DataFrame) -> float:
    if df.empty:
        return 0.0
    # the last end of a run or of a BB hold (NaN for a job holding none: LPS in a pool)
    last = df[[c for c in ("end", "bb_end") if c in df.columns]].max().max()
    return float(last - df["submit"].min())


def utilisation(df: pd.DataFrame, platform: Machine) -> tuple[float, float]:
    """Compute and BB utilisation over the makespan (Kopański Eq. 1.10)."""
    span = makespan(df)
    if span <= 0:
        return 0.0, 0.0
    run = (df["end"] - df["start"]).to_numpy(np.float64)
    nodes = df["nodes"].to_numpy(np.float64)
    node_time = float(np.sum(nodes * run))
    if "bb_end" in df.columns:  # staged outside the allocation: the BB is held longer than the nodes
        run = (df["bb_end"] - df["bb_start"]).to_numpy(np.float64)
    # nansum: a job on the slow tier in a pool (harness.sim.pool_tiers) has no BB window
    bb_time = float(np.nansum(nodes * df["bb_per_node_mb"].to_numpy(np.float64) * run))
    return node_time / (platform.compute_count * span), bb_time / (platform.bb_total_mb * span)


def summary(
    df: pd.DataFrame,
    platform: Machine,
    *,
    tau: float = DEFAULT_TAU_S,
    ci: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """The aggregate figures of one schedule; with ``ci``, bootstrap 95 % intervals of the means."""
    m = job_metrics(df, tau=tau)
    util_c, util_bb = utilisation(df, platform)
    out: dict[str, Any] = {
        "jobs": len(m),
        "mean_wait": _mean(m["wait"]),
        "median_wait": _quantile(m["wait"], 0.5),
        "p95_wait": _quantile(m["wait"], 0.95),
        "max_wait": _max(m["wait"]),
        "mean_turnaround": _mean(m["turnaround"]),
        "median_turnaround": _quantile(m["turnaround"], 0.5),
        "mean_slowdown": _mean(m["slowdown"]),
        "mean_bsld": _mean(m["bsld"]),
        "median_bsld": _quantile(m["bsld"], 0.5),
        "max_bsld": _max(m["bsld"]),
        "mean_wslowdown": _mean(m["wslowdown"]),
        "makespan": makespan(df),
        "util_compute": util_c,
        "util_bb": util_bb,
    }
    if "status" in df.columns:
        out["timeouts"] = int((df["status"] == "timeout").sum())
    if ci:
        for col, key in (("wait", "mean_wait"), ("bsld", "mean_bsld")):
            lo, hi = bootstrap_ci(m[col].to_numpy(), seed=seed)
            out[f"{key}_ci95"] = [lo, hi]
    return out


def quantiles(
    values: Sequence[float] | np.ndarray, qs: Sequence[float] = LETTER_VALUE_QUANTILES
) -> dict[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {float(q): float(np.quantile(arr, q)) for q in qs}


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], Any] = np.mean,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over jobs (Kopański Section 4.1)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    boot = np.empty(resamples)
    # Resample in chunks: all resamples of a 28k-job trace at once would take GBs.
    chunk = max(1, 2_000_000 // arr.size)
    for first in range(0, resamples, chunk):
        size = min(chunk, resamples - first)
        picks = arr[rng.integers(0, arr.size, size=(size, arr.size))]
        boot[first : first + size] = [statistic(row) for row in picks]
    alpha = (1.0 - level) / 2.0
    return float(np.quantile(boot, alpha)), float(np.quantile(boot, 1.0 - alpha))


def repetition_stats(values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Statistics of one metric over repeated runs, as in Barberato's tables.

    AVE is the mean; SSD the standard deviation with divisor n (the convention that
    reproduces Barberato Tables 4.3 and 4.4); RSD = 100 * SSD / AVE in percent; C95
    the half-width ``t(0.975, n - 1) * SSD / sqrt(n)``.
    """
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n == 0:
        raise ValueError("no repetitions")
    ave = float(arr.mean())
    ssd = float(arr.std(ddof=0))
    rsd = 100.0 * ssd / ave if ave else float("nan")
    c95 = float(stats.t.ppf(0.975, n - 1) * ssd / np.sqrt(n)) if n > 1 else float("nan")
    return {"AVE": ave, "SSD": ssd, "RSD": rsd, "C95": c95}


def _mean(s: pd.Series) -> float:
    return float(s.mean()) if len(s) else float("nan")


def _max(s: pd.Series) -> float:
    return float(s.max()) if len(s) else float("nan")


def _quantile(s: pd.Series, q: float) -> float:
    return float(s.quantile(q)) if len(s) else float("nan")
