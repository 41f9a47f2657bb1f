"""One table ranking every policy family on the same workloads (docs/io-policies.md).

Reads the JSON lines ``benchmarks/simulate.py --out`` writes (one file per workload,
e.g. one KTH period each) and prints a markdown table: per policy the mean over the
workloads of the mean wait, mean bounded slowdown and utilisation, the decision latency
p50 / p99 (median over the workloads), the invariant violations (summed), and the
policy's mean rank by mean bounded slowdown (1 = best on a workload).

    python benchmarks/ranking.py runs/ranking-0_16.jsonl runs/ranking-6_16.jsonl
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

FAMILY = {
    "fcfs": "Kopański", "backfill-1": "Kopański", "backfill-sjf-1": "Kopański",
    "plan-square-0": "Kopański", "maxutil-1.0-1": "Kopański",
    "cerberus": "Cerberus", "cerberus-fcfs": "Cerberus",
    "io-easy": "Herbein", "io-ignorant-easy": "Herbein",
}  # fmt: skip


def family(policy: str) -> str:
    return "Lackner (SAS)" if policy.startswith("sas") else FAMILY.get(policy, "-")


def load(paths: list[str]) -> pd.DataFrame:
    rows = []
    for path in paths:
        for r in pd.read_json(path, lines=True).to_dict("records"):
            m, lat = r["metrics"], r["latency"].get("all", {})
            rows.append({
                "workload": path, "policy": r["policy"],
                "mean_wait": m["mean_wait"], "mean_bsld": m["mean_bsld"],
                "makespan": m["makespan"], "util_compute": m["util_compute"], "util_bb": m["util_bb"],
                "p50": lat.get("p50", float("nan")), "p99": lat.get("p99", float("nan")),
                "violations": len(r["violations"]), "cpu_s": r["cpu_s"],
            })  # fmt: skip
    df = pd.DataFrame(rows)
    df["rank"] = df.groupby("workload")["mean_bsld"].rank(method="min")
    return df


def table(df: pd.DataFrame) -> str:
    n = df["workload"].nunique()
    agg = df.groupby("policy").agg(
        runs=("workload", "count"), rank=("rank", "mean"), mean_wait=("mean_wait", "mean"),
        mean_bsld=("mean_bsld", "mean"), makespan=("makespan", "mean"), util_compute=("util_compute", "mean"),
        util_bb=("util_bb", "mean"), p50=("p50", "median"), p99=("p99", "median"),
        violations=("violations", "sum"), cpu_s=("cpu_s", "sum"),
    )  # fmt: skip
    agg = agg.sort_values(["rank", "mean_bsld"])
    lines = [
        f"| rank (mean of {n}) | policy | family | mean wait (s) | mean bsld | makespan (s) | util compute "
        "| util BB | decision p50 / p99 (ms) | violations | CPU (s) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, r in agg.iterrows():
        partial = "" if r.runs == n else f" ({int(r.runs)} of {n})"
        lines.append(
            f"| {r['rank']:.1f}{partial} | {p} | {family(str(p))} | {r.mean_wait:,.0f} | {r.mean_bsld:,.2f} "
            f"| {r.makespan:,.0f} | {r.util_compute:.3f} | {r.util_bb:.3f} "
            f"| {r.p50 * 1e3:.2f} / {r.p99 * 1e3:.1f} | {int(r.violations)} | {r.cpu_s:,.0f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="JSON lines of benchmarks/simulate.py, one file per workload")
    args = ap.parse_args()
    print(table(load(args.files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
