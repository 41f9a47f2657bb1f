"""Policies normalised by backfill-sjf-1 on the 16 periods of the split KTH workload.

The thesis's Figures 4.46-4.49 (Kopański, Section 4.6): each policy's mean of a
metric on each of 16 consecutive periods (~20.8 days), divided by backfill-sjf-1's
mean on the same period; the box of those 16 ratios tells how much better a policy
is on average, independent of one period's unlucky interlace of jobs. This prints
every period's ratios and their quartiles.

A thin wrapper over the experiment runner: it writes the experiment file for the
policies asked, runs it (resumably) in ``--dir`` and prints the ratio table.
``experiments/kopanski-alloc-only.toml`` is the same study with its full report.

    python benchmarks/split_periods.py [--policies plan-square-0] [--periods 16] [-j 2] [--out rows.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from harness.experiments.executors import LocalExecutor
from harness.experiments.results import load_table
from harness.experiments.runner import run_experiment
from harness.experiments.spec import load_spec
from harness.experiments.stats import ratio_summary, ratios
from harness.model.paths import KTH_NAME, kth_trace
from harness.policies.registry import parse_policy_list

BASELINE = "backfill-sjf-1"
METRICS = ("mean_wait", "mean_turnaround", "mean_slowdown", "mean_bsld")


def experiment_text(trace: Path, periods: int, policies: list[str], seed: int) -> str:
    names = json.dumps([BASELINE, *policies])
    return (f'[experiment]\nname = "split-periods"\nbaseline = "{BASELINE}"\n'
            f"metrics = {json.dumps(list(METRICS))}\n"
            f"[workload]\ntrace = {json.dumps(str(trace.resolve()))}\nperiods = {periods}\nbb_seed = {seed}\n"
            f"[policies]\nnames = {names}\n")  # fmt: skip


def period_ratios(table: pd.DataFrame, policies: list[str]) -> list[dict]:
    """One row per period and policy: the jobs of the period and each metric's ratio."""
    jobs = table[table["metric"] == "jobs"].set_index(["policy", "period"])["value"]
    per_metric = {m: ratios(table, m, BASELINE).set_index(["policy", "period"])["ratio"] for m in METRICS}
    rows = []
    for period in sorted(table["period"].unique()):
        for name in policies:
            found = {m: float(r[(name, period)]) for m, r in per_metric.items() if (name, period) in r.index}
            rows.append(
                {"period": int(period) - 1, "jobs": int(jobs[(name, period)]), "policy": name, **found}
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=kth_trace() or Path(KTH_NAME))
    ap.add_argument("--policies", default="plan-square-0")
    ap.add_argument("--periods", type=int, default=16)
    ap.add_argument("--seed", type=int, default=2020, help="seed of the BB model")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="cells at once")
    ap.add_argument("--dir", type=Path, default=Path("runs/experiments/split-periods"))
    ap.add_argument("--out", type=Path, help="also write the per-period ratios as JSON lines")
    args = ap.parse_args(argv)
    policies = parse_policy_list(args.policies)
    args.dir.mkdir(parents=True, exist_ok=True)
    spec_path = args.dir / "split-periods.toml"
    spec_path.write_text(experiment_text(args.trace, args.periods, policies, args.seed))
    spec = load_spec(spec_path)
    run_experiment(spec, args.dir, lambda d: LocalExecutor(d, args.jobs))
    rows = period_ratios(load_table(args.dir), policies)
    for r in rows:
        shown = ", ".join(f"{m} x{r[m]:.3f}" for m in METRICS if m in r)
        print(f"period {r['period']:2d} ({r['jobs']} jobs) {r['policy']}: {shown}", file=sys.stderr)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print_table(load_table(args.dir), policies)
    return 0


def print_table(table: pd.DataFrame, policies: list[str]) -> None:
    print(f"| policy | metric | Q1 | median | Q3 | mean | periods better than {BASELINE} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in policies:
        for metric in METRICS:
            s = ratio_summary(ratios(table, metric, BASELINE))
            s = s[s["policy"] == name].iloc[0]
            quartiles = f"{s['q1']:.3f} | {s['median']:.3f} | {s['q3']:.3f}"
            print(f"| {name} | {metric} | {quartiles} | {s['mean']:.3f} | {s['below_1']}/{s['n']} |")


if __name__ == "__main__":
    raise SystemExit(main())
