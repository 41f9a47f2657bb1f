"""How much a policy's schedule moves when its inputs move by a few seconds: the floor under
the run-to-run spread of any emulation that is not deterministic.

For each run directory (made by `harness run`), the run's x1 reference (the twin
`benchmarks/vclock_acceptance.py` compares with: for `slurm-*` the tick-aware twin of
Slurm's rules, for the ordering agent's policies the simulator's policy) is computed again
on the run's plan with every submission delayed by a uniform draw in [0, J) trace seconds
(kept in the trace's order, as the replay submits), once per seed. At a fixed speed-up,
`sbatch` alone delays each submission by 1-2.5 trace s at x100 (docs/virtual-time.md), so
J = 2 is less noise than such a run has. The table gives the
unperturbed reference, the perturbed mean waits' average, their RSD (n - 1, as the issue's
target) and range, and how many draws fall outside 5 % of the reference::

    PYTHONPATH=. python3 benchmarks/policy_sensitivity.py RUN_DIR... [--jitter 2] [--seeds 20]

A run directory may be a `--repeat` parent: its first repetition holds the plan. Without a
run, a window of a trace, for simulator policies (their reference is the simulator itself)::

    PYTHONPATH=. python3 benchmarks/policy_sensitivity.py --trace kth.swf.gz --period 3/16 --first-n 250 \
        --bb-seed 7 -p plan-square-0,backfill-1 [--platform ricc.toml --procs-per-node 8 --window A:B]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.vclock_acceptance import WITHIN, reference_of, rsd_pct
from harness.analysis.metrics import summary
from harness.analysis.rundata import load_run
from harness.cli.options import PeriodType
from harness.cli.workload_options import WindowType
from harness.emulation.collect.fidelity import LaunchDelay, compare_with_both_twins, simulator_twin
from harness.emulation.collect.results import finished
from harness.emulation.run.experiment import resume_options
from harness.model import rundir
from harness.model.timescale import TimeScale
from harness.platform import load_platform
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.slurm.native import is_native
from harness.workload.plan import load_plan, prepare

NO_DELAY = LaunchDelay(0.0, 0)  # the x1 reference has no launch delay
Reference = tuple[Callable[[pd.DataFrame], float], pd.DataFrame, str]  # (mean wait of a plan, plan, policy)


def jittered(plan: pd.DataFrame, seconds: float, seed: int) -> pd.DataFrame:
    """``plan`` with each submission later by a uniform draw in [0, ``seconds``), one
    generator per ``seed``, and never before the one before it: the replay submits in the
    trace's order, so a delay reorders nothing. Every other column unchanged."""
    out = plan.copy()
    rng = np.random.default_rng(seed)
    delayed = out["submit"].to_numpy(dtype=float) + rng.uniform(0.0, seconds, len(out))
    out["submit"] = np.maximum.accumulate(delayed)
    return out


@dataclass(frozen=True)
class Spread:
    """The reference's mean wait, unperturbed and under each seed's jitter."""

    policy: str
    reference: float
    perturbed: list[float]

    @property
    def rsd_pct(self) -> float:
        return rsd_pct(self.perturbed) or 0.0  # spread() draws at least 2

    @property
    def outside(self) -> int:
        return sum(abs(w / self.reference - 1.0) > WITHIN for w in self.perturbed)


def spread(reference_wait: Callable[[pd.DataFrame], float], plan: pd.DataFrame, policy: str,
           jitter: float, seeds: int) -> Spread:  # fmt: skip
    """``reference_wait`` of ``plan`` as it is and under ``seeds`` draws of ``jitter``."""
    if seeds < 2:
        raise SystemExit(f"--seeds {seeds}: an RSD needs at least 2 draws")
    waits = [reference_wait(jittered(plan, jitter, s)) for s in range(seeds)]
    return Spread(policy, reference_wait(plan), waits)


