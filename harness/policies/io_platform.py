"""Herbein's I/O tree of a platform: the one definition the simulator and the live agent share.

A platform's ``[machine.io.hierarchy]`` (:mod:`harness.platform.bandwidths`) gives an edge
switch per chassis, the core-switch pool, the PFS (its underprovisioned capacity) and the
demand of a node; ``compute_link_mbps`` is a node's own link. :func:`on_platform` turns an
I/O-aware policy (``io-easy``, ``io-fcfs``) into that policy on this tree, knowing each
job's per-node rate (the plan's ``pfs_mbps_per_node``, in the live run the job's comment).
Without a hierarchy the simulator keeps the policy's own CTS-1 links (Herbein's figures);
the live run refuses an I/O-aware policy (:class:`NoIoTreeError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.platform import Machine
from harness.policies.base import Policy
from harness.policies.ioaware import IoAware, IoTreeSpec
from harness.policies.iotree import Bandwidth, IoTree
from harness.policies.state import Topology


class NoIoTreeError(ValueError):
    """An I/O-aware policy asked for on a platform that describes no I/O tree."""


def io_tree_spec(machine: Machine, policy_name: str) -> IoTreeSpec:
    """The links of ``machine``'s hierarchy: node link, edge switch, core pool, PFS (MB/s)."""
    h = machine.io.hierarchy
    if h is None:
        raise NoIoTreeError(
            f"policy {policy_name} needs the platform's I/O tree, but platform {machine.name!r} has no "
            "[machine.io.hierarchy] (edge_mbps, core_mbps, demand_mbps_per_node, pfs_underprovision_pct)"
        )
    pfs = machine.io.pfs_capacity_mbps(machine.compute_count)
    return IoTreeSpec(machine.io.compute_link_mbps, h.edge_mbps, (("core", h.core_mbps), ("pfs", pfs)))


def uses_io_tree(policy: Policy) -> bool:
    """Whether ``policy`` is one of Herbein's schedulers (aware or ignorant)."""
    return isinstance(policy, IoAware)


def on_platform(policy: Policy, machine: Machine, rates: Mapping[int, float] | None = None) -> Policy:
    """``policy`` on ``machine``'s I/O tree knowing the jobs' per-node rates (a job without one
    demands the hierarchy's ``demand_mbps_per_node``). Other policies are returned as they are;
    an I/O-ignorant one on a platform without a tree too (it never looks at the links); an
    I/O-aware one there is a :class:`NoIoTreeError`."""
    if not isinstance(policy, IoAware) or (not policy.aware and machine.io.hierarchy is None):
        return policy
    spec = io_tree_spec(machine, policy.name)
    demand = machine.io.hierarchy.demand_mbps_per_node  # type: ignore[union-attr]  # checked above
    return IoAware(policy.name, policy.backfill, policy.aware, spec, demand, dict(rates or {}))


def platform_tree(machine: Machine, policy_name: str) -> IoTree:
    """The tree :func:`on_platform`'s policy builds for ``machine`` (for accounting its links)."""
    return io_tree_spec(machine, policy_name).build(Topology.from_platform(machine))


def never_carried(tree: IoTree, nodes: Sequence[int], rates: Sequence[float]) -> list[bool]:
    """Per job: whether the empty machine cannot carry ``nodes`` at that per-node rate (Herbein
    rejects such a job at submission; the policy would pass it over for ever)."""
    empty = Bandwidth(tree)
    return [not empty.fits(int(n), float(r)) for n, r in zip(nodes, rates, strict=True)]
