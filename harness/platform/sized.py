"""A machine of any size in the study's layout, deployed so that one host can hold it.

``sized`` builds ``compute`` nodes in chassis of ``per_chassis`` with ``bb_per_chassis``
burst-buffer nodes each (the last chassis may be partial), chassis grouped by up to 4 as the
study's dragonfly (3 groups x 4 chassis x 8 nodes). A BB node holds, by default, 5,000 MB
per compute node of its chassis: the study's 40,000 MB for 8, about one mean log-normal
request (4.58 GiB) per compute node (Kopański 2020, Section 2.2).

``deployed_for_size`` spreads the slurmd over node containers of at most
:data:`NODES_PER_CONTAINER` and, above :data:`OWN_NODE_ABOVE` nodes, gives each slurmd a
slurm.conf of its own node (its memory then stays flat; docs/cluster.md, measured).
"""

from __future__ import annotations

import math
from dataclasses import replace

from harness.platform.loading import load_platform
from harness.platform.machine import PlatformError
from harness.platform.platform import Platform

MB_PER_COMPUTE_NODE = 5_000  # the study: 40,000 MB of BB node for 8 compute nodes
CHASSIS_PER_GROUP = 4  # the study's dragonfly groups hold 4 chassis
NODES_PER_CONTAINER = 1_100  # measured: 1,134 slurmd in 4 containers (docs/cluster.md)
OWN_NODE_ABOVE = 500  # nodes above which every slurmd reads its own node's slurm.conf only


def _chassis_per_group(chassis: int) -> int:
    """The largest divisor of ``chassis`` that is at most 4 (groups hold the same count)."""
    return max(d for d in range(1, CHASSIS_PER_GROUP + 1) if chassis % d == 0)


def sized(
    compute: int, *, per_chassis: int = 8, bb_per_chassis: int = 1, bb_capacity_mb: int | None = None,
    name: str | None = None, description: str = "", base: Platform | None = None,
) -> Platform:  # fmt: skip
    """The machine of ``compute`` nodes (see the module docstring), with ``base``'s node kinds,
    bandwidths and deployment (the built-in platform's by default)."""
    if compute < 1 or per_chassis < 1 or bb_per_chassis < 1:
        raise PlatformError(
            f"need compute nodes, nodes per chassis and BB nodes per chassis >= 1, "
            f"got {compute}, {per_chassis} and {bb_per_chassis}"
        )
    base = base or load_platform()
    chassis = math.ceil(compute / per_chassis)
    bb = chassis * bb_per_chassis
    capacity = (
        bb_capacity_mb if bb_capacity_mb is not None else per_chassis * MB_PER_COMPUTE_NODE // bb_per_chassis
    )
    if capacity < 1:
        raise PlatformError(f"the BB capacity must be >= 1 MB, got {capacity}")
    per_group = _chassis_per_group(chassis)
    machine = base.machine
    layout = "one BB node" if bb_per_chassis == 1 else f"{bb_per_chassis} BB nodes"
    sizes = f"{compute} compute nodes + {bb} burst-buffer nodes of {capacity:,} MB"
    described = description or f"{sizes}, {layout} per chassis of {per_chassis}"
    return Platform.of(
        replace(
            machine,
            name=name or f"sized-{compute}-{bb}",
            description=described,
            groups=chassis // per_group,
            chassis_per_group=per_group,
            compute_per_chassis=per_chassis,
            compute_total=compute if compute != chassis * per_chassis else None,
            compute=replace(machine.compute, digits=max(machine.compute.digits, len(str(compute)))),
            bb=replace(machine.bb, digits=max(machine.bb.digits, len(str(bb)))),
            bb_capacity_mb=capacity,
            bb_per_chassis=bb_per_chassis,
        ),
        base.deployment,
        source="<sized>",
    )


def bb_per_chassis_for(compute: int, per_chassis: int, bb_nodes: int | None) -> int:
    """BB nodes per chassis for ``bb_nodes`` in all (None: one per chassis); a whole number."""
    chassis = math.ceil(compute / per_chassis)
    if bb_nodes is None:
        return 1
    if bb_nodes < chassis or bb_nodes % chassis:
        raise PlatformError(
            f"--bb-nodes {bb_nodes}: the {compute} compute nodes make {chassis} chassis of {per_chassis}, "
            f"and every chassis holds the same number of burst-buffer nodes: give a multiple of {chassis}"
        )
    return bb_nodes // chassis


def deployed_for_size(platform: Platform) -> Platform:
    """``platform`` with node containers of at most :data:`NODES_PER_CONTAINER` slurmd and,
    above :data:`OWN_NODE_ABOVE` nodes, own-node slurm.conf files."""
    total = platform.node_count
    containers = max(platform.deployment.node_containers, math.ceil(total / NODES_PER_CONTAINER))
    conf = "own-node" if total > OWN_NODE_ABOVE else platform.deployment.slurmd_conf
    return platform.redeployed(node_containers=containers, slurmd_conf=conf)
