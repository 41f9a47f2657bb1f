"""Herbein's schedulers live (``io-easy``, ``io-fcfs``, ``io-ignorant-*`` through the agent):
each job's PFS drain rate in the plan, and the jobs the platform's I/O tree can never carry
dropped, as Herbein rejects them at submission (the policy would pass them over for ever
and the run would never end)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from harness.model.hostlist import expand_hostlist
from harness.platform import Machine
from harness.policies.io_platform import never_carried, on_platform, platform_tree, uses_io_tree
from harness.policies.iotree import IoTree, peak_link_use
from harness.policies.registry import get_policy
from harness.workload.io import HerbeinIO


def bound_to_tree(policy_name: str, machine: Machine) -> bool:
    """Whether the agent runs ``policy_name`` on ``machine``'s I/O tree (NoIoTreeError: an
    I/O-aware policy on a platform without one)."""
    policy = get_policy(policy_name)
    return uses_io_tree(policy) and on_platform(policy, machine) is not policy


def with_pfs_rates(
    plan: pd.DataFrame, policy_name: str, machine: Machine, seed: int, say: Callable[[str], None]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The plan with ``pfs_mbps_per_node`` (kept when given, else the hierarchy's demand per
    node: Herbein's model) and without the jobs the tree never carries; ({} when the policy
    is not on a tree)."""
    if not bound_to_tree(policy_name, machine):
        return plan, {}
    demand = machine.io.hierarchy.demand_mbps_per_node  # type: ignore[union-attr]  # bound: it has one
    plan = HerbeinIO(mean_mbps_per_node=demand).apply(plan, seed=seed)
    tree = platform_tree(machine, policy_name)
    never = np.asarray(never_carried(tree, plan["nodes"].tolist(), plan["pfs_mbps_per_node"].tolist()))
    if never.any():
        first = int(plan["job_id"].to_numpy()[never][0])
        say(f"{int(never.sum())} job(s) need more than the I/O tree carries (PFS {tree.chain[-1][1]:,.0f} "
            f"MB/s), e.g. trace job {first}: rejected at submission, as in Herbein")  # fmt: skip
    return plan[~never].reset_index(drop=True), {"rejected_by_io_tree": int(never.sum())}


def live_link_peaks(
    results: pd.DataFrame, plan: pd.DataFrame, machine: Machine, tree: IoTree
) -> dict[str, float]:
    """The highest MB/s each link of ``tree`` carried in an emulated schedule: every job's rate
    (the plan's ``pfs_mbps_per_node``) on the nodes Slurm ran it on (``nodelist``), from its
    start to its end as Slurm recorded them."""
    rate = plan.set_index("job_id")["pfs_mbps_per_node"].astype(float)
    index = {name: i for i, name in enumerate(machine.compute_nodes())}
    ran = results.dropna(subset=["start", "end"])
    return peak_link_use(tree, [
        (float(r.start), float(r.end), [index[n] for n in expand_hostlist(r.nodelist)], float(rate[r.job_id]))
        for r in ran.itertuples()
    ])  # fmt: skip
