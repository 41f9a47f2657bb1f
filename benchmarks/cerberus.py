"""Cerberus's comparison (Yan, Yang, Jin, Lan): three phases against one, knapsack against FCFS.

The poster's claims (BBSim, a Trinity-like machine): over 80 % of the jobs finish
earlier when modelled in three phases than in one, and Cerberus's throughput is
23.87 % above FCFS's (1.951 jobs per 500 s).

Every run is the simulator (``harness.sim.engine.simulate``, ``--model io-aware``) with a
registered policy: ``cerberus-3phase`` (the stage-in and run knapsacks) and
``cerberus-3phase-fcfs`` (each queue in arrival order: the poster's FCFS) with staging
*outside* the allocation (three phases: BB from stage-in start to stage-out end, nodes
for the run), ``fcfs`` likewise (the project's FCFS under Slurm's life cycle), and
``cerberus`` / ``cerberus-fcfs`` with staging *inside* (one phase: nodes and BB together
for stage-in + run + stage-out). The platform is the thesis's (96 nodes, 12 BB nodes of
40 GB); jobs are the first ``--jobs`` of cleaned KTH-SP2 with the lognormal BB request
and Kopański's I/O phases (staging through the BB nodes' 1.25 GB/s links and the 5 GB/s
PFS link, shared).

Arrivals (``--arrivals``): ``trace`` keeps KTH's; ``poster`` replaces them by BBSim's
(the poster's simulator, its ``FifoVsDp`` comparison): a Poisson number of seconds, mean
1, between two submissions, so the whole workload is queued within ``--jobs`` seconds
and the throughput measures how fast each policy drains a full queue.

Throughput is jobs per 500 s over the span from the first submission to the last job's
end (its BB release when staged outside); response = that end - submit.

``--storage-slowdown F`` divides the BB-node and PFS bandwidths by F, so that staging takes
a larger part of a job's life (BBSim moves tens of TB per job).

    python benchmarks/cerberus.py --jobs 1000 --arrivals poster [--storage-slowdown 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from harness.model.paths import KTH_NAME, kth_trace
from harness.platform import Machine, load_platform
from harness.policies.registry import get_policy
from harness.policies.tunables import parse_assignments
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from harness.workload.plan import prepare

PAPER = (
    "over 80 % of jobs finish earlier in three phases; "
    "Cerberus throughput +23.87 % over FCFS (1.951 jobs/500 s)"
)
RUNS = (  # (policy, staging): three phases off the allocation, one phase inside it
    ("cerberus-3phase", "outside"),
    ("cerberus-3phase-fcfs", "outside"),
    ("fcfs", "outside"),
    ("cerberus", "inside"),
    ("cerberus-fcfs", "inside"),
)
ONE_PHASE_TWIN = {"cerberus-3phase": "cerberus", "cerberus-3phase-fcfs": "cerberus-fcfs"}
BBSIM_MEAN_GAP_S = 1.0  # BBTraceReader(lam=1): cumulative Poisson(1) submissions
PER_500_S = 500.0


def poster_arrivals(plan: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``plan`` with BBSim's submissions: gaps of Poisson(1) seconds, the first at 0."""
    gaps = np.random.default_rng(seed).poisson(BBSIM_MEAN_GAP_S, len(plan)).astype(np.float64)
    gaps[0] = 0.0
    out = plan.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
    out["submit"] = np.cumsum(gaps)
    return out


def finish_times(jobs: pd.DataFrame) -> pd.Series:
    """When each job leaves the system: its BB release if staged outside, else its end."""
    ends = jobs["bb_end"] if "bb_end" in jobs else jobs["end"]
    return pd.Series(ends.to_numpy(np.float64), index=jobs["job_id"].to_numpy())


def measure(jobs: pd.DataFrame, decisions: pd.DataFrame) -> dict[str, float]:
    """Throughput, response and wait of one schedule, and its decision latency."""
    finish = finish_times(jobs).to_numpy()
    submit = jobs["submit"].to_numpy(np.float64)
    span = float(finish.max() - submit.min())
    latency = decisions["latency_s"].to_numpy(np.float64)
    # the first 90 % of the jobs to finish: a throughput that one long tail job does not set
    t90 = float(np.quantile(finish, 0.9, method="inverted_cdf"))
    done90 = int(np.sum(finish <= t90))
    return {
        "jobs_per_500s": len(jobs) / span * PER_500_S,
        "jobs_per_500s_first90": done90 / (t90 - float(submit.min())) * PER_500_S,
        "makespan_s": span,
        "mean_response_s": float(np.mean(finish - submit)),
        "max_response_s": float(np.max(finish - submit)),
        "mean_wait_s": float(np.mean(jobs["start"].to_numpy(np.float64) - submit)),
        "timeouts": int((jobs["status"] == "timeout").sum()),  # inside, staging counts in the walltime
        "decision_p50_ms": float(np.quantile(latency, 0.5)) * 1e3 if len(latency) else 0.0,
        "decision_p99_ms": float(np.quantile(latency, 0.99)) * 1e3 if len(latency) else 0.0,
    }


