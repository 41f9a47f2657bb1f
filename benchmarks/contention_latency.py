"""Latency of the contention service: from a transfer's registration to its published rate.

    python benchmarks/contention_latency.py [--background 200] [--samples 50] [--tick 0.02]

Starts ``python -m harness.emulation.iolive.contention`` on a temporary directory with
``--background`` flows already registered (one-node checkpoints spread over the
platform), then ``--samples`` times registers one more flow the way sigsleep does
(a temporary file renamed into ``flows/``) and measures how long until its line
appears in ``rates``, then removes it and measures until its line is gone. Also
reports what one look at ``rates`` costs a reader (read + scan, as sigsleep does).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _register(flows: Path, job: int, node: int) -> Path:
    path = flows / f"{job}.1.flow"
    tmp = flows / f"{job}.1.flow.tmp"
    tmp.write_text(
        f"job={job} slurm_job=- phase=1 channel=checkpoint mb=1000 time_scale=1 pid=1 nodes=c{node:03d}\n"
    )
    os.replace(tmp, path)
    return path


def _until(rates: Path, key: str, present: bool, timeout: float = 10.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            text = rates.read_text()
        except FileNotFoundError:
            text = ""
        if (f"\n{key} " in "\n" + text) == present:
            return time.perf_counter() - start
        time.sleep(0.0005)
    raise TimeoutError(key)


def _pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--background", type=int, default=200)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--tick", type=float, default=0.02)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        io = Path(tmp)
        flows = io / "flows"
        flows.mkdir()
        for j in range(args.background):
            _register(flows, 100_000 + j, j % 96 + 1)
        service = subprocess.Popen([sys.executable, "-m", "harness.emulation.iolive.contention", "--dir", tmp,
                                    "--tick", str(args.tick)])  # fmt: skip
        try:
            rates = io / "rates"
            _until(rates, "100000.1", True, timeout=60)
            up, down = [], []
            for s in range(args.samples):
                path = _register(flows, s, s % 96 + 1)
                up.append(_until(rates, f"{s}.1", True))
                path.unlink()
                down.append(_until(rates, f"{s}.1", False))
            t0 = time.perf_counter()
            for _ in range(1000):
                text = rates.read_text()
                "\n5.1 " in text  # noqa: B015 (the scan)
            read_us = (time.perf_counter() - t0) / 1000 * 1e6
        finally:
            service.terminate()
            service.wait(10)
    print(f"background flows {args.background}, tick {args.tick} s, {args.samples} samples, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name, xs in (("registered -> published", up), ("removed -> gone", down)):
        print(f"{name}: median {statistics.median(xs) * 1e3:.1f} ms, p90 {_pct(xs, 0.9) * 1e3:.1f} ms, "
              f"max {max(xs) * 1e3:.1f} ms")  # fmt: skip
    print(
        f"one look at rates ({len(text.splitlines())} lines): {read_us:.1f} us"
        " (Python; sigsleep reads it in C)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
