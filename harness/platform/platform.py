"""A platform: a :class:`Machine` with the :class:`Deployment` it runs on.

A Platform *is* a Machine (everything that schedules or measures takes a Machine and
accepts a Platform), plus the deployment that the Slurm files, the compose file and the
Ansible variables are rendered from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from harness.platform.deployment import Deployment
from harness.platform.machine import Machine


@dataclass(frozen=True, kw_only=True)
class Platform(Machine):
    deployment: Deployment
    source: str = field(default="<built-in>", compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.deployment.check_ports(self.node_count)

    @classmethod
    def of(cls, machine: Machine, deployment: Deployment, source: str = "<built-in>") -> Platform:
        return cls(**_machine_fields(machine), deployment=deployment, source=source)

    def redeployed(self, **changes: Any) -> Platform:
        """The same machine with some deployment fields changed (ports, containers, ...)."""
        return replace(self, deployment=replace(self.deployment, **changes))

    @property
    def machine(self) -> Machine:
        """The machine alone, without its deployment."""
        return Machine(**_machine_fields(self))

    # -- ports and placement of the nodes --------------------------------------
    def ports(self) -> dict[str, int]:
        base = self.deployment.slurmd_base_port
        return {n: base + i for i, n in enumerate(self.all_nodes())}

    def node_port(self, name: str) -> int:
        return self.ports()[name]

    def node_groups(self, count: int | None = None) -> list[list[str]]:
        """Split all nodes into ``count`` near-equal consecutive groups (one per container/VM)."""
        n = count or self.deployment.node_containers
        nodes = self.all_nodes()
        size = math.ceil(len(nodes) / n)
        return [nodes[i : i + size] for i in range(0, len(nodes), size)]

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "source": self.source}


def _machine_fields(machine: Machine) -> dict[str, Any]:
    return {f.name: getattr(machine, f.name) for f in fields(Machine)}
