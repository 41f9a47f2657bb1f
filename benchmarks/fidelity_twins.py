"""The fidelity table of docs/emulation-method.md: emulated runs against both twins.

For every run directory (made by `harness run`), the emulated mean wait against the ideal
twin and the tick-aware twin (Slurm's one-second pass, the launch delay measured in the run,
and for Slurm's own scheduler its whole-minute time limits), recomputed from the run's own
files with the code `--compare-sim` uses; two ablations show what each part explains: the
minute limits toggled, and no launch delay.

    PYTHONPATH=. python3 benchmarks/fidelity_twins.py RUN_DIR... [--metric mean_wait]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.analysis.rundata import load_run
from harness.emulation.collect.fidelity import (
    LaunchDelay,
    compare_with_both_twins,
    recorded_launch_delays,
    simulator_twin,
)
from harness.emulation.collect.results import finished
from harness.emulation.run.experiment import resume_options
from harness.model import rundir
from harness.model.timescale import TimeScale
from harness.platform import load_platform
from harness.slurm.native import is_native
from harness.workload.plan import load_plan


def row(run_dir: Path, metric: str) -> list[str]:
    opts = resume_options(run_dir)
    spec, platform = opts.workload, load_platform(opts.cluster.platform)
    plan = load_plan(run_dir / rundir.PLAN)[0]
    results = load_run(run_dir).results
    assert results is not None, f"{run_dir}: no results"
    ran = finished(results)
    collected = rundir.done_steps(run_dir)["collect"]["info"]
    delay, _ = recorded_launch_delays(collected)
    twin, native = simulator_twin(opts.replay.policy), is_native(opts.replay.policy)
    cells = [opts.replay.policy, f"{delay.seconds:.2f} s"]
    ablations = [(delay, native), (delay, not native), (LaunchDelay(0.0, 0), native)]
    for i, (d, minutes) in enumerate(ablations):
        found, _ = compare_with_both_twins(
            plan, ran, twin, platform, TimeScale(spec.shrink), d, spec.seed, spec.model, minutes,
            policy_seed=opts.replay.policy_seed, slurm_t0=float(collected.get("t0", 0.0)),
        )  # fmt: skip
        if i == 0:
            ideal = found["metrics"][metric]
            cells += [f"{ideal['emulated']:,.0f}", f"{ideal['simulated']:,.0f} ({ideal['rel_diff']:+.1%})"]
        m = found["tick_aware"]["metrics"][metric]
        cells.append(f"{m['simulated']:,.0f} ({m['rel_diff']:+.1%})")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--metric", default="mean_wait")
    args = parser.parse_args()
    headers = ["policy", "launch delay", f"emulated {args.metric}", "ideal twin", "tick-aware twin",
               "minute limits toggled", "no launch delay"]  # fmt: skip
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for run_dir in args.runs:
        print("| " + " | ".join(row(run_dir, args.metric)) + " |")


if __name__ == "__main__":
    main()
