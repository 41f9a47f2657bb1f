"""Herbein et al.'s I/O model (HPDC'16, Sections 3.1, 4.1-4.4).

Burst buffers turn a job's bursty I/O into a constant stream: the rate at which
its BB nodes drain to the PFS, for the job's whole life. Herbein's CTS-1 jobs write
a checkpoint of half a node's 128 GB memory every hour: 64 GB/h, about 18 MB/s
per node, and a job's demand is that times its node count. Under contention a job
gets ``ActualBW`` < ``ReqBW`` and computes only a fraction ``I = Actual / Req`` of
the time (Eq. 1); the rest it blocks on I/O.

Per job: ``pfs_mbps_per_node`` drawn from Normal(mean, rel_sd * mean), clipped at
0 (rel_sd 0, the default, gives Herbein's constant 18 MB/s); ``io_fraction`` the
share of the job's work that waits on I/O (1, Herbein's rule: all of it; smaller
values model jobs that overlap part of their computation with their I/O).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from harness.workload.io.draws import HERBEIN_STREAM, job_standard_normals, keep_given
from harness.workload.io.kopanski import IOModelError

COLUMNS: dict[str, str] = {
    "pfs_mbps_per_node": "constant PFS bandwidth each node of the job demands (its BB drain rate), MB/s",
    "io_fraction": "fraction of the job's work that blocks on I/O when its bandwidth falls short",
}

# 64 GB per node per hour (half of 128 GB, Section 4.1), in MB/s: 17.8, "about 18 MB/s".
CHECKPOINT_MBPS_PER_NODE = 18.0


@dataclass(frozen=True)
class HerbeinIO:
    mean_mbps_per_node: float = CHECKPOINT_MBPS_PER_NODE
    rel_sd: float = 0.0
    io_fraction: float = 1.0

    def __post_init__(self) -> None:
        if self.mean_mbps_per_node < 0 or self.rel_sd < 0 or not 0 <= self.io_fraction <= 1:
            raise IOModelError(f"need mean_mbps_per_node >= 0, rel_sd >= 0, 0 <= io_fraction <= 1: {self}")

    def as_dict(self) -> dict[str, object]:
        return {"model": "herbein", **asdict(self)}

    def apply(self, table: pd.DataFrame, seed: int) -> pd.DataFrame:
        if "job_id" not in table.columns:
            raise IOModelError("the Herbein I/O model needs the column job_id")
        z = job_standard_normals(table["job_id"].to_numpy(), seed, HERBEIN_STREAM)[:, 0]
        rate = np.maximum(self.mean_mbps_per_node * (1 + self.rel_sd * z), 0.0)
        out = table.copy()
        out["pfs_mbps_per_node"] = keep_given(table, "pfs_mbps_per_node", rate)
        out["io_fraction"] = keep_given(table, "io_fraction", np.full(len(table), self.io_fraction))
        return out


def interference(actual_mbps: np.ndarray, requested_mbps: np.ndarray) -> np.ndarray:
    """Herbein's interference factor: 1 when the request is met, else actual / requested."""
    actual = np.asarray(actual_mbps, dtype=np.float64)
    req = np.asarray(requested_mbps, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(actual >= req, 1.0, actual / req)


def progress_rate(i_factor: np.ndarray, io_fraction: np.ndarray) -> np.ndarray:
    """Work done per second: ``1 - f * (1 - I)`` (Eq. 1 when f = 1: T(computing) = sum I * dt)."""
    return 1.0 - np.asarray(io_fraction) * (1.0 - np.asarray(i_factor))
