"""The emulated machine: its topology (groups of chassis of compute nodes, a dragonfly),
its node kinds and its burst-buffer nodes, with the rule that places them (``bb_per_chassis``
BB nodes in every chassis; the study has one).

Pure data: knows nothing of Slurm or Docker. The policies and the simulator use it for the
compute/burst-buffer topology (which BB node is nearest to which compute node), the I/O
model for its bandwidths and storage tiers (:mod:`harness.platform.bandwidths`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.platform.bandwidths import Bandwidths
from harness.platform.errors import PlatformError
from harness.platform.site import Site
from harness.platform.site_toml import site_to_dict

__all__ = ["Machine", "NodeKind", "PlatformError"]


@dataclass(frozen=True)
class NodeKind:
    prefix: str
    digits: int
    cpus: int
    real_memory_mb: int
    partition: str

    def name(self, index: int) -> str:
        """Node name of the 1-based ``index``, e.g. ``c001``."""
        return f"{self.prefix}{index:0{self.digits}d}"


@dataclass(frozen=True)
class Machine:
    name: str
    description: str
    groups: int
    chassis_per_group: int
    compute_per_chassis: int
    compute: NodeKind
    bb: NodeKind
    bb_capacity_mb: int
    bb_per_chassis: int = 1  # the BB placement rule: this many BB nodes in every chassis
    io: Bandwidths = field(default_factory=Bandwidths)  # links, BB nodes, PFS, tiers ([machine.io])
    # Total compute nodes when the last chassis is partial (a traced machine of 1,002 nodes in
    # chassis of 8: 126 chassis, the last with 2); None: every chassis is full.
    compute_total: int | None = None
    # A Slurm site's own machine ([machine.site], harness.platform.site): its nodes are the
    # compute nodes, by their own names, in one chassis; ``compute`` then stands for the
    # smallest node type (what the simulator's homogeneous model sees). None: the study's layout.
    site: Site | None = None

    def __post_init__(self) -> None:
        if self.site is not None:
            self._check_site(self.site)
        full = self.chassis * self.compute_per_chassis
        if (
            self.compute_total is not None
            and not full - self.compute_per_chassis < self.compute_total <= full
        ):
            raise PlatformError(
                f"topology.compute_total must be in ({full - self.compute_per_chassis}, {full}] "
                f"(a partial last chassis only), got {self.compute_total}"
            )
        if self.compute.prefix == self.bb.prefix:
            raise PlatformError("compute and burst_buffer prefixes must differ")
        if self.bb_per_chassis < 1:
            raise PlatformError(f"burst_buffer.per_chassis must be >= 1, got {self.bb_per_chassis}")
        for kind, count in ((self.compute, self.compute_count), (self.bb, self.bb_count)):
            if len(str(count)) > kind.digits:
                raise PlatformError(f"{kind.prefix}: {count} nodes need more than {kind.digits} digits")

    def _check_site(self, site: Site) -> None:
        """One chassis holds every site node; the BB nodes' names are not the site's."""
        if self.chassis != 1 or self.compute_per_chassis != len(site.node_names()) or self.compute_total:
            raise PlatformError("a site's machine is one chassis holding every site node")
        taken = set(site.node_names()) & {self.bb.name(i + 1) for i in range(self.bb_count)}
        if taken:
            raise PlatformError(
                f"burst-buffer node names {sorted(taken)[:3]} are site nodes: change its prefix"
            )
        if self.bb.partition in {p.name for p in site.partitions}:
            raise PlatformError(
                f"burst_buffer.partition {self.bb.partition!r} is a site partition: rename it"
            )

    # -- sizes ---------------------------------------------------------------
    @property
    def chassis(self) -> int:
        return self.groups * self.chassis_per_group

    @property
    def compute_count(self) -> int:
        if self.compute_total is not None:
            return self.compute_total
        return self.chassis * self.compute_per_chassis

    @property
    def bb_count(self) -> int:
        return self.chassis * self.bb_per_chassis

    @property
    def node_count(self) -> int:
        return self.compute_count + self.bb_count

    @property
    def bb_total_mb(self) -> int:
        return self.bb_count * self.bb_capacity_mb

    # -- names ---------------------------------------------------------------
    def compute_nodes(self) -> list[str]:
        if self.site is not None:
            return self.site.node_names()
        return [self.compute.name(i + 1) for i in range(self.compute_count)]

    def compute_name(self, index: int) -> str:
        """The name of the 0-based compute node ``index`` (``c001`` for 0; a site's own name)."""
        if self.site is not None:
            return self.site.node_names()[index]
        return self.compute.name(index + 1)

    def bb_nodes(self) -> list[str]:
        return [self.bb.name(i + 1) for i in range(self.bb_count)]

    def all_nodes(self) -> list[str]:
        """Compute nodes first, then BB nodes: the order that fixes each node's port."""
        return self.compute_nodes() + self.bb_nodes()

    # -- topology ------------------------------------------------------------
    def chassis_of_compute(self, compute_index: int) -> int:
        """0-based chassis of the 0-based compute node index."""
        return compute_index // self.compute_per_chassis

    def chassis_of_bb(self, bb_index: int) -> int:
        """0-based chassis of the 0-based BB node index (BB nodes are numbered chassis by chassis)."""
        return bb_index // self.bb_per_chassis

    def bbs_of_chassis(self, chassis: int) -> list[int]:
        """The 0-based BB node indices of a chassis."""
        return list(range(chassis * self.bb_per_chassis, (chassis + 1) * self.bb_per_chassis))

    def group_of_chassis(self, chassis: int) -> int:
        return chassis // self.chassis_per_group

    def bb_distance(self, compute_index: int, bb_index: int) -> int:
        """0: same chassis, 1: same group, 2: another group (dragonfly hops)."""
        ch, bb_ch = self.chassis_of_compute(compute_index), self.chassis_of_bb(bb_index)
        if ch == bb_ch:
            return 0
        if self.group_of_chassis(ch) == self.group_of_chassis(bb_ch):
            return 1
        return 2

    def bb_preference(self, compute_index: int) -> list[int]:
        """BB node indices from nearest to farthest for a compute node (ties by index)."""
        return sorted(range(self.bb_count), key=lambda b: (self.bb_distance(compute_index, b), b))

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compute_count": self.compute_count,
            "bb_count": self.bb_count,
            "bb_capacity_mb": self.bb_capacity_mb,
            "bb_total_mb": self.bb_total_mb,
            "groups": self.groups,
            "chassis_per_group": self.chassis_per_group,
            "compute_per_chassis": self.compute_per_chassis,
            "bb_per_chassis": self.bb_per_chassis,
            "io": self.io.as_dict(),
        } | ({"site": site_to_dict(self.site)} if self.site is not None else {})
