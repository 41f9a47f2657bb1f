"""Throughput of the experiment runner on tiny simulation cells, and the Slurm executor's overhead.

Local: cells per second with ``-j 1`` and ``-j 2`` (and their ratio) for cells that each
simulate the first few jobs of the bundled KTH slice. Slurm (``--slurm``): the same cells
submitted as a job array to a containerised cluster of 8 compute nodes, the runner on its
head node, against the local executor on that same head node; the per-cell overhead is the
difference of the sequential (``-j 1``) wall times divided by the cells.

    python benchmarks/experiment.py [--cells 40] [--first-n 30] [--slurm]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from harness.experiments.executors import LocalExecutor
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.platform import Platform, load_platform
from harness.platform.writing import save_platform

CLUSTER = "experbench"  # controller 6971, slurmd 25101-25109


def tiny_spec(cells: int, first_n: int) -> str:
    seeds = ", ".join(str(s) for s in range(cells))
    return (f'[experiment]\nname = "tiny"\n[workload]\ntrace = "bundled"\nfirst_n = {first_n}\n'
            f'bb_seed = [{seeds}]\n[policies]\nnames = ["backfill-1"]\n')  # fmt: skip


def local_rate(spec_path: Path, workdir: Path, jobs: int) -> float:
    out = workdir / f"local-j{jobs}"
    summary = run_experiment(load_spec(spec_path), out, lambda d: LocalExecutor(d, jobs), say=lambda _: None)
    assert summary.finished == summary.cells, summary
    return summary.cells / summary.seconds


def bench_local(cells: int, first_n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="exper-bench-") as tmp:
        workdir = Path(tmp)
        spec = workdir / "tiny.toml"
        spec.write_text(tiny_spec(2, first_n))
        local_rate(spec, workdir / "warm-up", 2)  # the fork server's imports, paid once per runner
        spec.write_text(tiny_spec(cells, first_n))
        rates = {jobs: local_rate(spec, workdir, jobs) for jobs in (1, 2)}
    print(f"local, {cells} cells of {first_n} jobs: -j 1 {rates[1]:.2f} cells/s, "
          f"-j 2 {rates[2]:.2f} cells/s, ratio {rates[2] / rates[1]:.2f}")  # fmt: skip


def bench_platform(folder: Path) -> Platform:
    """The bundled machine cut to one chassis (8 compute + 1 BB node) on ports of its own."""
    one_chassis = replace(load_platform(), name="kth-one-chassis", groups=1, chassis_per_group=1)
    moved = one_chassis.redeployed(controller_port=6971, slurmd_base_port=25101, node_containers=1)
    return save_platform(moved, folder / "platform-bench.toml")


def bench_slurm(cells: int, first_n: int, cluster: str) -> None:
    from harness.cluster.docker import DockerCluster

    with tempfile.TemporaryDirectory(prefix="exper-bench-") as tmp:
        backend = DockerCluster(name=cluster, platform=bench_platform(Path(tmp)))
        backend.down()
        backend.up(progress=lambda _: None)
        try:
            walls = _slurm_walls(backend, cells, first_n)
        finally:
            backend.down()
    overhead = (walls["slurm-j1"] - walls["local-j1"]) / cells
    print(f"head node, {cells} cells: local -j 1 {walls['local-j1']:.1f} s, "
          f"slurm -j 1 {walls['slurm-j1']:.1f} s, slurm -j 8 {walls['slurm-j8']:.1f} s; "
          f"Slurm overhead {overhead:.2f} s per cell")  # fmt: skip


def _slurm_walls(backend, cells: int, first_n: int) -> dict[str, float]:
    shared = backend.state.shared / "bench"
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "tiny.toml").write_text(tiny_spec(cells, first_n))
    _head_run(backend, ["--executor", "local", "-j", "1"], "warm")  # compile caches, page cache
    return {name: _head_run(backend, args, name) for name, args in (
        ("local-j1", ["--executor", "local", "-j", "1"]),
        ("slurm-j1", ["--executor", "slurm", "-j", "1"]),
        ("slurm-j8", ["--executor", "slurm", "-j", "8"]),
    )}  # fmt: skip


def _head_run(backend, args: list[str], name: str) -> float:
    argv = ["harness", "experiment", "run", "/shared/bench/tiny.toml", "-o", f"/shared/bench/{name}",
            "--no-report", *args]  # fmt: skip
    began = time.monotonic()
    res = backend.exec(argv, timeout=1800)
    wall = time.monotonic() - began
    if not res.ok:
        raise SystemExit(f"{' '.join(argv)} failed:\n{res.stderr[-2000:]}")
    found = re.search(r"(\d+) cells finished, (\d+) failed, in ([\d.]+) s", res.stderr)
    assert found and found[2] == "0", res.stderr[-500:]
    return float(found[3]) if found else wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--first-n", type=int, default=30, help="jobs per cell")
    parser.add_argument("--slurm", action="store_true", help="also measure the Slurm executor (Docker)")
    parser.add_argument("--name", default=CLUSTER, help="name of the benchmark's cluster")
    args = parser.parse_args()
    bench_local(args.cells, args.first_n)
    if args.slurm:
        bench_slurm(args.cells, args.first_n, args.name)


if __name__ == "__main__":
    main()
