#!/usr/bin/env python3
"""Live I/O on the event clock (issue 32, item 6), on a small plan: each job's staging, start
and end beside the IO-Aware twin's. (Written as a probe while `harness run` refused io-aware on
the event clock; the refusal is gone since 2026-11-29.)

The plan is tests/integration/test_iolive_vclock.py's (8 burst-buffer jobs, 2-4 nodes, one every
40 s, stage-ins of 1.6-9.6 s alone), on a 16 + 2-node cluster `bbioev` (controller port 6966,
slurmd ports 29601-29618: do not run beside that test). It prints the run's line and, job by
job, the emulated staging and start beside the IO-Aware twin's (docs/virtual-time.md, "Live I/O
on the event clock: the probe").

usage: PYTHONPATH=. python3 benchmarks/vclock/io_events_probe.py OUTPUT_DIR [POLICY]
(POLICY: slurm-backfill-1 by default; an agent's policy such as backfill-1 runs the ordering agent)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from harness.cluster.containers.backend import DockerCluster
from harness.emulation.run.experiment import Experiment
from harness.emulation.run.specs import ClusterSpec, ReplaySpec, RunOptions, WorkloadSpec
from harness.model import rundir
from harness.model.io_models import IO_AWARE
from harness.platform import load_platform
from harness.workload.plan import save_plan
from tests.integration.test_iolive_vclock import bb_plan
from tests.platforms import platform_toml

NAME = "bbioev"
COLUMNS = ["job_id", "submit", "stage_in_begin", "stage_in_s", "start", "end", "stage_out_s"]


def main(out: Path, policy: str = "slurm-backfill-1") -> int:
    out.mkdir(parents=True, exist_ok=True)
    platform = out / "ioev.toml"
    platform.write_text(platform_toml(name="ioev", controller_port=6966, slurmd_base_port=29601,
                                      chassis_per_group=2, node_containers=1))  # fmt: skip
    plan = out / "plan.parquet"
    save_plan(bb_plan(), {"format": "harness-plan", "version": 1, "shrink": 0.0, "seed": 0}, plan)
    opts = RunOptions(WorkloadSpec(trace=plan, shrink=0.0, model=IO_AWARE),
                      ClusterSpec(name=NAME, platform=str(platform)),
                      ReplaySpec(policy=policy, events=True, compare_sim=True),
                      runs_dir=out / "runs", quiet=True)  # fmt: skip
    began = time.monotonic()
    try:
        run = Experiment(opts, progress=print).execute()
    finally:
        DockerCluster(NAME, load_platform(str(platform))).down()
    print(f"wall {time.monotonic() - began:.0f} s, run {run}")
    emulated = pd.read_parquet(run / rundir.RESULTS)[COLUMNS].set_index("job_id")
    twin = pd.read_parquet(run / "simulation" / rundir.RESULTS).set_index("job_id")
    twin["stage_in_begin"] = twin["start"] - twin["stage_in_s"]
    print(emulated.join(twin[COLUMNS[2:]].add_suffix("_twin")).round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/io-events-probe"), *sys.argv[2:3]))
