"""What an emulated node costs, against the cluster's size: the curve of docs/cluster.md.

For each size N (compute nodes; one burst-buffer node per chassis of 8, as the study's
machine) and each way the slurmd read their configuration (``shared``: the whole slurm.conf;
``own-node``: a slurm.conf of their own node, ``deployment.slurmd_conf``), bring the cluster
up on this host and measure: seconds to all nodes idle, the PSS and RSS of all slurmd and per
slurmd, slurmctld's RSS, threads, the idle CPU, and slurmctld's cost of one scheduling pass
(``sdiag``'s mean main and backfill cycle) with a queue of jobs that cannot all start.

    PYTHONPATH=. python3 benchmarks/scale_curve.py --sizes 96,480,1008 --modes shared,own-node
        [--containers-per 1100] [--queue 200] [--json out.json]
    PYTHONPATH=. python3 benchmarks/scale_curve.py --plot docs/figures/scale-curve.png a.json b.json

Ports: controller 7301, slurmd from 10001 (below the kernel's ephemeral range); the cluster
(``bbcurve``) is removed after each point. Run it alone: it measures CPU and memory.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_up import report

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.platform import Platform
from harness.workload.platforms import sized_platform

CONTROLLER_PORT = 7301
SLURMD_BASE_PORT = 10001


def platform_of(compute: int, mode: str, nodes_per_container: int) -> Platform:
    base = sized_platform(compute, name=f"cost-{compute}")
    total = base.node_count
    return base.redeployed(
        controller_port=CONTROLLER_PORT,
        slurmd_base_port=SLURMD_BASE_PORT,
        node_containers=max(1, math.ceil(total / nodes_per_container)),
        slurmd_conf=mode,
    )


def scheduling_cost(cluster: DockerCluster, queue: int, settle_s: float = 20.0) -> dict[str, float]:
    """sdiag's mean main and backfill cycle (µs) with ``queue`` one-node jobs and one job as
    wide as the machine pending behind a running one."""
    nodes = cluster.platform.compute_count
    script = "; ".join([
        f"sbatch -N {nodes} --time=10 --wrap 'sleep 600' >/dev/null",
        f"sbatch -N {nodes} --time=10 --wrap 'sleep 600' >/dev/null",
        f"for i in $(seq {queue}); do sbatch -N 1 --time=5 --wrap 'sleep 300' >/dev/null; done",
        "scontrol reconfigure",  # sdiag's counters start now
    ])  # fmt: skip
    cluster.exec(["su", SUBMIT_USER, "-s", "/bin/bash", "-c", script], timeout=600)
    time.sleep(settle_s)
    out = cluster.exec(["sdiag", "--json"], timeout=60)
    stats = json.loads(out.stdout)["statistics"]
    cluster.exec(["scancel", "--user", SUBMIT_USER], timeout=60)

    def number(value: object) -> float:
        return float(value["number"] if isinstance(value, dict) else value)  # type: ignore[index]

    return {
        "main_cycles": number(stats.get("schedule_cycle_total", 0)),
        "main_mean_cycle_us": number(stats.get("schedule_cycle_mean", 0)),
        "bf_cycles": number(stats.get("bf_cycle_counter", 0)),
        "bf_mean_cycle_us": number(stats.get("bf_cycle_mean", 0)),
    }


def point(compute: int, mode: str, args: argparse.Namespace) -> dict[str, object]:
    platform = platform_of(compute, mode, args.containers_per)
    cluster = DockerCluster(name="bbcurve", platform=platform)
    cluster.down()
    cluster.ensure_image(print)
    try:
        began = time.monotonic()
        result = cluster.up()
        print(f"{mode} {platform.node_count} nodes: idle after {result.seconds_to_idle:.1f} s", flush=True)
        figures: dict[str, object] = {
            "mode": mode,
            "compute": compute,
            **report(cluster, [result.seconds_to_idle], 10.0),
        }
        figures["slurmd_pss_kb_each"] = (
            1024 * float(figures["slurmd_pss_mb"]) / max(1, int(figures["slurmd"]))
        )
        figures.update(scheduling_cost(cluster, args.queue))
        figures["wall_s"] = time.monotonic() - began
        return figures
    finally:
        cluster.down()


def fitted_slope(nodes: list[float], values: list[float]) -> float:
    """The slope of log(value) against log(nodes): 1 is linear, 2 quadratic, 0 flat."""
    import numpy as np

    return float(np.polyfit(np.log(nodes), np.log(values), 1)[0])


def plot(rows: list[dict], out: Path) -> Path:
    """Total slurmd PSS and PSS per slurmd against the node count, log-log, a line per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (total, each) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, colour in (("shared", "tab:red"), ("own-node", "tab:blue")):
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["nodes"])
        if len(mine) < 2:
            continue
        n = [float(r["nodes"]) for r in mine]
        mb = [float(r["slurmd_pss_mb"]) for r in mine]
        kb = [float(r["slurmd_pss_kb_each"]) for r in mine]
        total.loglog(n, mb, "o-", color=colour, label=f"{mode} (slope {fitted_slope(n, mb):.2f})")
        each.loglog(n, kb, "o-", color=colour, label=f"{mode} (slope {fitted_slope(n, kb):.2f})")
    total.set(xlabel="emulated nodes", ylabel="PSS of all slurmd (MB)", title="Memory of the cluster")
    each.set(xlabel="emulated nodes", ylabel="PSS per slurmd (kB)", title="Memory per emulated node")
    for ax in (total, each):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="96,480,1008", help="compute node counts, comma-separated")
    parser.add_argument("--modes", default="shared,own-node")
    parser.add_argument("--containers-per", type=int, default=1100, help="slurmd per node container")
    parser.add_argument("--queue", type=int, default=200, help="one-node jobs queued for sdiag")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="plot the rows of the JSON files given")
    parser.add_argument("rows", nargs="*", type=Path, help="with --plot: JSON files of earlier runs")
    args = parser.parse_args()
    if args.plot:
        rows = [row for path in args.rows for row in json.loads(path.read_text())]
        print(plot(rows, args.plot))
        return
    rows = []
    for compute in (int(s) for s in args.sizes.split(",")):
        for mode in args.modes.split(","):
            rows.append(point(compute, mode, args))
            if args.json:
                args.json.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{'mode':<9} {'nodes':>6} {'up s':>6} {'PSS MB':>8} {'kB/slurmd':>9} {'ctld MB':>8} "
          f"{'threads':>7} {'main us':>8} {'bf us':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['mode']:<9} {r['nodes']:>6} {r['up_median_s']:>6.1f} {r['slurmd_pss_mb']:>8.0f} "
              f"{r['slurmd_pss_kb_each']:>9.0f} {r['slurmctld_rss_mb']:>8.1f} {r['threads']:>7} "
              f"{r['main_mean_cycle_us']:>8.0f} {r['bf_mean_cycle_us']:>8.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
