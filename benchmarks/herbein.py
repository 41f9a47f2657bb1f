"""Herbein et al.'s experiment (HPDC'16, Figures 5-8) on this project's simulator.

CTS-1 (3,888 nodes, 24 scalable units; benchmarks/platforms/herbein-cts1.toml), the
PFS underprovisioned by 0, 10, 20 and 30 %, workloads of 2,500 jobs from Herbein's
model fitted from an archive trace (default: CEA Curie, 16 cores per node), every job
draining 18 MB/s per node to the PFS. I/O-ignorant and I/O-aware EASY backfilling
schedule the same workload; the schedule is then accounted as Herbein's emulator
does (harness.analysis.io_accounting): runtimes are the trace's, and contention
turns computation into blocking on I/O.

    python benchmarks/herbein.py --seeds 1,2 --out herbein.jsonl

Per level and scheduler: the share of allocated node time spent computing (Fig. 5),
the spread of the per-job computing share (Fig. 6), the decision-time quantiles
(Fig. 7), and the aware/ignorant ratios of efficiency and mean turnaround (Fig. 8).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.io_accounting import account
from harness.platform import Platform, load_platform
from harness.policies.ioaware import IoAware, IoTreeSpec
from harness.policies.iotree import HERBEIN_NODE_RATE_MB_S
from harness.policies.state import Topology
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from harness.sim.machine import parse_bb_map
from harness.workload.synthetic import herbein_plan

HERE = Path(__file__).resolve().parent
CURIE = "CEA-Curie-2011-2.1-cln.swf.gz"
# The shared/ folder beside the checkout (main or a worktree), as harness.model.paths looks for KTH.
DEFAULT_TRACE = next(
    (
        p
        for p in (HERE.parents[1] / "shared" / "data" / CURIE, Path("/work/shared/data") / CURIE)
        if p.exists()
    ),
    Path(CURIE),
)
PLATFORM = HERE / "platforms" / "herbein-cts1.toml"
# The paper's figures, for the table printed beside ours.
PAPER = {
    "ignorant_computing_30": 0.791,  # Fig. 5a: 79.1 % of node time computing at 30 %
    "ignorant_min_job_share_30": 0.667,  # Fig. 6a: jobs compute 66.7-100 % of their time
    "efficiency_ratio_30": 1.29,  # Fig. 8: aware / ignorant system efficiency
    "turnaround_ratio_30": 1.52,  # Fig. 8: aware / ignorant turnaround
}


def run_level(plan: pd.DataFrame, platform: Platform, under_pct: int, aware: bool) -> dict[str, Any]:
    spec = IoTreeSpec.herbein(under_pct / 100)
    policy = IoAware("io-easy" if aware else "io-ignorant-easy", backfill=True, aware=aware, spec=spec)
    result = simulate(plan, policy, platform)
    jobs = result.jobs
    violations = check_schedule(jobs, platform)
    allocs = {
        int(r.job_id): tuple(c for c, _ in parse_bb_map(platform, r.bb_nodes)) for r in jobs.itertuples()
    }
    rates = dict.fromkeys(allocs, HERBEIN_NODE_RATE_MB_S)
    tree = spec.build(Topology.from_platform(platform))
    acc = account(jobs[["job_id", "start", "end"]], allocs, rates, tree).merge(jobs[["job_id", "nodes"]])
    node_time = (acc["nodes"] * (acc["computing_s"] + acc["blocked_s"])).sum()
    latency = result.decisions["latency_s"].to_numpy()
    return {
        "underprovision_pct": under_pct,
        "scheduler": policy.name,
        "violations": len(violations),
        "computing_share": float((acc["nodes"] * acc["computing_s"]).sum() / node_time),
        "job_share_min": float(acc["computing_share"].min()),
        "job_share_p5": float(acc["computing_share"].quantile(0.05)),
        "jobs_contended": int((acc["computing_share"] < 1 - 1e-9).sum()),
        "mean_turnaround_s": float((jobs["end"] - jobs["submit"]).mean()),
        "mean_wait_s": float((jobs["start"] - jobs["submit"]).mean()),
        "decision_p50_s": float(np.quantile(latency, 0.5)),
        "decision_p75_s": float(np.quantile(latency, 0.75)),
        "decision_p95_s": float(np.quantile(latency, 0.95)),
        "decisions": len(latency),
    }


def satisfiable(plan: pd.DataFrame, worst_pct: int) -> pd.DataFrame:
    """Drop the jobs the most underprovisioned PFS can never carry (Herbein: rejected at
    submission), so that every level schedules the same jobs."""
    pfs = IoTreeSpec.herbein(worst_pct / 100).chain[-1][1]
    keep = plan["nodes"] * HERBEIN_NODE_RATE_MB_S <= pfs
    print(f"{int((~keep).sum())} of {len(plan)} jobs need more than the {pfs:,.0f} MB/s PFS: rejected")
    return plan[keep].reset_index(drop=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="SWF trace to fit Herbein's model from")
    ap.add_argument("--procs-per-node", type=int, default=16, help="processors per node in the trace")
    ap.add_argument("--size-scale", type=float, default=1.0, help="multiply the sampled sizes")
    ap.add_argument("--jobs", type=int, default=2_500)
    ap.add_argument("--seeds", default="1", help="workload seeds, comma-separated")
    ap.add_argument("--levels", default="0,10,20,30", help="PFS underprovisioning levels, %%")
    ap.add_argument("--out", default=None, help="append one JSON line per run")
    ap.add_argument("--table", default=None, help="markdown tables from a JSON-lines file; no runs")
    args = ap.parse_args()
    if args.table:
        print(markdown(pd.read_json(args.table, lines=True)))
        return 0
    platform = load_platform(PLATFORM)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        plan, _, _ = herbein_plan(
            args.trace, args.jobs, seed, platform.compute_count, args.size_scale, args.procs_per_node
        )
        plan = satisfiable(plan, max(int(x) for x in args.levels.split(",")))
        for level in (int(x) for x in args.levels.split(",")):
            for aware in (False, True):
                row = {"seed": seed, **run_level(plan, platform, level, aware)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    print_table(pd.DataFrame(rows))
    return 0


# The paper's Figure 7 (Section 5.4): p75 and p95 decision times in seconds.
PAPER_FIG7 = {"io-ignorant-easy": "< 0.07 / ~1.43", "io-easy": "< 0.12 / 1.97-6.64"}


def markdown(df: pd.DataFrame) -> str:
    """Figures 5-7 per level and scheduler (means over the workloads; the lowest job share is
    the minimum), then Figure 8's ratios (mean and range of the per-workload ratios)."""
    g = df.groupby(["underprovision_pct", "scheduler"])
    mean = g.mean(numeric_only=True).reset_index()
    low = g["job_share_min"].min().reset_index(name="lowest")
    mean = mean.merge(low)
    out = [f"Means over {df['seed'].nunique()} workloads.", "",
           "| PFS under-provisioning | scheduler | computing share (Fig. 5) | lowest job share (Fig. 6) "
           "| jobs contended | mean turnaround (s) | decision p50 / p75 / p95 (ms) (Fig. 7) "
           "| paper p75 / p95 (s) | violations |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in mean.sort_values(["underprovision_pct", "scheduler"], ascending=[True, False]).itertuples():
        out.append(f"| {r.underprovision_pct} % | {r.scheduler} | {r.computing_share:.3f} | {r.lowest:.3f} "
                   f"| {r.jobs_contended:.0f} | {r.mean_turnaround_s:,.0f} | {r.decision_p50_s * 1e3:.1f} / "
                   f"{r.decision_p75_s * 1e3:.1f} / {r.decision_p95_s * 1e3:.1f} | {PAPER_FIG7[r.scheduler]} "
                   f"| {r.violations:.0f} |")  # fmt: skip
    key = ["seed", "underprovision_pct"]
    aware = df[df.scheduler == "io-easy"].set_index(key)
    ign = df[df.scheduler == "io-ignorant-easy"].set_index(key)
    ratio = pd.DataFrame({"eff": aware.computing_share / ign.computing_share,
                          "tat": aware.mean_turnaround_s / ign.mean_turnaround_s}).reset_index()  # fmt: skip
    out += ["", "| under-provisioning | efficiency ratio (Fig. 8) | turnaround ratio (Fig. 8) | paper |",
            "|---:|---:|---:|---|"]  # fmt: skip
    for level, r in ratio.groupby("underprovision_pct"):
        paper = "1.29 / 1.52" if level == 30 else "ratios rise with the level" if level else "1 / 1"
        out.append(f"| {level} % | {r.eff.mean():.3f} ({r.eff.min():.3f}-{r.eff.max():.3f}) "
                   f"| {r.tat.mean():.3f} ({r.tat.min():.3f}-{r.tat.max():.3f}) | {paper} |")  # fmt: skip
    return "\n".join(out)


def print_table(df: pd.DataFrame) -> None:
    mean = df.groupby(["underprovision_pct", "scheduler"]).mean(numeric_only=True).reset_index()
    print("\nlevel scheduler          computing  min job  p5 job  turnaround  p50/p75/p95 decision (s)")
    for r in mean.itertuples():
        print(f"{r.underprovision_pct:>4}% {r.scheduler:<18} {r.computing_share:8.3f} {r.job_share_min:8.3f} "
              f"{r.job_share_p5:7.3f} {r.mean_turnaround_s:11.0f}  "
              f"{r.decision_p50_s:.4f}/{r.decision_p75_s:.4f}/{r.decision_p95_s:.4f}")  # fmt: skip
    print("\nlevel  efficiency ratio  turnaround ratio  (aware / ignorant)")
    for level, g in mean.groupby("underprovision_pct"):
        a = g[g.scheduler == "io-easy"].iloc[0]
        i = g[g.scheduler == "io-ignorant-easy"].iloc[0]
        print(f"{level:>4}%  {a.computing_share / i.computing_share:16.3f}  "
              f"{a.mean_turnaround_s / i.mean_turnaround_s:16.3f}")  # fmt: skip
    print(f"\npaper at 30 %: {PAPER}")


if __name__ == "__main__":
    sys.exit(main())
