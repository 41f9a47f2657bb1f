"""Emulation transforms of a job table (Barberato 2018, Chapter 4; Kopański 2020, Section 4.1).

Every function takes a table and returns a new one (the input is never changed),
ordered by submit time with a fresh index.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.model.checks import InputError

SHUFFLE_STREAM = 2  # keys the shuffle's generator apart from the BB draws'


class TransformError(ValueError):
    """A transform parameter out of range."""


class PeriodCountError(TransformError, InputError):
    """More periods asked for than the trace has jobs: a usage error (exit 2)."""


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("submit", kind="stable").reset_index(drop=True)


# -- time -------------------------------------------------------------------------------


def rebase(df: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Shift submit times so the first is 0; returns the table and the offset subtracted."""
    if df.empty:
        return df.copy(), 0.0
    offset = float(df["submit"].min())
    out = df.copy()
    out["submit"] = out["submit"] - offset
    return _ordered(out), offset


# -- order ------------------------------------------------------------------------------


def shuffle(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Shuffle the submission order, keeping the submission instants (Barberato Section 4.2.2).

    The jobs (with all their attributes) are permuted at random and the i-th job of
    the permutation takes the i-th earliest of the original submit instants.
    """
    instants = np.sort(df["submit"].to_numpy())
    order = np.random.default_rng([seed, SHUFFLE_STREAM]).permutation(len(df))
    out = df.iloc[order].copy()
    out["submit"] = instants
    return out.reset_index(drop=True)


# -- selection --------------------------------------------------------------------------


def first_n(df: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` earliest-submitted jobs."""
    if n < 1:
        raise TransformError(f"first_n must be >= 1, got {n}")
    return _ordered(df).head(n).reset_index(drop=True)


def time_window(df: pd.DataFrame, start: float = 0.0, end: float | None = None) -> pd.DataFrame:
    """Jobs submitted in [first + start, first + end): seconds after the first submission."""
    if end is not None and end <= start:
        raise TransformError(f"time window end ({end}) must be after its start ({start})")
    df = _ordered(df)
    if df.empty:
        return df
    rel = df["submit"] - df["submit"].iloc[0]
    keep = rel >= start
    if end is not None:
        keep &= rel < end
    return df.loc[keep].reset_index(drop=True)


def check_period_count(df: pd.DataFrame, k: int) -> int:
    """``k`` if a user may cut ``df`` into that many periods: at most one a job of known submit
    time, since more only adds empty periods (and their loops and lines: issue #33)."""
    jobs = max(int(df["submit"].notna().sum()), 1)
    if k > jobs:
        raise PeriodCountError(
            f"K = {k:,} periods of {jobs:,} jobs: at most one period a job (K in 1..{jobs:,}); "
            "choose a smaller K"
        )
    return k


def period_index(df: pd.DataFrame, k: int) -> np.ndarray:
    """0-based period of every job when the submit span is cut into ``k`` equal periods.

    The last submission belongs to the last period (the periods close on the right). A job
    of unknown submit time (NA: an uncleaned placeholder record) is in none: -1.
    """
    if k < 1:
        raise TransformError(f"number of periods must be >= 1, got {k}")
    submit = df["submit"].to_numpy(dtype=np.float64)
    known = ~np.isnan(submit)
    if not known.any():
        return np.full(len(submit), -1, dtype=np.int64)
    first, span = submit[known].min(), submit[known].max() - submit[known].min()
    if span == 0:
        return np.where(known, 0, -1).astype(np.int64)
    idx = np.floor((np.where(known, submit, first) - first) / (span / k)).astype(np.int64)
    return np.where(known, np.minimum(idx, k - 1), -1)


def split_periods(df: pd.DataFrame, k: int) -> list[pd.DataFrame]:
    """Split into ``k`` consecutive periods of equal duration (Kopański: 16 periods of
    about 20.8 days over KTH). Every job lands in exactly one part; parts may be empty."""
    df = _ordered(df)
    idx = period_index(df, k)
    return [df.loc[idx == i].reset_index(drop=True) for i in range(k)]


def period_part(df: pd.DataFrame, k: int, i: int) -> pd.DataFrame:
    """``split_periods(df, k)[i]`` without building the other ``k - 1`` parts (``split -k K``
    selects every part in turn: building all of them each time was quadratic in K)."""
    if not 0 <= i < k:
        raise TransformError(f"period index must be in [0, {k}), got {i}")
    df = _ordered(df)
    return df.loc[period_index(df, k) == i].reset_index(drop=True)


# -- sampling (Barberato Section 4.2.3) --------------------------------------------------


def sampling_ratio(n_orig: int, n: int | None = None, ratio: float | None = None) -> float:
    """s_p = N_orig / N_work, from the wanted count or given directly."""
    if (n is None) == (ratio is None):
        raise TransformError("give exactly one of the sample size n and the sampling ratio")
    if n is not None:
        if not 1 <= n <= n_orig:
            raise TransformError(f"sample size must be in [1, {n_orig}], got {n}")
        return n_orig / n
    if ratio is None or ratio < 1:
        raise TransformError(f"sampling ratio must be >= 1, got {ratio}")
    return float(ratio)


def _sample_count(n_orig: int, sp: float) -> int:
    return max(1, math.floor(n_orig / sp + 1e-9))


def _restore_order(df: pd.DataFrame, positions: np.ndarray) -> pd.DataFrame:
    """Step 3 of both methods: back to the jobs' order in the original workload."""
    return df.iloc[np.sort(positions)].reset_index(drop=True)


def sample_ordered(
    df: pd.DataFrame, n: int | None = None, *, ratio: float | None = None, offset: int = 0
) -> pd.DataFrame:
    """Ordered sampling: sort by requested time, then runtime, then size, each sort
    stable (so size is the primary key), and keep jobs floor(s_p * i) + o_f."""
    df = _ordered(df)
    sp = sampling_ratio(len(df), n, ratio)
    if not 0 <= offset < sp:
        raise TransformError(f"sampling offset must be in [0, {sp:g}), got {offset}")
    count = n if n is not None else _sample_count(len(df), sp)
    # lexsort: the last key is the primary one; ties keep the submission order.
    order = np.lexsort((df["walltime"].to_numpy(), df["runtime"].to_numpy(), df["nodes"].to_numpy()))
    picks = np.floor(sp * np.arange(count) + 1e-9).astype(np.int64) + int(offset)
    return _restore_order(df, order[picks])


def sample_su_balanced(
    df: pd.DataFrame, n: int | None = None, *, ratio: float | None = None, window: float = 60.0
) -> pd.DataFrame:
    """Service-unit-balanced sampling (Barberato's improved method).

    Jobs are grouped by size and by requested time within ``window`` seconds, each
    group in submission order; the sequence is cut into consecutive chunks of s_p
    jobs, and from each chunk the job whose service units (nodes x runtime) are
    closest to the chunk's mean plus the carried difference is kept. The carry is
    target - chosen, so the kept service units track the total divided by s_p.
    """
    df = _ordered(df)
    sp = sampling_ratio(len(df), n, ratio)
    if window < 0:
        raise TransformError(f"runtime window must be >= 0, got {window}")
    count = n if n is not None else _sample_count(len(df), sp)
    order = _grouped_order(df, window)
    su = (df["nodes"].to_numpy(dtype=np.float64) * df["runtime"].to_numpy(dtype=np.float64))[order]
    bounds = np.floor(sp * np.arange(count + 1) + 1e-9).astype(np.int64)
    bounds[-1] = len(df)  # the last chunk takes the remainder
    return _restore_order(df, order[_pick_balanced(su, bounds)])


def _grouped_order(df: pd.DataFrame, window: float) -> np.ndarray:
    """Positions sorted by (size, requested-time group, submission order).

    Within one size, a group starts at the smallest requested time not yet grouped
    and holds every requested time at most ``window`` seconds above it.
    """
    nodes = df["nodes"].to_numpy()
    wall = df["walltime"].to_numpy(dtype=np.float64)
    by_size_wall = np.lexsort((wall, nodes))
    group = np.empty(len(df), dtype=np.int64)
    current, start, last_size = -1, -np.inf, None
    for pos in by_size_wall:
        if nodes[pos] != last_size or wall[pos] - start > window:
            current, start, last_size = current + 1, wall[pos], nodes[pos]
        group[pos] = current
    return np.lexsort((np.arange(len(df)), group))


def _pick_balanced(su: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    picks = np.empty(len(bounds) - 1, dtype=np.int64)
    carry = 0.0
    for c in range(len(picks)):
        lo, hi = bounds[c], bounds[c + 1]
        target = su[lo:hi].mean() + carry
        best = lo + int(np.argmin(np.abs(su[lo:hi] - target)))
        carry = target - su[best]
        picks[c] = best
    return picks
