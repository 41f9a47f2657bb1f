"""The job table: one module owns its columns.

A *job table* is a pandas DataFrame with one row per job. Times are seconds
(float64). In a table read from a trace they are the trace's own seconds (SWF
submit times count from the header's UnixStartTime); after ``rebase`` the first
submit is 0. ``-1`` is never used inside a job table: unknown values are NA
(pandas nullable ``Int64`` / ``NaN`` for floats) or the job is removed by a
named cleaning rule (see ``harness.workload.cleaning``).

The *job plan* written by ``harness workload prepare`` is a job table with at
least the PLAN_COLUMNS of ``harness.model.columns`` (no NA anywhere), stored as parquet with its JSON
manifest in the parquet metadata. Simulator and replay consume exactly this. If the manifest's
``shrink`` is s > 0, every time in the plan is already multiplied by 1 - s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.model.columns import PLAN_COLUMNS

# column name -> (pandas dtype, meaning). Columns read from the SWF record.
JOB_COLUMNS: dict[str, tuple[str, str]] = {
    "record": ("int64", "0-based index of the record among the trace's valid records"),
    "line": ("int64", "1-based line of the record in the trace file"),
    "job_id": ("Int64", "job number from the trace (SWF field 1); int64 once cleaned"),
    "submit": ("float64", "submit time, seconds (field 2); trace seconds until rebased"),
    "wait_trace": ("float64", "waiting time recorded in the trace (field 3), NA if unknown"),
    "runtime": ("float64", "run time in seconds (field 4); NA if unknown"),
    "procs_alloc": ("Int64", "allocated processors (field 5)"),
    "cpu_time_avg": ("float64", "average CPU time used, seconds (field 6)"),
    "mem_used_kb": ("float64", "used memory per processor, KB (field 7)"),
    "procs_req": ("Int64", "requested processors (field 8)"),
    "nodes": (
        "Int64",
        "requested nodes: ceil(processors / processors per node), processors from field 8 if > 0, "
        "else field 5 if > 0, else NA (harness.workload.nodes); int64 once cleaned",
    ),
    "walltime": ("float64", "requested time (user's estimate / time limit), seconds (field 9)"),
    "mem_req_kb": ("float64", "requested memory per processor, KB (field 10)"),
    "status": ("Int64", "SWF status (field 11): 1 completed, 0 failed, 5 cancelled, ..."),
    "user": ("Int64", "user id (field 12)"),
    "group": ("Int64", "group id (field 13)"),
    "executable": ("Int64", "application number (field 14)"),
    "queue": ("Int64", "queue number (field 15)"),
    "partition": ("Int64", "partition number (field 16)"),
    "preceding_job": ("Int64", "preceding job number (field 17)"),
    "think_time": ("float64", "think time from preceding job, seconds (field 18)"),
}

# Columns added by cleaning, the burst-buffer model and the transforms.
DERIVED_COLUMNS: dict[str, tuple[str, str]] = {
    "trace_submit": ("float64", "submit time in the trace's own seconds, before shuffle/rebase/shrink"),
    "timeout": ("bool", "the trace's runtime exceeded the walltime: the job ends at its walltime"),
    "bb_per_node_mb": ("int64", "burst-buffer request per compute node, MB (10^6 bytes)"),
    "bb_total_mb": ("int64", "whole burst-buffer request: nodes x bb_per_node_mb (Slurm license count)"),
}

ALL_COLUMNS: dict[str, tuple[str, str]] = {**JOB_COLUMNS, **DERIVED_COLUMNS}

# Kept in every plan ``prepare`` writes, for traceability and metrics; consumers may ignore them.
PLAN_EXTRA_COLUMNS: tuple[str, ...] = ("bb_total_mb", "timeout", "user", "trace_submit", "record")

# dtypes a plan must have (nodes is no longer nullable there).
PLAN_DTYPES: dict[str, str] = {
    "job_id": "int64",
    "submit": "float64",
    "runtime": "float64",
    "walltime": "float64",
    "nodes": "int64",
    "bb_per_node_mb": "int64",
    "bb_total_mb": "int64",
    "timeout": "bool",
    "user": "Int64",
    "trace_submit": "float64",
    "record": "int64",
}


class SchemaError(ValueError):
    """A job table or plan lacks a column, has a wrong dtype or an impossible value."""


def bb_total_mb(nodes: int, bb_per_node_mb: int) -> int:
    """A job's whole burst-buffer request (the Slurm license count it holds)."""
    return int(nodes) * int(bb_per_node_mb)


def describe_columns() -> str:
    """The column reference as a Markdown table (used by docs and ``--help``)."""
    rows = ["| column | dtype | meaning |", "|---|---|---|"]
    rows += [f"| `{name}` | {dtype} | {meaning} |" for name, (dtype, meaning) in ALL_COLUMNS.items()]
    return "\n".join(rows)


def validate_plan(df: pd.DataFrame, where: str = "plan") -> None:
    """Check that ``df`` is a usable plan: required columns, dtypes, no NA, sane values."""
    missing = [c for c in PLAN_COLUMNS if c not in df.columns]
    if missing:
        raise SchemaError(f"{where}: missing column(s) {', '.join(missing)}")
    for col in PLAN_COLUMNS:
        want = PLAN_DTYPES[col]
        if str(df[col].dtype) != want:
            raise SchemaError(f"{where}: column '{col}' has dtype {df[col].dtype}, expected {want}")
        if df[col].isna().any():
            raise SchemaError(f"{where}: column '{col}' has {int(df[col].isna().sum())} missing value(s)")
    if len(df) == 0:
        raise SchemaError(f"{where}: the plan has no jobs (at least one is needed)")
    for col in ("submit", "runtime", "walltime"):
        _check_finite(df, col, where)
    _check_min(df, "nodes", 1, where)
    for col in ("submit", "runtime", "bb_per_node_mb"):
        _check_min(df, col, 0, where)
    no_limit = int((df["walltime"] <= 0).sum())
    if no_limit:
        raise SchemaError(f"{where}: column 'walltime' must be > 0 ({no_limit} row(s) are not)")
    duplicated = df["job_id"][df["job_id"].duplicated()]
    if len(duplicated):
        raise SchemaError(
            f"{where}: job_id must be unique; {len(duplicated)} repeated, e.g. {duplicated.iloc[0]}"
        )


def _plain(value: object) -> object:
    """A numpy scalar as the Python number it holds (``inf``, not ``np.float64(inf)``)."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _check_finite(df: pd.DataFrame, col: str, where: str) -> None:
    bad = ~np.isfinite(df[col].to_numpy(np.float64))
    if bad.any():
        first = df.index[bad][0]
        raise SchemaError(
            f"{where}: column '{col}' must be finite; row {first} has {_plain(df.at[first, col])!r}"
            f" ({int(bad.sum())} row(s) bad)"
        )


def _check_min(df: pd.DataFrame, col: str, low: float, where: str) -> None:
    bad = df[col] < low
    if bad.any():
        first = df.index[bad.to_numpy()][0]
        raise SchemaError(
            f"{where}: column '{col}' must be >= {low}; row {first} has {_plain(df.at[first, col])!r}"
            f" ({int(bad.sum())} row(s) bad)"
        )
