"""The ports a local cluster listens on: free, and below the host's ephemeral range.

Every daemon listens on 127.0.0.1: slurmctld on the controller port, slurmd ``i`` on
``slurmd_base_port + i``. A port inside the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default) is also handed out as
the local end of outgoing connections (every RPC of slurmctld, sbatch, squeue): a slurmd
that starts after such a connection took its port cannot bind it, and at 1,000 nodes and
thousands of RPCs that happens. So the whole range must end below it.
"""

from __future__ import annotations

from pathlib import Path

from harness.cluster.base import ClusterError, port_in_use
from harness.platform import Platform

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
        ports.append(platform.deployment.accounting.dbd_port)
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
