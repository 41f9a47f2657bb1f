"""Policies normalised by backfill-sjf-1 on the 16 periods of the split KTH workload.

The thesis's Figures 4.46-4.49 (Kopański, Section 4.6): each policy's mean of a
metric on each of 16 consecutive periods (~20.8 days), divided by backfill-sjf-1's
mean on the same period; the box of those 16 ratios tells how much better a policy
is on average, independent of one period's unlucky interlace of jobs. This prints
every period's ratios and their quartiles.

    python benchmarks/split_periods.py [--policies plan-square-0] [--periods 16] [--out rows.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from harness.metrics import summary
from harness.paths import KTH_NAME, kth_trace
from harness.platform import load_platform
from harness.policies.registry import get_policy, parse_policy_list
from harness.simulator import simulate
from harness.workload.plan import prepare

BASELINE = "backfill-sjf-1"
METRICS = ("mean_wait", "mean_turnaround", "mean_slowdown", "mean_bsld")


def period_ratios(trace: Path, periods: int, policies: list[str], seed: int) -> list[dict]:
    platform = load_platform()
    rows = []
    for index in range(periods):
        plan, _ = prepare(trace, platform=platform, seed=seed, period=(index, periods))
        means = {}
        for name in [BASELINE, *policies]:
            result = simulate(plan, get_policy(name), platform)
            means[name] = summary(result.jobs, platform)
        for name in policies:
            ratios = {m: means[name][m] / means[BASELINE][m] for m in METRICS if means[BASELINE][m] > 0}
            rows.append({"period": index, "jobs": len(plan), "policy": name, **ratios})
            shown = ", ".join(f"{m} x{v:.3f}" for m, v in ratios.items())
            print(f"period {index:2d} ({len(plan)} jobs) {name}: {shown}", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=kth_trace() or Path(KTH_NAME))
    ap.add_argument("--policies", default="plan-square-0")
    ap.add_argument("--periods", type=int, default=16)
    ap.add_argument("--seed", type=int, default=2020, help="seed of the BB model")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    policies = parse_policy_list(args.policies)
    rows = period_ratios(args.trace, args.periods, policies, args.seed)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"| policy | metric | Q1 | median | Q3 | mean | periods better than {BASELINE} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in policies:
        for metric in METRICS:
            vals = np.array([r[metric] for r in rows if r["policy"] == name and metric in r])
            q1, med, q3 = np.quantile(vals, [0.25, 0.5, 0.75])
            print(f"| {name} | {metric} | {q1:.3f} | {med:.3f} | {q3:.3f} | {vals.mean():.3f} | "
                  f"{int((vals < 1).sum())}/{len(vals)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
