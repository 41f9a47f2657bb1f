"""Issue 18's acceptance benchmark: a 200-job KTH slice under ``--model io-aware`` on the live
Slurm, against the IO-Aware simulator twin (docs/io-live.md, "The 200-job benchmark").

Two modes:

``run``: replay the slice once per policy and shrink (``harness run --model io-aware
--compare-sim``), each policy on its own cluster and ports so that they can run side by
side (``--parallel``), then analyse the run directories::

    PYTHONPATH=. python3 benchmarks/iolive_acceptance.py run --shrink 0.9 --parallel
    PYTHONPATH=. python3 benchmarks/iolive_acceptance.py run --speedup 100   # on the virtual clock

``analyse``: compare finished run directories with the twin of the *current* simulator
(the twin is recomputed from the run's plan, results and options, so a run need not be
repeated when the twin changes)::

    PYTHONPATH=. python3 benchmarks/iolive_acceptance.py analyse runs-0.9/* runs-0.99/*

For each run: whether every job and phase is accounted for (completed, staged in and out,
phase records, checkpoints logged as the plan has them), and mean wait, mean I/O time
(stage-in + checkpoints + stage-out) and mean dilation, emulated beside the ideal and the
tick-aware twin (gap within 10 %: the acceptance).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.rundata import load_run
from harness.emulation.collect.fidelity import (
    compare_with_both_twins,
    recorded_launch_delays,
    simulator_twin,
    staged_start_for,
)
from harness.emulation.collect.results import finished
from harness.emulation.run.experiment import resume_options, scheduler_for_run
from harness.model import rundir
from harness.model.timescale import TimeScale
from harness.platform import load_platform
from harness.platform.writing import save_platform
from harness.workload.plan import load_plan

POLICIES = ("slurm-backfill-1", "backfill-1", "cerberus")
# one cluster per policy: (name, controller port, first slurmd port); slurmd ports < 32768
CLUSTERS = (("io18a", 6975, 31001), ("io18b", 6976, 31201), ("io18c", 6977, 31401))
TOLERANCE = 0.10  # the issue's: within 10 % of the IO-Aware twin
COMPARED = ("mean_wait", "mean_io", "mean_dilation")


# -- run ----------------------------------------------------------------------------------
def run_one(policy: str, cluster: tuple[str, int, int], args: argparse.Namespace) -> Path:
    """One ``harness run``; returns its run directory (the command's last line)."""
    name, ctld, base = cluster
    platform_file = args.output / f"{name}.toml"
    save_platform(load_platform().redeployed(controller_port=ctld, slurmd_base_port=base), platform_file)
    speed = ["--speedup", str(args.speedup)] if args.speedup else ["--shrink", str(args.shrink)]
    label = f"x{args.speedup:g}" if args.speedup else str(args.shrink)
    cmd = [sys.executable, "-m", "harness", "run", "--model", "io-aware", *speed,
           "--first-n", str(args.first_n), "--policy", policy, "--name", name,
           "--platform", str(platform_file), "--compare-sim", "-q", "--yes",
           "-o", str(args.output / f"runs-{label}")]  # fmt: skip
    if args.trace:
        cmd.append(str(args.trace))
    log = args.output / f"{name}-{policy}-{label}.log"
    with log.open("w") as err:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{policy}: harness run failed (exit {done.returncode}), see {log}")
    subprocess.run([sys.executable, "-m", "harness", "cluster", "down", "--name", name], check=False)
    return Path(done.stdout.strip().splitlines()[-1])


# -- analyse ------------------------------------------------------------------------------
def accounted(run_dir: Path, results: pd.DataFrame, plan: pd.DataFrame) -> dict[str, int]:
    """Jobs and phases the run accounts for, beside what the plan asked."""
    staged = plan["bb_per_node_mb"] > 0
    records = [r for r in _read_jsonl(run_dir / rundir.RAW_DIR / rundir.SIGSLEEP_LOG) if r.get("phases")]
    logged = sum(sum(p["kind"] == "checkpoint" for p in r["phases"]) for r in records)
    expected = int(((plan["io_phases"] - 1) * (plan["io_checkpoint_mb"] > 0)).sum())
    return {
        "jobs": len(plan),
        "completed": int((results["status"] == "completed").sum()),
        "staged_in": int(results["stage_in_s"].notna().sum()),
        "staged_out": int(results["stage_out_s"].notna().sum()),
        "bb_jobs": int(staged.sum()),
        "phase_records": len(records),
        "checkpoints": logged,
        "checkpoints_planned": expected,
    }


def analyse(run_dir: Path) -> dict[str, Any]:
    """The run's figures beside the current twins' (original seconds)."""
    opts = resume_options(run_dir)
    platform = load_platform(str(run_dir / rundir.SLURM_DIR / "etc" / rundir.PLATFORM_FILE))
    plan = load_plan(run_dir / rundir.PLAN)[0]
    results = load_run(run_dir).results
    assert results is not None, f"{run_dir}: no results"
    ran = finished(results)
    spec, policy = opts.workload, opts.replay.policy
    start, stage = recorded_launch_delays(rundir.done_steps(run_dir)["collect"]["info"])
    found, simulated = compare_with_both_twins(
        plan, ran, simulator_twin(policy), platform.machine, TimeScale(spec.shrink), start,
        seed=spec.seed, model=spec.model, minute_limits=policy.startswith("slurm-"), staged=stage,
        staged_start=staged_start_for(scheduler_for_run(policy)), policy_seed=opts.replay.policy_seed,
    )  # fmt: skip
    emulated = {
        "mean_wait": found["metrics"]["mean_wait"]["emulated"],
        "mean_io": float(_io(ran).mean()),
        "mean_dilation": float(ran["dilation"].mean()),
    }
    twin = {
        "mean_wait": found["metrics"]["mean_wait"]["simulated"],
        "mean_io": float(_io(simulated).mean()),
        "mean_dilation": float(simulated["dilation"].mean()),
    }
    return {
        "run": run_dir.name, "policy": policy,
        "shrink": f"x{opts.replay.speedup:g}" if opts.replay.speedup else spec.shrink,
        "accounted": accounted(run_dir, results, plan),
        "emulated": emulated, "twin": twin,
        "tick_aware_wait": found["tick_aware"]["metrics"]["mean_wait"]["simulated"],
        "kendall_tau": found["start_order"]["kendall_tau"],
    }  # fmt: skip


def _io(table: pd.DataFrame) -> pd.Series:
    """A job's blocking I/O time: stage-in + checkpoints + stage-out (the background drains
    overlap its compute phases, so they are not added)."""
    cols = [c for c in ("stage_in_s", "checkpoint_s", "stage_out_s") if c in table.columns]
    return table[cols].fillna(0.0).sum(axis=1)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _gap(e: float, s: float) -> float:
    return (e - s) / s if s else float("nan")


def passes(row: dict[str, Any]) -> bool:
    """Issue 18's acceptance for one run: every job and phase accounted for, mean I/O time and
    mean dilation within :data:`TOLERANCE` of the twin, and the mean wait within it of the ideal
    twin or of the tick-aware one (Slurm's passes are part of the emulated machine)."""
    a, e, t = row["accounted"], row["emulated"], row["twin"]
    whole = (
        a["completed"] == a["jobs"] == a["phase_records"]
        and a["staged_in"] == a["staged_out"] == a["bb_jobs"]
        and a["checkpoints"] == a["checkpoints_planned"]
    )
    near = [abs(_gap(e[k], t[k])) <= TOLERANCE for k in ("mean_io", "mean_dilation")]
    twins = (t["mean_wait"], row["tick_aware_wait"])
    waits = [abs(_gap(e["mean_wait"], twin)) <= TOLERANCE for twin in twins]
    return whole and all(near) and any(waits)


def print_table(rows: list[dict[str, Any]]) -> bool:
    """The acceptance table; True when every compared figure is within :data:`TOLERANCE`."""
    print(f"{'policy':<17} {'shrink':>6} {'jobs':>9} {'wait emu':>9} {'twin':>7} {'gap':>7} "
          f"{'tick twin':>9} {'gap':>7} {'I/O emu':>8} {'twin':>6} {'gap':>7} "
          f"{'dil emu':>7} {'twin':>6} {'gap':>7} {'tau':>5}")  # fmt: skip
    ok = True
    for r in rows:
        e, t, a = r["emulated"], r["twin"], r["accounted"]
        gaps = {k: _gap(e[k], t[k]) for k in COMPARED}
        tick_gap = _gap(e["mean_wait"], r["tick_aware_wait"])
        ok &= passes(r)
        print(f"{r['policy']:<17} {r['shrink']:>6} {a['completed']:>4}/{a['jobs']:<4} "
              f"{e['mean_wait']:>9.0f} {t['mean_wait']:>7.0f} {gaps['mean_wait']:>+7.1%} "
              f"{r['tick_aware_wait']:>9.0f} {tick_gap:>+7.1%} "
              f"{e['mean_io']:>8.2f} {t['mean_io']:>6.2f} {gaps['mean_io']:>+7.1%} "
              f"{e['mean_dilation']:>7.3f} {t['mean_dilation']:>6.3f} {gaps['mean_dilation']:>+7.1%} "
              f"{r['kendall_tau']:>5.3f}")  # fmt: skip
    for r in rows:
        a = r["accounted"]
        print(f"{r['run']}: completed {a['completed']}/{a['jobs']}, staged in {a['staged_in']} and out "
              f"{a['staged_out']} of {a['bb_jobs']} BB jobs, phase records {a['phase_records']}, "
              f"checkpoints {a['checkpoints']} of {a['checkpoints_planned']} planned")  # fmt: skip
    return ok


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of the three compared means per run: emulated, ideal twin, tick-aware twin (wait)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['policy']}\n{r['shrink']}" for r in rows]
    x = np.arange(len(rows))
    fig, axes = plt.subplots(1, 3, figsize=(4.2 * 3, 4.2))
    titles = {"mean_wait": "mean wait (s)", "mean_io": "mean I/O time (s)", "mean_dilation": "mean dilation"}
    for ax, key in zip(axes, COMPARED, strict=True):
        bars = [("emulated", [r["emulated"][key] for r in rows]), ("twin", [r["twin"][key] for r in rows])]
        if key == "mean_wait":
            bars.append(("tick-aware twin", [r["tick_aware_wait"] for r in rows]))
        width = 0.8 / len(bars)
        for i, (name, values) in enumerate(bars):
            ax.bar(x + (i - (len(bars) - 1) / 2) * width, values, width, label=name)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title(titles[key])
        if key == "mean_dilation":
            ax.set_ylim(bottom=1.0)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle("200-job KTH slice, --model io-aware: live Slurm vs the IO-Aware twin (original seconds)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("run", help="replay the slice under each policy, then analyse")
    run.add_argument("--shrink", type=float, default=0.9)
    run.add_argument(
        "--speedup", type=float, default=None, help="on the virtual clock at this speed-up, unshrunk"
    )
    run.add_argument("--first-n", type=int, default=200)
    run.add_argument("--policies", default=",".join(POLICIES))
    run.add_argument("--trace", type=Path, default=None, help="default: the bundled KTH slice")
    run.add_argument("--parallel", action="store_true", help="all policies at once, one cluster each")
    run.add_argument("--output", type=Path, default=Path("iolive-acceptance"))
    an = sub.add_parser("analyse", help="compare finished run directories with the current twin")
    an.add_argument("run_dirs", nargs="+", type=Path)
    for mode in (run, an):
        mode.add_argument("--plot", type=Path, default=None, help="bar chart of the table (PNG)")
    args = ap.parse_args(argv)
    if args.mode == "run":
        policies = args.policies.split(",")
        if len(policies) > len(CLUSTERS):
            raise SystemExit(f"at most {len(CLUSTERS)} policies (one cluster each)")
        args.output.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(len(policies) if args.parallel else 1) as pool:
            pairs = zip(policies, CLUSTERS, strict=False)
            dirs = list(pool.map(lambda pc: run_one(pc[0], pc[1], args), pairs))
    else:
        dirs = [d for d in args.run_dirs if (d / rundir.RESULTS).exists()]
    rows = [analyse(d) for d in dirs]
    if args.plot:
        plot(rows, args.plot)
    return 0 if print_table(rows) else 1


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
