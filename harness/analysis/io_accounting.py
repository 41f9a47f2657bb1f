"""Herbein's accounting of a schedule: how much of its node time computes, how much blocks on I/O.

Herbein et al. (Section 4.4) give every running job a constant per-node demand on
the I/O hierarchy. Each link shares its bandwidth among its children by
*sort-and-share*: requests sorted ascending, child ``i`` gets
``min(req_i, (peak - given so far) / (n - i))``. A job's actual bandwidth is the
smallest any of its nodes gets (its I/O is synchronous), its interference factor
``I = actual / requested`` (1 when met), and over each interval ``dt`` in which the
set of running jobs is constant it computes ``I dt`` and blocks ``(1 - I) dt``
(Eq. 1). Runtimes are those of the schedule: as in Herbein's emulator, contention
turns computation into blocking rather than lengthening jobs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.policies.iotree import IoTree


def sort_and_share(requests: Sequence[float], peak: float) -> np.ndarray:
    """Herbein's rule: the smaller requests are met, the rest share what remains equally."""
    req = np.asarray(requests, dtype=np.float64)
    order = np.argsort(req, kind="stable")
    got = np.zeros(len(req))
    left = float(peak)
    for k, i in enumerate(order.tolist()):
        got[i] = min(req[i], left / (len(req) - k))
        left -= got[i]
    return got


@dataclass(frozen=True)
class Running:
    """One job in an interval: its nodes and per-node demand (MB/s)."""

    job_id: int
    compute: tuple[int, ...]
    rate: float


def interference(
    tree: IoTree, jobs: Sequence[Running], switch_of: np.ndarray | None = None
) -> dict[int, float]:
    """Each running job's interference factor under the tree's sort-and-share.

    ``switch_of`` is ``tree.switch_of_node`` as an array, when the caller has it already.
    """
    switch_of = np.asarray(tree.switch_of_node) if switch_of is None else switch_of
    # Per switch: the demand of each job's nodes under it (a job is one child of a
    # switch, asking rate x its nodes there); the chain above sees the switches.
    per_switch: list[list[tuple[int, float]]] = [[] for _ in range(tree.switches)]
    for job in jobs:
        counts = np.bincount(switch_of[list(job.compute)], minlength=tree.switches)
        for s in np.flatnonzero(counts).tolist():
            per_switch[s].append((job.job_id, job.rate * counts[s]))
    demand = np.array([sum(r for _, r in kids) for kids in per_switch])
    # Top-down: the chain's narrowest link caps the switches' total, shared by sort-and-share.
    chain_peak = min((bw for _, bw in tree.chain), default=float("inf"))
    to_switch = sort_and_share(np.minimum(demand, tree.switch_mb_s), chain_peak)
    factor: dict[int, float] = {job.job_id: 1.0 for job in jobs}
    for s, kids in enumerate(per_switch):
        if not kids:
            continue
        got = sort_and_share([r for _, r in kids], to_switch[s])
        for (job_id, req), g in zip(kids, got, strict=True):
            if req > 0:
                factor[job_id] = min(factor[job_id], g / req)
    return factor


def account(schedule: pd.DataFrame, allocations: dict[int, tuple[int, ...]], rates: dict[int, float],
            tree: IoTree) -> pd.DataFrame:  # fmt: skip
    """Per job: seconds computing and blocked on I/O, and the share of its time computing.

    ``schedule`` has ``job_id, start, end``; ``allocations`` maps a job to its nodes.
    """
    times = np.unique(np.concatenate((schedule["start"].to_numpy(), schedule["end"].to_numpy())))
    starts = schedule.set_index("job_id")["start"]
    ends = schedule.set_index("job_id")["end"]
    computing = dict.fromkeys(schedule["job_id"].tolist(), 0.0)
    blocked = dict.fromkeys(schedule["job_id"].tolist(), 0.0)
    order = schedule.sort_values("start")
    switch_of = np.asarray(tree.switch_of_node)
    for t0, t1 in itertools.pairwise(times):
        live = order[(order["start"] <= t0) & (order["end"] >= t1)]
        jobs = [Running(int(j), allocations[int(j)], rates.get(int(j), 0.0)) for j in live["job_id"]]
        for job_id, i_factor in interference(tree, jobs, switch_of).items():
            computing[job_id] += i_factor * (t1 - t0)
            blocked[job_id] += (1.0 - i_factor) * (t1 - t0)
    out = pd.DataFrame({"job_id": list(computing), "computing_s": list(computing.values()),
                        "blocked_s": list(blocked.values())})  # fmt: skip
    span = (ends - starts).reindex(out["job_id"]).to_numpy()
    out["computing_share"] = np.where(span > 0, out["computing_s"] / np.where(span > 0, span, 1.0), 1.0)
    return out
