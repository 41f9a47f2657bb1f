"""Whether this host can hold a cluster, checked before anything starts.

What an emulated node costs was measured (``benchmarks/scale_curve.py``, docs/cluster.md): a
slurmd's memory (PSS, its real footprint) is a base plus, when it reads the whole slurm.conf,
a record per node of the cluster; it runs about five threads, which count against the
kernel's ``pid_max`` with every other process and thread of the host; it holds about 13 open
files, against the kernel's ``fs.file-max``. A cluster that would exhaust one of them is
refused with the limit, the number it needs and how to raise it: on this host, running out of
memory or pids while 4,000 daemons start has killed the Docker engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.cluster.base import ClusterError
from harness.platform import Platform

# Measured (docs/cluster.md): own-node 968-1,004 kB per slurmd from 108 to 4,374 nodes; shared
# 1,169 kB at 108 nodes, 1,725 at 540, 2,514 at 1,134: 1,030 kB + 1.31 kB per node it knows.
SLURMD_BASE_KB = 1_030
SLURMD_PER_NODE_KB = 1.31
THREADS_PER_SLURMD = 5  # measured: 4.1 (17,613 threads for 4,374 slurmd and their containers)
FILES_PER_SLURMD = 13
FIXED_MB = 400  # slurmctld, munged, the supervisors, Docker's container processes
HEADROOM = 1.25  # start-up peaks above the idle footprint
RESERVE_MB = 1_024  # left to the host (the Docker engine, the harness itself)
RESERVE_THREADS = 2_000
ACCOUNTING_MB = 104  # measured: PSS of the dbd container, MariaDB + slurmdbd (docs/accounting.md)


@dataclass(frozen=True)
class HostLimits:
    available_mb: float  # MemAvailable
    pid_max: int
    threads_now: int  # processes and threads of the whole host now
    file_max: int
    files_now: int

    @classmethod
    def read(cls, proc: Path = Path("/proc")) -> HostLimits:
        meminfo = dict(
            line.split(":", 1) for line in (proc / "meminfo").read_text().splitlines() if ":" in line
        )
        file_nr = (proc / "sys/fs/file-nr").read_text().split()
        return cls(
            available_mb=int(meminfo["MemAvailable"].split()[0]) / 1024,
            pid_max=int((proc / "sys/kernel/pid_max").read_text()),
            threads_now=int((proc / "loadavg").read_text().split()[3].split("/")[1]),
            file_max=int((proc / "sys/fs/file-max").read_text()),
            files_now=int(file_nr[0]),
        )


def slurmd_kb(platform: Platform) -> float:
    """The measured PSS of one slurmd of ``platform`` (kB)."""
    known = 1 if platform.deployment.slurmd_conf == "own-node" else platform.node_count
    return SLURMD_BASE_KB + SLURMD_PER_NODE_KB * known


def memory_mb(platform: Platform) -> float:
    """The memory the cluster needs while it starts (MB)."""
    return (platform.node_count * slurmd_kb(platform) / 1024 + FIXED_MB) * HEADROOM


def check_capacity(platform: Platform, limits: HostLimits | None = None) -> None:
    """Raise ClusterError naming the first limit ``platform``'s cluster would exhaust."""
    host = limits or HostLimits.read()
    n, where = platform.node_count, f"{platform.name} ({platform.node_count:,} nodes)"
    need_mb = memory_mb(platform)
    if need_mb > host.available_mb - RESERVE_MB:
        hint = "" if platform.deployment.slurmd_conf == "own-node" else (
            '; [deployment] slurmd_conf = "own-node" needs '
            f"{memory_mb(platform.redeployed(slurmd_conf='own-node')):,.0f} MB"
        )  # fmt: skip
        raise ClusterError(
            f"{where}: needs about {need_mb:,.0f} MB of memory, the host has {host.available_mb:,.0f} MB "
            f"available ({RESERVE_MB} MB kept for the host){hint}: free memory or emulate fewer nodes"
        )
    threads = n * THREADS_PER_SLURMD
    if host.threads_now + threads + RESERVE_THREADS > host.pid_max:
        raise ClusterError(
            f"{where}: needs about {threads:,} threads, and {host.threads_now:,} run already against the "
            f"kernel's pid_max of {host.pid_max:,}: raise it (sysctl -w kernel.pid_max=4194304)"
        )
    files = n * FILES_PER_SLURMD
    if host.files_now + files > host.file_max:
        raised = 2 * (host.files_now + files)
        raise ClusterError(
            f"{where}: needs about {files:,} open files, {host.files_now:,} are open against the kernel's "
            f"fs.file-max of {host.file_max:,}: raise it (sysctl -w fs.file-max={raised})"
        )


def cluster_mb(platform: Platform) -> float:
    """:func:`memory_mb` plus slurmdbd and MariaDB when accounting is on (MB)."""
    accounting = ACCOUNTING_MB * HEADROOM if platform.deployment.accounting.enabled else 0.0
    return memory_mb(platform) + accounting


def clusters_that_fit(platform: Platform, limits: HostLimits | None = None) -> tuple[int, str]:
    """How many more clusters of ``platform`` this host holds side by side, and the limit that
    says so (memory, threads against ``pid_max``, open files), counted as :func:`check_capacity` does."""
    host = limits or HostLimits.read()
    n = platform.node_count
    each_mb, threads, files = cluster_mb(platform), n * THREADS_PER_SLURMD, n * FILES_PER_SLURMD
    memory = f"{host.available_mb:,.0f} MB available ({RESERVE_MB} MB kept for the host)"
    pids = f"{host.threads_now:,} threads run against pid_max {host.pid_max:,} ({RESERVE_THREADS:,} kept)"
    open_files = f"{host.files_now:,} files open against fs.file-max {host.file_max:,}"
    room = {
        f"{memory}, about {each_mb:,.0f} MB a cluster": (host.available_mb - RESERVE_MB) / each_mb,
        f"{pids}, about {threads:,} a cluster": (host.pid_max - host.threads_now - RESERVE_THREADS) / threads,
        f"{open_files}, about {files:,} a cluster": (host.file_max - host.files_now) / files,
    }
    limit = min(room, key=lambda k: room[k])
    return max(int(room[limit]), 0), limit
