"""Herbein et al.'s workload model (HPDC'16, Section 4.2), fitted from any SWF trace.

* **User arrivals** (after Dinh et al.): a user's submissions less than 10 s apart
  form one arrival; the number of jobs per arrival is an empirical distribution.
* **Arrival rates**: arrivals are Poisson with a constant rate within each of four
  ranges of local time: weekday day (06:00-18:59), weekday night (19:00-05:59),
  weekend day, weekend night; each rate is the range's arrivals over its hours.
* **Sizes**: node counts binned by powers of two (bin ``k`` holds sizes in
  ``(2^(k-1), 2^k]``); a job draws a bin by its frequency and takes the bin's power
  of two (request sizes are biased towards powers of two), times ``size_scale``
  for a larger machine (Herbein extrapolated from 1,200 and 2,740 nodes to 3,888).
* **Time limit and elapsed time**: drawn together from the trace's (limit, elapsed)
  pairs with their frequencies (they are correlated).

Generated submit times start on a Monday at 00:00 local time (t = 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

RANGES: tuple[str, ...] = ("weekday-day", "weekday-night", "weekend-day", "weekend-night")
BUNDLE_GAP_S = 10.0
DAY_START_H, NIGHT_START_H = 6, 19
_WEEK_S = 7 * 86_400.0


class HerbeinModelError(ValueError):
    """A trace the model cannot be fitted from."""


def range_of(weekday: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """Range index (see :data:`RANGES`) of each (weekday 0 = Monday, hour) pair."""
    weekend = np.asarray(weekday) >= 5
    night = (np.asarray(hour) < DAY_START_H) | (np.asarray(hour) >= NIGHT_START_H)
    return 2 * weekend.astype(np.int64) + night.astype(np.int64)


@dataclass(frozen=True)
class HerbeinModel:
    rates_per_h: tuple[float, float, float, float]  # user arrivals per hour in each range
    bundle_sizes: tuple[int, ...]
    bundle_probs: tuple[float, ...]
    size_bins: tuple[int, ...]  # powers of two
    size_probs: tuple[float, ...]
    limit_elapsed: tuple[tuple[float, float], ...]
    pair_probs: tuple[float, ...]
    source: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """What the manifest records (the pair table itself is large: its size only)."""
        return {
            "model": "herbein",
            "rates_per_h": dict(zip(RANGES, self.rates_per_h, strict=True)),
            "mean_jobs_per_arrival": float(np.dot(self.bundle_sizes, self.bundle_probs)),
            "size_bins": dict(zip(map(str, self.size_bins), self.size_probs, strict=True)),
            "limit_elapsed_pairs": len(self.limit_elapsed),
            **self.source,
        }

    # -- generation -------------------------------------------------------------------
    def generate(self, jobs: int, seed: int, machine_nodes: int, size_scale: float = 1.0) -> pd.DataFrame:
        """``jobs`` jobs: job_id, submit, runtime, walltime, nodes, user (the arrival number)."""
        if jobs < 1 or machine_nodes < 1 or size_scale <= 0:
            raise HerbeinModelError("need jobs >= 1, machine_nodes >= 1 and size_scale > 0")
        rng = np.random.default_rng(seed)
        submits: list[float] = []
        users: list[int] = []
        for arrival, t in enumerate(self._arrivals(rng)):
            k = int(rng.choice(self.bundle_sizes, p=self.bundle_probs))
            submits += [t] * k
            users += [arrival] * k
            if len(submits) >= jobs:
                break
        n = jobs
        bins = rng.choice(np.asarray(self.size_bins), size=n, p=self.size_probs)
        nodes = np.clip(np.rint(bins * size_scale), 1, machine_nodes).astype(np.int64)
        pairs = np.asarray(self.limit_elapsed)[rng.choice(len(self.limit_elapsed), size=n, p=self.pair_probs)]
        return pd.DataFrame(
            {
                "job_id": np.arange(1, n + 1, dtype=np.int64),
                "submit": np.asarray(submits[:n], dtype=np.float64),
                "runtime": np.minimum(pairs[:, 1], pairs[:, 0]),
                "walltime": pairs[:, 0],
                "nodes": nodes,
                "user": np.asarray(users[:n], dtype=np.int64),
            }
        )

    def _arrivals(self, rng: np.random.Generator) -> Iterator[float]:
        """User-arrival instants of the piecewise-constant Poisson process, from Monday 00:00."""
        if max(self.rates_per_h) <= 0:
            raise HerbeinModelError("every arrival rate is zero")
        t = 0.0
        while True:
            hour_end = (np.floor(t / 3600.0) + 1) * 3600.0
            weekday = int((t % _WEEK_S) // 86_400)
            r = int(range_of(np.array([weekday]), np.array([int(t % 86_400 // 3600)]))[0])
            rate = self.rates_per_h[r] / 3600.0
            gap = rng.exponential(1.0 / rate) if rate > 0 else np.inf
            if t + gap < hour_end:
                t += gap
                yield t
            else:
                t = hour_end  # memoryless: restart the draw at the next hour's rate


# -- fitting ------------------------------------------------------------------------------
def fit(table: pd.DataFrame, metadata: dict[str, str], procs_per_node: int = 1) -> HerbeinModel:
    """Fit from a trace's job table (submit in trace seconds, user, nodes, walltime, runtime)."""
    need = [c for c in ("submit", "user", "nodes", "walltime", "runtime") if c not in table.columns]
    if need:
        raise HerbeinModelError(f"the trace table lacks column(s) {need}")
    df = table.dropna(subset=["submit", "user", "nodes", "walltime", "runtime"])
    df = df[(df["nodes"] > 0) & (df["walltime"] > 0) & (df["runtime"] >= 0)]
    if len(df) < 2:
        raise HerbeinModelError("too few usable jobs (need submit, user, nodes, walltime, runtime)")
    local = _local_times(df["submit"].to_numpy(np.float64), metadata)
    starts, sizes = _bundles(df["user"].to_numpy(np.int64), df["submit"].to_numpy(np.float64))
    rates = _rates(local, starts)
    bundle_sizes, bundle_counts = np.unique(sizes, return_counts=True)
    nodes = np.ceil(df["nodes"].to_numpy(np.float64) / procs_per_node)
    bins = (2 ** np.ceil(np.log2(np.maximum(nodes, 1)))).astype(np.int64)
    size_bins, size_counts = np.unique(bins, return_counts=True)
    pairs = df[["walltime", "runtime"]].to_numpy(np.float64, copy=True)
    pairs[:, 1] = np.minimum(pairs[:, 1], pairs[:, 0])
    uniq, pair_counts = np.unique(pairs, axis=0, return_counts=True)
    return HerbeinModel(
        rates_per_h=tuple(float(r) for r in rates),  # type: ignore[arg-type]
        bundle_sizes=tuple(int(s) for s in bundle_sizes),
        bundle_probs=tuple((bundle_counts / bundle_counts.sum()).tolist()),
        size_bins=tuple(int(b) for b in size_bins),
        size_probs=tuple((size_counts / size_counts.sum()).tolist()),
        limit_elapsed=tuple((float(a), float(b)) for a, b in uniq),
        pair_probs=tuple((pair_counts / pair_counts.sum()).tolist()),
        source={"jobs": len(df), "user_arrivals": len(sizes), "procs_per_node": procs_per_node},
    )