def run_reference(run_dir: Path) -> Reference:
    """(the run's x1 reference as a function of a plan, the run's plan, its policy)."""
    reps = run_dir / "repetitions"
    if reps.is_dir():
        run_dir = min((p for p in reps.iterdir() if (p / rundir.PLAN).exists()), default=run_dir)
    if not (run_dir / rundir.PLAN).exists():
        raise SystemExit(f"{run_dir}: no {rundir.PLAN}")
    opts = resume_options(run_dir)
    spec, platform, policy = opts.workload, load_platform(opts.cluster.platform), opts.replay.policy
    results = load_run(run_dir).results
    if results is None:
        raise SystemExit(f"{run_dir}: no results (the run did not collect)")
    ran, native = finished(results), is_native(policy)
    t0 = float(rundir.done_steps(run_dir)["collect"]["info"].get("t0", 0.0))

    def reference_wait(plan: pd.DataFrame) -> float:
        found, _ = compare_with_both_twins(
            plan, ran, simulator_twin(policy), platform, TimeScale(spec.shrink), NO_DELAY, spec.seed,
            spec.model, native, policy_seed=opts.replay.policy_seed, slurm_t0=t0,
        )  # fmt: skip
        return float(reference_of({"fidelity": found}, policy)[0])

    return reference_wait, load_plan(run_dir / rundir.PLAN)[0], policy


def trace_references(
    args: argparse.Namespace,
) -> list[tuple[Callable[[pd.DataFrame], float], pd.DataFrame, str]]:
    """For ``--trace``: each simulator policy's mean wait as a function of a plan, on the window."""
    platform = load_platform(args.platform)
    window = WindowType().convert(args.window, None, None) if args.window else None
    period = PeriodType().convert(args.period, None, None) if args.period else None
    plan, _ = prepare(args.trace, platform=platform, seed=args.bb_seed, window=window, period=period,
                      first_n=args.first_n, procs_per_node=args.procs_per_node)  # fmt: skip
    found = []
    for policy in args.policies.split(","):
        if is_native(policy):
            raise SystemExit(
                f"-p {policy}: Slurm's own policies need a run directory (their twin reads the run)"
            )

        def reference_wait(p: pd.DataFrame, name: str = policy) -> float:
            return float(summary(simulate(p, get_policy(name), platform).jobs, platform)["mean_wait"])

        found.append((reference_wait, plan, policy))
    return found


def markdown(row: Spread, jitter: float) -> str:
    mean = statistics.mean(row.perturbed)
    cells = [
        f"`{row.policy}`", f"{row.reference:,.1f} s", f"0-{jitter:g} s, {len(row.perturbed)} draws",
        f"{mean:,.1f} s ({mean / row.reference - 1:+.1%})", f"{row.rsd_pct:.2f} %",
        f"{min(row.perturbed):,.1f} - {max(row.perturbed):,.1f} s",
        f"{row.outside} of {len(row.perturbed)}",
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


HEADERS = ("policy", "reference (x1 twin)", "submissions delayed by", "perturbed AVE", "RSD (n - 1)",
           "range", "outside 5 %")  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--trace", help="a trace instead of run directories")
    parser.add_argument("-p", "--policies", default="plan-square-0", help="with --trace: simulator policies")
    parser.add_argument("--platform", default="default")
    parser.add_argument("--window", help="with --trace: START:END seconds after the first submission")
    parser.add_argument("--period", help="with --trace: I/K, I from 1")
    parser.add_argument("--first-n", type=int)
    parser.add_argument("--bb-seed", type=int, default=2020)
    parser.add_argument("--procs-per-node", type=int)
    parser.add_argument("--jitter", type=float, default=2.0, help="trace seconds (uniform upper bound)")
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    if not args.jitter > 0:
        raise SystemExit(f"--jitter {args.jitter}: must be a positive number of trace seconds")
    if bool(args.runs) == bool(args.trace):
        raise SystemExit("give run directories or --trace, not both and not neither")
    print("| " + " | ".join(HEADERS) + " |")
    print("|" + "---|" * len(HEADERS))
    cases = trace_references(args) if args.trace else (run_reference(r) for r in args.runs)
    for reference_wait, plan, policy in cases:
        print(
            markdown(spread(reference_wait, plan, policy, args.jitter, args.seeds), args.jitter), flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
