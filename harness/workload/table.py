"""SWF records <-> job table (the DataFrame whose columns ``schema`` documents)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.workload.nodes import procs_to_nodes
from harness.workload.schema import JOB_COLUMNS
from harness.workload.swf import N_FIELDS, SwfTrace

# job-table column -> 0-based SWF field
SWF_FIELD_OF: dict[str, int] = {
    "job_id": 0,
    "submit": 1,
    "wait_trace": 2,
    "runtime": 3,
    "procs_alloc": 4,
    "cpu_time_avg": 5,
    "mem_used_kb": 6,
    "procs_req": 7,
    "walltime": 8,
    "mem_req_kb": 9,
    "status": 10,
    "user": 11,
    "group": 12,
    "executable": 13,
    "queue": 14,
    "partition": 15,
    "preceding_job": 16,
    "think_time": 17,
}


def trace_to_table(trace: SwfTrace, procs_per_node: int = 1) -> pd.DataFrame:
    """One row per valid record, in record order; -1 becomes NA. ``nodes`` is the
    requested (else allocated) processors over ``procs_per_node``, rounded up
    (:mod:`harness.workload.nodes` says how that number is chosen)."""
    rec = trace.records
    n = rec.shape[0]
    data: dict[str, object] = {
        "record": np.arange(n, dtype=np.int64),
        "line": trace.lines.astype(np.int64),
    }
    for name, k in SWF_FIELD_OF.items():
        data[name] = _column(rec[:, k], JOB_COLUMNS[name][0])
    data["nodes"] = _nodes(rec[:, 7], rec[:, 4], procs_per_node)
    return pd.DataFrame(data, columns=list(JOB_COLUMNS))


def _column(values: np.ndarray, dtype: str) -> object:
    unknown = values == -1
    if dtype in ("Int64", "int64"):  # job_id is int64 once cleaning dropped the unknown ones
        return pd.arrays.IntegerArray(np.where(unknown, 0, values).astype(np.int64), unknown)
    return np.where(unknown, np.nan, values)


def _nodes(procs_req: np.ndarray, procs_alloc: np.ndarray, procs_per_node: int) -> pd.arrays.IntegerArray:
    """Requested processors (field 8), else allocated ones (field 5), in nodes; unknown
    when neither is positive. On the KTH SP2 one processor is one node."""
    nodes = procs_to_nodes(np.where(procs_req > 0, procs_req, procs_alloc), procs_per_node)
    unknown = nodes <= 0
    return pd.arrays.IntegerArray(nodes, unknown)


def table_to_records(df: pd.DataFrame) -> np.ndarray:
    """Back to an ``(n, 18)`` SWF array (NA -> -1), e.g. to write a selection as SWF.

    Writes the table's current times: a rebased or shrunk table gives a rebased or
    shrunk trace. ``nodes`` is not written back; fields 5 and 8 come from their own columns.
    """
    out = np.full((len(df), N_FIELDS), -1.0)
    for name, k in SWF_FIELD_OF.items():
        if name in df.columns:
            out[:, k] = df[name].astype("float64").fillna(-1.0).to_numpy()
    return out