def _local_times(submit: np.ndarray, metadata: dict[str, str]) -> pd.DatetimeIndex:
    start = float(metadata.get("UnixStartTime", 0) or 0)
    utc = pd.to_datetime(start + submit, unit="s", utc=True)
    zone = metadata.get("TimeZoneString")
    try:
        return pd.DatetimeIndex(utc.tz_convert(ZoneInfo(zone))) if zone else pd.DatetimeIndex(utc)
    except (ZoneInfoNotFoundError, ValueError):
        offset = float(metadata.get("TimeZone", 0) or 0)
        return pd.DatetimeIndex(utc + pd.Timedelta(seconds=offset))


def _bundles(user: np.ndarray, submit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into the inputs) of each user arrival's first job, and its job count."""
    order = np.lexsort((submit, user))
    u, s = user[order], submit[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (u[1:] != u[:-1]) | (s[1:] - s[:-1] >= BUNDLE_GAP_S)
    firsts = np.flatnonzero(new)
    sizes = np.diff(np.append(firsts, len(order)))
    return order[firsts], sizes


def _rates(local: pd.DatetimeIndex, starts: np.ndarray) -> np.ndarray:
    """Arrivals per hour in each range: arrivals in it over the hours of it the trace spans."""
    first, last = local.min().floor("h"), local.max().ceil("h")
    hours = pd.date_range(first, last, freq="h", inclusive="left")
    exposure = np.bincount(range_of(hours.day_of_week.to_numpy(), hours.hour.to_numpy()), minlength=4)
    at = local[starts]
    counts = np.bincount(range_of(at.day_of_week.to_numpy(), at.hour.to_numpy()), minlength=4)
    return np.where(exposure > 0, counts / np.maximum(exposure, 1), 0.0)
