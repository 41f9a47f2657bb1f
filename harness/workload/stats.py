"""What is in a trace: the numbers ``harness workload inspect`` prints."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from harness.platform import Machine
from harness.workload.cleaning import CleaningReport
from harness.workload.swf import SwfTrace

# Barberato Figure 4.3: runtime / requested time in tenths, plus the overrun buckets.
ACCURACY_EDGES: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, math.inf)
RUNTIME_EDGES: tuple[float, ...] = (0, 60, 600, 3600, 4 * 3600, 12 * 3600, 86400, math.inf)
RUNTIME_LABELS: tuple[str, ...] = ("<=1m", "1-10m", "10m-1h", "1-4h", "4-12h", "12-24h", ">24h")


def size_buckets(max_nodes: int) -> list[tuple[int, int]]:
    """Power-of-two size classes 1, 2, 3-4, 5-8, ... up to ``max_nodes``."""
    buckets, low, high = [], 1, 1
    while low <= max_nodes:
        buckets.append((low, min(high, max_nodes)))
        low, high = high + 1, high * 2
    return buckets


def _label(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def size_distribution(nodes: np.ndarray, max_nodes: int) -> dict[str, int]:
    return {_label(lo, hi): int(((nodes >= lo) & (nodes <= hi)).sum()) for lo, hi in size_buckets(max_nodes)}


def runtime_distribution(runtime: np.ndarray) -> dict[str, int]:
    # (a, b] buckets: runtimes often sit exactly on round minutes and belong below them
    idx = np.searchsorted(RUNTIME_EDGES, runtime, side="left") - 1
    counts = np.bincount(np.clip(idx, 0, len(RUNTIME_LABELS) - 1), minlength=len(RUNTIME_LABELS))
    return dict(zip(RUNTIME_LABELS, (int(c) for c in counts), strict=True))


def accuracy_distribution(runtime: np.ndarray, walltime: np.ndarray) -> dict[str, int]:
    """Jobs per (a, b] bucket of runtime / walltime (Barberato Figure 4.3)."""
    ratio = runtime / walltime
    idx = np.searchsorted(ACCURACY_EDGES, ratio, side="left") - 1
    labels = [_accuracy_label(a, b) for a, b in itertools.pairwise(ACCURACY_EDGES)]
    counts = np.bincount(np.clip(idx, 0, len(labels) - 1), minlength=len(labels))
    return dict(zip(labels, (int(c) for c in counts), strict=True))


def _accuracy_label(a: float, b: float) -> str:
    return f">{a:.1f}" if math.isinf(b) else f"({a:.1f},{b:.1f}]"


def offered_load(nodes: np.ndarray, runtime: np.ndarray, submit: np.ndarray, compute_count: int) -> float:
    """Node-seconds asked for / node-seconds the machine offers over the submit span."""
    span = float(submit.max() - submit.min()) if len(submit) else 0.0
    if span <= 0:
        return math.nan
    return float((nodes * runtime).sum() / (compute_count * span))


def bb_summary(df: pd.DataFrame, platform: Machine, counts: dict[str, int]) -> dict[str, Any]:
    per_node = df["bb_per_node_mb"].to_numpy()
    span = float(df["submit"].max() - df["submit"].min()) if len(df) else 0.0
    demand = float((df["bb_total_mb"].to_numpy() * df["runtime"].to_numpy()).sum())
    return {
        "per_node_mb": _describe(per_node),
        "total_mb": _describe(df["bb_total_mb"].to_numpy()),
        "offered_load": demand / (platform.bb_total_mb * span) if span > 0 else math.nan,
        **counts,
    }


def _describe(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {}
    q = np.percentile(values, [25, 50, 75])
    return {
        "mean": float(values.mean()),
        "min": float(values.min()),
        "p25": float(q[0]),
        "median": float(q[1]),
        "p75": float(q[2]),
        "max": float(values.max()),
    }


def summarize(
    trace: SwfTrace,
    raw: pd.DataFrame,
    jobs: pd.DataFrame,
    report: CleaningReport,
    platform: Machine,
    bb_counts: dict[str, int],
) -> dict[str, Any]:
    """Everything ``inspect`` shows, as one JSON-able dict.

    ``raw`` is the uncleaned table (walltime accuracy uses the trace's runtimes,
    before any clip); ``jobs`` the cleaned one with BB requests.
    """
    submit = jobs["submit"].to_numpy()
    kept_raw = raw.set_index("record").loc[jobs["record"]]
    return {
        "path": trace.path,
        "sha256": trace.sha256,
        "header": {k: trace.metadata.get(k) for k in ("Version", "Computer", "Installation")}
        | {k: trace.header_int(k) for k in ("MaxNodes", "MaxProcs", "UnixStartTime")},
        "records": len(trace),
        "skipped": len(trace.skipped),
        "skipped_records": [str(r) for r in trace.skipped],
        "jobs": len(jobs),
        "rules": report.counts(),
        "rule_actions": report.actions(),
        "node_size": report.node_size or {},
        "walltime_factor": report.walltime_factor,
        "platform": {"name": platform.name, "compute": platform.compute_count, "bb": platform.bb_count},
        "span_s": float(submit.max() - submit.min()) if len(submit) else 0.0,
        "offered_load": offered_load(
            jobs["nodes"].to_numpy(), jobs["runtime"].to_numpy(), submit, platform.compute_count
        ),
        "nodes": _describe(jobs["nodes"].to_numpy()),
        "size_distribution": size_distribution(jobs["nodes"].to_numpy(), platform.compute_count),
        "runtime_s": _describe(jobs["runtime"].to_numpy()),
        "runtime_distribution": runtime_distribution(jobs["runtime"].to_numpy()),
        "walltime_accuracy": accuracy_distribution(
            kept_raw["runtime"].to_numpy(dtype=np.float64), kept_raw["walltime"].to_numpy(dtype=np.float64)
        ),
        "timeouts": int(jobs["timeout"].sum()),
        "bb": bb_summary(jobs, platform, bb_counts),
    }
