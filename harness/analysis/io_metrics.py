"""I/O metrics of an io-aware schedule (Herbein Section 4.4-5.3, Kopański Section 4.2.2).

Per job (columns the io-aware simulator writes): time in I/O ``io_s``, time with a
transfer slowed by contention ``contended_s`` (Herbein's interference factor
I < 1), ``dilation`` = runtime / contention-free runtime. Aggregates: their means,
the share of jobs that met contention, job performance variability (the standard
deviation of dilation; Herbein Section 5.3), and the PFS and BB-node bandwidth
utilisation over the makespan (bytes carried / (capacity x makespan)).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.metrics import makespan
from harness.platform import Machine

IO_COLUMNS = ("io_s", "io_bytes", "contended_s", "dilation", "interference_fraction")


def io_summary(
    jobs: pd.DataFrame,
    platform: Machine,
    link_bytes: dict[str, float] | None,
) -> dict[str, Any]:
    """The I/O figures of a schedule (empty for an alloc-only one)."""
    if not all(c in jobs.columns for c in IO_COLUMNS) or jobs.empty:
        return {}
    dilation = jobs["dilation"].to_numpy(np.float64)
    out: dict[str, Any] = {
        "mean_io_s": float(jobs["io_s"].mean()),
        "io_tb": float(jobs["io_bytes"].sum() / 1e12),
        "mean_dilation": float(np.nanmean(dilation)),
        "max_dilation": float(np.nanmax(dilation)),
        "dilation_sd": float(np.nanstd(dilation)),
        "jobs_contended": float((jobs["contended_s"] > 0).mean()),
        "mean_interference_fraction": float(jobs["interference_fraction"].mean()),
    }
    span = makespan(jobs)
    if link_bytes and span > 0:
        io = platform.io
        pfs_bps = io.pfs_capacity_mbps(platform.compute_count) * 1e6
        bb = sum(v for k, v in link_bytes.items() if k.startswith(platform.bb.prefix))
        out["util_pfs_bw"] = link_bytes.get("pfs", 0.0) / (pfs_bps * span)
        out["util_bb_bw"] = bb / (io.bb_node_mbps * 1e6 * platform.bb_count * span)
    return out