def share_earlier(three: pd.Series, one: pd.Series) -> float:
    """Share of the jobs that leave the system earlier in three phases than in one."""
    return float((three < one.reindex(three.index) - 1e-9).mean())


def run_all(
    plan: pd.DataFrame, platform: Machine, seed: int, params: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every run of :data:`RUNS`; ``params`` are the Cerberus policies' tunables."""
    rows, finishes = [], {}
    for policy, staging in RUNS:
        began = time.process_time()
        tunables = params if policy.startswith("cerberus") else None
        chosen = get_policy(policy, params=tunables)
        result = simulate(plan, chosen, platform, model="io-aware", staging=staging, io_seed=seed)
        problems = check_schedule(result.jobs, platform)
        if problems:
            raise RuntimeError(f"{policy}: invalid schedule: {problems[:3]}")
        finishes[policy] = finish_times(result.jobs)
        row = {
            "policy": policy,
            "staging": staging,
            "jobs": len(plan),
            **measure(result.jobs, result.decisions),
        }
        rows.append({**row, "cpu_s": time.process_time() - began})
    for row in rows:
        twin = ONE_PHASE_TWIN.get(row["policy"])
        if twin is not None:
            row["share_earlier_than_1phase"] = share_earlier(finishes[row["policy"]], finishes[twin])
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """Both throughputs against the three-phase FCFS's (the poster's baseline)."""
    base = next(r for r in rows if r["policy"] == "cerberus-3phase-fcfs")
    print("\npolicy                staging   jobs/500s (vs)     first 90 % (vs)    mean resp (s)  earlier")
    for r in rows:
        cells = [f"{r['policy']:<21} {r['staging']:<8}"]
        for key in ("jobs_per_500s", "jobs_per_500s_first90"):
            cells.append(f"{r[key]:8.3f} ({r[key] / base[key] - 1:+6.1%})")
        cells.append(f"{r['mean_response_s']:13,.0f}  {r.get('share_earlier_than_1phase', float('nan')):.3f}")
        print("  ".join(cells))


def slower_storage(platform: Machine, factor: float) -> Machine:
    """``platform`` with its BB-node and PFS links ``factor`` times slower: staging then
    takes a larger part of a job's life, as in BBSim's runs (data of tens of TB)."""
    io = platform.io
    slower = replace(io, bb_node_mbps=io.bb_node_mbps / factor, pfs_mbps=io.pfs_mbps / factor)
    return replace(platform, io=slower)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(kth_trace() or KTH_NAME))
    ap.add_argument("--jobs", type=int, default=1000, help="the first N jobs of the cleaned trace")
    ap.add_argument("--arrivals", choices=("trace", "poster"), default="poster")
    ap.add_argument("--seed", type=int, default=2020, help="BB, I/O and arrival seed")
    ap.add_argument("--storage-slowdown", type=float, default=1.0, help="divide BB-node and PFS bandwidth")
    ap.add_argument("--param", action="append", default=[], help="a Cerberus tunable KEY=VALUE (repeatable)")
    ap.add_argument("--out", default=None, help="append one JSON line per run")
    args = ap.parse_args()
    platform = load_platform()
    plan, _ = prepare(args.trace, platform=platform, first_n=args.jobs, seed=args.seed)
    platform = slower_storage(platform, args.storage_slowdown)
    if args.arrivals == "poster":
        plan = poster_arrivals(plan, args.seed)
    params = parse_assignments(args.param)
    given = {"arrivals": args.arrivals, "seed": args.seed, "storage_slowdown": args.storage_slowdown}
    given.update(params)
    rows = [{**given, **r} for r in run_all(plan, platform, args.seed, params)]
    for row in rows:
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    print_table(rows)
    print(f"\npaper: {PAPER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
