"""The burst-buffer request model: how many MB of burst buffer each compute node of a job asks for.

No public trace records burst-buffer requests. Kopański (2020, Section 2.5)
assumes a request equals the main-memory request and fits a log-normal to the
per-processor memory requests of the METACENTRUM-2013-3 log (kilobytes):
s = 1.0972516604, loc = -150361.595, scale = 2714115.572; mean 4,804,884 KB
= 4.58 GiB (so "kilobyte" is 1024 bytes there). Its platform (Section 2.2) sizes
a BB node at 8 x 4.58 GiB = 39.34 GB, rounded to 40 GB: capacities are decimal.
We therefore convert a draw of x KiB to x * 1024 / 10^6 MB (mean 4,920 MB).

Per job, in this order:

1. source value: a log-normal draw (default), a constant, or a trace column;
2. rounded to whole MB and clipped to [min_mb (100), max_mb (BB node capacity, 40,000)];
3. fit: each compute node's share lives on a single BB node and the job's nodes
   spread over the ``bb_count`` BB nodes, so the fullest BB node holds
   ceil(nodes / bb_count) shares; the share is cut to floor(capacity / that);
4. jobs with walltime <= 120 s get 10 MB (Kopański gives very short jobs a constant
   minimal request: they are likely to time out).

Draws come from a generator seeded with (seed, BB_STREAM), one per job number
1, 2, 3, ... up to the largest in the trace, and a job takes the draw of its SWF
job number: its request depends only on the seed and its job number, not on
cleaning, selection, sampling or shuffling, and a slice of a trace (such as the
bundled KTH slice) gives its jobs the same requests as the full trace does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

LOGNORMAL_S = 1.0972516604
LOGNORMAL_LOC_KB = -150361.595
LOGNORMAL_SCALE_KB = 2714115.572
KIB_TO_MB = 1024 / 1e6

BB_STREAM = 1  # keys the generator of the BB draws apart from the shuffle's
MAX_JOB_NUMBER = 100_000_000  # draws are indexed by job number; beyond this the array gets silly
MODELS = ("lognormal", "constant", "column")


class BBModelError(ValueError):
    """An impossible BB-model parameter or a column that cannot be used."""


@dataclass(frozen=True)
class BBModel:
    """Parameters of the model; ``max_mb`` None means the platform's BB node capacity."""

    kind: str = "lognormal"
    constant_mb: int | None = None
    column: str | None = None
    min_mb: int = 100
    max_mb: int | None = None
    short_walltime_s: float = 120.0
    short_mb: int = 10

    def __post_init__(self) -> None:
        if self.kind not in MODELS:
            raise BBModelError(f"unknown BB model '{self.kind}' (models: {', '.join(MODELS)})")
        if self.kind == "constant" and (self.constant_mb is None or self.constant_mb < 0):
            raise BBModelError("the constant BB model needs constant_mb >= 0")
        if self.kind == "column" and not self.column:
            raise BBModelError("the column BB model needs a column name")
        if self.min_mb < 0 or self.short_mb < 0 or (self.max_mb is not None and self.max_mb < self.min_mb):
            raise BBModelError(f"need 0 <= min_mb <= max_mb and short_mb >= 0, got {self}")

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        if self.kind == "lognormal":
            out["lognormal"] = {"s": LOGNORMAL_S, "loc_kb": LOGNORMAL_LOC_KB, "scale_kb": LOGNORMAL_SCALE_KB}
        out["kb_to_mb"] = KIB_TO_MB
        return out


def lognormal_mean_kb() -> float:
    """Mean of the fitted distribution: loc + scale * exp(s^2 / 2) (about 4.58 GiB)."""
    return LOGNORMAL_LOC_KB + LOGNORMAL_SCALE_KB * math.exp(LOGNORMAL_S**2 / 2)


def draw_lognormal_kb(n: int, seed: int) -> np.ndarray:
    """``n`` unclipped draws in KiB. Same law as scipy.stats.lognorm(s, loc, scale),
    computed directly so that the stream is numpy's, stable and fast."""
    rng = np.random.default_rng([seed, BB_STREAM])
    return LOGNORMAL_LOC_KB + LOGNORMAL_SCALE_KB * np.exp(LOGNORMAL_S * rng.standard_normal(n))


