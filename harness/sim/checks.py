"""The invariants every schedule must hold, simulated or emulated: each job runs once,
not before its submission, within its walltime, on nodes nobody else holds, with BB
nodes never over their capacity."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from harness.platform import Machine
from harness.sim.machine import parse_bb_map


def check_schedule(
    results: pd.DataFrame, platform: Machine, tol: float = 1e-6, pool: bool = False
) -> list[str]:
    """Violations of the schedule invariants (empty when the schedule is valid).

    Every job starts (not before its submission) and ends no later than its walltime
    allows; each allocated compute node has exactly one BB node; no compute node is
    used by two jobs at once; no BB node ever holds more than its capacity (``pool``:
    the burst buffer is one pool, as Slurm's ``burst_buffer/lua`` counts it, never over
    the sum of the capacities).
    """
    problems = list(_check_jobs(results, tol))
    if problems:
        return problems
    return list(_check_overlaps(results, platform, pool))


def _check_jobs(df: pd.DataFrame, tol: float) -> Iterator[str]:
    for row in df.itertuples(index=False):
        if not (np.isfinite(row.start) and np.isfinite(row.end)):
            yield f"job {row.job_id} never ran"
        elif row.start < row.submit - tol:
            yield f"job {row.job_id} starts before its submission"
        elif row.end < row.start - tol or row.end - row.start > row.walltime + tol:
            yield f"job {row.job_id} runs outside [start, start + walltime]"


def _check_overlaps(df: pd.DataFrame, platform: Machine, pool: bool) -> Iterator[str]:
    """Compute nodes over [start, end]; BB nodes over [bb_start, bb_end] when the
    schedule staged outside the allocation (those columns), else over [start, end] too."""
    maps = []
    for r in df.itertuples(index=False):
        pairs = parse_bb_map(platform, r.bb_nodes)
        computes = [c for c, _ in pairs]
        if len(pairs) != r.nodes or len(set(computes)) != len(computes):
            yield f"job {r.job_id}: needs one BB node per each of its {r.nodes} compute nodes"
        maps.append(pairs)
    ids = df["job_id"].to_numpy()
    owner: dict[int, int] = {}
    for _, is_start, row in _sweep(df["start"], df["end"]):
        for c, _ in maps[row]:
            if is_start:
                if c in owner:
                    yield f"compute node {c} runs jobs {owner[c]} and {ids[row]} at once"
                owner[c] = int(ids[row])
            else:
                owner.pop(c, None)
    held = ("bb_start", "bb_end") if "bb_end" in df.columns else ("start", "end")
    used = [0] * platform.bb_count
    shares = df["bb_per_node_mb"].to_numpy()
    for _, is_start, row in _sweep(df[held[0]], df[held[1]]):
        for _, b in maps[row]:
            used[b] += (1 if is_start else -1) * int(shares[row])
        if is_start and pool and sum(used) > platform.bb_count * platform.bb_capacity_mb:
            yield f"the burst-buffer pool exceeds its capacity when job {ids[row]} starts"
        elif is_start and not pool and max(used) > platform.bb_capacity_mb:
            yield f"a BB node exceeds its capacity when job {ids[row]} starts"


def _sweep(begin: pd.Series, end: pd.Series) -> list[tuple[float, int, int]]:
    """(time, 0 = end first / 1 = start, row) of every interval that lasts; a job that
    ran for no time holds nothing."""
    events = []
    for row, (b, e) in enumerate(zip(begin.to_numpy(np.float64), end.to_numpy(np.float64), strict=True)):
        if e > b:
            events.append((float(b), 1, row))
            events.append((float(e), 0, row))
    events.sort()
    return events
