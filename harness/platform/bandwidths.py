"""The machine's bandwidths: the ``[machine.io]`` table of a platform file.

Defaults reproduce Kopański's platform (Section 2.2, Listing 1): a compute network
of 10 Gbit/s links (``bw="1250MBps"``), burst-buffer nodes that are nodes of that
network (1250 MB/s each), and one shared link of 5 GB/s to the PFS
(``link_pfs bandwidth="5000MBps"``). Optional:

* ``[io.hierarchy]``: Herbein's I/O hierarchy (HPDC'16, Sections 3.3, 4.1): node ->
  edge switch (one per chassis) -> core switch pool -> PFS, with the PFS bandwidth
  set as an underprovisioning percentage of what the nodes demand
  (``compute nodes x demand_mbps_per_node x (1 - pct / 100)``; Herbein: 18 MB/s
  per node, 0-30 %);
* ``[io.tiers]``: Lackner's two storage tiers (Section IV-A): the slow unlimited
  PFS (LPS) at ``lps_mbps``, the fast limited burst buffers (HPS) ``hps_ratio``
  times faster, staging between them ``stage_ratio`` times faster than LPS.

All rates are MB/s (10^6 bytes per second), as the platform file's capacities are MB.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from harness.model import checks
from harness.model.checks import InputError


class BandwidthError(InputError):
    """An ``[machine.io]`` table with an unknown key or an impossible value."""


@dataclass(frozen=True)
class Hierarchy:
    # CTS-1 per node, scaled: an edge switch of 216 GB/s serves an SU of 162 nodes
    # (1333 MB/s a node; a chassis of 8: 10667), the core pool of 432 GB/s 3888 nodes
    # (111 MB/s a node; 96 nodes: 10667).
    edge_mbps: float = 10_667.0
    core_mbps: float = 10_667.0
    demand_mbps_per_node: float = 18.0
    pfs_underprovision_pct: float = 0.0


@dataclass(frozen=True)
class Tiers:
    lps_mbps: float = 1000.0
    hps_ratio: float = 15.0
    stage_ratio: float = 5.0

    @property
    def hps_mbps(self) -> float:
        return self.lps_mbps * self.hps_ratio

    @property
    def stage_mbps(self) -> float:
        return self.lps_mbps * self.stage_ratio


@dataclass(frozen=True)
class Bandwidths:
    compute_link_mbps: float = 1250.0
    bb_node_mbps: float = 1250.0
    pfs_mbps: float = 5000.0
    hierarchy: Hierarchy | None = None
    tiers: Tiers = Tiers()

    def pfs_capacity_mbps(self, compute_count: int) -> float:
        """The PFS link: the plain value, or Herbein's underprovisioned demand."""
        h = self.hierarchy
        if h is None:
            return self.pfs_mbps
        return compute_count * h.demand_mbps_per_node * (1 - h.pfs_underprovision_pct / 100)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _numbers(table: dict[str, Any], kind: type, where: str) -> dict[str, Any]:
    """The float fields of ``kind`` given in ``table``, checked (the others keep their defaults)."""
    names = {f.name for f in fields(kind) if f.type in ("float", float)}
    try:
        if not isinstance(table, dict):
            raise checks.refuse(where, "a table", table)
        checks.known_keys(table, names, where)
        out = {key: _rate(key, value, f"{where}.{key}") for key, value in table.items()}
    except InputError as exc:
        raise BandwidthError(str(exc)) from None
    return out


def _rate(key: str, value: Any, where: str) -> float:
    """A rate (> 0, finite) or a percentage (>= 0)."""
    allowed = checks.NON_NEGATIVE if key.endswith("_pct") else checks.POSITIVE
    return checks.number(value, where, allowed)


def bandwidths_from_dict(table: dict[str, Any], source: str = "<dict>") -> Bandwidths:
    """Parse the ``[machine.io]`` table (absent: the thesis's defaults)."""
    rest = dict(table)
    hierarchy = rest.pop("hierarchy", None)
    tiers = rest.pop("tiers", None)
    io = Bandwidths(**_numbers(rest, Bandwidths, f"{source}: machine.io"))
    if hierarchy is not None:
        h = Hierarchy(**_numbers(hierarchy, Hierarchy, f"{source}: machine.io.hierarchy"))
        if h.pfs_underprovision_pct >= 100:
            raise BandwidthError(f"{source}: machine.io.hierarchy.pfs_underprovision_pct must be below 100")
        io = Bandwidths(io.compute_link_mbps, io.bb_node_mbps, io.pfs_mbps, h, io.tiers)
    if tiers is not None:
        t = Tiers(**_numbers(tiers, Tiers, f"{source}: machine.io.tiers"))
        io = Bandwidths(io.compute_link_mbps, io.bb_node_mbps, io.pfs_mbps, io.hierarchy, t)
    return io
