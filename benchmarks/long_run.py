"""Does anything grow without bound over a long run? Memory and disk against jobs processed.

Replays a synthetic trace of a few thousand short jobs at a high shrink as a detached run
(`harness run --detach`, the way a month-long run is started), samples every few seconds:
the resident memory of the host-side run process (and its children), of the replay and
agent on the head node and of slurmctld; the size of the run directory, of the run's shared
directory, of the daemon logs and of the run's own log; and the jobs finished. A straight
line is fitted to each against the jobs finished over the second half of the run: its slope
is what one more job costs. Writes the samples (JSON) and a figure (PNG).

    python benchmarks/long_run.py [--jobs 3000] [--every 1.5] [--shrink 0.9] [--out docs/figures]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import theilslopes

from harness.cluster.base import ClusterError
from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.state import RUNNING, run_state
from harness.model.jsonio import read_json
from harness.platform import Platform, load_platform
from harness.platform.writing import save_platform
from harness.workload.plan import save_plan

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "bblong-bench"


def synthetic_plan(jobs: int, every: float) -> pd.DataFrame:
    """One job every ``every`` s (original time), running 10-40 s on 1-4 nodes, 100-400 MB of BB."""
    i = np.arange(jobs)
    runtime = 10.0 + 10.0 * (i % 4)
    return pd.DataFrame(
        {
            "job_id": i + 1,
            "submit": every * i,
            "runtime": runtime,
            "walltime": runtime * 2 + 60,
            "nodes": 1 + i % 4,
            "bb_per_node_mb": 100 * (1 + i % 4),
        }
    )


def bench_platform(tmp: Path) -> Platform:
    """The bundled platform on the benchmark's own ports, written to a file for ``--platform``."""
    moved = load_platform().redeployed(controller_port=6996, slurmd_base_port=24701)
    return save_platform(moved, tmp / "platform-bench.toml")


def tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def head_rss_kb(backend: DockerCluster) -> tuple[int, int]:
    """(replay + agent, slurmctld) resident memory in the controller container."""
    try:
        res = backend.exec(["ps", "-eo", "rss=,args="], timeout=30)
    except ClusterError:  # recreated by the run (its image was older than the sources)
        return 0, 0
    replay = ctld = 0
    for line in res.stdout.splitlines():
        rss, _, args = line.strip().partition(" ")
        if "harness replay" in args or "harness agent" in args:
            replay += int(rss)
        elif "slurmctld" in args:
            ctld += int(rss)
    return replay, ctld


def du(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def sample(run_dir: Path, backend: DockerCluster, started: float) -> dict[str, float]:
    pid = int(read_json(run_dir / "process.json").get("pid", 0))
    replay, ctld = head_rss_kb(backend)
    return {
        "t": time.monotonic() - started,
        "finished": int(read_json(run_dir / "progress.json").get("finished", 0)),
        "host_rss_kb": tree_rss_kb(pid) if pid else 0,
        "replay_rss_kb": replay,
        "slurmctld_rss_kb": ctld,
        "run_dir_bytes": du(run_dir),
        "shared_bytes": du(backend.state.shared / "runs" / run_dir.name),
        "daemon_logs_bytes": du(backend.state.log),
        "run_log_bytes": sum(p.stat().st_size for p in run_dir.glob("run.log*")),
    }


SERIES = (
    "host_rss_kb",
    "replay_rss_kb",
    "slurmctld_rss_kb",
    "run_dir_bytes",
    "shared_bytes",
    "daemon_logs_bytes",
    "run_log_bytes",
)


def slopes(samples: list[dict[str, float]]) -> dict[str, float]:
    """Per series: bytes (or kB) per job finished, fitted over the second half of the replay
    (not the collection after it, when the replay is gone and the run directory fills)."""
    df = pd.DataFrame(samples)
    df = df[(df["finished"] >= df["finished"].max() / 2) & (df["replay_rss_kb"] > 0)]
    if df["finished"].nunique() < 2:
        return {}
    # Theil-Sen: robust to a sample that caught the replay mid-fork (an sbatch child, same RSS)
    return {name: float(theilslopes(df[name], df["finished"])[0]) for name in SERIES}


def plot(samples: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.DataFrame(samples)
    fig, (mem, disk) = plt.subplots(1, 2, figsize=(11, 4))
    for name in SERIES[:3]:
        mem.plot(df["finished"], df[name] / 1024, label=name.replace("_rss_kb", ""))
    mem.set(xlabel="jobs finished", ylabel="resident memory (MB)", title="memory")
    for name in SERIES[3:]:
        disk.plot(df["finished"], df[name] / 1e6, label=name.replace("_bytes", ""))
    disk.set(xlabel="jobs finished", ylabel="MB", title="disk")
    for axis in (mem, disk):
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--every", type=float, default=1.5, help="Seconds between submissions, original time.")
    ap.add_argument("--shrink", type=float, default=0.9)
    ap.add_argument("--sample", type=float, default=5.0, help="Seconds between samples.")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="long-run-"))
    plan_path = tmp / "synthetic.parquet"
    save_plan(
        synthetic_plan(args.jobs, args.every),
        {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0},
        plan_path,
    )
    platform = bench_platform(tmp)
    backend = DockerCluster(name=CLUSTER, platform=platform)
    try:
        backend.up(progress=print)
        command = [
            sys.executable,
            "-m",
            "harness",
            "run",
            str(plan_path),
            "--shrink",
            str(args.shrink),
            "--name",
            CLUSTER,
            "--platform",
            platform.source,
            "--runs-dir",
            str(tmp / "runs"),
            "--detach",
            "--yes",
            "--interim-every",
            "60s",
        ]
        res = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        run_dir = Path(res.stdout.strip().splitlines()[-1])
        started, samples = time.monotonic(), []
        while run_state(run_dir).state == RUNNING:
            samples.append(sample(run_dir, backend, started))
            print(json.dumps(samples[-1]), flush=True)
            time.sleep(args.sample)
        state = run_state(run_dir)
    finally:
        backend.down()
    args.out.mkdir(parents=True, exist_ok=True)
    result = {
        "jobs": args.jobs,
        "every_s": args.every,
        "shrink": args.shrink,
        "state": state.state,
        "wall_s": time.monotonic() - started,
        "per_job": slopes(samples),
        "samples": samples,
    }
    (args.out / "long_run.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(samples, args.out / "long_run.png")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()
