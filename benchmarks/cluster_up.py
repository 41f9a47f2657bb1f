"""Cluster start-up, memory and idle CPU of the local Docker cluster, at any platform size.

Prints: seconds from `up` (image present) to all nodes idle, the slurmd count, total RSS and
PSS of all slurmd processes, slurmctld's RSS, the threads of the cluster and its idle CPU over
a window. Goals (issue 14): 1,128+ nodes idle in <= 60 s and <= 3 GB of PSS.

    python benchmarks/cluster_up.py [--platform FILE] [--name bbscale] [--repeat 3] [--idle-window 10]
                                    [--accounting DBD_PORT | --no-accounting]

The platform's accounting (on by default: slurmdbd + MariaDB on a free port) is measured as it
is; ``--accounting 7151`` puts slurmdbd on that port, ``--no-accounting`` leaves it out (goal,
issue 21: accounting costs +<= 5 s, +<= 300 MB).

The platform's ports must be free; the cluster (default name 'bbbench') is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from harness.cluster.containers.backend import DockerCluster
from harness.platform import Accounting, load_platform

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cluster_pids(cluster: DockerCluster, suffix: str = "") -> dict[int, str]:
    """Host pid -> command name of every process in the cluster's containers (whose name ends
    with ``suffix``)."""
    pids: dict[int, str] = {}
    for ctr in cluster.containers():
        if not ctr.name.endswith(suffix):
            continue
        top = ctr.top(ps_args="-eo pid,comm")
        for pid, comm in top["Processes"]:
            pids[int(pid)] = comm
    return pids


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in kB; PSS splits shared pages fairly, so its sum is the real footprint."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    fields = {line.split(":")[0]: int(line.split()[1]) for line in rollup[1:] if line.split()[1].isdigit()}
    return fields.get("Rss", 0), fields.get("Pss", 0)


def cpu_ticks(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(stat[11]) + int(stat[12])  # utime + stime


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default=None, help="platform file (default: the built-in 96 + 12)")
    parser.add_argument("--name", default="bbbench", help="cluster name")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle-window", type=float, default=10.0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--accounting", type=int, default=None, metavar="DBD_PORT", help="slurmdbd port")
    parser.add_argument("--no-accounting", action="store_true", help="no slurmdbd + MariaDB")
    args = parser.parse_args()

    platform = load_platform(args.platform)
    if args.accounting:
        platform = platform.redeployed(accounting=Accounting(enabled=True, dbd_port=args.accounting))
    if args.no_accounting:
        platform = platform.redeployed(accounting=Accounting(enabled=False))
    cluster = DockerCluster(name=args.name, platform=platform)
    cluster.down()
    cluster.ensure_image(print)
    times = []
    try:
        for _ in range(args.repeat):
            result = cluster.up()
            times.append(result.seconds_to_idle)
            print(f"up -> {cluster.platform.node_count} nodes idle: {result.seconds_to_idle:.2f} s")
            if len(times) < args.repeat:
                cluster.down()
        figures = report(cluster, times, args.idle_window)
    finally:
        cluster.down()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


def report(cluster: DockerCluster, times: list[float], window: float) -> dict[str, float]:
    pids = cluster_pids(cluster)
    slurmd = [p for p, comm in pids.items() if comm == "slurmd"]
    mem = [memory_kb(p) for p in slurmd]
    ctld = [memory_kb(p) for p, comm in pids.items() if comm == "slurmctld"]
    dbd = [memory_kb(p) for p in cluster_pids(cluster, "-dbd")]
    before = {p: cpu_ticks(p) for p in pids}
    time.sleep(window)
    used = sum(cpu_ticks(p) - t for p, t in before.items() if Path(f"/proc/{p}").exists())
    figures = {
        "nodes": cluster.platform.node_count,
        "up_median_s": statistics.median(times),
        "up_max_s": max(times),
        "slurmd": len(slurmd),
        "slurmd_rss_mb": sum(r for r, _ in mem) / 1024,
        "slurmd_pss_mb": sum(p for _, p in mem) / 1024,
        "slurmctld_rss_mb": sum(r for r, _ in ctld) / 1024,
        "dbd_pss_mb": sum(p for _, p in dbd) / 1024,  # MariaDB + slurmdbd (accounting on)
        "cluster_pss_mb": sum(memory_kb(p)[1] for p in pids if Path(f"/proc/{p}").exists()) / 1024,
        "threads": sum(threads(p) for p in pids if Path(f"/proc/{p}").exists()),
        "idle_cpu_pct": 100 * used / CLK_TCK / window,
    }
    print(f"start-up to idle: median {figures['up_median_s']:.2f} s, max {figures['up_max_s']:.2f} s")
    print(f"slurmd processes: {len(slurmd)}; threads of the whole cluster: {figures['threads']}")
    print(f"slurmd total RSS: {figures['slurmd_rss_mb']:.0f} MB")
    print(f"slurmd total PSS: {figures['slurmd_pss_mb']:.0f} MB (real footprint, shared pages split)")
    print(f"slurmctld RSS: {figures['slurmctld_rss_mb']:.1f} MB")
    print(f"dbd container PSS (MariaDB + slurmdbd): {figures['dbd_pss_mb']:.1f} MB")
    print(f"whole cluster PSS: {figures['cluster_pss_mb']:.0f} MB")
    print(f"idle CPU of the whole cluster: {figures['idle_cpu_pct']:.2f} % of one core over {window:.0f} s")
    return figures


if __name__ == "__main__":
    main()
