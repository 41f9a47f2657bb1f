"""Lackner, Fard and Wolf's experiment (Figures 3 and 5) on this project's policies.

Feitelson 1996 workloads with Lackner's Table I (500 jobs, 128 nodes), every job with
the Lackner I/O model's input, output and checkpoint volumes; one shared HPS pool of
2,048 or 4,096 GB (benchmarks/platforms/lackner-*.toml). Schedulers: SJF backfilling
with the tier chosen per job by SAS (Algorithm 2), always on HPS, always on LPS, or on
HPS with probability p = 0, 0.05, ..., 1 (``harness.policies.sas.StorageAware``).

Every run is ``harness simulate --model io-aware`` with a tier policy (the simulator's
storage tiers, ``harness/sim/tiers.py``): a job started on a tier holds its nodes (and
on HPS its declared share of the pool, on LPS no burst buffer) for that tier's duration
computed from its *actual* runtime and I/O (``tiers.plans``), while the policy plans
with the walltime and the declared I/O. Figure 3: both exact. Figure 5 (``--theta``):
the declared volumes are drawn from N(v, (theta v)^2). ``--walltime-factor`` (not in
the paper) multiplies the walltime instead.

A job whose HPS share can never fit the pool (a whole-machine job with its checkpoint)
is declared without HPS storage: every scheduler runs it on LPS (counted below).

    python benchmarks/lackner.py --seeds 1,2,3 --out lackner.jsonl --plot docs/figures/lackner-fig3.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.platform import Machine, load_platform
from harness.policies import tiers
from harness.policies.sas import StorageAware
from harness.policies.state import Topology
from harness.policies.tiers import JobIo, TierChooser, TierRates
from harness.sim.checks import check_schedule
from harness.sim.engine import simulate
from harness.workload.feitelson96 import Feitelson96
from harness.workload.io.lackner import LacknerIO
from harness.workload.synthetic import feitelson96_plan

HERE = Path(__file__).resolve().parent
# Lackner Figure 3 as read from the paper (text, Section V-A): SAS lies below every
# random assignment p in both makespan and mean turnaround, for both capacities; the
# best random p is an interior value, always-HPS (p = 1) is worse at 2,048 GB.
PAPER = (
    "Fig. 3 (Section V-A, no numbers in the text): SAS below every p in makespan and mean turnaround "
    "at 2048 and 4096 GB; random makespan least near p = 0.6-0.8, turnaround near p = 0.4; 4096 GB "
    "shorter than 2048 GB; SAS uses ~80 % of the nodes and ~70 % of the HPS. Fig. 5 (4096 GB): "
    "SAS stays below the whole random range for declared I/O ~ N(bytes, (theta bytes)^2), theta <= 1"
)


def workload(
    seed: int, walltime_factor: float, theta: float, topology: Topology
) -> tuple[pd.DataFrame, dict[int, JobIo], dict[int, JobIo], int]:
    """The plan, the jobs' actual I/O, the I/O their users declare (Fig. 5: each volume
    drawn from N(v, (theta v)^2), clipped at 0), and how many jobs can never use the HPS."""
    plan, _ = feitelson96_plan(Feitelson96(), seed, walltime_factor=walltime_factor)
    plan = LacknerIO().apply(plan, seed)
    rng = np.random.default_rng([seed, 1996])
    actual, declared, dropped = {}, {}, 0
    for r in plan.itertuples():
        vol = np.array([r.input_mb, r.output_mb, r.data_mb, r.storage_mb], dtype=np.float64)
        noisy = np.maximum(vol + theta * vol * rng.standard_normal(4), 0.0)
        pair = []
        for v in (vol, noisy):
            storage = int(np.ceil(v[3]))
            if storage and not topology.can_ever_run(int(r.nodes), -(-storage // int(r.nodes))):
                storage = 0
            pair.append(JobIo(float(v[0]), float(v[1]), float(v[2]), storage))
        dropped += pair[0].storage_mb == 0 and vol[3] > 0
        actual[int(r.job_id)], declared[int(r.job_id)] = pair
    return plan, actual, declared, int(dropped)


def run(plan: pd.DataFrame, io: dict[int, JobIo], policy: StorageAware, platform: Machine) -> dict[str, Any]:
    """One run of ``harness simulate --model io-aware`` (storage tiers, harness.sim.tiers): the
    jobs' actual I/O ``io`` goes into the plan, the policy plans with its own (declared) I/O."""
    df = plan.copy()
    for col in ("input_mb", "output_mb", "data_mb", "storage_mb"):
        df[col] = [getattr(io[int(j)], col) for j in df["job_id"]]
    result = simulate(df, policy, platform, model="io-aware")
    jobs = result.jobs
    if check_schedule(jobs, platform):
        raise RuntimeError(f"{policy.name}: the schedule breaks an invariant")
    start, end, submit, nodes = (jobs[c].to_numpy(np.float64) for c in ("start", "end", "submit", "nodes"))
    hps_mb = jobs["bb_per_node_mb"].to_numpy(np.float64) * nodes * (end - start)
    lat, span = result.decisions["latency_s"].to_numpy(), float(end.max() - submit.min())
    topology = Topology.from_platform(platform)
    return {
        "makespan_s": span,
        "util_nodes": float((nodes * (end - start)).sum() / (span * topology.compute_count)),
        "util_hps": float(hps_mb.sum() / (span * topology.bb_capacity_mb * topology.bb_count)),
        "mean_turnaround_s": float((end - submit).mean()),
        "mean_wait_s": float((start - submit).mean()),
        "hps_share": float((jobs["tier"] == tiers.HPS).mean()),
        "decision_p50_s": float(np.quantile(lat, 0.5)),
        "decision_p99_s": float(np.quantile(lat, 0.99)),
    }


