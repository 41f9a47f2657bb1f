"""How far an emulation is from the simulation of the same plan under the same policy.

Both sides are compared in original (unshrunk) time: the start order of the jobs both ran
(Kendall's tau of their start times) and every headline metric (emulated, simulated,
relative difference).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis.metrics import summary
from harness.model.columns import RESULT_TIME_COLUMNS
from harness.model.metric_names import HEADLINE_METRICS
from harness.model.timescale import time_scale_of, unshrink_table
from harness.platform import Machine
from harness.policies.registry import get_policy
from harness.sim.engine import simulate


def start_order_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame) -> dict[str, float]:
    """Kendall's tau between the start times of the jobs present in both schedules."""
    both = emulated[["job_id", "start"]].merge(simulated[["job_id", "start"]], on="job_id",
                                               suffixes=("_emu", "_sim")).dropna()  # fmt: skip
    if len(both) < 2:
        return {"jobs": len(both), "kendall_tau": float("nan")}
    tau = stats.kendalltau(both["start_emu"], both["start_sim"]).statistic
    return {"jobs": len(both), "kendall_tau": float(tau)}


def compare_with_simulation(
    plan: pd.DataFrame,
    emulated: pd.DataFrame,
    policy: str,
    platform: Machine,
    shrink: float,
    seed: int = 0,
    model: str = "alloc-only",
) -> tuple[dict[str, Any], pd.DataFrame]:
    """(fidelity figures, simulated per-job table); ``emulated`` in shrunk time since t0.

    ``io-aware``: the IO-Aware twin redraws the plan's I/O columns from the same seed (a
    job's volumes depend only on the seed and its number) on the unshrunk plan.
    """
    if model == "io-aware":
        plan = plan.drop(columns=[c for c in plan.columns if c.startswith("io_")])
    sim = simulate(
        unshrink_table(plan, shrink), get_policy(policy, seed=seed), platform, model=model, io_seed=seed
    ).jobs
    emu_orig = unshrink_table(emulated, shrink, RESULT_TIME_COLUMNS)
    emu_metrics = summary(emulated, platform, time_scale=time_scale_of(shrink))
    sim_metrics = summary(sim, platform)
    metrics = {}
    for key in HEADLINE_METRICS:
        e, s = float(emu_metrics[key]), float(sim_metrics[key])
        rel = (e - s) / s if s else (0.0 if e == s else float("nan"))
        metrics[key] = {"emulated": e, "simulated": s, "rel_diff": rel}
    fidelity = {
        "simulator_policy": policy,
        "start_order": start_order_agreement(emu_orig, sim),
        "metrics": metrics,
        "mean_abs_start_shift_s": float(np.nanmean(np.abs(
            emu_orig.set_index("job_id")["start"] - sim.set_index("job_id")["start"]
        ))),
    }  # fmt: skip
    if model == "io-aware":
        fidelity["staging"] = staging_agreement(emulated, sim, time_scale_of(shrink))
    return fidelity, sim


def staging_agreement(emulated: pd.DataFrame, simulated: pd.DataFrame, time_scale: float) -> dict[str, Any]:
    """Mean stage-in and stage-out times in original seconds, emulated (Slurm stages outside
    the allocation) beside the IO-Aware twin's (inside it, as in the thesis)."""
    out: dict[str, Any] = {}
    for kind in ("in", "out"):
        col = f"stage_{kind}_s"
        if col not in emulated.columns or col not in simulated.columns:
            continue
        e, s = float(emulated[col].mean() * time_scale), float(simulated[col].mean())
        out[f"mean_{col}"] = {"emulated": e, "simulated": s, "rel_diff": (e - s) / s if s else float("nan")}
    return out


def simulator_twin(policy: str) -> str:
    """The simulator policy that a run's policy corresponds to."""
    if policy == "slurm-fcfs":
        return "fcfs"
    if policy.startswith("slurm-backfill-io-aware-"):
        return "io-easy"  # Herbein's I/O-aware EASY, which the bandwidth license gives Slurm
    return policy.removeprefix("slurm-")
