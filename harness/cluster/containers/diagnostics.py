"""Looks at a Docker cluster's containers from outside: what its node containers say when
their nodes do not come up, and which containers a resumed run must start again."""

from __future__ import annotations

from typing import Protocol

import docker
import docker.errors
from docker.models.containers import Container

from harness.cluster.base import ClusterError
from harness.platform import Platform


class DockerCluster(Protocol):
    """What a look at the node containers needs of their cluster (the backend's ``DockerCluster``)."""

    name: str
    platform: Platform

    @property
    def client(self) -> docker.DockerClient: ...


def node_container_output(cluster: DockerCluster, nodes: list[str]) -> str:
    """The supervisor's last lines and the slurmd processes of the containers of ``nodes``."""
    groups = cluster.platform.node_groups()
    indices = sorted({i for i, group in enumerate(groups) for n in nodes if n in group})
    pattern = " ".join(f"-e {n}" for n in nodes)
    parts = []
    for index in indices:
        try:
            ctr = cluster.client.containers.get(f"{cluster.name}-nodes{index}")
            ps = ctr.exec_run(["sh", "-c", f"ps -o pid,stat,etime,args -C slurmd | grep -w {pattern}"])
            output = ctr.logs(tail=8).decode(errors="replace")
            procs = ps.output.decode(errors="replace")
            parts.append(f"--- {ctr.name} ({ctr.status}):\n{output}slurmd of {nodes}:\n{procs}")
        except docker.errors.DockerException as exc:
            parts.append(f"--- {cluster.name}-nodes{index}: {exc}")
    return "\n".join(parts)


def stopped_in_start_order(containers: list[Container], cluster_name: str) -> list[Container]:
    """The cluster's stopped containers in the order ``up`` starts them: slurmdbd, slurmctld,
    then the nodes. No container at all: the cluster was removed, and Slurm's state with it."""
    if not containers:
        raise ClusterError(
            f"cluster '{cluster_name}' was removed (no container): Slurm's state and the run's jobs "
            "went with it; start the run again"
        )
    stopped = [c for c in containers if c.status != "running"]
    return sorted(
        stopped, key=lambda c: 0 if c.name.endswith("-dbd") else 1 if c.name.endswith("-ctld") else 2
    )
