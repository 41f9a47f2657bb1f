"""The tick-aware twin of a `slurm-backfill-D` run with and without Slurm's will-run windows
(docs/virtual-time.md, "A twin with Slurm's will-run windows").

For every run directory: the run's own plan (its BB requests), the twin as `--compare-sim`
builds it (Slurm's 1-s pass, the measured launch delay, whole-minute limits), once with EASY's
exact reservations and once with `slurm_will_run=true` aligned on the run's t0 (and, with the
burst buffer as one pool, both with `slurm_node_reservation=true`: nodes picked and reserved
as cons_tres does); each against
the emulated per-job starts: mean wait, mean BSLD, jobs starting at the same second, Kendall's
tau of the start times, the first job (in the emulated start order) whose start differs, and
the jobs the twin runs on the very nodes Slurm ran them on.
Both on the run's platform (12 BB nodes: a job's per-node shares must fit on them) and on the
same machine with its burst buffer as one BB node of the whole capacity, which is how Slurm
counts it (one license pool: then a share fits wherever the pool's MB suffice).

    PYTHONPATH=. python3 benchmarks/will_run_twin.py RUN_DIR...
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from harness.analysis.rundata import load_run
from harness.emulation.collect.fidelity import (
    compare_with_simulation,
    license_pool,
    recorded_launch_delays,
    simulator_twin,
    will_run_params,
    with_minute_limits,
)
from harness.emulation.collect.results import finished
from harness.emulation.run.experiment import resume_options
from harness.model import rundir
from harness.model.hostlist import expand_hostlist
from harness.model.timescale import TimeScale
from harness.platform import load_platform
from harness.workload.plan import load_plan


def first_divergence(emulated: pd.DataFrame, simulated: pd.DataFrame) -> str:
    """The first job, in the emulated start order, that the twin starts at another second."""
    both = emulated[["job_id", "start"]].merge(
        simulated[["job_id", "start"]], on="job_id", suffixes=("", "_sim")
    )
    both = both.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)
    differ = both.index[both["start"] != both["start_sim"]]
    if len(differ) == 0:
        return "none"
    at = both.loc[differ[0]]
    return f"#{differ[0] + 1} job {int(at.job_id)}: {at.start:,.0f} s emulated, {at.start_sim:,.0f} s twin"


def same_nodes(emulated: pd.DataFrame, simulated: pd.DataFrame) -> int:
    """How many jobs the twin runs on the very nodes Slurm ran them on (its compute nodes are
    named as Slurm's: the first of ``c001:bb01,...`` pairs)."""
    emu = {
        int(j): sorted(expand_hostlist(n))
        for j, n in zip(emulated["job_id"], emulated["nodelist"], strict=True)
    }
    same = 0
    for job, pairs in zip(simulated["job_id"], simulated["bb_nodes"], strict=True):
        same += emu.get(int(job)) == sorted(p.split(":")[0] for p in pairs.split(",") if p)
    return same


def rows(run_dir: Path) -> list[list[str]]:
    opts = resume_options(run_dir)
    spec, platform = opts.workload, load_platform(opts.cluster.platform)
    scale = TimeScale(spec.shrink)
    plan = with_minute_limits(load_plan(run_dir / rundir.PLAN)[0], scale)
    emulated = finished(load_run(run_dir).results)
    collected = rundir.done_steps(run_dir)["collect"]["info"]
    delay, _ = recorded_launch_delays(collected)
    twin = simulator_twin(opts.replay.policy)
    out = []
    t0 = float(collected["t0"])
    windows, nodes = (will_run_params(twin, scale, t0, node_reservation=n) for n in (False, True))
    cases = [(bb, params) for bb in ("BB nodes", "BB pool") for params in ({}, windows)]
    cases += [("BB pool", {"slurm_node_reservation": "true"}), ("BB pool", nodes)]
    for bb, params in cases:
        machine = platform if bb == "BB nodes" else license_pool(platform)
        found, sim = compare_with_simulation(
            plan, emulated, twin, machine, spec.seed, spec.model, tick=float(scale.to_trace(1.0)),
            launch_delay=float(scale.to_trace(delay.seconds)), staged_start="backfill", policy_params=params,
        )  # fmt: skip
        same = emulated.merge(sim, on="job_id", suffixes=("", "_sim"))
        wait, bsld = found["metrics"]["mean_wait"], found["metrics"]["mean_bsld"]
        out.append([
            f"{bb}, {_reservations(params)}",
            f"{wait['emulated']:,.1f}", f"{wait['simulated']:,.1f} ({wait['rel_diff']:+.1%})",
            f"{bsld['emulated']:.3f}", f"{bsld['simulated']:.3f} ({bsld['rel_diff']:+.1%})",
            f"{int((same['start'] == same['start_sim']).sum())} of {len(same)}",
            f"{found['start_order']['kendall_tau']:.4f}", first_divergence(emulated, sim),
            f"{same_nodes(emulated, sim)}",
        ])  # fmt: skip
    return out


def _reservations(params: dict[str, str]) -> str:
    """How the twin reserves under ``params``."""
    windows = "will-run windows" if params.get("slurm_will_run") == "true" else "exact (EASY)"
    return windows + (", concrete nodes" if params.get("slurm_node_reservation") == "true" else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    head = [
        "twin",
        "wait emu",
        "wait twin",
        "BSLD emu",
        "BSLD twin",
        "same second",
        "tau",
        "first divergence",
        "same nodes",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for run_dir in args.runs:
        for cells in rows(run_dir):
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
