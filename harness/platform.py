"""The emulated machine: one small TOML description from which every Slurm file,
the compose file and the Ansible variables are rendered.

Pure data: knows nothing of Slurm or Docker. The policies use it for the
compute/burst-buffer topology (which BB node is nearest to which compute node).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_PLATFORM = "default"


class PlatformError(ValueError):
    """A platform description is missing a field or holds an impossible value."""


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
class Platform:
    name: str
    description: str
    groups: int
    chassis_per_group: int
    compute_per_chassis: int
    compute: NodeKind
    bb: NodeKind
    bb_capacity_mb: int
    bb_license: str
    controller_host: str
    controller_port: int
    slurmd_base_port: int
    node_containers: int
    source: str = field(default="<built-in>", compare=False)

    # -- sizes ---------------------------------------------------------------
    @property
    def chassis(self) -> int:
        return self.groups * self.chassis_per_group

    @property
    def compute_count(self) -> int:
        return self.chassis * self.compute_per_chassis

    @property
    def bb_count(self) -> int:
        """One BB node per chassis."""
        return self.chassis

    @property
    def node_count(self) -> int:
        return self.compute_count + self.bb_count

    @property
    def bb_total_mb(self) -> int:
        return self.bb_count * self.bb_capacity_mb

    # -- names ---------------------------------------------------------------
    def compute_nodes(self) -> list[str]:
        return [self.compute.name(i + 1) for i in range(self.compute_count)]

    def bb_nodes(self) -> list[str]:
        return [self.bb.name(i + 1) for i in range(self.bb_count)]

    def all_nodes(self) -> list[str]:
        """Compute nodes first, then BB nodes: the order that fixes each node's port."""
        return self.compute_nodes() + self.bb_nodes()

    def node_port(self, name: str) -> int:
        return self.slurmd_base_port + self._node_index()[name]

    def ports(self) -> dict[str, int]:
        return {n: self.slurmd_base_port + i for i, n in enumerate(self.all_nodes())}

    def _node_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.all_nodes())}

    # -- topology ------------------------------------------------------------
    def chassis_of_compute(self, compute_index: int) -> int:
        """0-based chassis of the 0-based compute node index."""
        return compute_index // self.compute_per_chassis

    def group_of_chassis(self, chassis: int) -> int:
        return chassis // self.chassis_per_group

    def bb_distance(self, compute_index: int, bb_index: int) -> int:
        """0: same chassis, 1: same group, 2: another group (dragonfly hops)."""
        ch = self.chassis_of_compute(compute_index)
        if ch == bb_index:
            return 0
        if self.group_of_chassis(ch) == self.group_of_chassis(bb_index):
            return 1
        return 2

    def bb_preference(self, compute_index: int) -> list[int]:
        """BB node indices from nearest to farthest for a compute node (ties by index)."""
        return sorted(range(self.bb_count), key=lambda b: (self.bb_distance(compute_index, b), b))

    def node_groups(self, count: int | None = None) -> list[list[str]]:
        """Split all nodes into ``count`` near-equal consecutive groups (one per container/VM)."""
        n = count or self.node_containers
        nodes = self.all_nodes()
        size = math.ceil(len(nodes) / n)
        return [nodes[i : i + size] for i in range(0, len(nodes), size)]

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
            "source": self.source,
        }


def _require(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise PlatformError(f"{where}: missing '{key}'")
    value = table[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise PlatformError(f"{where}.{key}: expected an integer, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise PlatformError(f"{where}.{key}: expected a string, got {value!r}")
    if kind is int and value <= 0 and key != "slurmd_base_port":
        raise PlatformError(f"{where}.{key}: must be positive, got {value}")
    return value


def _node_kind(table: dict[str, Any], where: str) -> NodeKind:
    return NodeKind(
        prefix=_require(table, "prefix", str, where),
        digits=_require(table, "digits", int, where),
        cpus=_require(table, "cpus", int, where),
        real_memory_mb=_require(table, "real_memory_mb", int, where),
        partition=_require(table, "partition", str, where),
    )


def platform_from_dict(data: dict[str, Any], source: str = "<dict>") -> Platform:
    try:
        meta, topo = data["platform"], data["topology"]
        comp, bb = data["compute"], data["burst_buffer"]
        net, deploy = data["network"], data["deploy"]
    except KeyError as exc:
        raise PlatformError(f"{source}: missing table [{exc.args[0]}]") from None
    platform = Platform(
        name=_require(meta, "name", str, "platform"),
        description=meta.get("description", ""),
        groups=_require(topo, "groups", int, "topology"),
        chassis_per_group=_require(topo, "chassis_per_group", int, "topology"),
        compute_per_chassis=_require(topo, "compute_per_chassis", int, "topology"),
        compute=_node_kind(comp, "compute"),
        bb=_node_kind(bb, "burst_buffer"),
        bb_capacity_mb=_require(bb, "capacity_mb", int, "burst_buffer"),
        bb_license=_require(bb, "license", str, "burst_buffer"),
        controller_host=_require(net, "controller_host", str, "network"),
        controller_port=_require(net, "controller_port", int, "network"),
        slurmd_base_port=_require(net, "slurmd_base_port", int, "network"),
        node_containers=_require(deploy, "node_containers", int, "deploy"),
        source=source,
    )
    _check_consistency(platform)
    return platform


def _check_consistency(p: Platform) -> None:
    if p.compute.prefix == p.bb.prefix:
        raise PlatformError("compute and burst_buffer prefixes must differ")
    for kind, count in ((p.compute, p.compute_count), (p.bb, p.bb_count)):
        if len(str(count)) > kind.digits:
            raise PlatformError(f"{kind.prefix}: {count} nodes need more than {kind.digits} digits")
    last_port = p.slurmd_base_port + p.node_count - 1
    if p.controller_port in range(p.slurmd_base_port, last_port + 1):
        raise PlatformError("controller_port collides with the slurmd port range")
    if last_port > 65535:
        raise PlatformError(f"slurmd ports run past 65535 (last {last_port})")


def load_platform(path: str | Path | None = None) -> Platform:
    """Load a platform TOML file; ``None`` or ``"default"`` gives the built-in 96 + 12 machine."""
    if path is None or str(path) == DEFAULT_PLATFORM:
        text = resources.files("harness.platforms").joinpath("default.toml").read_text()
        return platform_from_dict(tomllib.loads(text), source="<built-in default>")
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise PlatformError(f"{p}: no such platform file") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(f"{p}: not valid TOML: {exc}") from None
    return platform_from_dict(data, source=str(p))
