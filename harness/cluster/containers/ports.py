"""The ports a local cluster listens on: free, and below the host's ephemeral range.

Every daemon listens on 127.0.0.1: slurmctld on the controller port, slurmd ``i`` on
``slurmd_base_port + i``. A port inside the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default) is also handed out as
the local end of outgoing connections (every RPC of slurmctld, sbatch, squeue): a slurmd
that starts after such a connection took its port cannot bind it, and at 1,000 nodes and
thousands of RPCs that happens. So the whole range must end below it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

from harness.cluster.base import ClusterError, port_in_use
from harness.platform import Platform
from harness.platform.deployment import DEFAULT_DBD_PORT

# where a cluster whose platform leaves slurmdbd's port open takes one: Slurm's own first
DBD_PORTS = range(DEFAULT_DBD_PORT, DEFAULT_DBD_PORT + 400)
DBD_CONF = Path("dbd") / "slurmdbd.conf"  # in a cluster's state directory
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = range(32768, 61000)


def ephemeral_ports(path: Path = EPHEMERAL_RANGE_FILE) -> range:
    """The kernel's ephemeral port range (the default when the file is absent)."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (FileNotFoundError, ValueError):
        return DEFAULT_EPHEMERAL
    return range(low, high + 1)


def listen_ports(platform: Platform) -> list[int]:
    """The controller port, every slurmd port, then slurmdbd's when accounting is on."""
    ports = [platform.deployment.controller_port, *platform.ports().values()]
    if platform.deployment.accounting.enabled:
        ports.append(platform.deployment.accounting.port)
    return ports


def check_ports(platform: Platform, ephemeral: range | None = None) -> None:
    """Raise ClusterError naming the platform file when a port is ephemeral or taken."""
    ephemeral = ephemeral if ephemeral is not None else ephemeral_ports()
    ports = listen_ports(platform)
    clash = [p for p in ports if p in ephemeral]
    if clash:
        raise ClusterError(
            f"{platform.source}: ports {_show(clash)} fall in the host's ephemeral range "
            f"{ephemeral.start}-{ephemeral.stop - 1} ({EPHEMERAL_RANGE_FILE}), which outgoing "
            f"connections use: set [deployment] slurmd_base_port/controller_port so that all "
            f"{len(ports) - 1} slurmd ports end below {ephemeral.start}"
        )
    busy = [p for p in ports if port_in_use(p)]
    if busy:
        raise ClusterError(
            f"127.0.0.1 ports already in use: {_show(busy)}; another Slurm (or cluster) is running: "
            f"stop it or change [deployment] in {platform.source}"
        )


def _show(ports: list[int]) -> str:
    return f"{ports[:10]}{' ...' if len(ports) > 10 else ''}"


def recorded_dbd_port(state_root: Path) -> int | None:
    """The port in the slurmdbd.conf a cluster's state directory holds (rendered by its last
    ``up``), None without one."""
    try:
        match = re.search(r"^DbdPort=(\d+)$", (state_root / DBD_CONF).read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match[1]) if match else None


def with_dbd_port(
    platform: Platform, state_root: Path, in_use: Callable[[int], bool] = port_in_use
) -> Platform:
    """``platform`` with slurmdbd's port set when it leaves it open: the one this cluster's
    state recorded, else the first of :data:`DBD_PORTS` that no other cluster's state records,
    that the platform's own daemons do not use and that nothing listens on."""
    accounting = platform.deployment.accounting
    if not accounting.enabled or accounting.dbd_port is not None:
        return platform
    port = recorded_dbd_port(state_root)
    if port is None:
        others = {recorded_dbd_port(d) for d in state_root.parent.glob("*") if d != state_root}
        own = {platform.deployment.controller_port, *platform.ports().values()}
        free = (p for p in DBD_PORTS if p not in others | own and not in_use(p))
        port = next(free, None)
        if port is None:
            raise ClusterError(
                f"no free port for slurmdbd in {DBD_PORTS.start}-{DBD_PORTS.stop - 1}: set "
                f"[deployment.accounting] dbd_port in {platform.source}, or enabled = false"
            )
    deployment = dataclasses.replace(
        platform.deployment, accounting=dataclasses.replace(accounting, dbd_port=port)
    )
    return dataclasses.replace(platform, deployment=deployment)
