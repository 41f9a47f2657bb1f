"""The fidelity table of docs/emulation-method.md: emulated runs against both twins.

For every run directory (made by `harness run --compare-sim`), the emulated mean wait
against the ideal twin and the tick-aware twin (Slurm's one-second pass, the launch delay
measured in the run), recomputed from the run's own files with the code `--compare-sim`
uses; ``--delays`` adds columns for the tick-aware twin with other launch delays (emulated
seconds), to show how much of the gap a delay would explain.

    python benchmarks/fidelity_twins.py RUN_DIR... [--delays 0,0.5,1] [--metric mean_wait]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from harness.emulation.collect import finished
from harness.emulation.fidelity import (
    SLURM_PASS_S,
    compare_with_both_twins,
    compare_with_simulation,
    measured_launch_delay,
    simulator_twin,
)
from harness.emulation.run import resume_options
from harness.model import rundir
from harness.model.jsonio import read_json, read_jsonl
from harness.platform import load_platform


def row(run_dir: Path, delays: list[float], metric: str) -> list[str]:
    opts = resume_options(run_dir)
    spec, platform = opts.workload, load_platform(opts.cluster.platform)
    plan = pd.read_parquet(run_dir / rundir.PLAN)
    ran = finished(pd.read_parquet(run_dir / rundir.RESULTS))
    t0 = float(read_json(run_dir / rundir.MANIFEST)["t0"])
    decisions_file = run_dir / rundir.RAW_DIR / rundir.DECISIONS
    decisions = read_jsonl(decisions_file) if decisions_file.exists() else []
    twin = simulator_twin(opts.replay.policy)
    delay = measured_launch_delay(ran, decisions, t0)
    found, _ = compare_with_both_twins(plan, ran, twin, platform, spec.shrink, delay, spec.seed, spec.model)
    ideal, ticked = found["metrics"][metric], found["tick_aware"]["metrics"][metric]
    cells = [
        opts.replay.policy,
        f"{ideal['emulated']:,.0f}",
        f"{ideal['simulated']:,.0f} ({ideal['rel_diff']:+.1%})",
        f"{delay.seconds:.2f} s ({delay.jobs} jobs)",
        f"{ticked['simulated']:,.0f} ({ticked['rel_diff']:+.1%})",
    ]
    for d in delays:
        other, _ = compare_with_simulation(
            plan, ran, twin, platform, spec.shrink, spec.seed, spec.model, tick=SLURM_PASS_S, launch_delay=d
        )
        m = other["metrics"][metric]
        cells.append(f"{m['simulated']:,.0f} ({m['rel_diff']:+.1%})")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--delays", default="", help="extra launch delays (emulated s), comma-separated")
    parser.add_argument("--metric", default="mean_wait")
    args = parser.parse_args()
    delays = [float(d) for d in args.delays.split(",") if d]
    headers = ["policy", f"emulated {args.metric}", "ideal twin", "measured delay", "tick-aware twin"]
    headers += [f"tick 1, D {d:g} s" for d in delays]
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for run_dir in args.runs:
        print("| " + " | ".join(row(run_dir, delays, args.metric)) + " |")


if __name__ == "__main__":
    main()
