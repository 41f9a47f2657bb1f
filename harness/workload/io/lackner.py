"""Lackner, Fard and Wolf's two-tier I/O model (Sections III-A, III-B, IV-A, IV-B).

Two storage tiers: the PFS (LPS: slow, unlimited) and the burst buffers (HPS: fast,
limited). Rates: ``R_hps = 15 R_lps`` (burst buffers 3x a classical PFS, NVMe 5x
more) and ``R_stage = 5 R_lps`` between the tiers (staging is sequential).

Per job: input, output and intermediate data. The volumes fill a fraction of the
job's runtime at ``R_lps``: input and output together about 10 % on average
(each fraction ~ Normal(5 %, 2 %), clipped to [0, 25 %]); intermediate data are
checkpoints of the node memory (here the BB request per node, Kopański's
assumption that the BB request equals the memory request), as many as fill
``checkpoint_fraction`` of the runtime, none for short jobs (under
``short_runtime_s``, Lackner's shortest job: 1800 s) and never more than the runtime
holds at ``R_lps`` after the staged data. The HPS request is
``max(input, output) + one checkpoint``.

With ``R_lps`` = 1000 MB/s the thesis's platform gives Lackner's ratios: 12 BB nodes
of 1250 MB/s are 15 GB/s of HPS (15x), its 5 GB/s PFS link stages at 5x.
A job's runtime on LPS is its trace runtime; on HPS its I/O runs 15x faster, and
staging in and out at ``R_stage`` comes on top, outside the compute nodes' time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from harness.workload.io.draws import LACKNER_STREAM, job_standard_normals, keep_given
from harness.workload.io.kopanski import IOModelError

COLUMNS: dict[str, str] = {
    "input_mb": "input data of the job, MB (read at start; staged in when on HPS)",
    "output_mb": "output data of the job, MB (written at the end; staged out when on HPS)",
    "data_mb": "intermediate data (checkpoints) read and written while running, MB",
    "storage_mb": "HPS capacity the job asks for: max(input, output) + one checkpoint, MB",
}


@dataclass(frozen=True)
class LacknerIO:
    r_lps_mbps: float = 1000.0
    hps_ratio: float = 15.0
    stage_ratio: float = 5.0
    staging_fraction_mean: float = 0.05  # input and output each; 10 % together
    staging_fraction_sd: float = 0.02
    staging_fraction_max: float = 0.25
    checkpoint_fraction: float = 0.1
    short_runtime_s: float = 1800.0

    def __post_init__(self) -> None:
        if min(self.r_lps_mbps, self.hps_ratio, self.stage_ratio) <= 0:
            raise IOModelError(f"rates and ratios must be positive: {self}")
        fractions = (self.staging_fraction_mean, self.staging_fraction_max, self.checkpoint_fraction)
        if not all(0 <= f < 1 for f in fractions) or self.staging_fraction_sd < 0:
            raise IOModelError(f"fractions must be in [0, 1), sd >= 0: {self}")

    @property
    def r_hps_mbps(self) -> float:
        return self.r_lps_mbps * self.hps_ratio

    @property
    def r_stage_mbps(self) -> float:
        return self.r_lps_mbps * self.stage_ratio

    def as_dict(self) -> dict[str, object]:
        return {
            "model": "lackner",
            **asdict(self),
            "r_hps_mbps": self.r_hps_mbps,
            "r_stage_mbps": self.r_stage_mbps,
        }

    def apply(self, table: pd.DataFrame, seed: int) -> pd.DataFrame:
        missing = [c for c in ("job_id", "runtime", "nodes", "bb_per_node_mb") if c not in table.columns]
        if missing:
            raise IOModelError(f"the Lackner I/O model needs column(s) {missing}")
        runtime = table["runtime"].to_numpy(np.float64)
        z = job_standard_normals(table["job_id"].to_numpy(), seed, LACKNER_STREAM, per_job=2)
        frac = np.clip(
            self.staging_fraction_mean + self.staging_fraction_sd * z, 0, self.staging_fraction_max
        )
        lps_mb = runtime * self.r_lps_mbps
        ckpt_mb = table["nodes"].to_numpy(np.float64) * table["bb_per_node_mb"].to_numpy(np.float64)
        out = table.copy()
        out["input_mb"] = keep_given(table, "input_mb", frac[:, 0] * lps_mb)
        out["output_mb"] = keep_given(table, "output_mb", frac[:, 1] * lps_mb)
        staged = (out["input_mb"] + out["output_mb"]).to_numpy(np.float64)
        count = self._checkpoints(runtime, lps_mb - staged, ckpt_mb)
        out["data_mb"] = keep_given(table, "data_mb", count * ckpt_mb)
        one_ckpt = np.where(count > 0, ckpt_mb, 0.0)
        out["storage_mb"] = keep_given(
            table, "storage_mb", np.maximum(out["input_mb"], out["output_mb"]).to_numpy() + one_ckpt
        )
        return out

    def _checkpoints(self, runtime: np.ndarray, room_mb: np.ndarray, ckpt_mb: np.ndarray) -> np.ndarray:
        """How many checkpoints: those filling ``checkpoint_fraction`` of the runtime at
        ``R_lps``, at least one for a long job, but never more than the ``room_mb`` its runtime
        has left at ``R_lps`` after the staged data. The trace runtime is the run on LPS, I/O
        included: a checkpoint that does not fit (a slow PFS) would leave the job a negative
        compute time, and on HPS it would then run in no time at all."""
        size = np.maximum(ckpt_mb, 1.0)
        wanted = np.maximum(np.rint(self.checkpoint_fraction * runtime * self.r_lps_mbps / size), 1)
        fits = np.floor(np.maximum(room_mb, 0.0) / size)
        return np.where(runtime < self.short_runtime_s, 0, np.minimum(wanted, fits))

    def runtime_on(self, table: pd.DataFrame, tier: str) -> np.ndarray:
        """Seconds on the compute nodes if the job uses ``tier`` ("lps" or "hps"), staging excluded."""
        runtime = table["runtime"].to_numpy(np.float64)
        io_mb = (table["input_mb"] + table["output_mb"] + table["data_mb"]).to_numpy(np.float64)
        if tier == "lps":
            return runtime
        if tier == "hps":
            return np.maximum(runtime - io_mb / self.r_lps_mbps, 0.0) + io_mb / self.r_hps_mbps
        raise IOModelError(f"unknown storage tier '{tier}' (lps, hps)")

    def staging_s(self, table: pd.DataFrame) -> np.ndarray:
        """Seconds to stage the input in and the output out between the tiers, alone on the link."""
        return (table["input_mb"] + table["output_mb"]).to_numpy(np.float64) / self.r_stage_mbps
