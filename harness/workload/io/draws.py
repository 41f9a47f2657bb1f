"""Per-job random draws keyed by SWF job number, as the BB request model does.

A job's draw depends only on the seed, the stream and its job number: not on
cleaning, selection, sampling or shuffling, so a slice of a trace gives its jobs
the same I/O parameters as the full trace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.workload.bbmodel import MAX_JOB_NUMBER, BBModelError

# Streams of the I/O models, apart from the BB model's (1) and the shuffle's (0).
KOPANSKI_STREAM = 2
LACKNER_STREAM = 3
HERBEIN_STREAM = 4


def job_standard_normals(job_ids: np.ndarray, seed: int, stream: int, per_job: int = 1) -> np.ndarray:
    """``per_job`` standard normal draws for every job (rows in the order of ``job_ids``)."""
    ids = np.asarray(job_ids, dtype=np.int64)
    if not len(ids):
        return np.empty((0, per_job))
    top = int(ids.max())
    if ids.min() < 0 or top > MAX_JOB_NUMBER:
        raise BBModelError(f"job numbers must be in [0, {MAX_JOB_NUMBER:,}] for the I/O draws, got {top:,}")
    rng = np.random.default_rng([seed, stream])
    return rng.standard_normal((top + 1, per_job))[ids]


def keep_given(table: pd.DataFrame, column: str, drawn: np.ndarray) -> np.ndarray:
    """A trace column, where the table has one with a value, overrides the drawn value."""
    if column not in table.columns:
        return drawn
    given = np.asarray(table[column].to_numpy(dtype=np.float64, na_value=np.nan))
    return np.where(np.isnan(given), drawn, given)
