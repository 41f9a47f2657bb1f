"""Throughput of the experiment runner on tiny simulation cells, and the Slurm executor's overhead.

Local: cells per second with ``-j 1`` and ``-j 2`` (and their ratio) for cells that each
simulate the first few jobs of the bundled KTH slice. Slurm (``--slurm``): the same cells
submitted as a job array to a containerised cluster of 8 compute nodes, the runner on its
head node, against the local executor on that same head node, with ``-j 1`` and
``--slurm-jobs`` array tasks at once, for each ``--cells-per-task``; the per-cell overhead
is the difference of the wall times to the local ``-j 1`` divided by the cells.

    python benchmarks/experiment.py [--cells 40] [--first-n 30] [--slurm [--cells-per-task 1,8]
        [--slurm-jobs 1,8] [--name experbench] [--ports 6971,25101]]
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


def bench_platform(folder: Path, ports: tuple[int, int]) -> Platform:
    """The bundled machine cut to one chassis (8 compute + 1 BB node) on ports of its own."""
    one_chassis = replace(load_platform(), name="kth-one-chassis", groups=1, chassis_per_group=1)
    moved = one_chassis.redeployed(controller_port=ports[0], slurmd_base_port=ports[1], node_containers=1)
    return save_platform(moved, folder / "platform-bench.toml")


def bench_slurm(args: argparse.Namespace) -> None:
    from harness.cluster.containers.backend import DockerCluster

    with tempfile.TemporaryDirectory(prefix="exper-bench-") as tmp:
        backend = DockerCluster(name=args.name, platform=bench_platform(Path(tmp), args.ports))
        backend.down()
        backend.up(progress=lambda _: None)
        try:
            walls = _slurm_walls(backend, args)
        finally:
            backend.down()
    local = walls.pop("local -j 1")
    print(f"head node, {args.cells} cells of {args.first_n} jobs: local -j 1 {local:.1f} s")
    for name, wall in walls.items():
        print(f"  {name}: {wall:.1f} s, overhead {(wall - local) / args.cells:.2f} s per cell")


def _slurm_walls(backend, args: argparse.Namespace) -> dict[str, float]:
    shared = backend.state.shared / "bench"
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "tiny.toml").write_text(tiny_spec(args.cells, args.first_n))
    _head_run(backend, ["--executor", "local", "-j", "1"], "warm")  # compile caches, page cache
    runs = {"local -j 1": ["--executor", "local", "-j", "1"]}
    for per_task in args.cells_per_task:
        for jobs in args.slurm_jobs:
            runs[f"slurm -j {jobs} --cells-per-task {per_task}"] = [
                "--executor", "slurm", "-j", str(jobs), "--cells-per-task", str(per_task),
            ]  # fmt: skip
    return {name: _head_run(backend, argv, name.replace(" ", "")) for name, argv in runs.items()}


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
    parser.add_argument("--ports", type=ints, default=(6971, 25101), help="slurmctld port,first slurmd port")
    parser.add_argument("--cells-per-task", type=ints, default=(1, 8), help="values to measure, e.g. 1,8")
    parser.add_argument("--slurm-jobs", type=ints, default=(1, 8), help="array tasks at once, e.g. 1,8")
    parser.add_argument("--no-local", action="store_true", help="skip the local -j 1 vs -j 2 measure")
    args = parser.parse_args()
    if not args.no_local:
        bench_local(args.cells, args.first_n)
    if args.slurm:
        bench_slurm(args)


def ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


if __name__ == "__main__":
    main()
