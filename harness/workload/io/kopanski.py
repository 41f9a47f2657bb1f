"""Kopański's IO-Aware job model (MSc thesis 2020, Section 2.4, Figure 2.4).

A job is: stage-in of its BB request from the PFS to its BB nodes; then ``p``
equal compute phases (computation and N-N communication in parallel), a checkpoint
to the BB nodes between two of them (the job's other activity suspended
meanwhile), each checkpoint then drained BB -> PFS in the background while the next
phase computes; then stage-out of the BB request to the PFS. The job ends when its
stage-out and every drain are done.

Parameters, from the thesis and its scheduler's run options:

* computation per node shortened so the added I/O does not push jobs past their
  walltime: ``max(runtime - kappa * bb / bandwidth, 0.05 * runtime)`` seconds at
  1 Gflop/s, kappa = 40, bb the request per node, bandwidth the compute network's
  1.25 GB/s (the 5 % floor: a job spends at most 95 % of its time in I/O);
* phases ``p = clip(round(computation / 3600 s), 1, 10)`` (target phase 3600 s,
  at most 10 phases);
* a checkpoint is half the BB request per node; stage-in and stage-out move the
  whole request per node;
* communication: every node sends theta bytes to every other node in each phase,
  theta ~ Normal(100 MB, 20 %), drawn per job number (clipped at 0).

Jobs up to 120 s get the minimal BB request from the BB model already. Times are
computed on unshrunk seconds and shrunk back, so a shrunk plan gets the same phases.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from harness.workload.io.draws import KOPANSKI_STREAM, job_standard_normals, keep_given

COLUMNS: dict[str, str] = {
    "io_compute_s": "computation per node over all phases, seconds (shortened runtime)",
    "io_phases": "compute phases p (1-10); p - 1 checkpoints between them",
    "io_comm_mb": "MB each node sends to every other node in each compute phase (theta)",
    "io_checkpoint_mb": "MB per node written to the BB node at each checkpoint, then drained to the PFS",
    "io_stage_in_mb": "MB per node staged in PFS -> BB before the first phase",
    "io_stage_out_mb": "MB per node staged out BB -> PFS after the last phase",
}


class IOModelError(ValueError):
    """An impossible I/O-model parameter or a job table that lacks a column."""


@dataclass(frozen=True)
class KopanskiIO:
    kappa: float = 40.0
    floor: float = 0.05
    network_mbps: float = 1250.0  # compute network link, MB/s (10 Gbit/s)
    target_phase_s: float = 3600.0
    max_phases: int = 10
    checkpoint_factor: float = 0.5
    theta_mean_mb: float = 100.0
    theta_rel_sd: float = 0.2

    def __post_init__(self) -> None:
        if self.kappa < 0 or not 0 <= self.floor <= 1 or self.network_mbps <= 0:
            raise IOModelError(f"need kappa >= 0, 0 <= floor <= 1, network_mbps > 0: {self}")
        if self.target_phase_s <= 0 or self.max_phases < 1 or self.checkpoint_factor < 0:
            raise IOModelError(f"need target_phase_s > 0, max_phases >= 1, checkpoint_factor >= 0: {self}")
        if self.theta_mean_mb < 0 or self.theta_rel_sd < 0:
            raise IOModelError(f"need theta_mean_mb >= 0 and theta_rel_sd >= 0: {self}")

    def as_dict(self) -> dict[str, object]:
        return {"model": "kopanski", **asdict(self)}

    def compute_s(self, runtime_s: np.ndarray, bb_mb: np.ndarray) -> np.ndarray:
        """The thesis's shortened computation, in unshrunk seconds."""
        runtime_s = np.asarray(runtime_s, dtype=np.float64)
        io_s = self.kappa * np.asarray(bb_mb, dtype=np.float64) / self.network_mbps
        return np.maximum(runtime_s - io_s, self.floor * runtime_s)

    def phases(self, compute_s: np.ndarray) -> np.ndarray:
        return np.clip(np.rint(np.asarray(compute_s) / self.target_phase_s), 1, self.max_phases).astype(
            np.int64
        )

    def apply(self, table: pd.DataFrame, seed: int) -> pd.DataFrame:
        """The job table with the :data:`COLUMNS` added (trace columns of these names win)."""
        missing = [c for c in ("job_id", "runtime", "bb_per_node_mb") if c not in table.columns]
        if missing:
            raise IOModelError(f"the Kopański I/O model needs column(s) {missing}")
        bb = table["bb_per_node_mb"].to_numpy(np.float64)
        compute = self.compute_s(table["runtime"].to_numpy(np.float64), bb)
        theta = self.theta_mean_mb * (
            1
            + self.theta_rel_sd
            * job_standard_normals(table["job_id"].to_numpy(), seed, KOPANSKI_STREAM)[:, 0]
        )
        out = table.copy()
        out["io_compute_s"] = keep_given(table, "io_compute_s", compute)
        out["io_phases"] = keep_given(table, "io_phases", self.phases(compute)).astype(np.int64)
        out["io_comm_mb"] = keep_given(table, "io_comm_mb", np.maximum(theta, 0.0))
        out["io_checkpoint_mb"] = keep_given(table, "io_checkpoint_mb", self.checkpoint_factor * bb)
        out["io_stage_in_mb"] = keep_given(table, "io_stage_in_mb", bb)
        out["io_stage_out_mb"] = keep_given(table, "io_stage_out_mb", bb)
        return out
