"""Herbein's schedulers live against their twin: one row per run directory of
``harness run -p io-easy|io-fcfs --compare-sim`` on a platform with an I/O tree.

    python benchmarks/herbein_live.py RUN_DIR [RUN_DIR ...]

Per run: jobs, mean wait and mean turnaround emulated vs the ideal twin (original seconds),
the jobs Slurm started at the twin's second (and within 5 s), Kendall's tau of the starts,
each link's highest use in Slurm's own schedule (every job's rate on the nodes Slurm ran it
on, start to end as Slurm recorded them) against its bandwidth, the links ever
over-allocated live and in the twin, the agent's decisions (p99 latency) and the host load.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.emulation.run.io_tree import live_link_peaks
from harness.model import rundir
from harness.model.jsonio import read_json, read_jsonl
from harness.platform import load_platform
from harness.policies.io_platform import platform_tree
from harness.policies.iotree import over_allocated, peak_link_use
from harness.policies.registry import get_policy
from harness.sim.engine import simulate
from harness.sim.machine import parse_bb_map
from harness.workload.plan import load_plan


def row(run_dir: Path) -> dict[str, Any]:
    manifest = read_json(run_dir / rundir.MANIFEST)
    policy = manifest["options"]["replay"]["policy"]
    machine = load_platform(manifest["options"]["cluster"]["platform"])
    plan = load_plan(run_dir / rundir.PLAN)[0]
    emu = pd.read_parquet(run_dir / rundir.RESULTS).set_index("job_id").sort_index()
    sim = simulate(plan, get_policy(policy), machine).jobs.set_index("job_id").sort_index()
    tree = platform_tree(machine, policy)
    live = live_link_peaks(emu.reset_index(), plan, machine, tree)
    rate = plan.set_index("job_id")["pfs_mbps_per_node"]
    twin = peak_link_use(tree, [(r.start, r.end, [c for c, _ in parse_bb_map(machine, r.bb_nodes)], rate[j])
                                for j, r in sim.iterrows()])  # fmt: skip
    metrics = read_json(run_dir / rundir.METRICS)
    shift = (emu["start"] - sim["start"]).abs()
    latency = [
        d["latency_s"] for d in read_jsonl(run_dir / rundir.RAW_DIR / rundir.DECISIONS) if "latency_s" in d
    ]
    caps = dict(zip(tree.link_names(), [*tree.switch_mb_s, *(bw for _, bw in tree.chain)], strict=True))
    return {
        "run": run_dir.name, "policy": policy, "jobs": len(emu), "complete": manifest["complete"],
        "rejected_by_io_tree": manifest.get("plan", {}).get("rejected_by_io_tree"),
        "mean_wait": [float((emu.start - emu.submit).mean()), float((sim.start - sim.submit).mean())],
        "mean_turnaround": [float((emu.end - emu.submit).mean()), float((sim.end - sim.submit).mean())],
        "at_twin_second": int((shift < 0.5).sum()), "within_5_s": int((shift <= 5.0).sum()),
        "max_shift_s": float(shift.max()),
        "kendall_tau": metrics["fidelity"]["start_order"]["kendall_tau"],
        "peak_live": {k: round(v, 1) for k, v in live.items() if k in ("core", "pfs") or v == max(
            u for n, u in live.items() if n.startswith("switch"))},
        "capacity": {k: round(v, 1) for k, v in caps.items() if k in ("core", "pfs")},
        "over_allocated_live": over_allocated(tree, live), "over_allocated_twin": over_allocated(tree, twin),
        "peak_twin_pfs": round(twin["pfs"], 1),
        "decisions": len(latency), "latency_p99_ms": round(1000 * float(np.quantile(latency, 0.99)), 2),
        "host_load": rundir.done_steps(run_dir).get("replay", {}).get("info", {}).get("host_load"),
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    for run_dir in ap.parse_args().runs:
        print(json.dumps(row(run_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