def job_draws_kb(job_ids: np.ndarray, seed: int) -> np.ndarray:
    """The unclipped draw of every job, by SWF job number (see the module docstring)."""
    ids = np.asarray(job_ids, dtype=np.int64)
    if not len(ids):
        return np.empty(0)
    top = int(ids.max())
    if ids.min() < 0 or top > MAX_JOB_NUMBER:
        raise BBModelError(
            f"job numbers must be in [0, {MAX_JOB_NUMBER:,}] for the log-normal draws, got {top:,}"
        )
    return draw_lognormal_kb(top + 1, seed)[ids]


def source_mb(model: BBModel, table: pd.DataFrame, draws_kb: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Step 1, in MB (float); also how many unknown column values were filled with min_mb."""
    if model.kind == "lognormal":
        if draws_kb is None:
            raise BBModelError("the lognormal BB model needs draws")
        return draws_kb * KIB_TO_MB, 0
    if model.kind == "constant":
        assert model.constant_mb is not None  # BBModel.__post_init__ checked it
        return np.full(len(table), float(model.constant_mb)), 0
    return _column_mb(model, table)


def _column_mb(model: BBModel, table: pd.DataFrame) -> tuple[np.ndarray, int]:
    name = str(model.column)
    if name not in table.columns:
        raise BBModelError(f"BB column '{name}' is not in the job table")
    values = pd.to_numeric(table[name], errors="coerce").astype("float64").to_numpy()
    if name.endswith("_kb"):  # SWF memory fields are KiB per processor
        values = values * KIB_TO_MB
    unknown = np.isnan(values)
    return np.where(unknown, float(model.min_mb), values), int(unknown.sum())


def fit_limit_mb(nodes: np.ndarray, bb_count: int, capacity_mb: int) -> np.ndarray:
    """Largest per-node share such that ceil(nodes / bb_count) shares fit on one BB node."""
    per_bb = np.ceil(np.asarray(nodes, dtype=np.float64) / bb_count)
    return np.floor(capacity_mb / np.maximum(per_bb, 1)).astype(np.int64)


def assign(
    raw_mb: np.ndarray,
    nodes: np.ndarray,
    walltime: np.ndarray,
    *,
    model: BBModel,
    bb_count: int,
    capacity_mb: int,
) -> tuple[np.ndarray, dict[str, int]]:
    """Steps 2-4: integer MB per node, and how many jobs each step changed."""
    high = model.max_mb if model.max_mb is not None else capacity_mb
    rounded = np.rint(raw_mb).astype(np.int64)
    per_node = np.clip(rounded, model.min_mb, high)
    limit = fit_limit_mb(nodes, bb_count, capacity_mb)
    fitted = np.minimum(per_node, limit)
    short = np.asarray(walltime, dtype=np.float64) <= model.short_walltime_s
    final = np.where(short, model.short_mb, fitted).astype(np.int64)
    counts = {
        "clipped_low": int(((rounded < model.min_mb) & ~short).sum()),
        "clipped_high": int(((rounded > high) & ~short).sum()),
        "reduced_to_fit": int(((fitted < per_node) & ~short).sum()),
        "short": int(short.sum()),
    }
    return final, counts


def apply_model(
    table: pd.DataFrame,
    model: BBModel,
    *,
    bb_count: int,
    capacity_mb: int,
    seed: int,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Add ``bb_per_node_mb`` and ``bb_total_mb`` to a cleaned table."""
    draws = job_draws_kb(table["job_id"].to_numpy(), seed) if model.kind == "lognormal" else None
    raw, filled = source_mb(model, table, draws)
    per_node, counts = assign(
        raw,
        table["nodes"].to_numpy(),
        table["walltime"].to_numpy(),
        model=model,
        bb_count=bb_count,
        capacity_mb=capacity_mb,
    )
    out = table.copy()
    out["bb_per_node_mb"] = per_node
    out["bb_total_mb"] = out["nodes"].astype("int64").to_numpy() * per_node
    counts["unknown_filled"] = filled
    return out, counts
