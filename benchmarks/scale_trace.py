"""Writes tests/data/scale-1002.swf: a synthetic SWF trace of a 1,002-node machine (one
processor per node) for the scale replay (benchmarks/scale_replay.py, 500 jobs) and the
scale integration test (its first 100 jobs on 504 compute nodes).

Arrivals are dense (a job every 45 s on average, exponential gaps) so that 500 jobs span
6.1 hours of trace time: 3.7 minutes of submissions at shrink 0.99. Sizes: 60 % of
jobs take 1-8 nodes, 30 % 9-64, 10 % 65-256 (a power of two more often than not). Runtimes:
log-uniform from 1 to 40 minutes (0.6-24 s at shrink 0.99); requested time is the runtime
times 1-3, rounded up to a minute. The machine is 45 % busy on average (1,008 nodes); the
first 100 jobs keep 504 nodes 92 % busy. Deterministic (seed 14).

    python benchmarks/scale_trace.py
"""

from __future__ import annotations

import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "scale-1002.swf"
JOBS = 500
MACHINE_NODES = 1002
MEAN_GAP_S = 45.0
SEED = 14


def size(rng: random.Random) -> int:
    band = rng.random()
    low, high = (1, 8) if band < 0.6 else (9, 64) if band < 0.9 else (65, 256)
    if rng.random() < 0.6:
        powers = [2**k for k in range(9) if low <= 2**k <= high]
        if powers:
            return rng.choice(powers)
    return rng.randint(low, high)


def records(rng: random.Random) -> list[str]:
    lines, submit = [], 0.0
    for job in range(1, JOBS + 1):
        submit += rng.expovariate(1 / MEAN_GAP_S)
        runtime = round(math.exp(rng.uniform(math.log(60), math.log(2400))))
        requested = math.ceil(runtime * rng.uniform(1.0, 3.0) / 60) * 60
        nodes = size(rng)
        user = rng.randint(1, 40)
        fields = [job, round(submit), -1, runtime, nodes, -1, -1, nodes, requested, -1, 1, user, user,
                  -1, 1, 1, -1, -1]  # fmt: skip
        lines.append(" ".join(str(f) for f in fields))
    return lines


def main() -> None:
    header = [
        "; Version: 2.2",
        "; Computer: synthetic 1,002-node cluster (harness scale benchmark)",
        "; Installation: benchmarks/scale_trace.py, seed 14",
        f"; MaxJobs: {JOBS}",
        f"; MaxRecords: {JOBS}",
        f"; MaxNodes: {MACHINE_NODES}",
        f"; MaxProcs: {MACHINE_NODES}",
        "; UnixStartTime: 1700000000",
        "; Note: one processor per node; dense arrivals so that 500 jobs replay in minutes",
    ]
    OUT.write_text("\n".join(header + records(random.Random(SEED))) + "\n")
    print(f"{OUT}: {JOBS} jobs")


if __name__ == "__main__":
    main()
