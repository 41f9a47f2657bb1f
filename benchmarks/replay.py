"""Replay throughput and latency on the local Docker cluster.

Prints the sustained submission rate of a burst (target >= 50 jobs/s), the submission lag
p50/p99 at a rate that does not saturate the submitter (target p99 <= 20 ms), and Slurm's
submit-to-running latency (from the jobs' own sigsleep start minus the actual submission).

    python benchmarks/replay.py [--burst 300] [--paced 300] [--rate 20]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model.jsonio import read_jsonl
from harness.model.rundir import SUBMISSIONS
from harness.workload.plan import save_plan

CLUSTER = "bbbench"


def synthetic_plan(submits: np.ndarray, runtime: float) -> pd.DataFrame:
    n = len(submits)
    return pd.DataFrame({
        "job_id": np.arange(1, n + 1), "submit": submits, "runtime": np.full(n, runtime),
        "walltime": np.full(n, runtime * 4), "nodes": np.ones(n, dtype=int),
        "bb_per_node_mb": np.full(n, 100),
    })  # fmt: skip


def run_plan(plan: pd.DataFrame, workdir: Path, label: str) -> Path:
    path = workdir / f"{label}.parquet"
    save_plan(plan, {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, path)
    workload = WorkloadSpec(trace=path, shrink=0.0)
    opts = RunOptions(workload, ClusterSpec(name=CLUSTER), ReplaySpec(policy="slurm-backfill-1"),
                      runs_dir=workdir, quiet=True, label=label)  # fmt: skip
    return Experiment(opts, progress=lambda _: None).execute()


def percentile_ms(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--paced", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20.0)
    args = parser.parse_args()
    try:
        measure(args)
    finally:
        DockerCluster(name=CLUSTER).down()


def measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        burst_dir = run_plan(synthetic_plan(np.zeros(args.burst), 0.2), workdir, "burst")
        subs = read_jsonl(burst_dir / "raw" / SUBMISSIONS)
        span = max(s["returned"] for s in subs) - min(s["actual"] for s in subs)
        print(
            f"burst of {len(subs)} jobs at one instant: {len(subs) / span:.0f} jobs/s sustained "
            f"(target >= 50)"
        )
        paced_dir = run_plan(synthetic_plan(np.arange(args.paced) / args.rate, 0.2), workdir, "paced")
        subs = read_jsonl(paced_dir / "raw" / SUBMISSIONS)
        lags = np.array([s["lag"] for s in subs])
        print(
            f"paced at {args.rate:g} jobs/s: lag p50 {percentile_ms(lags, 50):.1f} ms, "
            f"p99 {percentile_ms(lags, 99):.1f} ms, max {lags.max() * 1000:.1f} ms (target p99 <= 20 ms)"
        )
        results = pd.read_parquet(paced_dir / "results.parquet")
        latency = (results["start"] - results["submit"]).to_numpy()
        print(
            f"submit-to-running (Slurm + launch): p50 {percentile_ms(latency, 50):.0f} ms, "
            f"p90 {percentile_ms(latency, 90):.0f} ms, max {latency.max() * 1000:.0f} ms"
        )
        check = json.loads((paced_dir / "metrics.json").read_text())["cross_check"]
        diff = check["max_start_diff_s"]
        print(f"cross-check sigsleep vs Slurm: ok={check['ok']}, max start diff {diff:.2f} s")


if __name__ == "__main__":
    main()