def choosers(ps: list[float], seed: int) -> list[tuple[str, TierChooser]]:
    out = [("sas", TierChooser("sas")), ("hps", TierChooser("hps")), ("lps", TierChooser("lps"))]
    return out + [(f"random-{p:.2f}", TierChooser("random", p, seed)) for p in ps]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1,2,3", help="workload seeds (the paper: 10 workloads)")
    ap.add_argument("--capacities", default="2048,4096", help="HPS pool, GB (platform lackner-<GB>.toml)")
    ap.add_argument("--p-step", type=float, default=0.05)
    ap.add_argument("--walltime-factor", type=float, default=1.0, help="walltime = runtime x factor (Fig. 5)")
    ap.add_argument("--theta", type=float, default=0.0, help="declared I/O ~ N(v, (theta v)^2) (Fig. 5)")
    ap.add_argument("--only", default=None, help="comma-separated schedulers, e.g. sas,hps,lps")
    ap.add_argument("--out", default=None, help="append one JSON line per run")
    ap.add_argument("--plot", default=None, help="write Figure 3 (makespan, turnaround vs p) as a PNG")
    ap.add_argument("--replot", default=None, help="table and plot from a JSON-lines file; no runs")
    args = ap.parse_args()
    if args.replot:
        done = pd.read_json(args.replot, lines=True)
        print_table(done)
        if args.plot:
            plot(done, args.plot)
        return 0
    # p = 0 and p = 1 are always-LPS and always-HPS, run once as "lps" and "hps".
    ps = [round(x, 4) for x in np.arange(args.p_step, 1 - 1e-9, args.p_step)]
    only = set(args.only.split(",")) if args.only else None
    rows = []
    for cap in (int(c) for c in args.capacities.split(",")):
        platform = load_platform(HERE / "platforms" / f"lackner-{cap}.toml")
        topology = Topology.from_platform(platform)
        rates = TierRates.of_platform(platform)  # as harness.sim.tiers gives any tier policy
        for seed in (int(s) for s in args.seeds.split(",")):
            plan, actual, declared, dropped = workload(seed, args.walltime_factor, args.theta, topology)
            for name, chooser in choosers(ps, seed):
                if only and name not in only and name.split("-")[0] not in only:
                    continue
                res = run(plan, actual, StorageAware(name, chooser, rates, declared), platform)
                row = {"capacity_gb": cap, "seed": seed, "theta": args.theta, "scheduler": name,
                       "walltime_factor": args.walltime_factor, "lps_only_jobs": dropped, **res}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    print_table(pd.DataFrame(rows))
    if args.plot:
        plot(pd.DataFrame(rows), args.plot)
    return 0


def p_of(name: str) -> float:
    """The HPS probability a scheduler name stands for (lps 0, hps 1, random-p p; sas: nan)."""
    return {"lps": 0.0, "hps": 1.0}.get(name, float(name[7:]) if name.startswith("random-") else np.nan)


def plot(df: pd.DataFrame, path: str) -> None:
    """Lackner's Figure 3 layout: random assignment against p, SAS as a horizontal line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mean = df.groupby(["capacity_gb", "scheduler"]).mean(numeric_only=True).reset_index()
    mean["p"] = mean["scheduler"].map(p_of)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, label in zip(
        axes, ("makespan_s", "mean_turnaround_s"), ("makespan", "mean turnaround"), strict=True
    ):
        for (cap, g), colour in zip(mean.groupby("capacity_gb"), ("tab:blue", "tab:orange"), strict=False):
            rnd = g.dropna(subset=["p"]).sort_values("p")
            ax.plot(rnd["p"], rnd[col] / 3600, "o-", color=colour, ms=3, label=f"random, HPS {cap} GB")
            sas = float(g.loc[g.scheduler == "sas", col].iloc[0]) / 3600
            ax.axhline(sas, color=colour, ls="--", label=f"SAS, HPS {cap} GB")
        ax.set_xlabel("p (probability of HPS)")
        ax.set_ylabel(f"{label} (h)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    n = df["seed"].nunique()
    fig.suptitle(f"Lackner Fig. 3 on this project: Feitelson-96, 500 jobs, 128 nodes, mean of {n} workloads")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def print_table(df: pd.DataFrame) -> None:
    mean = df.groupby(["capacity_gb", "scheduler"]).mean(numeric_only=True).reset_index()
    for cap, g in mean.groupby("capacity_gb"):
        print(f"\nHPS {cap} GB: scheduler  makespan (h)  mean turnaround (h)  HPS share  util nodes / HPS")
        for r in g.sort_values("makespan_s").itertuples():
            print(f"  {r.scheduler:<12} {r.makespan_s / 3600:10.1f} {r.mean_turnaround_s / 3600:12.1f} "
                  f"{r.hps_share:8.2f}  {r.util_nodes:.2f} / {r.util_hps:.2f}")  # fmt: skip
    print(f"\npaper: {PAPER}")


if __name__ == "__main__":
    sys.exit(main())
