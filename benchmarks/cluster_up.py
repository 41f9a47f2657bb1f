"""Cluster start-up, memory and idle CPU of the local Docker cluster.

Prints: seconds from `up` (image present) to all nodes idle (target <= 30 s), total RSS and
PSS of all slurmd processes (target RSS <= 1 GB), and the cluster's idle CPU over a window.

    python benchmarks/cluster_up.py [--repeat 3] [--idle-window 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from harness.cluster.docker import DockerCluster

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cluster_pids(cluster: DockerCluster) -> dict[int, str]:
    """Host pid -> command name of every process in the cluster's containers."""
    pids: dict[int, str] = {}
    for ctr in cluster.containers():
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle-window", type=float, default=10.0)
    args = parser.parse_args()

    cluster = DockerCluster(name="bbbench")
    cluster.down()
    cluster.ensure_image(print)
    times = []
    for _ in range(args.repeat):
        result = cluster.up()
        times.append(result.seconds_to_idle)
        print(f"up -> {cluster.platform.node_count} nodes idle: {result.seconds_to_idle:.2f} s")
        if len(times) < args.repeat:
            cluster.down()
    try:
        report(cluster, times, args.idle_window)
    finally:
        cluster.down()


def report(cluster: DockerCluster, times: list[float], window: float) -> None:
    pids = cluster_pids(cluster)
    slurmd = [p for p, comm in pids.items() if comm == "slurmd"]
    mem = [memory_kb(p) for p in slurmd]
    ctld = [memory_kb(p) for p, comm in pids.items() if comm == "slurmctld"]
    before = {p: cpu_ticks(p) for p in pids}
    time.sleep(window)
    used = sum(cpu_ticks(p) - t for p, t in before.items() if Path(f"/proc/{p}").exists())
    median = statistics.median(times)
    print(f"start-up to idle: median {median:.2f} s, max {max(times):.2f} s (target <= 30 s)")
    print(f"slurmd processes: {len(slurmd)}")
    print(f"slurmd total RSS: {sum(r for r, _ in mem) / 1024:.0f} MB (target <= 1024 MB)")
    print(f"slurmd total PSS: {sum(p for _, p in mem) / 1024:.0f} MB (real footprint, shared pages split)")
    print(f"slurmctld RSS: {sum(r for r, _ in ctld) / 1024:.1f} MB")
    cpu = 100 * used / CLK_TCK / window
    print(f"idle CPU of the whole cluster: {cpu:.2f} % of one core over {window:.0f} s")


if __name__ == "__main__":
    main()
