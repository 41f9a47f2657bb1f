"""The accounting container of a Docker cluster: MariaDB (unix socket only) and slurmdbd on
127.0.0.1:``dbd_port``, host networking, started before slurmctld so that the cluster, the
account and the submitting user's association exist when slurmctld registers.

Its files come from the cluster's state directory (``ClusterState.dbd_mounts``): the
generated password never enters an image, the database lives in ``state/db``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import docker
import docker.errors
from docker.models.containers import Container

from harness.cluster.base import ClusterError
from harness.cluster.containers.state_dir import ClusterState
from harness.model.polling import poll_until
from harness.platform import Platform

READY_FILE = "/run/slurm/dbd-ready"
DBD_READY_TIMEOUT_S = 60.0


class DockerCluster(Protocol):
    """What the accounting container needs of its cluster (the backend's ``DockerCluster``)."""

    name: str
    platform: Platform
    state: ClusterState

    @property
    def client(self) -> docker.DockerClient: ...

    def run_container(
        self, tag: str, name: str, command: list[str], mounts: dict[str, str] | None = None
    ) -> Container: ...

    @staticmethod
    def tail(path: Path, lines: int) -> str: ...


def dbd_container_name(cluster_name: str) -> str:
    return f"{cluster_name}-dbd"


def accounting_enabled(cluster: DockerCluster) -> bool:
    return cluster.platform.deployment.accounting.enabled


def start_dbd(cluster: DockerCluster, tag: str, user: str) -> None:
    """Start the dbd container and wait until slurmdbd answers with the cluster registered."""
    account = cluster.platform.deployment.accounting.account
    ctr = cluster.run_container(
        tag, dbd_container_name(cluster.name), ["dbd", account, user], cluster.state.dbd_mounts()
    )
    if poll_until(lambda: _ready_or_exited(ctr), DBD_READY_TIMEOUT_S) == "ready":
        return
    raise ClusterError(
        f"slurmdbd of '{cluster.name}' not ready within {DBD_READY_TIMEOUT_S:.0f} s. Last log lines:\n"
        + cluster.tail(cluster.state.log / "slurmdbd.log", 10)
        + "\n--- mariadb.log\n"
        + cluster.tail(cluster.state.log / "mariadb.log", 10)
        + "\nContainer output:\n"
        + ctr.logs(tail=15).decode(errors="replace")
    )


def _ready_or_exited(ctr: Container) -> str | None:
    if ctr.exec_run(["test", "-e", READY_FILE]).exit_code == 0:
        return "ready"
    ctr.reload()
    return "exited" if ctr.status == "exited" else None


def restart_dbd(cluster: DockerCluster) -> None:
    """Restart the dbd container (MariaDB and slurmdbd); the database is kept."""
    try:
        ctr = cluster.client.containers.get(dbd_container_name(cluster.name))
    except docker.errors.NotFound:
        raise ClusterError(f"cluster '{cluster.name}' has no accounting container") from None
    ctr.restart(timeout=20)
    if poll_until(lambda: _ready_or_exited(ctr), DBD_READY_TIMEOUT_S) == "ready":
        return
    raise ClusterError(f"slurmdbd of '{cluster.name}' not ready again after a restart")
