"""Cerberus's comparison (Yan, Yang, Jin, Lan): three phases against one, knapsack against FCFS.

The poster's claims (BBSim, a Trinity-like machine): over 80 % of the jobs finish
earlier when modelled in three phases than in one, and Cerberus's throughput is
23.87 % above FCFS's (1.951 jobs per 500 s). Here: the thesis's platform (96 compute
nodes, 12 x 40 GB of burst buffer taken as one pool), the first ``--jobs`` jobs of
cleaned KTH-SP2 with the lognormal BB request model, and this project's Cerberus
selection (``harness.policies.cerberus``: ``select_staging``, ``select_run``).

The io-aware simulator stages *inside* the allocation only, so this script runs its
own event loop with the *outside* semantics of the issue:

* three phases: a job enters ``Q_I``; the stage-in knapsack (or FCFS) gives it its
  burst buffer, held until its stage-out ends; after stage-in it enters ``Q_R``, where
  the run knapsack (or FCFS) gives it nodes for its runtime; then it stages out at
  once (its BB is already held, so ``Q_O`` never has to wait);
* one phase: ``Q_R`` only; nodes and burst buffer together for stage-in + run +
  stage-out (the two-constraint knapsack, or FCFS).

Staging moves the job's whole BB request at the PFS rate (5 GB/s) with no sharing
between jobs (no contention model here); the runtime is the trace's, capped at the
walltime. Throughput is jobs per 500 s over the makespan; response = end - submit.

    python benchmarks/cerberus.py --jobs 1000
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from harness.model.paths import KTH_NAME, kth_trace
from harness.platform import load_platform
from harness.policies.cerberus import CerberusConfig, PhaseJob, select_run, select_staging
from harness.workload.plan import prepare

PAPER = (
    "over 80 % of jobs finish earlier in three phases; "
    "Cerberus throughput +23.87 % over FCFS (1.951 jobs/500 s)"
)
STAGE_MB_S = 5_000.0  # the thesis's PFS link


class Loop:
    """One run: ``phases`` 3 or 1, selection by ``config`` (knapsack or FCFS)."""

    def __init__(self, plan: pd.DataFrame, nodes: int, bb_mb: int, phases: int, config: CerberusConfig):
        self.p = plan
        self.free_nodes, self.free_bb, self.phases, self.config = nodes, bb_mb, phases, config
        self.bb = (plan["nodes"] * plan["bb_per_node_mb"]).to_numpy(np.int64)
        self.stage = self.bb / STAGE_MB_S
        self.run_s = np.minimum(plan["runtime"], plan["walltime"]).to_numpy(np.float64)
        self.end = np.full(len(plan), np.nan)
        self.q_in: list[int] = []
        self.q_run: list[int] = []
        self.events: list[tuple[float, int, str]] = []
        self.latency: list[float] = []

    def job(self, row: int, bb: int) -> PhaseJob:
        r = self.p.iloc[row]
        return PhaseJob(row, float(r.submit), int(r.nodes), bb, float(r.walltime))

    def go(self) -> None:
        submit, nxt = self.p["submit"].to_numpy(np.float64), 0
        while nxt < len(submit) or self.events:
            now = min(
                submit[nxt] if nxt < len(submit) else np.inf, self.events[0][0] if self.events else np.inf
            )
            while nxt < len(submit) and submit[nxt] <= now:
                (self.q_in if self.phases == 3 else self.q_run).append(nxt)
                nxt += 1
            while self.events and self.events[0][0] <= now:
                self.handle(*heapq.heappop(self.events))
            t0 = time.perf_counter()
            self.select(now)
            self.latency.append(time.perf_counter() - t0)
        if self.q_in or self.q_run:
            raise RuntimeError(f"{len(self.q_in) + len(self.q_run)} jobs never ran")

    def handle(self, now: float, row: int, kind: str) -> None:
        if kind == "staged-in":
            self.q_run.append(row)
        elif kind == "ran" and self.phases == 3:
            self.free_nodes += int(self.p.nodes.iat[row])
            heapq.heappush(self.events, (now + self.stage[row], row, "done"))  # BB already held
        else:  # the end of a three-phase stage-out, or of a one-phase job
            self.free_bb += int(self.bb[row])
            self.free_nodes += int(self.p.nodes.iat[row]) if self.phases == 1 else 0
            self.end[row] = now

    def select(self, now: float) -> None:
        if self.q_in:
            queue = [self.job(r, int(self.bb[r])) for r in self.q_in]
            for row in select_staging(queue, self.free_bb, now, self.config):
                self.free_bb -= int(self.bb[row])
                self.q_in.remove(row)
                heapq.heappush(self.events, (now + self.stage[row], row, "staged-in"))
        if self.q_run:
            held = self.phases == 3  # three phases: the BB was taken at stage-in
            queue = [self.job(r, 0 if held else int(self.bb[r])) for r in self.q_run]
            for row in select_run(queue, self.free_nodes, self.free_bb, now, self.config):
                self.free_nodes -= int(self.p.nodes.iat[row])
                self.free_bb -= 0 if held else int(self.bb[row])
                self.q_run.remove(row)
                span = self.run_s[row] + (0 if held else 2 * self.stage[row])
                heapq.heappush(self.events, (now + span, row, "ran"))


def measure(
    plan: pd.DataFrame, nodes: int, bb_mb: int, phases: int, knapsack: bool
) -> tuple[dict[str, Any], np.ndarray]:
    loop = Loop(plan, nodes, bb_mb, phases, CerberusConfig(knapsack=knapsack))
    loop.go()
    submit = plan["submit"].to_numpy(np.float64)
    response = loop.end - submit
    span = float(np.nanmax(loop.end) - submit.min())
    lat = np.array(loop.latency)
    return {
        "phases": phases,
        "selection": "knapsack" if knapsack else "fcfs",
        "jobs_per_500s": len(plan) / span * 500,
        "makespan_s": span,
        "mean_response_s": float(response.mean()),
        "max_response_s": float(response.max()),
        "decision_p50_s": float(np.quantile(lat, 0.5)),
        "decision_p99_s": float(np.quantile(lat, 0.99)),
    }, loop.end


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(kth_trace() or KTH_NAME))
    ap.add_argument("--jobs", type=int, default=1000, help="the first N jobs of the cleaned trace")
    ap.add_argument("--out", default=None, help="append one JSON line per run")
    args = ap.parse_args()
    platform = load_platform()
    plan, _ = prepare(args.trace, platform=platform, first_n=args.jobs)
    plan = plan.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
    bb_total = platform.bb_count * platform.bb_capacity_mb
    rows, ends = [], {}
    for phases in (3, 1):
        for knapsack in (True, False):
            row, ends[phases, knapsack] = measure(plan, platform.compute_count, bb_total, phases, knapsack)
            if phases == 1:
                earlier = ends[3, knapsack] < ends[1, knapsack] - 1e-9
                rows[0 if knapsack else 1]["share_earlier_than_1phase"] = float(earlier.mean())
            rows.append({"jobs": len(plan), **row})
    for row in rows:
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    print("\nphases selection  jobs/500s  mean resp (s)  max resp (s)  earlier than 1-phase")
    for r in rows:
        print(f"{r['phases']:>6} {r['selection']:<9} {r['jobs_per_500s']:9.3f} {r['mean_response_s']:14,.0f} "
              f"{r['max_response_s']:13,.0f}  {r.get('share_earlier_than_1phase', np.nan):.3f}")  # fmt: skip
    print(f"\npaper: {PAPER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
