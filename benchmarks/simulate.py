"""Benchmark the simulator and the policies on a workload (default: the full KTH trace).

For each policy: wall time, speed-up over real time (simulated span / wall time),
the distribution of per-decision latency (all decisions, and those with at most
200 queued jobs), the schedule's metrics and the invariant check.

    python benchmarks/simulate.py --policies backfill-1,plan-square-0 --out results.json
    python benchmarks/simulate.py --period 1/16 --policies backfill-sjf-1,plan-square-0
    python benchmarks/simulate.py --model io-aware --policies backfill-1,plan-square-0

Policies run one after the other (one process: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis.io_metrics import io_summary
from harness.analysis.metrics import summary
from harness.model.paths import KTH_NAME, kth_trace
from harness.model.staging_names import STAGINGS
from harness.platform import load_platform
from harness.policies import kernels
from harness.policies.registry import get_policy, parse_policy_list
from harness.sim.checks import check_schedule
from harness.sim.engine import SimulationResult, simulate

DEFAULT_TRACE = kth_trace() or KTH_NAME
FAST_POLICIES = "fcfs,backfill-no-future-1,backfill-1,filler,backfill-sjf-1,backfill-4"
LATENCY_QUANTILES = (0.5, 0.9, 0.99)


def latency_report(result: SimulationResult, max_queue: int = 200) -> dict[str, Any]:
    lat = result.decisions["latency_s"].to_numpy()
    small = result.decisions.loc[result.decisions["queue"] <= max_queue, "latency_s"].to_numpy()
    out: dict[str, Any] = {
        "decisions": len(lat),
        "max_queue": int(result.decisions["queue"].max()) if len(lat) else 0,
    }
    for name, arr in (("all", lat), (f"queue<={max_queue}", small)):
        if len(arr) == 0:
            continue
        qs = {f"p{round(q * 100)}": float(np.quantile(arr, q)) for q in LATENCY_QUANTILES}
        out[name] = {**qs, "max": float(arr.max()), "mean": float(arr.mean())}
    return out


def run_one(
    name: str,
    plan,
    manifest: dict[str, Any],
    seed: int,
    time_limit: float | None = None,
    model: str = "alloc-only",
    tiers: bool = False,
    staging: str = "inside",
) -> dict[str, Any]:
    platform = load_platform()
    policy = get_policy(name, seed=seed, time_limit_s=time_limit)
    kernels.warm_up()  # numba compilation is not the policy's decision time
    io_seed = int(manifest.get("seed", 2020))
    cpu_before = time.process_time()
    result = simulate(plan, policy, platform, model=model, io_seed=io_seed, tiers=tiers, staging=staging)
    cpu = time.process_time() - cpu_before
    violations = check_schedule(result.jobs, platform)
    return {
        "policy": name,
        "wall_s": result.wall_time_s,
        # CPU time tells the policy's cost apart from other load on a shared machine
        "cpu_s": cpu,
        "speedup": result.simulated_span_s / max(result.wall_time_s, 1e-9),
        "latency": latency_report(result),
        "model": model + ("+tiers" if tiers or getattr(policy, "tiered", False) else ""),
        "staging": staging,
        "metrics": {
            **summary(result.jobs, platform),
            **io_summary(result.jobs, platform, result.link_bytes),
        },
        "violations": violations[:5],
    }


def synthetic_state(plan, rng: np.random.Generator, now: float, busy_nodes: int = 88):
    """A busy machine: running jobs drawn from the plan until ``busy_nodes`` are taken."""
    from harness.policies.allocation import choose_allocation
    from harness.policies.state import ClusterState, RunningJob, Topology

    topo = Topology.from_platform(load_platform())
    free = [list(range(c * 8, c * 8 + 8)) for c in range(topo.bb_count)]
    free_bb = [topo.bb_capacity_mb] * topo.bb_count
    running, used = [], 0
    for row in plan.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).itertuples():
        if used + row.nodes > busy_nodes:
            continue
        alloc = choose_allocation(topo, free, free_bb, int(row.nodes), int(row.bb_per_node_mb))
        if alloc is None:
            continue
        for c, b in zip(alloc.compute, alloc.bb, strict=True):
            free[c // 8].remove(c)
            free_bb[b] -= int(row.bb_per_node_mb)
        started = now - float(rng.uniform(0, row.walltime))
        running.append(RunningJob(int(row.job_id), started, started + float(row.walltime),
                                  int(row.bb_per_node_mb), alloc))  # fmt: skip
        used += int(row.nodes)
        if used >= busy_nodes:
            break
    return ClusterState.from_running(topo, running)


def latency_sweep(
    plan, policy_name: str, sizes: list[int], repeats: int, seed: int, time_limit: float | None = None
) -> list[dict[str, Any]]:
    """Decision latency of ``policy_name`` on synthetic busy states with queues of given sizes."""
    from harness.policies.state import QueuedJob

    policy = get_policy(policy_name, seed=seed, time_limit_s=time_limit)
    kernels.warm_up()
    rng = np.random.default_rng(seed)
    now = 1e7
    out = []
    for size in sizes:
        times = []
        for _ in range(repeats):
            state = synthetic_state(plan, rng, now)
            rows = plan.sample(n=size, random_state=int(rng.integers(1 << 30)))
            waited = rng.uniform(0, 50_000, size=size)
            queue = sorted(
                (
                    QueuedJob(int(r.job_id), now - w, float(r.walltime), int(r.nodes), int(r.bb_per_node_mb))
                    for r, w in zip(rows.itertuples(), waited.tolist(), strict=True)
                ),
                key=lambda j: (j.submit, j.job_id),
            )
            began = time.perf_counter()
            policy.decide(state, queue, now)
            times.append(time.perf_counter() - began)
        arr = np.array(times)
        out.append({"policy": policy_name, "queue": size, "p50": float(np.quantile(arr, 0.5)),
                    "p99": float(np.quantile(arr, 0.99)), "max": float(arr.max())})  # fmt: skip
        print(f"{policy_name} queue {size}: p50 {out[-1]['p50']:.3f} s, p99 {out[-1]['p99']:.3f} s, "
              f"max {out[-1]['max']:.3f} s", file=sys.stderr, flush=True)  # fmt: skip
    return out


def markdown_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| policy | mean wait (s) | median wait (s) | max wait (s) | mean turnaround (s) | mean slowdown "
        "| mean bsld | makespan (s) | util compute | util BB | wall (s) | speed-up | p99 decision (s) |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        m, lat = r["metrics"], r["latency"].get("all", {})
        lines.append(
            f"| {r['policy']} | {m['mean_wait']:.0f} | {m['median_wait']:.0f} | {m['max_wait']:.0f} "
            f"| {m['mean_turnaround']:.0f} | {m['mean_slowdown']:.2f} | {m['mean_bsld']:.2f} "
            f"| {m['makespan']:.0f} | {m['util_compute']:.3f} | {m['util_bb']:.3f} "
            f"| {r['wall_s']:.1f} | {r['speedup']:.0f} | {lat.get('p99', float('nan')):.4f} |"
        )
    return "\n".join(lines)


def io_markdown_table(rows: list[dict[str, Any]]) -> str:
    """The I/O side of io-aware runs: timeouts, time in I/O, dilation, contention, bandwidth."""
    head = (
        "| policy | timeouts | mean I/O (s) | mean dilation | max dilation | dilation sd | jobs contended "
        "| util PFS bw | util BB bw |"
    )
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        m = r["metrics"]
        if "mean_io_s" not in m:  # storage tiers: no phases, no flows
            continue
        lines.append(
            f"| {r['policy']} | {m.get('timeouts', 0)} | {m['mean_io_s']:.0f} | {m['mean_dilation']:.3f} "
            f"| {m['max_dilation']:.2f} | {m['dilation_sd']:.3f} | {m['jobs_contended']:.3f} "
            f"| {m['util_pfs_bw']:.4f} | {m['util_bb_bw']:.4f} |"
        )
    return "\n".join(lines)


def load_workload(trace: str, period: str | None, seed: int, first_n: int | None = None):
    from harness.workload.plan import load_plan_or_trace

    kwargs: dict[str, Any] = {"seed": seed, "first_n": first_n}
    if period:
        from harness.cli.options import PeriodType

        kwargs["period"] = PeriodType().convert(period, None, None)  # I/K counted from 1, as the CLI
    return load_plan_or_trace(trace, **kwargs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="SWF trace or prepared plan")
    ap.add_argument("--policies", default=FAST_POLICIES, help="comma-separated policy names")
    ap.add_argument("--period", help="I/K: the I-th of K equal periods, counted from 1 as in the CLI: 1/16")
    ap.add_argument("--first-n", type=int, help="only the first N jobs of the trace (of the period)")
    ap.add_argument("--seed", type=int, default=2020, help="seed of the BB model (trace input only)")
    ap.add_argument("--policy-seed", type=int, default=0, help="seed of randomised policies")
    ap.add_argument("--out", type=Path, help="append one JSON line per policy to this file")
    ap.add_argument("--latency-sweep", metavar="SIZES",
                    help="instead of simulating: time decisions on busy synthetic states with queues of "
                    "these sizes (comma-separated), e.g. 25,50,100,200")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=20, help="decisions per queue size in the sweep")
    ap.add_argument("--time-limit", type=float, default=None, help="wall-clock limit (s) of one plan search")
    ap.add_argument("--model", choices=("alloc-only", "io-aware"), default="alloc-only", help="job model")
    ap.add_argument("--tiers", action="store_true", help="io-aware: Lackner's storage tiers for every policy")
    ap.add_argument("--staging", choices=STAGINGS, default="inside",
                    help="io-aware: staging inside, outside or pool (outside, striped)")  # fmt: skip
    args = ap.parse_args(argv)

    plan, manifest = load_workload(args.trace, args.period, args.seed, args.first_n)
    if args.latency_sweep:
        sizes = [int(x) for x in args.latency_sweep.split(",")]
        for name in parse_policy_list(args.policies):
            for row in latency_sweep(plan, name, sizes, args.repeats, args.policy_seed, args.time_limit):
                print(json.dumps(row))
                if args.out:
                    with args.out.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
        return 0
    print(f"workload: {len(plan)} jobs from {args.trace} (period {args.period or 'all'})", file=sys.stderr)
    rows = []
    for name in parse_policy_list(args.policies):
        began = time.perf_counter()
        row = run_one(
            name, plan, manifest, args.policy_seed, args.time_limit, args.model, args.tiers, args.staging
        )
        row["workload"] = {"trace": str(args.trace), "period": args.period, "jobs": len(plan)}
        row["workload"]["first_n"] = args.first_n
        rows.append(row)
        lat = row["latency"].get("all", {})
        print(
            f"{name}: wall {row['wall_s']:.1f} s (cpu {row['cpu_s']:.1f} s, total "
            f"{time.perf_counter() - began:.1f} s), "
            f"speed-up {row['speedup']:.0f}x, decisions {row['latency']['decisions']}, "
            f"p50/p99/max {lat.get('p50', 0):.4f}/{lat.get('p99', 0):.4f}/{lat.get('max', 0):.3f} s, "
            f"mean wait {row['metrics']['mean_wait']:.0f} s, violations {len(row['violations'])}",
            file=sys.stderr,
            flush=True,
        )
        if args.out:
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    print(markdown_table(rows))
    if args.model == "io-aware":
        print(io_markdown_table(rows))
    return 0 if all(not r["violations"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
