"""The job table: one module owns its columns.

A *job table* is a pandas DataFrame with one row per job. Times are seconds
(float64) relative to the start of the trace (after rebase: the first submit is 0).
``-1`` is never used inside a job table: unknown values are NA (pandas nullable
types) or the job is removed by a named cleaning rule.

The *job plan* written by ``harness workload prepare`` is a job table with at
least the PLAN_COLUMNS below, stored as parquet with a JSON sidecar manifest.
Simulator and replay consume exactly this.
"""

from __future__ import annotations

# column name -> (pandas dtype, meaning)
JOB_COLUMNS: dict[str, tuple[str, str]] = {
    "job_id": ("int64", "job number from the trace (SWF field 1)"),
    "submit": ("float64", "submit time, seconds since trace start (field 2)"),
    "wait_trace": ("float64", "waiting time recorded in the trace (field 3), NA if unknown"),
    "runtime": ("float64", "run time in seconds (field 4)"),
    "procs_alloc": ("Int64", "allocated processors (field 5)"),
    "cpu_time_avg": ("float64", "average CPU time used (field 6)"),
    "mem_used_kb": ("float64", "used memory per processor, KB (field 7)"),
    "nodes": ("int64", "requested nodes; on KTH requested processors = nodes (field 8, else 5)"),
    "walltime": ("float64", "requested time (user's estimate / time limit), seconds (field 9)"),
    "mem_req_kb": ("float64", "requested memory per processor, KB (field 10)"),
    "status": ("Int64", "SWF status (field 11)"),
    "user": ("Int64", "user id (field 12)"),
    "group": ("Int64", "group id (field 13)"),
    "executable": ("Int64", "application number (field 14)"),
    "queue": ("Int64", "queue number (field 15)"),
    "partition": ("Int64", "partition number (field 16)"),
    "preceding_job": ("Int64", "preceding job number (field 17)"),
    "think_time": ("float64", "think time from preceding job (field 18)"),
    "bb_per_node_mb": ("int64", "burst-buffer request per compute node, MB"),
}

# What the simulator and the replay need; every plan has these.
PLAN_COLUMNS: tuple[str, ...] = ("job_id", "submit", "runtime", "walltime", "nodes", "bb_per_node_mb")


def bb_total_mb(nodes: int, bb_per_node_mb: int) -> int:
    """A job's whole burst-buffer request (the Slurm license count it holds)."""
    return int(nodes) * int(bb_per_node_mb)
