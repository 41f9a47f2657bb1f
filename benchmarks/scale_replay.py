"""A 500-job window of a 1,002-node trace replayed at shrink 0.99 on the 1,134-node platform
(benchmarks/platforms/scale-1134.toml), all in Docker on this host: every job accounted for?

Prints the up time, the replay's wall time, the submission lag, the sigsleep/Slurm cross-check
and the run's metrics; the run directory is kept under benchmarks/out/. The cluster ('bbscale')
is removed at the end.

    python benchmarks/scale_replay.py [--jobs 500] [--platform FILE|cts1] [--trace FILE|PLAN]
        [--shrink 0.99] [--monitor 30]

``--monitor S`` samples, every S seconds of the replay, the PSS of all slurmd, the threads of
the cluster and slurmctld's RSS, and prints their first and last values and their range: the
memory and threads of a long replay should stay flat.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.platform import load_platform

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cluster_up import cluster_pids, memory_kb, threads  # noqa: E402

PLATFORM = HERE / "platforms" / "scale-1134.toml"
TRACE = HERE.parent / "tests" / "data" / "scale-1002.swf"  # python benchmarks/scale_trace.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--shrink", type=float, default=0.99)
    parser.add_argument("--platform", type=Path, default=PLATFORM)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--name", default="bbscale")
    parser.add_argument("--policy", default="slurm-backfill-1")
    parser.add_argument("--monitor", type=float, default=0.0, help="seconds between samples (0: none)")
    args = parser.parse_args()

    platform = load_platform(str(args.platform))
    backend = DockerCluster(name=args.name, platform=platform)
    backend.down()
    try:
        up = backend.up(progress=print)
        print(f"{platform.node_count} nodes idle in {up.seconds_to_idle:.1f} s")
        start = time.monotonic()
        samples: list[tuple[float, float, int, float]] = []
        stop = threading.Event()
        if args.monitor > 0:
            watcher = threading.Thread(
                target=monitor, args=(backend, args.monitor, samples, stop), daemon=True
            )
            watcher.start()
        run_dir = replay(args.name, args.platform, args.trace, args.jobs, args.shrink, args.policy)
        wall = time.monotonic() - start
        stop.set()
    finally:
        backend.down()
    report(run_dir, wall, args.jobs)
    if samples:
        print_samples(samples)


def replay(
    name: str, platform: Path, trace: Path, jobs: int, shrink: float, policy: str = "slurm-backfill-1",
    runs_dir: Path = HERE / "out" / "scale", progress: Callable[[str], None] = print,
) -> Path:  # fmt: skip
    """Replay the first ``jobs`` of ``trace`` at ``shrink`` on the cluster ``name`` (up, on
    ``platform``); the run directory (its metrics.json has the submission lag: ``submission``)."""
    opts = RunOptions(WorkloadSpec(trace=trace, shrink=shrink, first_n=jobs),
                      ClusterSpec(name=name, platform=str(platform)),
                      ReplaySpec(policy=policy, timeout=600), runs_dir=runs_dir, quiet=True)  # fmt: skip
    return Experiment(opts, progress=progress).execute()


def monitor(backend: DockerCluster, every: float, samples: list, stop: threading.Event) -> None:
    """(seconds, slurmd PSS MB, threads, slurmctld RSS MB) every ``every`` seconds until ``stop``."""
    began = time.monotonic()
    while not stop.wait(every):
        try:
            pids = cluster_pids(backend)
            slurmd = [memory_kb(p)[1] for p, comm in pids.items() if comm == "slurmd"]
            ctld = [memory_kb(p)[0] for p, comm in pids.items() if comm == "slurmctld"]
            count = sum(threads(p) for p in pids if Path(f"/proc/{p}").exists())
        except (OSError, ValueError):  # a process ended while it was read
            continue
        samples.append((time.monotonic() - began, sum(slurmd) / 1024, count, sum(ctld) / 1024))


def print_samples(samples: list[tuple[float, float, int, float]]) -> None:
    for name, i, unit in (("slurmd PSS", 1, "MB"), ("threads", 2, ""), ("slurmctld RSS", 3, "MB")):
        values = [s[i] for s in samples]
        print(f"{name}: first {values[0]:,.1f}{unit}, last {values[-1]:,.1f}{unit}, "
              f"range {min(values):,.1f}-{max(values):,.1f}{unit} over {len(values)} samples "
              f"({samples[-1][0]:.0f} s)")  # fmt: skip


def report(run_dir: Path, wall: float, jobs: int) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    results = pd.read_parquet(run_dir / "results.parquet")
    print(f"run directory: {run_dir}")
    print(f"replay + collection wall time: {wall:.0f} s; complete: {manifest['complete']}")
    print(
        f"jobs in results: {len(results)} of {jobs}; statuses: {results['status'].value_counts().to_dict()}"
    )
    print(f"widest job: {results['nodes'].max()} nodes")
    print(f"submission: {json.dumps(metrics['submission'])}")
    check = metrics["cross_check"]
    print(f"cross-check sigsleep vs Slurm: compared {check['compared']}, ok {check['ok']}")
    keys = [k for k in metrics if isinstance(metrics[k], int | float)]
    print("metrics: " + ", ".join(f"{k} {metrics[k]:.4g}" for k in keys))


if __name__ == "__main__":
    main()
