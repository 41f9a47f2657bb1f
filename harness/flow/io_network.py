"""The platform's bandwidths as links for the flow engine, and the routes of a job's transfers.

Links: one per BB node, one to the PFS; with Herbein's hierarchy also one edge
switch per chassis and the core switch pool. Compute nodes' network cards are not
links: a job's nodes are its own, so a card is never shared between jobs; a flow
standing for ``k`` compute nodes is capped at ``k`` cards instead (the same
max-min rates). The dragonfly's router links are not modelled: the thesis sizes
its network so that contention happens at the BB nodes and the PFS link.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.flow import Network
from harness.model.timescale import TRACE_TIME, TimeScale
from harness.platform import Machine

MB = 1e6


@dataclass(frozen=True)
class IONetwork:
    """Links of a platform, capacities in bytes per unit of plan time."""

    network: Network
    compute_link_bps: float
    bb_links: tuple[int, ...]
    pfs: int
    edges: tuple[int, ...] | None  # per chassis, with a hierarchy
    core: int | None
    bb_chassis: tuple[int, ...]

    @classmethod
    def from_platform(cls, platform: Machine, scale: TimeScale = TRACE_TIME) -> IONetwork:
        """The links in bytes per second of the clock ``scale`` maps the trace to (a Slurm second
        at shrink s moves the bytes of ``1 / (1 - s)`` trace seconds)."""
        io = platform.io
        per_s = scale.per_slurm_second(MB)
        links = [(platform.bb.name(b + 1), io.bb_node_mbps * per_s) for b in range(platform.bb_count)]
        links.append(("pfs", io.pfs_capacity_mbps(platform.compute_count) * per_s))
        h = io.hierarchy
        if h is not None:
            links += [(f"edge{ch + 1}", h.edge_mbps * per_s) for ch in range(platform.chassis)]
            links.append(("core", h.core_mbps * per_s))
        net = Network.from_links(links)
        bb = tuple(range(platform.bb_count))
        edges = tuple(net.index(f"edge{ch + 1}") for ch in range(platform.chassis)) if h else None
        return cls(
            network=net,
            compute_link_bps=io.compute_link_mbps * per_s,
            bb_links=bb,
            pfs=net.index("pfs"),
            edges=edges,
            core=net.index("core") if h else None,
            bb_chassis=tuple(platform.chassis_of_bb(b) for b in bb),
        )

    def staging(self, bb: int) -> tuple[int, ...]:
        """BB node <-> PFS (stage-in, drains, stage-out)."""
        if self.edges is None or self.core is None:
            return (self.bb_links[bb], self.pfs)
        return (self.bb_links[bb], self.edges[self.bb_chassis[bb]], self.core, self.pfs)

    def checkpoint(self, bb: int, chassis: int) -> tuple[int, ...]:
        """Compute nodes of ``chassis`` -> BB node (through both edge switches when apart)."""
        if self.edges is None or chassis == self.bb_chassis[bb]:
            return (self.bb_links[bb],)
        return (self.edges[chassis], self.edges[self.bb_chassis[bb]], self.bb_links[bb])

    def direct(self, chassis: int) -> tuple[int, ...]:
        """Compute nodes of ``chassis`` -> PFS, no BB node (a job on the slow tier)."""
        if self.edges is None or self.core is None:
            return (self.pfs,)
        return (self.edges[chassis], self.core, self.pfs)
