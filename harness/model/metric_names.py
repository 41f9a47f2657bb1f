"""The names of the scheduling metrics: their labels, kinds and the headline set that
comparisons, fidelity checks and terminal tables show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TAU_S = 600.0  # the bounded slowdown's threshold: max(F / max(p, tau), 1)


@dataclass(frozen=True)
class MetricSpec:
    label: str
    kind: str  # count | seconds | ratio | fraction
    short: str = ""  # column header in terminal tables


METRIC_SPECS: dict[str, MetricSpec] = {
    "jobs": MetricSpec("Jobs measured", "count", "jobs"),
    "mean_wait": MetricSpec("Mean wait", "seconds", "mean wait"),
    "median_wait": MetricSpec("Median wait", "seconds", "median wait"),
    "p95_wait": MetricSpec("95th percentile wait", "seconds"),
    "max_wait": MetricSpec("Max wait", "seconds", "max wait"),
    "mean_turnaround": MetricSpec("Mean turnaround", "seconds", "mean turnaround"),
    "median_turnaround": MetricSpec("Median turnaround", "seconds"),
    "mean_slowdown": MetricSpec("Mean slowdown", "ratio", "mean sld"),
    "mean_bsld": MetricSpec("Mean bounded slowdown", "ratio", "mean bsld"),
    "median_bsld": MetricSpec("Median bounded slowdown", "ratio"),
    "max_bsld": MetricSpec("Max bounded slowdown", "ratio"),
    "mean_wslowdown": MetricSpec("Mean weighted slowdown", "ratio"),
    "makespan": MetricSpec("Makespan", "seconds", "makespan"),
    "util_compute": MetricSpec("Compute utilisation", "fraction", "util compute"),
    "util_bb": MetricSpec("Burst-buffer utilisation", "fraction", "util BB"),
    "timeouts": MetricSpec("Jobs killed at walltime", "count", "timeouts"),
    # io-aware schedules (harness.analysis.io_metrics)
    "mean_io_s": MetricSpec("Mean time in I/O", "seconds", "mean I/O"),
    "io_tb": MetricSpec("Data moved (TB)", "ratio"),
    "mean_dilation": MetricSpec("Mean runtime dilation", "ratio", "dilation"),
    "max_dilation": MetricSpec("Max runtime dilation", "ratio"),
    "dilation_sd": MetricSpec("Job performance variability (dilation sd)", "ratio", "dilation sd"),
    "jobs_contended": MetricSpec("Jobs that met I/O contention", "fraction", "contended"),
    "mean_interference_fraction": MetricSpec("Mean fraction of runtime with I < 1", "fraction"),
    "util_pfs_bw": MetricSpec("PFS bandwidth utilisation", "fraction", "util PFS bw"),
    "util_bb_bw": MetricSpec("BB-node bandwidth utilisation", "fraction", "util BB bw"),
}

# What a comparison of schedules shows by default: waits, turnaround, slowdowns, makespan
# and utilisations.
HEADLINE_METRICS: tuple[str, ...] = (
    "mean_wait", "median_wait", "max_wait", "mean_turnaround", "mean_slowdown", "mean_bsld",
    "makespan", "util_compute", "util_bb",
)  # fmt: skip

# What the terminal table adds for an io-aware schedule.
IO_METRICS: tuple[str, ...] = (
    "timeouts", "mean_io_s", "mean_dilation", "dilation_sd", "jobs_contended", "util_pfs_bw", "util_bb_bw",
)  # fmt: skip

# Higher is better only for utilisation; every other headline metric is a cost.
HIGHER_IS_BETTER = frozenset({"util_compute", "util_bb"})


def metric_spec(key: str, value: Any = None) -> MetricSpec:
    """The label and kind of a metric; unknown keys get a kind guessed from name and type."""
    if key in METRIC_SPECS:
        return METRIC_SPECS[key]
    base = key.removesuffix("_ci95")
    if base != key and base in METRIC_SPECS:
        spec = METRIC_SPECS[base]
        return MetricSpec(f"{spec.label}, 95 % CI", spec.kind)
    label = key.replace("_", " ").capitalize()
    if isinstance(value, int) and not isinstance(value, bool):
        return MetricSpec(label, "count")
    if key.startswith("util"):
        return MetricSpec(label, "fraction")
    if key.endswith("_s") or any(w in key for w in ("wait", "turnaround", "makespan", "runtime")):
        return MetricSpec(label, "seconds")
    return MetricSpec(label, "ratio")
