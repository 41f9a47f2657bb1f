"""The io-aware model's per-job staging times, joined from the staging records.

``slurm_bb_data_in`` / ``slurm_bb_data_out`` (harness/emulation/iolive/staging.py) append one
record per transfer to the cluster's ``staging.jsonl``, keyed by Slurm job id; the
records of earlier runs on the same cluster are left out by their start before t0.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from harness.cluster.base import ClusterBackend

STAGING_COLUMNS = (
    "stage_in_begin", "stage_in_s", "stage_in_solo_s", "stage_in_mb",
    "stage_out_begin", "stage_out_s", "stage_out_solo_s", "stage_out_mb",
)  # fmt: skip


def wait_for_stage_outs(backend: ClusterBackend, user: str, timeout: float = 120.0) -> int:
    """Wait until no job of ``user`` is in Slurm's STAGE_OUT state (a job's own record comes
    before its stage-out ends); returns how many were still staging out at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        cmd = ["squeue", "--noheader", f"--user={user}", "--states=SO", "--format=%i"]
        res = backend.exec(cmd, timeout=30)
        left = len(res.stdout.split()) if res.ok else -1
        if left == 0 or time.monotonic() > deadline:
            return max(left, 0)
        time.sleep(1.0)


def add_staging(results: pd.DataFrame, records: list[dict], t0: float) -> pd.DataFrame:
    """``results`` with :data:`STAGING_COLUMNS` (seconds since t0, shrunk time; NaN: no transfer)."""
    out = results.copy()
    ids = out["slurm_job_id"].astype("Int64")
    for kind in ("in", "out"):
        by_job = {int(r["job"]): r for r in records if r.get("kind") == kind and float(r["start"]) >= t0}
        rows = [by_job.get(int(i)) if pd.notna(i) else None for i in ids]
        out[f"stage_{kind}_begin"] = [r["start"] - t0 if r else np.nan for r in rows]
        out[f"stage_{kind}_s"] = [r["seconds"] if r else np.nan for r in rows]
        out[f"stage_{kind}_solo_s"] = [r["solo_s"] if r else np.nan for r in rows]
        out[f"stage_{kind}_mb"] = [r.get("mb", np.nan) if r else np.nan for r in rows]
    return out


def staging_stats(results: pd.DataFrame) -> dict[str, float | int]:
    """How many jobs staged, their mean staging times and the mean slowdown by contention."""
    stats: dict[str, float | int] = {}
    for kind in ("in", "out"):
        took, solo = results[f"stage_{kind}_s"], results[f"stage_{kind}_solo_s"]
        done = took.notna() & (solo > 0)
        stats[f"staged_{kind}"] = int(took.notna().sum())
        if not done.any():
            continue
        stats[f"mean_stage_{kind}_s"] = round(float(took[done].mean()), 6)
        stats[f"mean_stage_{kind}_dilation"] = round(float((took[done] / solo[done]).mean()), 6)
    return stats
