"""What an emulated node costs, against the cluster's size: the curve of docs/cluster.md.

For each size N (compute nodes; one burst-buffer node per chassis of 8, as the study's
machine) and each way the slurmd read their configuration (``shared``: the whole slurm.conf;
``own-node``: a slurm.conf of their own node, ``deployment.slurmd_conf``), bring the cluster
up on this host and measure: seconds to all nodes idle, the PSS and RSS of all slurmd and per
slurmd, slurmctld's RSS, threads, the idle CPU, and slurmctld's cost of one scheduling pass
(``sdiag``'s mean main and backfill cycle) with a queue of jobs that cannot all start. With
``--submit-jobs N``, the submission throughput: N one-node sigsleep jobs sent by one sbatch
after the other, as fast as sbatch returns (jobs/s, timed inside the controller container).
With ``--replay-jobs N``, the replay's submission lag (p50, p99: what ``harness run``
reports in metrics.json's ``submission``) over the first N jobs of ``--replay-trace``
replayed at ``--replay-shrink`` (benchmarks/scale_replay.py's ``replay``).

    PYTHONPATH=. python3 benchmarks/scale_curve.py --sizes 96,480,1008 --modes shared,own-node
        [--containers-per 1100] [--queue 200] [--submit-jobs 500] [--replay-jobs 200] [--json out.json]
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
from scale_replay import replay

from harness.cluster.containers.backend import SUBMIT_USER, DockerCluster
from harness.cluster.containers.waves import WAVE_SLURMD
from harness.emulation.head.replay import DEFAULT_SIGSLEEP
from harness.model.polling import poll_until
from harness.platform import Platform
from harness.platform.writing import save_platform
from harness.workload.platforms import sized_platform

CONTROLLER_PORT = 7301
SLURMD_BASE_PORT = 10001
HERE = Path(__file__).resolve().parent
# The replay's jobs: KTH's first 200 are 1-45 nodes wide (every size of the curve runs them
# all, so the lags compare) and span 26,064 s, 130 s of replay at shrink 0.995.
REPLAY_TRACE = HERE.parent / "harness" / "data" / "kth-slice.swf"


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


def submit_script(jobs: int) -> str:
    """Bash that sends ``jobs`` one-node sigsleep jobs, one sbatch after the other, and prints
    ``<accepted> <milliseconds>`` timed around the loop (no Docker exec time counted)."""
    sigsleep = f"{DEFAULT_SIGSLEEP} --runtime 300 --walltime 300 --job-id $i --log /tmp/throughput.jsonl"
    return (
        "ok=0; t0=$(date +%s%N); "
        f"for i in $(seq {jobs}); do "
        "sbatch --parsable -N 1 --time=10 --chdir=/tmp --output=/dev/null --no-requeue "
        f'--job-name=tput --wrap="exec {sigsleep}" >/dev/null 2>&1 && ok=$((ok+1)); done; '
        't1=$(date +%s%N); echo "$ok $(( (t1 - t0) / 1000000 ))"'
    )


def jobs_per_second(output: str) -> tuple[int, float, float]:
    """``<accepted> <milliseconds>`` (submit_script's last line) -> (accepted, seconds, jobs/s)."""
    accepted, millis = output.split()[-2:]
    seconds = int(millis) / 1000
    return int(accepted), seconds, int(accepted) / seconds


def load_average() -> str:
    """The host's load average over 1, 5 and 15 minutes (/proc/loadavg), as measured beside."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def queue_empty(cluster: DockerCluster) -> bool:
    return not cluster.exec(["squeue", "--noheader"], timeout=60).stdout.strip()


def submission_throughput(cluster: DockerCluster, jobs: int) -> dict[str, float]:
    """Jobs/s of ``jobs`` submissions in a row into an empty queue (sdiag's jobs gone first);
    the jobs are cancelled and gone on return."""
    poll_until(lambda: queue_empty(cluster), 120, 1.0)
    out = cluster.exec(["su", SUBMIT_USER, "-s", "/bin/bash", "-c", submit_script(jobs)], timeout=1800)
    accepted, seconds, rate = jobs_per_second(out.stdout)
    cluster.exec(["scancel", "--user", SUBMIT_USER], timeout=60)
    if not poll_until(lambda: queue_empty(cluster), 120, 1.0):
        raise RuntimeError("the throughput jobs were still queued 120 s after scancel")
    return {"submit_jobs": jobs, "submit_accepted": accepted, "submit_s": seconds, "submit_jobs_per_s": rate}


def replay_lag(cluster: DockerCluster, args: argparse.Namespace) -> dict[str, float]:
    """The submission lag of a replay on this cluster (scale_replay.replay; metrics.json)."""
    out = HERE / "out" / "curve"
    out.mkdir(parents=True, exist_ok=True)
    platform_file = save_platform(cluster.platform, out / f"{cluster.platform.name}.toml")
    run_dir = replay(cluster.name, Path(platform_file.source), args.replay_trace, args.replay_jobs,
                     args.replay_shrink, runs_dir=out)  # fmt: skip
    lag = json.loads((run_dir / "metrics.json").read_text())["submission"]
    return {
        "replay_jobs": args.replay_jobs,
        "replay_submitted": lag["submitted"],
        "lag_p50_s": lag["lag_p50_s"],
        "lag_p99_s": lag["lag_p99_s"],
        "lag_max_s": lag["lag_max_s"],
        "replay_run": str(run_dir),
    }


def point(compute: int, mode: str, args: argparse.Namespace) -> dict[str, object]:
    platform = platform_of(compute, mode, args.containers_per)
    cluster = DockerCluster(name="bbcurve", platform=platform, wave_slurmd=args.wave_slurmd)
    cluster.down()
    cluster.ensure_image(print)
    try:
        began = time.monotonic()
        result = cluster.up(progress=print)
        print(f"{mode} {platform.node_count} nodes: idle after {result.seconds_to_idle:.1f} s", flush=True)
        figures: dict[str, object] = {
            "mode": mode,
            "compute": compute,
            "wave_slurmd": args.wave_slurmd,
            "containers": len(platform.node_groups()),
            **report(cluster, [result.seconds_to_idle], 10.0),
        }
        figures["slurmd_pss_kb_each"] = (
            1024 * float(figures["slurmd_pss_mb"]) / max(1, int(figures["slurmd"]))
        )
        figures["load_up"] = load_average()
        figures.update(scheduling_cost(cluster, args.queue))
        if args.submit_jobs:
            figures.update(submission_throughput(cluster, args.submit_jobs))
            figures["load_submit"] = load_average()
        if args.replay_jobs:
            figures.update(replay_lag(cluster, args))
            figures["load_replay"] = load_average()
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


def optional(row: dict, key: str, spec: str) -> str:
    """``row[key]`` formatted, or ``-`` for a figure not measured in that run."""
    return format(row[key], spec) if key in row else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="96,480,1008", help="compute node counts, comma-separated")
    parser.add_argument("--modes", default="shared,own-node")
    parser.add_argument("--containers-per", type=int, default=1100, help="slurmd per node container")
    parser.add_argument("--queue", type=int, default=200, help="one-node jobs queued for sdiag")
    parser.add_argument("--wave-slurmd", type=int, default=WAVE_SLURMD,
                        help="slurmd started together (harness/cluster/containers/waves.py)")  # fmt: skip
    parser.add_argument("--submit-jobs", type=int, default=0, help="jobs sent for the throughput (0: none)")
    parser.add_argument("--replay-jobs", type=int, default=0, help="jobs replayed for the lag (0: none)")
    parser.add_argument("--replay-trace", type=Path, default=REPLAY_TRACE)
    parser.add_argument("--replay-shrink", type=float, default=0.995)
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
          f"{'threads':>7} {'main us':>8} {'bf us':>8} {'jobs/s':>7} {'lag p99':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['mode']:<9} {r['nodes']:>6} {r['up_median_s']:>6.1f} {r['slurmd_pss_mb']:>8.0f} "
              f"{r['slurmd_pss_kb_each']:>9.0f} {r['slurmctld_rss_mb']:>8.1f} {r['threads']:>7} "
              f"{r['main_mean_cycle_us']:>8.0f} {r['bf_mean_cycle_us']:>8.0f} "
              f"{optional(r, 'submit_jobs_per_s', '.1f'):>7} "
              f"{optional(r, 'lag_p99_s', '.3f'):>8}")  # fmt: skip


if __name__ == "__main__":
    main()
